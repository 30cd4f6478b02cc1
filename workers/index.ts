// The worker process (`npm run worker`, Procfile `worker`): one BullMQ worker per queue file,
// sharing the services of src/. SIGTERM stops taking jobs, lets running ones finish, then closes.
import { loadConfig } from '../src/config.js';
import { createOrm } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { startMaintenance } from './maintenance.js';

const config = loadConfig();
const logger = createLogger(config.logLevel).child({ process: 'worker' });
const orm = await createOrm(config.databaseUrl, 5);
const redis = new URL(config.redisUrl);
const connection = {
  host: redis.hostname, port: Number(redis.port || 6379),
  username: redis.username || undefined, password: redis.password || undefined,
  maxRetriesPerRequest: null,
};
const prefix = `${config.redisPrefix}bull`;

const maintenance = await startMaintenance({ connection, prefix, orm, logger });
logger.info({ queues: ['maintenance'] }, 'worker started');

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'worker shutting down');
  setTimeout(() => process.exit(1), 30_000).unref();
  await maintenance.worker.close(); // waits for the running job
  await maintenance.queue.close();
  await orm.close(true);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
