// One logger for every process: JSON lines for machines (files, log shippers, `| jq`), and
// pretty, coloured lines when a person watches the terminal. LOG_FORMAT=json|pretty overrides.
//
// No line ever carries a secret: every value under a key that names one (password, key, secret,
// token, authorization, cookie…) is replaced, at any depth, and the raw request body that a body
// parser attaches to its errors is dropped. One place, for every logger of every process.
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { setting } from './settings.js';

export type { Logger };

const SECRET_KEY = /pass(word)?|secret|token|^key$|_key$|api_?key|authorization|cookie|session_?id|server_key|plaintext/i;
const DROPPED_KEY = /^(body|rawBody|raw_body)$/;

/** A copy of `value` with secret-named fields replaced, at any depth (cycles and depth bounded). */
export function redactSecrets(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > 8 || seen.has(value)) return '[…]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1, seen));
  const source = value instanceof Error
    ? { type: value.name, message: value.message, stack: value.stack, ...(value as unknown as Record<string, unknown>) }
    : (value as Record<string, unknown>);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(source)) {
    if (DROPPED_KEY.test(k)) continue;
    out[k] = SECRET_KEY.test(k) && v != null ? '[redacted]' : redactSecrets(v, depth + 1, seen);
  }
  return out;
}

export function createLogger(level: string = setting('LOG_LEVEL'), format = setting('LOG_FORMAT'), destination?: NodeJS.WritableStream): Logger {
  const options = {
    level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { log: (object: Record<string, unknown>) => redactSecrets(object) as Record<string, unknown> },
    // Errors go through the same redaction (pino's own err serializer would copy every property).
    serializers: { err: (err: unknown) => redactSecrets(err) },
  };
  const human = format ? format === 'pretty' : !destination && process.stdout.isTTY === true;
  // In-process and synchronous (no transport worker thread): a line is written before an exit.
  if (human) return pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: destination as never }));
  return destination ? pino(options, destination as never) : pino(options);
}
