// Background work in one place: queue names, the BullMQ key prefix, Redis connection options,
// per-queue settings read from the environment, the job payload types, and the small Redis-backed
// store through which worker processes report job durations and event counts to `/metrics`.
//
// Every queue lives under `${config.redisPrefix}bull`, so a test app (own REDIS_PREFIX) has its own
// queues, schedulers and metrics, and so do tenants sharing one Redis. On a Redis Cluster each
// queue's prefix also carries the queue's own hash tag (queuePrefix). Connections come from
// src/core/redis.ts.
import { createHash } from 'node:crypto';
import { Queue, type ConnectionOptions, type DefaultJobOptions } from 'bullmq';
import type { AppConfig } from '../config.js';
import { createRedis, isCluster, redisOptionsFromUrl, type RedisClient, type RedisConfig } from './redis.js';
import { environment, setting, type Env } from './settings.js';

export { redisOptionsFromUrl } from './redis.js';

export const QUEUE_NAMES = {
  maintenance: 'maintenance',
  serverPoll: 'server-poll',
  discoverySync: 'discovery-sync',
  versionStatus: 'version-status',
  topologyLayout: 'topology-layout',
  webhookDelivery: 'webhook-delivery',
  discoverySchedule: 'discovery-schedule',
  alertDelivery: 'alert-delivery',
} as const;

export type QueueKey = keyof typeof QUEUE_NAMES;
export type QueueName = (typeof QUEUE_NAMES)[QueueKey];
export const ALL_QUEUES: QueueName[] = Object.values(QUEUE_NAMES);

/**
 * The BullMQ prefix of queue `name`: `${REDIS_PREFIX}bull`, its keys `<prefix>:<name>:…`. On a Redis
 * Cluster the prefix ends with the queue's own hash tag (`netinv:bull:{discovery-sync}`), BullMQ's
 * documented way to keep every key a script of that queue touches in one slot, one tag per queue
 * so the queues spread over the masters; the project's prefix stays outside the braces. On one Redis
 * the keys are as they always were (jobs queued before an upgrade are kept).
 */
export const queuePrefix = (config: Pick<AppConfig, 'redisPrefix'> & Partial<RedisConfig>, name: QueueName) =>
  config.redisClusterNodes?.length ? `${config.redisPrefix}bull:{${name}}` : `${config.redisPrefix}bull`;

/**
 * Connection options for BullMQ workers and worker-side queues on one Redis: `maxRetriesPerRequest:
 * null` is what BullMQ requires for blocking connections, and it lets a worker ride out a Redis
 * restart. (On a cluster the worker side shares one cluster client instead: Queues.workerConnection.)
 */
export function workerConnection(config: Pick<AppConfig, 'redisUrl'>): ConnectionOptions {
  return { ...redisOptionsFromUrl(config.redisUrl), maxRetriesPerRequest: null };
}

// ---- Settings (environment) ----------------------------------------------------------------

export interface QueueSettings {
  /** SERVER_POLL_INTERVAL_MS: how often each server_poll daemon is polled (30 s). */
  serverPollIntervalMs: number;
  /** SERVER_POLL_TIMEOUT_MS: timeout of each request to a daemon (10 s, as upstream). */
  serverPollTimeoutMs: number;
  /** SERVER_POLL_RECONCILE_MS: how often schedulers are matched to the daemons table (60 s). */
  serverPollReconcileMs: number;
  /** SERVER_POLL_CONCURRENCY: daemons polled at once per worker process (10, as upstream). */
  serverPollConcurrency: number;
  /** SERVER_POLL_ACK_WAIT_MS: how long a poll waits for its discovery-sync jobs before acknowledging (5 s). */
  serverPollAckWaitMs: number;
  /** DISCOVERY_SYNC_CONCURRENCY (4), DISCOVERY_SYNC_ATTEMPTS (5), DISCOVERY_SYNC_BACKOFF_MS (1 s, exponential). */
  discoverySyncConcurrency: number;
  discoverySyncAttempts: number;
  discoverySyncBackoffMs: number;
  /** DISCOVERY_SYNC_BATCH: hosts per discovery-sync job (100); each holds ~5 advisory locks per host while it runs. */
  discoverySyncBatch: number;
  /** VERSION_STATUS_INTERVAL_MS: re-evaluation of every daemon's version status (1 h). */
  versionStatusIntervalMs: number;
  /** MAINTENANCE_INTERVAL_MS: expired-session purge (1 h). */
  maintenanceIntervalMs: number;
  /** SHUTDOWN_TIMEOUT_MS: how long SIGTERM waits for running jobs / requests before exiting anyway (10 s). */
  shutdownTimeoutMs: number;
  /** WORKER_LOCK_DURATION_MS / WORKER_STALLED_INTERVAL_MS: BullMQ job lock and stalled-job check (30 s each). */
  lockDurationMs: number;
  stalledIntervalMs: number;
  /**
   * DISCOVERY_SYNC_TEST_DELAY_MS: test-only hook, a pause inside the ingest transaction so a test can
   * kill or stop the worker mid-job. Ignored when NODE_ENV=production.
   */
  discoverySyncTestDelayMs: number;
  /** DISCOVERY_SCHEDULE_RECONCILE_MS: how often discovery schedules' job schedulers are matched to the table (5 min). */
  scheduleReconcileMs: number;
  /**
   * DISCOVERY_SCHEDULE_MINUTE_MS: test-only, the length of a schedule's "minute" (every_minutes) and
   * jitter second ×60, so a test runs many intervals quickly. Always 60 000 when NODE_ENV=production.
   */
  scheduleMinuteMs: number;
}

/** The queues' settings from the variables of src/core/settings.ts. */
export function loadQueueSettings(env: Env = environment(), overrides: Partial<QueueSettings> = {}): QueueSettings {
  return {
    serverPollIntervalMs: setting('SERVER_POLL_INTERVAL_MS', env),
    serverPollTimeoutMs: setting('SERVER_POLL_TIMEOUT_MS', env),
    serverPollReconcileMs: setting('SERVER_POLL_RECONCILE_MS', env),
    serverPollConcurrency: setting('SERVER_POLL_CONCURRENCY', env),
    serverPollAckWaitMs: setting('SERVER_POLL_ACK_WAIT_MS', env),
    discoverySyncConcurrency: setting('DISCOVERY_SYNC_CONCURRENCY', env),
    discoverySyncAttempts: setting('DISCOVERY_SYNC_ATTEMPTS', env),
    discoverySyncBackoffMs: setting('DISCOVERY_SYNC_BACKOFF_MS', env),
    discoverySyncBatch: setting('DISCOVERY_SYNC_BATCH', env),
    versionStatusIntervalMs: setting('VERSION_STATUS_INTERVAL_MS', env),
    maintenanceIntervalMs: setting('MAINTENANCE_INTERVAL_MS', env),
    shutdownTimeoutMs: setting('SHUTDOWN_TIMEOUT_MS', env),
    lockDurationMs: setting('WORKER_LOCK_DURATION_MS', env),
    stalledIntervalMs: setting('WORKER_STALLED_INTERVAL_MS', env),
    discoverySyncTestDelayMs: setting('DISCOVERY_SYNC_TEST_DELAY_MS', env),
    scheduleReconcileMs: setting('DISCOVERY_SCHEDULE_RECONCILE_MS', env),
    scheduleMinuteMs: setting('DISCOVERY_SCHEDULE_MINUTE_MS', env),
    ...overrides,
  };
}

// ---- Job payloads ------------------------------------------------------------------------------

/** Mirrors `IngestContext` of src/modules/discovery/ingest.ts (kept structural to avoid a cycle). */
export interface SyncContext {
  organizationId: string;
  networkId: string;
  daemonId: string;
  discoveryId?: string;
}

/**
 * What a daemon reported in one poll (or a chunk of it), as it sent it: subnets, ingested first
 * because hosts refer to them, then hosts (DiscoveryHostRequest `{host, interfaces, ports, services}`),
 * ingested as one batch. Producers validate every entity before queueing it (the daemon routes'
 * schemas); the worker trusts its own queue.
 */
export interface DiscoverySyncJob {
  ctx: SyncContext;
  subnets: Array<Record<string, unknown>>;
  hosts: Array<Record<string, unknown>>;
}

/**
 * A job's return value, per entity in order, null when refused: the stored subnet in the daemon's
 * vocabulary; the stored host's id (its answer to the daemon is in host_discovery_digests).
 */
export interface DiscoverySyncResult {
  subnets: unknown[];
  hosts: Array<{ id: string } | null>;
}

export interface ServerPollJob {
  daemonId: string;
  /** The daemon's organization, so a poll reads one organization's rows; absent in jobs scheduled before it was added. */
  organizationId?: string;
}

/**
 * The id of a discovery-sync job: the same entities with the same content give the same id, so a
 * daemon re-sending unconfirmed entities (it does, every poll, until confirmed) adds no second job
 * while the first one is kept, and its stored result answers the confirmation. Changed content is a
 * new job.
 */
export function discoverySyncJobId(job: DiscoverySyncJob): string {
  const digest = createHash('sha256')
    .update(stableJson({ ctx: { ...job.ctx, discoveryId: undefined }, subnets: job.subnets, hosts: job.hosts }))
    .digest('hex').slice(0, 32);
  return `sync-${job.ctx.daemonId}-${digest}`;
}

/**
 * A poll's entities as jobs of at most `batchSize` hosts. Each job carries the poll's subnets that
 * its hosts are on (the first job: every subnet), so no host waits for another job's subnet;
 * ingesting a subnet twice is a no-op.
 */
export function discoverySyncBatches<H extends { interfaces?: unknown }>(
  subnets: Array<Record<string, unknown>>, hosts: H[], batchSize: number,
): Array<{ subnets: Array<Record<string, unknown>>; hosts: H[] }> {
  if (!hosts.length) return subnets.length ? [{ subnets, hosts: [] }] : [];
  const batches: Array<{ subnets: Array<Record<string, unknown>>; hosts: H[] }> = [];
  for (let start = 0; start < hosts.length; start += batchSize) {
    const chunk = hosts.slice(start, start + batchSize);
    const used = new Set(chunk.flatMap((h) => (Array.isArray(h.interfaces) ? h.interfaces : []).map((i: { subnet_id?: unknown }) => i.subnet_id)));
    batches.push({ subnets: start === 0 ? subnets : subnets.filter((s) => used.has(s.id)), hosts: chunk });
  }
  return batches;
}

/** JSON with object keys sorted, so equal content always hashes the same. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** Scheduler id of one daemon's repeatable poll job ("keyed by daemon id"). */
export const pollSchedulerId = (daemonId: string) => `poll-${daemonId}`;
export const RECONCILE_SCHEDULER_ID = 'reconcile-schedulers';

/**
 * Asks the server-poll worker to match its schedulers to the daemons table now (e.g. right after a
 * daemon is provisioned or deleted) instead of at the next periodic reconcile (SERVER_POLL_RECONCILE_MS).
 * Requests made while one is still waiting collapse into it.
 */
export async function requestSchedulerReconcile(queues: Pick<Queues, 'serverPoll'>): Promise<void> {
  await queues.serverPoll.add('reconcile', {}, { jobId: 'reconcile-now', removeOnComplete: true, removeOnFail: true });
}

// ---- Queues --------------------------------------------------------------------------------------

export const JOB_RETENTION = {
  removeOnComplete: { age: 24 * 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
} satisfies DefaultJobOptions;

export function defaultJobOptions(name: QueueName, settings: QueueSettings): DefaultJobOptions {
  if (name === QUEUE_NAMES.discoverySync) {
    return {
      ...JOB_RETENTION,
      attempts: Math.max(1, settings.discoverySyncAttempts),
      backoff: { type: 'exponential', delay: settings.discoverySyncBackoffMs },
    };
  }
  return { ...JOB_RETENTION };
}

export interface Queues {
  /** `${REDIS_PREFIX}bull`: the front of every queue's prefix (queuePrefix). */
  prefix: string;
  /** The BullMQ prefix of queue `name` (with its hash tag on a cluster): what its Worker must use too. */
  prefixOf(name: QueueName): string;
  /**
   * What this process's BullMQ Workers connect with: options (one Redis; BullMQ opens its own
   * connections) or, on a cluster, the worker side's one cluster client (BullMQ duplicates it for
   * its blocking commands; closed by close(), after the workers).
   */
  workerConnection: ConnectionOptions;
  byName: Record<QueueName, Queue>;
  maintenance: Queue;
  /** `poll` jobs carry a daemon id; the `reconcile` job carries nothing. */
  serverPoll: Queue<ServerPollJob | Record<string, never>>;
  discoverySync: Queue<DiscoverySyncJob>;
  versionStatus: Queue;
  /** Graphs to lay out (src/modules/topology/layout.ts LayoutJob). */
  topologyLayout: Queue;
  /** Webhook deliveries to attempt (src/modules/webhooks/delivery.ts DeliveryJob). */
  webhookDelivery: Queue;
  /** Discovery schedules' runs (`run` jobs of one scheduler per schedule) and `sync` / `reconcile` of those schedulers (workers/discoverySchedule.ts). */
  discoverySchedule: Queue;
  /** The alert sweep (workers/alertDelivery.ts): offline delays that passed, due alert e-mails. */
  alertDelivery: Queue;
  close(): Promise<void>;
}

/**
 * One Queue per name. `shared` (the API) makes every Queue use one ioredis connection that gives a
 * command up after one reconnection attempt: a scrape or a dashboard call must answer (with an
 * error) when Redis is down, not hang. Without it (the worker) each Queue gets worker-style options.
 */
export function openQueues(config: Pick<AppConfig, 'redisUrl' | 'redisClusterNodes' | 'redisPrefix'>, settings: QueueSettings, opts: { shared?: boolean } = {}): Queues {
  const prefix = `${config.redisPrefix}bull`;
  const prefixOf = (name: QueueName) => queuePrefix(config, name);
  // On one Redis the worker side passes options (each Queue and Worker its own connections, as
  // always); on a cluster it shares one cluster client (a cluster client per Queue and Worker would
  // be 6 × (masters + replicas) sockets for nothing).
  let sharedClient: RedisClient | undefined;
  let connection: ConnectionOptions;
  if (opts.shared || isCluster(config)) {
    sharedClient = createRedis(config, opts.shared ? 'queues' : 'bullmq');
    sharedClient.on('error', () => undefined); // reported by /api/ready and the callers
    connection = sharedClient as unknown as ConnectionOptions;
  } else {
    connection = workerConnection(config);
  }
  // The API process makes no Worker: its worker-side client is made only if asked for.
  let workerSide = opts.shared ? undefined : sharedClient;
  const make = (name: QueueName) => {
    const queue = new Queue(name, { connection, prefix: prefixOf(name), defaultJobOptions: defaultJobOptions(name, settings) });
    queue.on('error', () => undefined); // connection errors surface on the calls themselves
    return queue;
  };
  const byName = Object.fromEntries(ALL_QUEUES.map((n) => [n, make(n)])) as Record<QueueName, Queue>;
  return {
    prefix,
    prefixOf,
    get workerConnection(): ConnectionOptions {
      if (!isCluster(config)) return workerConnection(config);
      if (!workerSide) {
        workerSide = createRedis(config, 'bullmq');
        workerSide.on('error', () => undefined);
      }
      return workerSide as unknown as ConnectionOptions;
    },
    byName,
    maintenance: byName[QUEUE_NAMES.maintenance],
    serverPoll: byName[QUEUE_NAMES.serverPoll] as Queue<ServerPollJob | Record<string, never>>,
    discoverySync: byName[QUEUE_NAMES.discoverySync] as Queue<DiscoverySyncJob>,
    versionStatus: byName[QUEUE_NAMES.versionStatus],
    topologyLayout: byName[QUEUE_NAMES.topologyLayout],
    webhookDelivery: byName[QUEUE_NAMES.webhookDelivery],
    discoverySchedule: byName[QUEUE_NAMES.discoverySchedule],
    alertDelivery: byName[QUEUE_NAMES.alertDelivery],
    async close() {
      await Promise.allSettled(Object.values(byName).map((q) => q.close()));
      sharedClient?.disconnect();
      if (workerSide !== sharedClient) workerSide?.disconnect();
    },
  };
}

// ---- Metrics shared between processes ------------------------------------------------------------
//
// Design: job durations and worker-side event counts are produced in the worker process but must
// appear on the API's `/metrics` (one scrape target). Each finished job adds itself to a cumulative
// histogram kept in one Redis hash per queue (HINCRBY, atomic across any number of worker
// processes); event counters are Redis hashes too. The API reads them at scrape time. The values are
// monotonic across worker restarts and identical on every API process (aggregate them with max(),
// not sum()). Queue lengths are read from BullMQ at scrape time.

export const JOB_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export type JobOutcome = 'completed' | 'failed';

export interface HistogramSnapshot {
  labels: Record<string, string>;
  /** Cumulative counts per upper bound (the last one is +Inf). */
  buckets: { le: string; count: number }[];
  sum: number;
  count: number;
}

export class SharedMetricsStore {
  constructor(private readonly redis: RedisClient, private readonly redisPrefix: string) {}

  private jobKey(queue: string) {
    return `${this.redisPrefix}metrics:job_seconds:${queue}`;
  }

  private counterKey(name: string) {
    return `${this.redisPrefix}metrics:counter:${name}`;
  }

  /** Adds one job attempt's duration. Never throws: metrics must not fail a job. */
  async recordJob(queue: string, outcome: JobOutcome, seconds: number): Promise<void> {
    const bucket = JOB_DURATION_BUCKETS.find((b) => seconds <= b);
    const le = bucket === undefined ? '+Inf' : String(bucket);
    await this.redis
      .multi()
      .hincrby(this.jobKey(queue), `${outcome}|${le}`, 1)
      .hincrby(this.jobKey(queue), `${outcome}|count`, 1)
      .hincrbyfloat(this.jobKey(queue), `${outcome}|sum`, seconds)
      .exec()
      .catch(() => undefined);
  }

  async jobHistograms(queues: readonly string[]): Promise<HistogramSnapshot[]> {
    const out: HistogramSnapshot[] = [];
    for (const queue of queues) {
      const hash = await this.redis.hgetall(this.jobKey(queue));
      for (const outcome of ['completed', 'failed'] as const) {
        const count = Number(hash[`${outcome}|count`] ?? 0);
        if (!count) continue;
        let cumulative = 0;
        const buckets = [...JOB_DURATION_BUCKETS.map(String), '+Inf'].map((le) => {
          cumulative += Number(hash[`${outcome}|${le}`] ?? 0);
          return { le, count: cumulative };
        });
        out.push({ labels: { queue, status: outcome }, buckets, sum: Number(hash[`${outcome}|sum`] ?? 0), count });
      }
    }
    return out;
  }

  async incrementCounter(name: string, labels: Record<string, string>, by = 1): Promise<void> {
    await this.redis.hincrby(this.counterKey(name), stableJson(labels), by).catch(() => undefined);
  }

  async counterValues(name: string): Promise<{ labels: Record<string, string>; value: number }[]> {
    const hash = await this.redis.hgetall(this.counterKey(name));
    return Object.entries(hash).map(([labels, value]) => ({ labels: JSON.parse(labels) as Record<string, string>, value: Number(value) }));
  }
}

/** Worker-side event counters exposed on the API's /metrics. */
export const SHARED_COUNTERS = {
  versionStatusChanges: {
    name: 'daemon_version_status_changes_total',
    help: 'Changes of a daemon version status seen by the periodic re-evaluation (labels: from, to)',
    labelNames: ['from', 'to'],
  },
} as const;
