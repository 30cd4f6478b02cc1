// Queue `discovery-sync`: what a daemon discovered (`{ctx, subnets, hosts}`), ingested in one
// transaction by src/modules/discovery/ingest.ts: subnets one by one, then the hosts as one batch
// (a few set-based statements per batch, not per host). Delivery is at-least-once (a worker killed
// mid-job leaves the job to be taken up again once its lock expires; a failure is retried with
// exponential backoff, DISCOVERY_SYNC_ATTEMPTS times), which is safe because:
//  - the whole job is one transaction: a crash leaves nothing half-written;
//  - ingest is an upsert by the daemon's ids / MAC / (subnet, IP) / CIDR, so replaying a job gives the
//    same inventory (and no new history state when nothing changed);
//  - producers use a deterministic job id (src/core/queues.ts `discoverySyncJobId`), so the same
//    entities re-sent by a daemon while their job is kept add no second job.
// An entity the inventory refuses (foreign network, unknown subnet, address out of range) is logged
// and answered null; the others of its job are stored. The job's return value (DiscoverySyncResult)
// holds the stored subnets and the stored hosts' ids; the server-poll cycle sends them back to the
// daemon as its confirmation (POST /api/discovery/entities-created), with each host's answer read
// from host_discovery_digests (kept there as text: ~5 KB per host need not travel through Redis).
// Producers validate each entity with the daemon routes' schemas before queueing it; the worker
// does not validate again (Joi costs ~0.1 ms per host, about as much as the whole unchanged-host path).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { Db } from '../src/core/db.js';
import { AppError } from '../src/core/errors.js';
import { QUEUE_NAMES, type DiscoverySyncJob, type DiscoverySyncResult } from '../src/core/queues.js';
import { ingestHosts, ingestSubnet } from '../src/modules/discovery/ingest.js';
import type { DaemonHostRequest, DaemonSubnet } from '../src/modules/discovery/vocabulary.js';
import { sleep, timed, workerOptions, type WorkerServices } from './context.js';

type Services = Pick<WorkerServices, 'orm' | 'settings' | 'logger'>;

export async function processDiscoverySync(services: Services, job: Job<DiscoverySyncJob>): Promise<DiscoverySyncResult> {
  const { ctx, subnets, hosts } = job.data;
  if (!ctx?.networkId || !Array.isArray(subnets) || !Array.isArray(hosts)) throw new UnrecoverableError('malformed discovery-sync job');
  const refused = (kind: string, err: AppError) => {
    services.logger.warn({ job_id: job.id, kind, code: err.code, reason: err.message }, 'discovered entity refused');
    return null;
  };
  // One job is one transaction, so its changes share one batch_id; the daemon that reported them is their actor.
  const db = new Db(services.orm.em.fork(), { actor: { type: 'daemon', id: ctx.daemonId }, organizationId: ctx.organizationId });
  return db.transaction(async (tx) => {
    const result: DiscoverySyncResult = { subnets: [], hosts: [] };
    for (const subnet of subnets) {
      // Refusals are decided before any statement (the transaction stays usable).
      result.subnets.push(await ingestSubnet(tx, ctx, subnet as unknown as DaemonSubnet).catch((err: unknown) => {
        if (err instanceof AppError && err.status < 500) return refused('subnet', err);
        throw err;
      }));
    }
    if (hosts.length) {
      for (const stored of await ingestHosts(tx, ctx, hosts as unknown as DaemonHostRequest[])) {
        result.hosts.push(stored instanceof AppError ? refused('host', stored) : { id: stored.id });
      }
    }
    // Test hook (DISCOVERY_SYNC_TEST_DELAY_MS): hold the open transaction so a test can kill or
    // stop the worker in the middle of the job.
    if (services.settings.discoverySyncTestDelayMs > 0) await sleep(services.settings.discoverySyncTestDelayMs);
    return result;
  });
}

export async function startDiscoverySync(services: WorkerServices): Promise<Worker> {
  const worker = new Worker<DiscoverySyncJob>(
    QUEUE_NAMES.discoverySync,
    timed(services, QUEUE_NAMES.discoverySync, (job: Job<DiscoverySyncJob>) => processDiscoverySync(services, job)),
    workerOptions(services, QUEUE_NAMES.discoverySync, services.settings.discoverySyncConcurrency),
  );
  worker.on('failed', (job, err) => {
    services.logger.warn({ job_id: job?.id, attempts: job?.attemptsMade, err: err.message }, 'discovery-sync job failed');
  });
  return worker;
}
