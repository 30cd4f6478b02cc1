// Queue `discovery-sync`: entities a daemon discovered (`{kind: 'host' | 'subnet', ctx, payload}`),
// each ingested in one transaction by src/modules/discovery/ingest.ts. Delivery is at-least-once (a
// worker killed mid-job leaves the job to be taken up again once its lock expires; a failure is retried
// with exponential backoff, DISCOVERY_SYNC_ATTEMPTS times), which is safe because:
//  - the whole ingest of one entity is one transaction: a crash leaves nothing half-written;
//  - ingest is an upsert by the daemon's ids / MAC / (subnet, IP) / CIDR, so replaying a job gives the
//    same inventory (and no new history state when nothing changed);
//  - producers use a deterministic job id (src/core/queues.ts `discoverySyncJobId`), so the same entity
//    re-sent by a daemon while its job is kept adds no second job.
// The job's return value is the stored entity, which the server-poll cycle sends back to the daemon
// as its confirmation (POST /api/discovery/entities-created).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { Db } from '../src/core/db.js';
import { AppError } from '../src/core/errors.js';
import { QUEUE_NAMES, type DiscoverySyncJob } from '../src/core/queues.js';
import { ingestHost, ingestSubnet } from '../src/modules/discovery/ingest.js';
import { daemonHostRequestBody, daemonSubnetBody } from '../src/modules/discovery/schemas.js';
import { sleep, timed, workerOptions, type WorkerServices } from './context.js';

export async function processDiscoverySync(services: Pick<WorkerServices, 'orm' | 'settings'>, job: Job<DiscoverySyncJob>): Promise<unknown> {
  const { kind, ctx } = job.data;
  // The same schemas as the daemon routes (producers validate too; this guards any other producer).
  const { value: payload, error } = (kind === 'host' ? daemonHostRequestBody : daemonSubnetBody).validate(job.data.payload, { abortEarly: true, convert: true });
  if (error) throw new UnrecoverableError(`invalid ${kind}: ${error.message}`);
  const db = new Db(services.orm.em.fork());
  try {
    return await db.transaction(async (tx) => {
      const stored = kind === 'host' ? await ingestHost(tx, ctx, payload) : await ingestSubnet(tx, ctx, payload);
      // Test hook (DISCOVERY_SYNC_TEST_DELAY_MS): hold the open transaction so a test can kill or
      // stop the worker in the middle of the job.
      if (services.settings.discoverySyncTestDelayMs > 0) await sleep(services.settings.discoverySyncTestDelayMs);
      return JSON.parse(JSON.stringify(stored ?? null)) as unknown;
    });
  } catch (err) {
    // The daemon's data is wrong (validation, foreign network…): retrying cannot help.
    if (err instanceof AppError && err.status < 500) throw new UnrecoverableError(`${err.code}: ${err.message}`);
    throw err;
  }
}

export async function startDiscoverySync(services: WorkerServices): Promise<Worker> {
  const worker = new Worker<DiscoverySyncJob>(
    QUEUE_NAMES.discoverySync,
    timed(services, QUEUE_NAMES.discoverySync, (job: Job<DiscoverySyncJob>) => processDiscoverySync(services, job)),
    workerOptions(services, services.settings.discoverySyncConcurrency),
  );
  worker.on('failed', (job, err) => {
    services.logger.warn({ job_id: job?.id, attempts: job?.attemptsMade, err: err.message }, 'discovery-sync job failed');
  });
  return worker;
}
