// The worker process (`npm run worker`, Procfile `worker`): one BullMQ worker per queue, each in its
// own file, sharing the services of src/ (workers/context.ts):
//   maintenance     expired-session purge                        workers/maintenance.ts
//   server-poll     one scheduler per server_poll daemon         workers/serverPoll.ts
//   discovery-sync  ingest of discovered hosts and subnets       workers/discoverySync.ts
//   version-status  periodic re-evaluation of version statuses   workers/versionStatus.ts
//   topology-layout elkjs layouts of topology graphs, cached      workers/topologyLayout.ts
//   webhook-delivery signed webhook POSTs, and their dispatcher   workers/webhookDelivery.ts
//   discovery-schedule one scheduler per discovery schedule        workers/discoverySchedule.ts
//   alert-delivery  offline delays passed, alert e-mails sent     workers/alertDelivery.ts
//
// Metrics: this process serves no HTTP. Each job's duration and the version-status change count are
// added to Redis hashes (src/core/queues.ts SharedMetricsStore) and exposed by the API's /metrics,
// together with the queue lengths it reads from BullMQ: one scrape target for the whole system.
//
// SIGTERM / SIGINT: every worker stops taking jobs and the running ones finish; after
// SHUTDOWN_TIMEOUT_MS (10 s) the process exits anyway; a job cut off that way is taken up again by a
// worker once its lock expires. Then queues, Redis and the database are closed.
import type { Worker } from 'bullmq';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/core/logger.js';
import { loadQueueSettings } from '../src/core/queues.js';
import { closeWorkerServices, createWorkerServices } from './context.js';
import { startAlertDelivery } from './alertDelivery.js';
import { startDiscoverySchedule } from './discoverySchedule.js';
import { startDiscoverySync } from './discoverySync.js';
import { startMaintenance } from './maintenance.js';
import { startServerPoll } from './serverPoll.js';
import { startTopologyLayout } from './topologyLayout.js';
import { startVersionStatus } from './versionStatus.js';
import { startWebhookDelivery } from './webhookDelivery.js';
import { assertSettings } from '../src/core/settings.js';

// Every variable of src/core/settings.ts checked first: one message naming each bad one.
assertSettings();
const config = loadConfig();
const settings = loadQueueSettings();
const logger = createLogger(config.logLevel).child({ process: 'worker' });
const services = await createWorkerServices(config, settings, logger);

// The signal handlers come first: a SIGTERM while the later queues are still starting must not
// kill the process under a job that an earlier one has already taken.
const workers: Worker[] = [];
let stopping = false;
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

const starting = (async () => {
  for (const start of [startMaintenance, startServerPoll, startDiscoverySync, startVersionStatus, startTopologyLayout, startWebhookDelivery, startDiscoverySchedule, startAlertDelivery]) {
    if (stopping) return;
    const worker = await start(services);
    worker.on('error', (err) => logger.error({ queue: worker.name, err: err.message }, 'worker error'));
    workers.push(worker);
  }
})();
await starting;
if (!stopping) {
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  logger.info({ queues: workers.map((w) => w.name), prefix: services.queues.prefix }, 'worker started');
}

async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal, timeout_ms: settings.shutdownTimeoutMs }, 'worker shutting down');
  const deadline = setTimeout(() => {
    logger.warn('shutdown deadline passed with jobs still running; they will be retried after their lock expires');
    process.exit(1);
  }, settings.shutdownTimeoutMs);
  deadline.unref();
  try {
    // close() stops fetching and resolves once the running jobs have finished. The workers already
    // running are closed at once, not after the rest have started: on a Redis Cluster starting
    // them all takes a second or more, and meanwhile the running ones would take new jobs.
    const closing = workers.map((w) => w.close());
    // A queue still starting when the signal came is closed once it has started.
    await starting.catch(() => undefined);
    await Promise.all([...closing, ...workers.slice(closing.length).map((w) => w.close())]);
    await closeWorkerServices(services);
    logger.info('worker stopped');
    process.exit(0);
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'worker shutdown failed');
    process.exit(1);
  }
}
