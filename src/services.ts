// The long-lived objects of a process, built once in src/app.ts and handed to every handler (a
// composition of modules' parts, so it lives above src/core and src/modules).
import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from './config.js';
import type { Logger } from './core/logger.js';
import type { ReadReplica } from './core/readReplica.js';
import type { RedisClient } from './core/redis.js';
import type { RateLimiter } from './http/rateLimiter.js';
import type { LoginGuard } from './modules/accounts/loginGuard.js';
import type { KeyUsageRecorder } from './modules/apiKeys/keyUsage.js';
import type { Metrics } from './http/metrics.js';
import type { QueueSettings, Queues } from './core/queues.js';
import type { EventHub } from './modules/events/hub.js';
import type { DrawnGraphCache } from './modules/topology/service.js';
import type { HeavyReadBudget } from './modules/topology/heavyReadBudget.js';

export interface Services {
  config: AppConfig;
  orm: MikroORM;
  /** One Redis server or a Redis Cluster client (src/core/redis.ts). */
  redis: RedisClient;
  logger: Logger;
  rateLimiter: RateLimiter;
  loginGuard: LoginGuard;
  keyUsage: KeyUsageRecorder;
  /** Every BullMQ queue (src/core/queues.ts), to enqueue work and to show it on /admin/queues and /metrics. */
  queues: Queues;
  queueSettings: QueueSettings;
  /** This process's Prometheus registry (src/http/metrics.ts). */
  metrics: Metrics;
  /** This process's listener for committed changes: sequences them and feeds the event streams. */
  events: EventHub;
  /** Topology graphs drawn by this process, served again while their network is unchanged. */
  topologyGraphs: DrawnGraphCache;
  /** Each organization's CPU time for heavy topology reads, shared through Redis (src/modules/topology/heavyReadBudget.ts). */
  heavyReadBudget: HeavyReadBudget;
  /** The standby of DATABASE_REPLICA_URL, when set: where lag-tolerant reads go (src/core/readReplica.ts). */
  readReplica?: ReadReplica;
}
