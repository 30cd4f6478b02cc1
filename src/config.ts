// The API's configuration, made once from the environment variables declared in
// src/core/settings.ts (their meaning, defaults and checks are there, and in docs/configuration.md).
// Everything has a working default for a developer machine; DATABASE_URL and REDIS_URL override
// whatever scripts/services.ts found.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { environment, setting, type Env, type SettingName } from './core/settings.js';
import type { BucketPolicy } from './core/tokenBucket.js';
import type { HeavyReadBudgetPolicy } from './modules/topology/heavyReadBudget.js';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export interface AppConfig {
  port: number;
  /** HOST: the address the API listens on; unset, every address (IPv4 and IPv6). */
  host: string | undefined;
  /**
   * PUBLIC_URL: where agents and people on other machines reach this server (https://inventory.example.com),
   * put into the agent's install commands; unset, the address the browser used.
   */
  publicUrl: string | undefined;
  databaseUrl: string;
  /**
   * DATABASE_REPLICA_URL: a streaming hot standby of DATABASE_URL. Unset, every read goes to the
   * primary; set, reads that tolerate a little lag go to the standby (src/core/readReplica.ts).
   */
  databaseReplicaUrl: string | undefined;
  /** DATABASE_REPLICA_MAX_LAG_SECONDS: a standby lagging more than this gets no reads (10). */
  replicaMaxLagSeconds: number;
  /** DATABASE_REPLICA_WAIT_MS: how long a read waits for the standby to replay its caller's last write, then reads from the primary (2000). */
  replicaWaitMs: number;
  /** DATABASE_REPLICA_PROBE_MS: how often each API process measures the standby's lag (1000). */
  replicaProbeIntervalMs: number;
  /**
   * DATABASE_ROW_SECURITY: an API request's Db carries its scope's organization, so its statements
   * run under the tenant role and the row policies (src/core/db.ts, migration RowSecurity); off by default.
   */
  databaseRowSecurity: boolean;
  redisUrl: string;
  /**
   * REDIS_CLUSTER_NODES: comma-separated `host:port` seeds of a Redis Cluster; when set, REDIS_URL is
   * ignored and every connection is a cluster client (src/core/redis.ts).
   */
  redisClusterNodes: string[] | undefined;
  /** Prefix of every Redis key and queue name, so that tests (and tenants of one Redis) never collide. */
  redisPrefix: string;
  apiVersion: number;
  serverVersion: string;
  secureCookies: boolean;
  /** TRUST_PROXY: the client address is the first X-Forwarded-For address. */
  trustProxy: boolean;
  /** Register also creates a first network named "Default" (decisions §2). */
  createDefaultNetwork: boolean;
  metricsToken: string | undefined;
  /**
   * Who sees the operator surfaces (the queue dashboard shows every organization's jobs), besides
   * the users granted with `npm run operator -- grant <email>`: OPERATOR_EMAILS (comma-separated),
   * and OPERATOR_ORGANIZATION_ID (that organization's Owners and Admins). Nobody by default.
   */
  operatorEmails: string[];
  operatorOrganizationId: string | undefined;
  logLevel: string;
  /**
   * DAEMON_ALLOWED_NETWORKS: CIDRs the server may call although the outbound policy refuses them
   * (src/core/outboundPolicy.ts), e.g. 127.0.0.0/8 for a daemon on this machine.
   */
  daemonAllowedNetworks: string[];
  /** EVENT_RETENTION_DAYS: how long the change feed keeps events (90); older cursors are 410. */
  eventRetentionDays: number;
  /** EVENT_HEARTBEAT_MS: the event stream's comment heartbeat (15 s). */
  eventHeartbeatMs: number;
  /** EVENT_STREAM_BUFFER_BYTES: what may wait for one slow stream client before it is dropped (1 MiB). */
  eventStreamBufferBytes: number;
  /**
   * EVENT_RECHECK_MS: how often every open event stream's credential is resolved again (1 s), the
   * safety net behind revocations, which reach every process's streams before they answer.
   */
  eventRecheckMs: number;
  /** TOPOLOGY_CACHE_ITEMS: nodes and edges of drawn graphs this process keeps for unchanged networks (50,000; 0: none). */
  topologyCacheItems: number;
  /**
   * WEBHOOK_RETRY_SCHEDULE: seconds before each attempt of a webhook delivery, the first included
   * (Standard Webhooks' example: now, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
   */
  webhookRetrySchedule: number[];
  /** WEBHOOK_ALLOWED_NETWORKS: CIDRs a webhook may be sent to although the policy refuses them (private ranges, loopback). */
  webhookAllowedNetworks: string[];
  /** WEBHOOK_TIMEOUT_MS: one delivery attempt's time limit (15 s). */
  webhookTimeoutMs: number;
  /** RATE_LIMIT_REDIS_TIMEOUT_MS: how long a request's rate limit waits for Redis before the in-process bucket answers (100). */
  rateLimitRedisTimeoutMs: number;
  /** RATE_LIMIT_TEST_CLOCK=true, tests only: the buckets' clock is the ms count a test sets in Redis (src/http/rateLimiter.ts). */
  rateLimitTestClock: boolean;
  /**
   * RATE_LIMIT_USER=<burst>/<per minute>: each user's bucket (sessions and keys together), 150/300 by
   * default (decisions: rate limits). Raise it for a large import made of single requests.
   */
  userRateLimit: BucketPolicy;
  /**
   * SIGNUP_LIMIT_PER_HOUR: sign-ups (POST /api/auth/register) per client address per hour, 5 at once
   * then one every 12 minutes (5 by default; 0 = off). Each new organization brings its own buckets
   * and heavy-read budget, so sign-ups must not be cheap: one person signs up once, an office
   * behind one NAT address a few times in an hour.
   */
  signupLimitPerHour: number;
  /**
   * HEAVY_READ_BUDGET_MS_PER_SECOND (400; 0 = off) and HEAVY_READ_BUDGET_BURST_MS (10 000): each
   * organization's CPU time for heavy topology reads, refilled per second up to the burst
   * (src/modules/topology/heavyReadBudget.ts); spent, its heavy reads answer 429.
   */
  heavyReadBudget: HeavyReadBudgetPolicy;
  /**
   * HEAVY_READ_BUDGET_PER_ADDRESS_MS_PER_SECOND and HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS (each
   * twice the organization's by default: 800 and 20 000, off when it is; 0 = off): the same budget per client
   * address (ctx.ip; with TRUST_PROXY=true the first X-Forwarded-For address), paid as well as the
   * organization's, whichever organization the request is for: signing up many organizations from
   * one address does not multiply it. A heavy read runs only while both allow it, else 429.
   */
  heavyReadBudgetPerAddress: HeavyReadBudgetPolicy;
  /**
   * SECRETS_KEY: the keys that seal the credentials the server stores to use again (webhook signing
   * secrets, server_poll daemons' keys, SNMP credentials; src/core/secretBox.ts), base64 of 32 bytes,
   * comma-separated, the first sealing. Unset, they are read from SECRETS_KEY_FILE (data/secrets.key),
   * made on first start. Every process of one database needs the same keys (docs/secrets.md).
   */
  secretsKey: string | undefined;
  secretsKeyFile: string;
  /**
   * SMTP_URL: where alert e-mails go (smtp://user:password@host:587; smtps://… for implicit TLS);
   * unset, no e-mail is sent (the digests stay in the outbox). SMTP_FROM: their sender
   * (netinventory@localhost). SMTP_REQUIRE_TLS (true): refuse a server that does not offer STARTTLS.
   * SMTP_CA_FILE: a PEM file of the CA that signed the server's certificate, when not a public one.
   */
  smtpUrl: string | undefined;
  smtpFrom: string;
  smtpRequireTls: boolean;
  smtpCaFile: string | undefined;
  /** ALERT_SWEEP_MS: how often the alert worker reports hosts past their offline delay and sends due e-mails (15 s). */
  alertSweepMs: number;
  /**
   * SHARE_FRAME_ANCESTORS: who may embed a share link's page (/share/<token>) in a frame, as the
   * sources of its Content-Security-Policy `frame-ancestors`: 'none' (the default: nobody), 'self',
   * or origins such as https://wiki.example.com https://*.example.com, space-separated. Every other
   * page keeps frame-ancestors 'none' and X-Frame-Options DENY.
   */
  shareFrameAncestors: string;
}

/** The URL a person on this machine opens for an API listening on `host`:`port`. */
export function publicUrl(host: string | undefined, port: number): string {
  const name = !host || host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${name}:${port}`;
}

/** The one line said when the port is taken (a second `npm start`, or another program). */
export function portInUseMessage(host: string | undefined, port: number): string {
  return `port ${port} is already in use${host ? ` on ${host}` : ''}: is netinventory (or another program) running there? Stop it or choose another PORT.`;
}

export function loadConfig(overrides: Partial<AppConfig> = {}, env: Env = environment()): AppConfig {
  const get = <N extends SettingName>(name: N) => setting(name, env);
  // The per-address budget defaults to twice the organization's as configured (or overridden): off with it.
  const heavyReadBudget: HeavyReadBudgetPolicy = overrides.heavyReadBudget ?? { refillMsPerSecond: get('HEAVY_READ_BUDGET_MS_PER_SECOND'), burstMs: get('HEAVY_READ_BUDGET_BURST_MS') };
  return {
    port: get('PORT'),
    host: get('HOST'),
    publicUrl: get('PUBLIC_URL')?.replace(/\/+$/, ''),
    databaseUrl: get('DATABASE_URL'),
    databaseReplicaUrl: get('DATABASE_REPLICA_URL'),
    replicaMaxLagSeconds: get('DATABASE_REPLICA_MAX_LAG_SECONDS'),
    replicaWaitMs: get('DATABASE_REPLICA_WAIT_MS'),
    replicaProbeIntervalMs: get('DATABASE_REPLICA_PROBE_MS'),
    databaseRowSecurity: get('DATABASE_ROW_SECURITY'),
    redisUrl: get('REDIS_URL'),
    redisClusterNodes: get('REDIS_CLUSTER_NODES'),
    redisPrefix: get('REDIS_PREFIX'),
    apiVersion: 1,
    serverVersion: pkg.version,
    secureCookies: get('SECURE_COOKIES'),
    trustProxy: get('TRUST_PROXY'),
    createDefaultNetwork: get('CREATE_DEFAULT_NETWORK'),
    metricsToken: get('METRICS_TOKEN'),
    operatorEmails: get('OPERATOR_EMAILS'),
    operatorOrganizationId: get('OPERATOR_ORGANIZATION_ID'),
    logLevel: get('LOG_LEVEL'),
    daemonAllowedNetworks: get('DAEMON_ALLOWED_NETWORKS'),
    eventRetentionDays: get('EVENT_RETENTION_DAYS'),
    eventHeartbeatMs: get('EVENT_HEARTBEAT_MS'),
    eventStreamBufferBytes: get('EVENT_STREAM_BUFFER_BYTES'),
    eventRecheckMs: get('EVENT_RECHECK_MS'),
    topologyCacheItems: get('TOPOLOGY_CACHE_ITEMS'),
    webhookRetrySchedule: get('WEBHOOK_RETRY_SCHEDULE'),
    webhookAllowedNetworks: get('WEBHOOK_ALLOWED_NETWORKS'),
    webhookTimeoutMs: get('WEBHOOK_TIMEOUT_MS'),
    rateLimitRedisTimeoutMs: get('RATE_LIMIT_REDIS_TIMEOUT_MS'),
    rateLimitTestClock: get('RATE_LIMIT_TEST_CLOCK'),
    userRateLimit: get('RATE_LIMIT_USER'),
    signupLimitPerHour: get('SIGNUP_LIMIT_PER_HOUR'),
    heavyReadBudget,
    heavyReadBudgetPerAddress: {
      refillMsPerSecond: setting('HEAVY_READ_BUDGET_PER_ADDRESS_MS_PER_SECOND', { ...env, HEAVY_READ_BUDGET_MS_PER_SECOND: String(heavyReadBudget.refillMsPerSecond) }),
      burstMs: setting('HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS', { ...env, HEAVY_READ_BUDGET_BURST_MS: String(heavyReadBudget.burstMs) }),
    },
    secretsKey: get('SECRETS_KEY'),
    secretsKeyFile: path.resolve(get('SECRETS_KEY_FILE') ?? fileURLToPath(new URL('../data/secrets.key', import.meta.url))),
    smtpUrl: get('SMTP_URL'),
    smtpFrom: get('SMTP_FROM'),
    smtpRequireTls: get('SMTP_REQUIRE_TLS'),
    smtpCaFile: get('SMTP_CA_FILE'),
    alertSweepMs: get('ALERT_SWEEP_MS'),
    shareFrameAncestors: get('SHARE_FRAME_ANCESTORS'),
    ...overrides,
  };
}
