// Every Redis connection of the service is made here, so this is the one place that decides
// between one Redis server (REDIS_URL) and a Redis Cluster (REDIS_CLUSTER_NODES, which wins).
//
// On a cluster a script or MULTI may only touch keys of one hash slot. The rules the callers keep:
// - each BullMQ queue's keys carry a hash tag of its own (`{discovery-sync}`, src/core/queues.ts
//   queuePrefix), so BullMQ's scripts stay in one slot and the queues spread over the masters;
// - every other script touches one key, or keys that share a hash tag (`slotTag`): the login
//   guard's three keys per account (src/modules/accounts/loginGuard.ts); a rate limit bucket and a
//   stream lease set are one key each;
// - the project's prefix (REDIS_PREFIX) stays at the front of every key, outside the braces, so
//   tests and tenants of one Redis are still kept apart by key, whatever slot a key is in.
import { createHash } from 'node:crypto';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { AppConfig } from '../config.js';

/** A connection to one Redis server or to a Redis Cluster: both run the same commands. */
export type RedisClient = Redis | Cluster;

export type RedisConfig = Pick<AppConfig, 'redisUrl' | 'redisClusterNodes'>;

/**
 * What a connection is for, which decides how it behaves while Redis is away:
 * - `requests`: the API's per-request work (rate limit, login guard, stream leases, readiness):
 *   never queued, fails at once, reconnects in the background (the callers then answer locally);
 * - `queues`: the API's BullMQ queues (enqueueing, /metrics, /admin/queues): one retry, then an
 *   error, so a scrape or a dashboard call answers instead of hanging;
 * - `worker`: a worker process's own commands (locks, metrics): a few retries;
 * - `bullmq`: a worker process's BullMQ queues and workers: waits for Redis as long as it takes
 *   (`maxRetriesPerRequest: null`, which BullMQ requires for blocking commands);
 * - `subscriber`: pub/sub (SUBSCRIBE works on a Cluster client too: messages reach every node).
 */
export type RedisUse = 'requests' | 'queues' | 'worker' | 'bullmq' | 'subscriber';

const BEHAVIOUR: Record<RedisUse, RedisOptions> = {
  requests: { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 },
  queues: { enableOfflineQueue: true, maxRetriesPerRequest: 1, connectTimeout: 2000 },
  worker: { maxRetriesPerRequest: 3, connectTimeout: 5000 },
  bullmq: { maxRetriesPerRequest: null },
  subscriber: { maxRetriesPerRequest: null, connectTimeout: 5000 },
};

/** ioredis options from a `redis://` / `rediss://` URL (user, password, db number, TLS). */
export function redisOptionsFromUrl(redisUrl: string): { host: string; port: number; username?: string; password?: string; db: number; tls?: object } {
  const url = new URL(redisUrl);
  const db = Number(url.pathname.replace(/^\//, '') || 0);
  return {
    host: url.hostname || '127.0.0.1',
    port: Number(url.port || 6379),
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: Number.isInteger(db) ? db : 0,
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * REDIS_CLUSTER_NODES: comma-separated seeds, `host:port` (or `redis://user:password@host:port`,
 * `rediss://…` for TLS; the first seed's credentials are used for every node). Unset or empty: no
 * cluster. A bad entry stops the start with a message naming it.
 */
export function parseClusterNodes(text: string | undefined): string[] | undefined {
  const seeds = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!seeds.length) return undefined;
  for (const seed of seeds) {
    const ok = /^rediss?:\/\//.test(seed)
      ? (() => { try { return !!new URL(seed).port; } catch { return false; } })()
      : /^(\[[0-9a-fA-F:.]+\]|[^\s:/]+):\d{1,5}$/.test(seed);
    if (!ok) throw new Error(`REDIS_CLUSTER_NODES must be comma-separated host:port seeds (got '${seed}')`);
  }
  return seeds;
}

function clusterSeeds(seeds: string[]): { nodes: Array<{ host: string; port: number }>; auth: RedisOptions } {
  const nodes = seeds.map((seed) => {
    if (/^rediss?:\/\//.test(seed)) {
      const o = redisOptionsFromUrl(seed);
      return { host: o.host, port: o.port };
    }
    const at = seed.lastIndexOf(':');
    return { host: seed.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(seed.slice(at + 1)) };
  });
  const first = /^rediss?:\/\//.test(seeds[0]!) ? redisOptionsFromUrl(seeds[0]!) : undefined;
  const auth: RedisOptions = first ? { username: first.username, password: first.password, ...(first.tls ? { tls: first.tls } : {}) } : {};
  return { nodes, auth };
}

/**
 * Cluster-wide behaviour. A master that dies answers nothing until a replica is promoted
 * (cluster-node-timeout plus an election); a command meant for it is retried after
 * `retryDelayOnFailover` with a fresh slot map, up to `maxRedirections` times (16 × 300 ms ≈ 5 s),
 * before its caller gets the error (BullMQ workers then retry on their own).
 */
const CLUSTER_BEHAVIOUR: ClusterOptions = {
  retryDelayOnFailover: 300,
  retryDelayOnClusterDown: 300,
  slotsRefreshTimeout: 2000,
  scaleReads: 'master',
};

export const isCluster = (config: RedisConfig) => !!config.redisClusterNodes?.length;

/** A new connection for `use`: to the cluster when REDIS_CLUSTER_NODES is set, else to REDIS_URL. */
export function createRedis(config: RedisConfig, use: RedisUse): RedisClient {
  const behaviour = BEHAVIOUR[use];
  if (!isCluster(config)) return new Redis(config.redisUrl, behaviour);
  const { nodes, auth } = clusterSeeds(config.redisClusterNodes!);
  const { enableOfflineQueue, ...perNode } = behaviour;
  return new Cluster(nodes, {
    ...CLUSTER_BEHAVIOUR,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    redisOptions: { ...auth, ...perNode },
  });
}

/**
 * A hash tag for keys that one script or MULTI must find in the same slot: the same `text` gives
 * the same tag, and the tag holds no brace whatever `text` holds (hex of its SHA-256).
 */
export function slotTag(text: string): string {
  return `{${createHash('sha256').update(text).digest('hex').slice(0, 16)}}`;
}

/**
 * Deletes every key matching `pattern` (a test app's prefix at its end). On a cluster KEYS and a
 * multi-key DEL only see one node or one slot: each master is scanned and each key deleted alone.
 */
export async function deleteKeysMatching(redis: RedisClient, pattern: string): Promise<number> {
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let deleted = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      // Through the client, not the node: on a cluster it sends each key to its slot's master.
      deleted += (await Promise.all(keys.map((k) => redis.unlink(k)))).reduce((a, b) => a + b, 0);
    } while (cursor !== '0');
  }
  return deleted;
}
