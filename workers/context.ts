// What every worker file shares: the services of src/ (configuration, database, Redis, logger,
// queues) plus the queue settings, and the wrapper that times each job for `/metrics`.
import type { Job, WorkerOptions } from 'bullmq';
import type { AppConfig } from '../src/config.js';
import { createOrm } from '../src/database.js';
import { setRowSecurity } from '../src/core/db.js';
import type { Logger } from '../src/core/logger.js';
import { openQueues, SharedMetricsStore, type QueueName, type QueueSettings } from '../src/core/queues.js';
import { createRedis } from '../src/core/redis.js';
import { loadSecretKeys, useSecretKeys } from '../src/core/secretBox.js';
import { versionPolicyFromEnv, type VersionPolicy } from '../src/modules/daemons/versionStatus.js';
import type { PollerDeps } from '../src/modules/serverPoll/poller.js';
import { HeavyReadBudget } from '../src/modules/topology/heavyReadBudget.js';
import { closeCpuPool } from '../src/modules/topology/pool.js';
import { setting } from '../src/core/settings.js';

/** What the server-poll cycle needs (src/modules/serverPoll), plus the shared job metrics. */
export interface WorkerServices extends PollerDeps {
  metrics: SharedMetricsStore;
  versionPolicy: VersionPolicy;
  /** The organizations' CPU budgets for heavy topology work, shared with the API: layout jobs are charged to it. */
  heavyReadBudget: HeavyReadBudget;
}

/** Builds the worker process's services (the API builds its own in src/app.ts). */
export async function createWorkerServices(config: AppConfig, settings: QueueSettings, logger: Logger): Promise<WorkerServices> {
  useSecretKeys(loadSecretKeys(config)); // webhook deliveries sign, the server-poll poller calls daemons
  // WORKER_DB_POOL (20): webhook deliveries run 50 at a time, each a query before and after its POST.
  const orm = await createOrm(config.databaseUrl, setting('WORKER_DB_POOL'));
  setRowSecurity(orm.em, config.databaseRowSecurity);
  const redis = createRedis(config, 'worker');
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
  const queues = openQueues(config, settings);
  return {
    config, orm, redis, logger, queues, settings,
    metrics: new SharedMetricsStore(redis, config.redisPrefix),
    versionPolicy: versionPolicyFromEnv(),
    heavyReadBudget: new HeavyReadBudget(redis, config.heavyReadBudget, { keyPrefix: config.redisPrefix, redisTimeoutMs: config.rateLimitRedisTimeoutMs, testClock: config.rateLimitTestClock }),
  };
}

export async function closeWorkerServices(services: WorkerServices): Promise<void> {
  await closeCpuPool();
  await services.queues.close();
  services.redis.disconnect();
  await services.orm.close(true);
}

/** A Worker of queue `name`: its connection and prefix (with the queue's hash tag on a cluster) come from the queues. */
export function workerOptions(services: Pick<WorkerServices, 'config' | 'queues' | 'settings'>, name: QueueName, concurrency: number): WorkerOptions {
  return {
    connection: services.queues.workerConnection,
    prefix: services.queues.prefixOf(name),
    concurrency: Math.max(1, concurrency),
    // A killed worker's job is taken up again once its lock has expired (at-least-once delivery).
    lockDuration: services.settings.lockDurationMs,
    stalledInterval: services.settings.stalledIntervalMs,
    maxStalledCount: 2,
  };
}

/** Wraps a processor: each attempt's duration goes to the shared job histogram, by outcome. */
export function timed<T, R>(services: Pick<WorkerServices, 'metrics'>, queue: QueueName, processor: (job: Job<T>) => Promise<R>) {
  return async (job: Job<T>): Promise<R> => {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      const result = await processor(job);
      await services.metrics.recordJob(queue, 'completed', seconds());
      return result;
    } catch (err) {
      await services.metrics.recordJob(queue, 'failed', seconds());
      throw err;
    }
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
