// One logger for every process: JSON lines for machines (files, log shippers, `| jq`), and
// pretty, coloured lines when a person watches the terminal. LOG_FORMAT=json|pretty overrides.
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export function createLogger(level = process.env.LOG_LEVEL ?? 'info', format = process.env.LOG_FORMAT): Logger {
  const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  const human = format ? format === 'pretty' : process.stdout.isTTY === true;
  // In-process and synchronous (no transport worker thread): a line is written before an exit.
  return human ? pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })) : pino(options);
}
