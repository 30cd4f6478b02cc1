// Every environment variable the server and its workers read, declared once: its name, what it
// does, its default and how its text is read. The processes check them all at start (one error
// naming every bad variable), the modules read their own through `setting()`, and
// docs/configuration.md is generated from this list (npm run docs:config; a test compares them).
// Nothing else reads process.env (test/core/settings.spec.ts scans src/ and workers/).
import { availableParallelism } from 'node:os';
import { parseAllowedNetworks } from './outboundPolicy.js';
import { parseClusterNodes } from './redis.js';
import { DEFAULT_SIGNUP_LIMIT_PER_HOUR, RATE_POLICIES, type BucketPolicy } from './tokenBucket.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** The process's environment: the one place it is read. */
export const environment = (): Env => process.env;

interface Spec<T> {
  group: Group;
  /** What it does, for people (one or two sentences, Markdown). */
  doc: string;
  /** The default as the documentation shows it. */
  shown: string;
  /** Its value from its text (undefined or empty: the default); throws a message without the name. */
  read(text: string | undefined, env: Env): T;
}

const GROUPS = ['Server', 'Database', 'Redis', 'Logs', 'Security and limits', 'Events and webhooks', 'Alerts and e-mail', 'Topology', 'Workers and queues', 'Daemons', 'Tests only'] as const;
type Group = (typeof GROUPS)[number];

const empty = (text: string | undefined): text is undefined => text === undefined || text.trim() === '';

function integer(group: Group, fallback: number, doc: string, o: { min?: number; max?: number; shown?: string } = {}): Spec<number> {
  const min = o.min ?? 0;
  return {
    group, doc, shown: o.shown ?? fallback.toLocaleString('en-US'),
    read: (text) => {
      if (empty(text)) return fallback;
      const n = Number(text);
      if (!Number.isInteger(n) || n < min || (o.max !== undefined && n > o.max)) {
        throw new Error(`must be a whole number${o.max !== undefined ? ` from ${min} to ${o.max}` : ` of at least ${min}`} (got '${text}')`);
      }
      return n;
    },
  };
}

/** Milliseconds, seconds or any amount that may have a fraction, not negative. */
function amount(group: Group, fallback: number, doc: string, shown?: string): Spec<number> {
  return {
    group, doc, shown: shown ?? fallback.toLocaleString('en-US'),
    read: (text) => {
      if (empty(text)) return fallback;
      const n = Number(text);
      if (!Number.isFinite(n) || n < 0) throw new Error(`must be a non-negative number (got '${text}')`);
      return n;
    },
  };
}

function flag(group: Group, fallback: boolean, doc: string): Spec<boolean> {
  return {
    group, doc, shown: String(fallback),
    read: (text) => {
      if (empty(text)) return fallback;
      const t = text.trim().toLowerCase();
      if (t !== 'true' && t !== 'false') throw new Error(`must be true or false (got '${text}')`);
      return t === 'true';
    },
  };
}

function text(group: Group, fallback: string, doc: string, shown = fallback ? `\`${fallback}\`` : 'unset'): Spec<string> {
  return { group, doc, shown, read: (t) => (empty(t) ? fallback : t.trim()) };
}

function optional(group: Group, doc: string, check?: (t: string) => string | undefined): Spec<string | undefined> {
  return {
    group, doc, shown: 'unset',
    read: (t) => {
      if (empty(t)) return undefined;
      const problem = check?.(t.trim());
      if (problem) throw new Error(`${problem} (got '${t}')`);
      return t.trim();
    },
  };
}

function choice<T extends string>(group: Group, values: readonly T[], fallback: T, doc: string): Spec<T> {
  return {
    group, doc, shown: `\`${fallback}\``,
    read: (t) => {
      if (empty(t)) return fallback;
      if (!values.includes(t.trim() as T)) throw new Error(`must be one of ${values.join(', ')} (got '${t}')`);
      return t.trim() as T;
    },
  };
}

/** A version a daemon is compared with, and its default. */
function daemonVersion(fallback: string, doc: string): Spec<string> {
  return {
    group: 'Daemons', doc, shown: `\`${fallback}\``,
    read: (t) => {
      if (empty(t)) return fallback;
      const problem = version(t.trim());
      if (problem) throw new Error(`${problem} (got '${t}')`);
      return t.trim();
    },
  };
}

function custom<T>(group: Group, shown: string, doc: string, read: (text: string | undefined, env: Env) => T): Spec<T> {
  return { group, doc, shown, read };
}

function absoluteUrl(t: string): string | undefined {
  let url: URL;
  try { url = new URL(t); } catch { return 'must be an absolute http(s) URL such as https://inventory.example.com'; }
  if (!['http:', 'https:'].includes(url.protocol) || url.search || url.hash) return 'must be an http(s) URL without query or fragment';
  return undefined;
}

const version = (t: string) => (/^v?\d+\.\d+\.\d+(?:[-+].*)?$/.test(t) ? undefined : 'is not a semver version (such as 0.14.13)');

/** One CSP source expression: 'none', 'self', or a scheme://host[:port] origin (a leading *. wildcard allowed). */
const FRAME_SOURCE = /^(?:'none'|'self'|https?:\/\/(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::\d{1,5})?)$/i;

function frameAncestors(t: string | undefined): string {
  const sources = (t ?? '').trim().split(/\s+/).filter(Boolean);
  if (!sources.length) return "'none'";
  const bad = sources.find((x) => !FRAME_SOURCE.test(x));
  if (bad) throw new Error(`must be 'none', 'self' or origins such as https://wiki.example.com, space-separated (got '${bad}')`);
  if (sources.includes("'none'") && sources.length > 1) throw new Error(`'none' cannot be combined with other sources (got '${t}')`);
  return sources.join(' ');
}

function bucketPolicy(t: string | undefined, fallback: BucketPolicy): BucketPolicy {
  if (empty(t)) return fallback;
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(t);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw new Error(`must be <burst>/<tokens per minute>, e.g. 150/300 (got '${t}')`);
  return { capacity: Number(m[1]), refillPerMinute: Number(m[2]) };
}

function secondsList(t: string | undefined, fallback: number[]): number[] {
  if (empty(t)) return fallback;
  const list = t.split(/[\s,]+/).filter(Boolean).map(Number);
  if (!list.length || list.some((n) => !Number.isFinite(n) || n < 0)) throw new Error(`must be a comma-separated list of seconds (got '${t}')`);
  return list;
}

/** A list of CIDRs (parseAllowedNetworks names its variable in its own message). */
const cidrs = (name: string) => (t: string | undefined) => parseAllowedNetworks(t, name);

const WEBHOOK_RETRY_DEFAULT = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];
const heavyReadRate = amount('Topology', 400, 'Each organization\'s CPU time (ms) for heavy topology reads, refilled per second (0: no budget); spent, heavy reads answer 429.');
const heavyReadBurst = amount('Topology', 10_000, 'The most of that budget (ms) an organization may save up.');
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const production = (env: Env) => env.NODE_ENV === 'production';

export const SETTINGS = {
  // Server
  PORT: integer('Server', 3000, 'The port the API, the web application and the API docs listen on.', { max: 65535, shown: '3000' }),
  HOST: optional('Server', 'The address to listen on; unset, every address (IPv4 and IPv6).'),
  PUBLIC_URL: optional('Server', 'Where agents and people on other machines reach this server (https://inventory.example.com), put into the agent\'s install commands; unset, the address the browser used.', absoluteUrl),
  TRUST_PROXY: flag('Server', false, 'Behind a reverse proxy: the client address is the first X-Forwarded-For address (anonymous rate limits, sign-ups, heavy reads).'),
  NODE_ENV: text('Server', '', '`production` turns the test-only knobs below off whatever they say.'),
  // Database
  DATABASE_URL: text('Database', 'postgres://postgres@127.0.0.1:5432/netinventory', 'The PostgreSQL database (`npm start` and the tests start one themselves when unset and none answers).'),
  DATABASE_REPLICA_URL: optional('Database', 'A streaming hot standby of DATABASE_URL. Unset, every read goes to the primary; set, reads that tolerate a little lag go to the standby (docs/scale-out.md).'),
  DATABASE_REPLICA_MAX_LAG_SECONDS: amount('Database', 10, 'A standby lagging more than this many seconds gets no reads.'),
  DATABASE_REPLICA_WAIT_MS: amount('Database', 2000, 'How long a read waits for the standby to replay its caller\'s last write, then reads from the primary.'),
  DATABASE_REPLICA_PROBE_MS: amount('Database', 1000, 'How often each API process measures the standby\'s lag.'),
  DATABASE_ROW_SECURITY: flag('Database', true, 'Row-level security as a second guard behind every statement\'s own organization predicate: the statements of an API request, a discovery-sync job and a layout job run as the role netinv_tenant with their organization (a topology thread\'s read too), and the policy on every tenant table shows and accepts only that organization\'s rows. Off, they run as the login role, the tables\' owner, which no policy holds. Work that crosses organizations on purpose (the event sequencer and streams, the webhook dispatcher, sweeps, retention, sign-in) and the statements marked as reading across organizations run as the owner either way.'),
  WORKER_DB_POOL: integer('Database', 20, 'Connections of each worker process\'s pool.', { min: 1 }),
  // Redis
  REDIS_URL: text('Redis', 'redis://127.0.0.1:6379', 'The Redis server (queues, rate limits, change announcements).'),
  REDIS_CLUSTER_NODES: custom('Redis', 'unset', 'Comma-separated `host:port` seeds of a Redis Cluster; when set, REDIS_URL is ignored and every connection is a cluster client.', (t) => parseClusterNodes(t)),
  REDIS_PREFIX: text('Redis', 'netinv:', 'Prefix of every Redis key and queue name, so that several deployments (and the tests) can share one Redis.'),
  // Logs
  LOG_LEVEL: choice('Logs', LOG_LEVELS, 'info', `One of ${LOG_LEVELS.join(', ')}.`),
  LOG_FORMAT: optional('Logs', '`pretty` (human lines) or `json` (one JSON object per line); unset, pretty on a terminal, JSON otherwise.',
    (t) => (['json', 'pretty'].includes(t) ? undefined : 'must be json or pretty')),
  // Security and limits
  SECURE_COOKIES: flag('Security and limits', false, 'Mark the session cookie Secure (behind HTTPS).'),
  CREATE_DEFAULT_NETWORK: flag('Security and limits', true, 'Registering also creates a first network named "Default".'),
  METRICS_TOKEN: optional('Security and limits', 'The bearer token /metrics (Prometheus) requires; unset, there is no /metrics.'),
  OPERATOR_EMAILS: custom('Security and limits', 'unset', 'Comma-separated e-mails of the operators who may open the queue dashboard (besides those granted with `npm run operator -- grant <email>`).',
    (t) => (t ?? '').split(',').map((e) => e.trim().toLowerCase()).filter(Boolean)),
  OPERATOR_ORGANIZATION_ID: optional('Security and limits', 'An organization whose Owners and Admins are operators.'),
  SECRETS_KEY: optional('Security and limits', 'The keys that seal stored credentials (webhook secrets, server_poll daemons\' keys, SNMP credentials): base64 of 32 bytes, comma-separated, the first sealing. Unset, read from SECRETS_KEY_FILE, made on first start (docs/secrets.md).'),
  SECRETS_KEY_FILE: optional('Security and limits', 'Where the sealing keys are kept when SECRETS_KEY is unset (default `data/secrets.key` in the installation).'),
  RATE_LIMIT_USER: custom('Security and limits', `${RATE_POLICIES.user.capacity}/${RATE_POLICIES.user.refillPerMinute}`, 'Each user\'s bucket (sessions and keys together) as `<burst>/<per minute>`. Raise it for a large import made of single requests.', (t) => bucketPolicy(t, RATE_POLICIES.user)),
  RATE_LIMIT_REDIS_TIMEOUT_MS: amount('Security and limits', 100, 'How long a request\'s rate limit waits for Redis before the in-process bucket answers.'),
  SIGNUP_LIMIT_PER_HOUR: integer('Security and limits', DEFAULT_SIGNUP_LIMIT_PER_HOUR, 'Sign-ups per client address per hour (0: no limit).'),
  DAEMON_ALLOWED_NETWORKS: custom('Security and limits', 'unset', 'CIDRs the server may call although its outbound policy refuses them (loopback, private ranges), e.g. `127.0.0.0/8` for a server_poll daemon on this machine.', cidrs('DAEMON_ALLOWED_NETWORKS')),
  SHARE_FRAME_ANCESTORS: custom('Security and limits', "`'none'`", 'Who may embed a share link\'s page in a frame: `\'none\'`, `\'self\'`, or origins such as `https://wiki.example.com`, space-separated. Every other page keeps frame-ancestors \'none\'.', frameAncestors),
  PASSWORD_HASH_COST_N: custom('Security and limits', '16384', 'scrypt\'s cost for new password hashes, a power of two from 1024 (the tests lower it; a stored hash keeps its own).', (t) => {
    if (empty(t)) return 16_384;
    const n = Number(t);
    if (!Number.isInteger(n) || n < 1024 || (n & (n - 1)) !== 0) throw new Error(`must be a power of two of at least 1024 (got '${t}')`);
    return n;
  }),
  // Events and webhooks
  EVENT_RETENTION_DAYS: amount('Events and webhooks', 90, 'How long the change feed keeps events; older cursors answer 410.'),
  EVENT_HEARTBEAT_MS: amount('Events and webhooks', 15_000, 'The event stream\'s comment heartbeat.'),
  EVENT_STREAM_BUFFER_BYTES: amount('Events and webhooks', 1024 * 1024, 'What may wait for one slow stream client before it is dropped.'),
  EVENT_RECHECK_MS: amount('Events and webhooks', 1000, 'How often every open event stream\'s credential is resolved again (revocations reach them at once; this is the safety net).'),
  EVENT_OUTBOX_POLL_MS: amount('Events and webhooks', 100, 'How often the event hub looks for writes no process announced (raw SQL, another server).'),
  WEBHOOK_RETRY_SCHEDULE: custom('Events and webhooks', WEBHOOK_RETRY_DEFAULT.join(','), 'Seconds before each attempt of a webhook delivery, the first included.', (t) => secondsList(t, WEBHOOK_RETRY_DEFAULT)),
  WEBHOOK_ALLOWED_NETWORKS: custom('Events and webhooks', 'unset', 'CIDRs a webhook may be sent to although the outbound policy refuses them (private ranges, loopback).', cidrs('WEBHOOK_ALLOWED_NETWORKS')),
  WEBHOOK_TIMEOUT_MS: amount('Events and webhooks', 15_000, 'One delivery attempt\'s time limit.'),
  WEBHOOK_SWEEP_MS: amount('Events and webhooks', 5000, 'How often the webhook worker looks for due deliveries.'),
  WEBHOOK_DELIVERY_CONCURRENCY: integer('Events and webhooks', 20, 'Deliveries each worker process sends at once.', { min: 1 }),
  // Alerts and e-mail
  SMTP_URL: optional('Alerts and e-mail', 'Where alert e-mails go (`smtp://user:password@host:587`; `smtps://…` for implicit TLS); unset, no e-mail is sent.'),
  SMTP_FROM: text('Alerts and e-mail', 'netinventory@localhost', 'The alert e-mails\' sender.'),
  SMTP_REQUIRE_TLS: flag('Alerts and e-mail', true, 'Refuse an SMTP server that does not offer STARTTLS.'),
  SMTP_CA_FILE: optional('Alerts and e-mail', 'A PEM file of the CA that signed the SMTP server\'s certificate, when not a public one.'),
  ALERT_SWEEP_MS: amount('Alerts and e-mail', 15_000, 'How often the alert worker reports hosts past their offline delay and sends due e-mails.'),
  // Topology
  TOPOLOGY_CACHE_ITEMS: amount('Topology', 50_000, 'Nodes and edges of drawn graphs each process keeps for unchanged networks (0: none).'),
  TOPOLOGY_THREADS: custom('Topology', 'CPUs − 1, at least 2', 'Threads that draw and lay out maps in each API process.', (t) => integer('Topology', Math.max(2, availableParallelism() - 1), '', { min: 1 }).read(t, {})),
  TOPOLOGY_TASKS_PER_ORG: integer('Topology', 1, 'Drawing tasks one organization may run at once in a process.', { min: 1 }),
  TOPOLOGY_QUEUE_PER_ORG: integer('Topology', 4, 'Drawing tasks one organization may have waiting; more answer 429.'),
  TOPOLOGY_TASK_TIMEOUT_MS: integer('Topology', 30_000, 'A drawing task running longer is stopped.', { min: 1 }),
  TOPOLOGY_REST_PERCENT: integer('Topology', 100, 'An organization\'s queued heavy reads rest this share (percent) of the last one\'s duration between them, so others get their turn.'),
  HEAVY_READ_BUDGET_MS_PER_SECOND: heavyReadRate,
  HEAVY_READ_BUDGET_BURST_MS: heavyReadBurst,
  HEAVY_READ_BUDGET_PER_ADDRESS_MS_PER_SECOND: custom('Topology', 'twice the organization\'s', 'The same budget per client address, paid as well as the organization\'s (0: off).',
    (t, env) => amount('Topology', 2 * heavyReadRate.read(env.HEAVY_READ_BUDGET_MS_PER_SECOND, env), '').read(t, env)),
  HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS: custom('Topology', 'twice the organization\'s', 'The most of the per-address budget an address may save up.',
    (t, env) => amount('Topology', 2 * heavyReadBurst.read(env.HEAVY_READ_BUDGET_BURST_MS, env), '').read(t, env)),
  // Workers and queues
  SERVER_POLL_INTERVAL_MS: integer('Workers and queues', 30_000, 'How often each server_poll daemon is polled.'),
  SERVER_POLL_TIMEOUT_MS: integer('Workers and queues', 10_000, 'The time limit of each request to a server_poll daemon.'),
  SERVER_POLL_RECONCILE_MS: integer('Workers and queues', 60_000, 'How often the poll schedulers are matched to the daemons.'),
  SERVER_POLL_CONCURRENCY: integer('Workers and queues', 10, 'Daemons each worker polls at once.'),
  SERVER_POLL_ACK_WAIT_MS: integer('Workers and queues', 5000, 'How long a poll waits for its discovery-sync jobs before acknowledging to the daemon.'),
  DISCOVERY_SYNC_CONCURRENCY: integer('Workers and queues', 4, 'Discovery batches each worker ingests at once.'),
  DISCOVERY_SYNC_ATTEMPTS: integer('Workers and queues', 5, 'Attempts of a discovery batch before it fails.'),
  DISCOVERY_SYNC_BACKOFF_MS: integer('Workers and queues', 1000, 'The first retry\'s delay (doubling).'),
  DISCOVERY_SYNC_BATCH: integer('Workers and queues', 100, 'Hosts per discovery-sync job (each holds about 5 advisory locks per host while it runs).'),
  VERSION_STATUS_INTERVAL_MS: integer('Workers and queues', 3_600_000, 'How often daemons\' version status is computed again.'),
  MAINTENANCE_INTERVAL_MS: integer('Workers and queues', 3_600_000, 'How often expired sessions are purged.'),
  SHUTDOWN_TIMEOUT_MS: integer('Workers and queues', 10_000, 'How long a stopping process waits for running jobs and requests.'),
  WORKER_LOCK_DURATION_MS: integer('Workers and queues', 30_000, 'A job\'s lock, renewed while it runs (BullMQ lockDuration).'),
  WORKER_STALLED_INTERVAL_MS: integer('Workers and queues', 30_000, 'How often jobs of dead workers are looked for (BullMQ stalledInterval).'),
  DISCOVERY_SCHEDULE_RECONCILE_MS: integer('Workers and queues', 300_000, 'How often discovery schedules\' job schedulers are matched to the table.'),
  // Daemons
  DAEMON_MIN_VERSION: daemonVersion('0.12.0', 'Daemons older than this are told they are unsupported.'),
  DAEMON_RECOMMENDED_VERSION: daemonVersion('0.14.13', 'Daemons older than this are told they are outdated.'),
  DAEMON_SUNSET_FLOOR: optional('Daemons', 'With DAEMON_SUNSET_DATE: daemons older than this are told they stop being supported on that date.', version),
  DAEMON_SUNSET_DATE: optional('Daemons', 'The date (YYYY-MM-DD) of DAEMON_SUNSET_FLOOR.'),
  // Tests only
  RATE_LIMIT_TEST_CLOCK: flag('Tests only', false, 'The rate limiter\'s clock is the ms count a test sets in Redis.'),
  DISCOVERY_SYNC_TEST_DELAY_MS: custom('Tests only', '0', 'A pause inside each discovery batch, so a test can stop a worker mid-job.',
    (t, env) => (production(env) ? 0 : integer('Tests only', 0, '').read(t, env))),
  DISCOVERY_SCHEDULE_MINUTE_MS: custom('Tests only', '60,000', 'The length of a schedule\'s "minute", so a test runs many intervals quickly.',
    (t, env) => (production(env) ? 60_000 : integer('Tests only', 60_000, '', { min: 1 }).read(t, env))),
} satisfies Record<string, Spec<unknown>>;

export type SettingName = keyof typeof SETTINGS;
export type SettingValue<N extends SettingName> = ReturnType<(typeof SETTINGS)[N]['read']>;

/** One variable's value from `env` (the process's by default); a bad one throws naming it. */
export function setting<N extends SettingName>(name: N, env: Env = environment()): SettingValue<N> {
  try {
    return SETTINGS[name].read(env[name], env) as SettingValue<N>;
  } catch (err) {
    const message = (err as Error).message;
    throw new Error(message.startsWith(name) ? message : `${name} ${message}`);
  }
}

/** Every declared variable's problem in `env`, one line each (empty: all good). */
export function settingProblems(env: Env = environment()): string[] {
  const problems: string[] = [];
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    try { setting(name, env); } catch (err) { problems.push((err as Error).message); }
  }
  return problems;
}

/** At a process's start: every variable read and checked, one error naming each bad one. */
export function assertSettings(env: Env = environment()): void {
  const problems = settingProblems(env);
  if (problems.length) throw new Error(`configuration: ${problems.join('; ')}`);
}

/** docs/configuration.md, made from the declaration. */
export function configurationMarkdown(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const lines = [
    '# Configuration',
    '',
    'Every environment variable the API and worker processes read, generated from `src/core/settings.ts`',
    '(`npm run docs:config`; a test fails when this file and the declaration differ). Each process checks',
    'them all when it starts and stops with one message naming every variable it could not read. Unset',
    'or empty means the default.',
    '',
  ];
  for (const group of GROUPS) {
    const entries = Object.entries(SETTINGS).filter(([, s]) => s.group === group);
    if (!entries.length) continue;
    lines.push(`## ${group}`, '', '| Variable | Default | What it does |', '|---|---|---|');
    for (const [name, s] of entries) lines.push(`| \`${name}\` | ${cell(s.shown)} | ${cell(s.doc)} |`);
    lines.push('');
  }
  return `${lines.join('\n')}`;
}
