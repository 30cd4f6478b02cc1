// Discovery ingestion benchmark (`node --import tsx bench/ingest.ts`): 1,000 daemon host reports
// (each 2 IP addresses with MACs, 5 ports, 3 services binding those ports) into an empty network,
// then the same batch again (nothing changed). See bench/INGEST.md.
//
// What runs, each on a database of its own (cloned from the test template, as the tests do) with a
// tenant, a fresh network, a registered daemon, one /16 subnet and a running discovery session:
//   queue    the discovery-sync QUEUE: 1,000 jobs enqueued, then a real BullMQ Worker of
//            workers/discoverySync.ts (same processor, same options) until all complete, at the
//            configured concurrency (DISCOVERY_SYNC_CONCURRENCY, 4) and at 1;
//   sync     ingestHost() directly (as the daemon route does, minus HTTP), sequential and N at once;
//   explain  EXPLAIN ANALYZE of every statement of 5 more hosts, new then unchanged (rolled-back savepoints; medians);
//   whatif   diagnostics: the proposed findHost change (SQL rewritten in this process only), 50 hosts
//            per transaction, synchronous_commit=off (bench database only), and a set-based prototype
//            (one statement per kind for the whole batch, rolled back) with row- and statement-level history;
//   profile  the queue pass under the V8 sampling profiler.
// Every pass is checked: 1,000 hosts, 2,000 IPs, 5,000 ports, 3,000 services, 5,000 bindings in the
// network, and no *_history row added by the unchanged pass.
//
// SQL statements are counted in this process: pg_stat_statements needs shared_preload_libraries
// (not set on this server), so `Db.prototype.query` (the statements ingest.ts issues) and
// `pg.Client.prototype.query` (everything on the wire, BEGIN/COMMIT included) are wrapped here.
// Node/PostgreSQL time split: process.cpuUsage(), /proc/<pid>/stat of this database's backends,
// pg_stat_database (active_time, idle_in_transaction_time, commits, tuples) and pg_stat_wal deltas.
//
// Environment: BENCH_INGEST_HOSTS (1000), BENCH_INGEST_PROFILE (1: CPU profile of one extra queue
// pass), BENCH_INGEST_WHATIF (1), BENCH_INGEST_SYNC_CONCURRENCY (4), BENCH_INGEST_CONCURRENCIES (1:
// queue concurrencies besides the configured one, e.g. "1,8"), BENCH_INGEST_QUIET_WAIT (5 s:
// before each pass, wait at most this long for the shared machine to be quiet), BENCH_INGEST_MAX_FOREIGN
// (30: the headline is measured again once if others used more than this % of one core meanwhile),
// DATABASE_URL, REDIS_URL.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import type { Job } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createOrm, Db } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { discoverySyncJobId, loadQueueSettings, openQueues, SharedMetricsStore, type DiscoverySyncJob, type QueueSettings } from '../src/core/queues.js';
import { ingestHost, type IngestContext } from '../src/modules/discovery/ingest.js';
import { daemonHostRequestBody } from '../src/modules/discovery/schemas.js';
import type { DaemonHostRequest } from '../src/modules/discovery/vocabulary.js';
import { versionPolicyFromEnv } from '../src/modules/daemons/versionStatus.js';
import { ensureServices } from '../scripts/services.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../test/daemons/world.js';
import { hostReport, postSubnet } from '../test/discovery/reports.js';
import { prepareTemplate, startTestApp, type TestApp } from '../test/support/app.js';
import { createNetwork, registerTenant } from '../test/support/world.js';
import type { WorkerServices } from '../workers/context.js';
import { startDiscoverySync } from '../workers/discoverySync.js';

const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const HOSTS = env('BENCH_INGEST_HOSTS', 1000);
const PROFILE = env('BENCH_INGEST_PROFILE', 1) === 1;
const WHATIF = env('BENCH_INGEST_WHATIF', 1) === 1;
const SYNC_CONCURRENCY = env('BENCH_INGEST_SYNC_CONCURRENCY', 4);
const OTHER_CONCURRENCIES = (process.env.BENCH_INGEST_CONCURRENCIES ?? '1').split(',').filter(Boolean).map(Number);
const CONFIGURED_CONCURRENCY = loadQueueSettings().discoverySyncConcurrency;
const TARGETS = { newHostsPerSec: 1000, unchangedHostsPerSec: 5000 };
const PER_HOST = { ips: 2, ports: 5, services: 3, bindings: 5 };
const PASS_TIMEOUT_MS = 120_000;
const QUIET_WAIT_MS = env('BENCH_INGEST_QUIET_WAIT', 5) * 1000;
const EXPLAIN_HOSTS = 5;
const MAX_FOREIGN_PERCENT = env('BENCH_INGEST_MAX_FOREIGN', 30);
const HEADLINE_ATTEMPTS = 2;

const started = performance.now();
const log = (line: string) => console.log(`[ingest ${String(Math.round((performance.now() - started) / 1000)).padStart(3)}s] ${line}`);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const percentile = (values: number[], p: number) => {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

// ---- Statement counting (in this process; src/ untouched) -------------------------------------

interface StatementStats { count: number; totalMs: number; samples: number[] }
const counters = { db: 0, wire: 0, wireBegin: 0, wireCommit: 0, byLabel: new Map<string, StatementStats>() };

/** A name for each statement ingest.ts issues (by what it does), so timings group meaningfully. */
function labelOf(sql: string): string {
  if (sql.includes('pg_advisory_xact_lock') && sql.includes('jsonb_to_recordset')) return 'lockAndCheck (locks + subnet check)';
  if (sql.includes('candidates as materialized')) return 'findHost (match + children as JSON)';
  if (sql.includes('host_taken')) return 'newFacts (taken ids, lineage)';
  if (/^\s*insert into hosts\b/.test(sql)) return 'insert hosts';
  if (/^\s*update hosts\b/.test(sql)) return 'update hosts (last_seen_at)';
  const upsert = /^\s*insert into (\w+)/.exec(sql);
  if (upsert) return `upsert ${upsert[1]}`;
  if (sql.includes('from bindings_history')) return 'binding ids taken';
  return sql.trim().replace(/\s+/g, ' ').slice(0, 60);
}

/**
 * The change proposed for src/modules/discovery/ingest.ts findHost(): `offset 0` in each LATERAL
 * subquery, so PostgreSQL cannot pull them up into hash joins over every address / host of the
 * network (the row estimate of jsonb_to_recordset is 100, which makes a hash join look cheaper than
 * 100 index probes): each reported address becomes the index probe the comment describes. Same
 * rows, same order. Applied here to the SQL text, only while `rewrite.findHost` is on.
 */
const FIND_HOST_REWRITES: Array<[string, string]> = [
  ['where i.subnet_id = x.subnet_id and i.ip_address = x.ip_address)', 'where i.subnet_id = x.subnet_id and i.ip_address = x.ip_address offset 0)'],
  ['where i.network_id = ? and i.mac_address = x.mac_address)', 'where i.network_id = ? and i.mac_address = x.mac_address offset 0)'],
  ['(select host_id from ip_addresses i where i.id = x.id)', '(select host_id from ip_addresses i where i.id = x.id offset 0)'],
  ['where h.id = c.host_id and h.network_id = ?) h', 'where h.id = c.host_id and h.network_id = ? offset 0) h'],
];
const rewrite = { findHost: false };
function rewriteFindHost(sql: string): string {
  let out = sql;
  for (const [from, to] of FIND_HOST_REWRITES) {
    if (!out.includes(from)) throw new Error(`findHost rewrite: '${from}' not found (src/modules/discovery/ingest.ts changed?)`);
    out = out.replace(from, to);
  }
  return out;
}

const originalDbQuery = Db.prototype.query;
Db.prototype.query = function patchedQuery<T>(this: Db, text: string, params: unknown[] = []): Promise<T[]> {
  counters.db += 1;
  const t0 = performance.now();
  const sql = rewrite.findHost && text.includes('candidates as materialized') ? rewriteFindHost(text) : text;
  const result = originalDbQuery.call(this, sql, params) as Promise<T[]>;
  const label = labelOf(sql);
  void result.then(() => {
    const ms = performance.now() - t0;
    let s = counters.byLabel.get(label);
    if (!s) counters.byLabel.set(label, (s = { count: 0, totalMs: 0, samples: [] }));
    s.count += 1;
    s.totalMs += ms;
    if (s.samples.length < 20_000) s.samples.push(ms);
  }, () => undefined);
  return result;
};

type PgQuery = (this: pg.Client, ...args: unknown[]) => unknown;
const originalPgQuery = pg.Client.prototype.query as unknown as PgQuery;
(pg.Client.prototype as unknown as { query: PgQuery }).query = function patchedPgQuery(this: pg.Client, ...args: unknown[]) {
  counters.wire += 1;
  const first = args[0];
  const text = typeof first === 'string' ? first : (first as { text?: string } | null)?.text ?? '';
  if (/^\s*begin\b/i.test(text) || /^\s*start transaction/i.test(text)) counters.wireBegin += 1;
  else if (/^\s*commit\b/i.test(text)) counters.wireCommit += 1;
  return originalPgQuery.apply(this, args);
};

function resetCounters() {
  counters.db = 0;
  counters.wire = 0;
  counters.wireBegin = 0;
  counters.wireCommit = 0;
  counters.byLabel = new Map();
}

function statementSummary(hosts: number) {
  return {
    ingestStatements: counters.db,
    ingestStatementsPerHost: round(counters.db / hosts, 2),
    wireQueries: counters.wire,
    wireQueriesPerHost: round(counters.wire / hosts, 2),
    transactions: counters.wireBegin,
    commits: counters.wireCommit,
    byStatement: [...counters.byLabel.entries()]
      .map(([label, s]) => ({
        statement: label, count: s.count, perHost: round(s.count / hosts, 2), totalMs: Math.round(s.totalMs),
        meanMs: round(s.totalMs / s.count, 2), p50Ms: round(percentile(s.samples, 50), 2), p95Ms: round(percentile(s.samples, 95), 2),
      }))
      .sort((a, b) => b.totalMs - a.totalMs),
  };
}

// ---- Machine / process / PostgreSQL measurements ----------------------------------------------

const CLK_TCK = 100; // Linux USER_HZ

function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK; // utime + stime
  } catch {
    return 0;
  }
}

/** CPU of every process named `comm` (postgres: backends of all databases, WAL writer, checkpointer…). */
function cpuOfProcesses(comm: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) total += procCpuMs(Number(entry));
    } catch {
      /* gone */
    }
  }
  return total;
}

function machineTicks(): { busy: number; total: number; softirq: number } {
  // user nice system idle iowait irq softirq steal …
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3]! + (cpu[4] ?? 0);
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total, softirq: (cpu[5] ?? 0) + (cpu[6] ?? 0) };
}

/** Waits (bounded) until the machine is quiet: others' runs on this shared 2-core machine distort the numbers. */
async function waitForQuiet(maxMs: number): Promise<number> {
  const deadline = performance.now() + maxMs;
  for (;;) {
    const a = machineTicks();
    await sleep(500);
    const b = machineTicks();
    const busy = (100 * (b.busy - a.busy)) / Math.max(1, b.total - a.total);
    if (busy < 15 || performance.now() > deadline) return round(busy);
  }
}

class Admin {
  private constructor(private readonly client: pg.Client) {}
  static async open(databaseUrl: string): Promise<Admin> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return new Admin(client);
  }
  async rows<T = Record<string, any>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await originalPgQuery.call(this.client, sql, params) as pg.QueryResult).rows as T[];
  }
  close() {
    return this.client.end();
  }
}

interface Snapshot {
  nodeCpu: NodeJS.CpuUsage;
  machine: { busy: number; total: number; softirq: number };
  backends: Map<number, number>;
  postgresAllMs: number;
  redisServerMs: number;
  redisCalls: number;
}

interface StatsSnapshot {
  db: Record<string, number>;
  wal: Record<string, number>;
}

async function redisCommandCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

/** CPU counters, taken right at the start and the end of the measured work. */
async function snapshot(admin: Admin, database: string, redis: Redis): Promise<Snapshot> {
  const pids = await admin.rows<{ pid: number }>(`select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [database]);
  return {
    nodeCpu: process.cpuUsage(),
    machine: machineTicks(),
    backends: new Map(pids.map((p) => [p.pid, procCpuMs(p.pid)])),
    postgresAllMs: cpuOfProcesses('postgres'),
    redisServerMs: cpuOfProcesses('redis-server'),
    redisCalls: await redisCommandCalls(redis),
  };
}

/** Cumulative PostgreSQL statistics of the database (read once the backends have flushed them). */
async function statsSnapshot(admin: Admin, database: string): Promise<StatsSnapshot> {
  const [db] = await admin.rows(
    `select xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched, blks_hit, blks_read,
            active_time, idle_in_transaction_time, session_time
     from pg_stat_database where datname = $1`, [database]);
  const [wal] = await admin.rows(`select wal_records, wal_bytes, wal_write, wal_sync from pg_stat_wal`);
  const numbers = (r: Record<string, unknown> | undefined) => Object.fromEntries(Object.entries(r ?? {}).map(([k, v]) => [k, Number(v)]));
  return { db: numbers(db), wal: numbers(wal) };
}

/** pg_stat_database is flushed by a backend when it exits, or when idle but at most once a second: wait for it. */
const settleStats = () => sleep(500);

function delta(before: Snapshot & StatsSnapshot, after: Snapshot & StatsSnapshot, hosts: number, wallMs: number) {
  const nodeUserMs = (after.nodeCpu.user - before.nodeCpu.user) / 1000;
  const nodeSystemMs = (after.nodeCpu.system - before.nodeCpu.system) / 1000;
  const nodeMs = nodeUserMs + nodeSystemMs;
  let backendMs = 0;
  for (const [pid, ms] of after.backends) backendMs += ms - (before.backends.get(pid) ?? 0);
  const machineBusyMs = ((after.machine.busy - before.machine.busy) * 1000) / CLK_TCK;
  const machineTotalMs = ((after.machine.total - before.machine.total) * 1000) / CLK_TCK;
  const postgresAllMs = after.postgresAllMs - before.postgresAllMs;
  const redisMs = after.redisServerMs - before.redisServerMs;
  const d = (k: string) => (after.db[k] ?? 0) - (before.db[k] ?? 0);
  const w = (k: string) => (after.wal[k] ?? 0) - (before.wal[k] ?? 0);
  return {
    cpu: {
      nodeMs: Math.round(nodeMs), nodeMsPerHost: round(nodeMs / hosts, 2),
      /** system = the kernel on this process's behalf: mostly loopback TCP to PostgreSQL and Redis. */
      nodeUserMs: Math.round(nodeUserMs), nodeSystemMs: Math.round(nodeSystemMs),
      postgresBackendsMs: Math.round(backendMs), postgresBackendsMsPerHost: round(backendMs / hosts, 2),
      postgresAllProcessesMs: Math.round(postgresAllMs),
      redisServerMs: Math.round(redisMs), redisServerMsPerHost: round(redisMs / hosts, 2),
      machineBusyMs: Math.round(machineBusyMs),
      machineIrqSoftirqMs: Math.round(((after.machine.softirq - before.machine.softirq) * 1000) / CLK_TCK),
      machineBusyPercent: round((100 * machineBusyMs) / Math.max(1, machineTotalMs)),
      /** CPU of the machine spent by none of this process, postgres, redis-server (others' runs, irq/softirq: loopback TCP…). */
      otherMs: Math.round(machineBusyMs - nodeMs - postgresAllMs - redisMs),
      /** Others' load during the pass (other processes, other databases' backends), in % of one core: high = numbers distorted. */
      foreignPercentOfOneCore: round((100 * Math.max(0, machineBusyMs - nodeMs - backendMs - redisMs - ((after.machine.softirq - before.machine.softirq) * 1000) / CLK_TCK)) / wallMs),
      coresUsedByNode: round(nodeMs / wallMs, 2),
      coresUsedByPostgresBackends: round(backendMs / wallMs, 2),
    },
    postgres: {
      commits: d('xact_commit'), rollbacks: d('xact_rollback'),
      tuplesInserted: d('tup_inserted'), tuplesUpdated: d('tup_updated'), tuplesDeleted: d('tup_deleted'),
      tuplesInsertedPerHost: round(d('tup_inserted') / hosts, 1), tuplesUpdatedPerHost: round(d('tup_updated') / hosts, 1), tuplesDeletedPerHost: round(d('tup_deleted') / hosts, 1),
      blocksHit: d('blks_hit'), blocksRead: d('blks_read'),
      /** Time backends of this database spent executing statements / sat in an open transaction waiting for the client. */
      activeMs: Math.round(d('active_time')), activeMsPerHost: round(d('active_time') / hosts, 2),
      idleInTransactionMs: Math.round(d('idle_in_transaction_time')), idleInTransactionMsPerHost: round(d('idle_in_transaction_time') / hosts, 2),
      walRecords: w('wal_records'), walBytesPerHost: Math.round(w('wal_bytes') / hosts), walWrites: w('wal_write'), walSyncs: w('wal_sync'),
    },
    redisCommands: after.redisCalls - before.redisCalls,
    redisCommandsPerHost: round((after.redisCalls - before.redisCalls) / hosts, 1),
  };
}

// ---- The world: a fresh database, tenant, network, daemon, subnet, session ------------------------

interface World {
  app: TestApp;
  database: string;
  admin: Admin;
  ctx: Required<IngestContext>;
  subnetId: string;
  reports: DaemonHostRequest[];
}

/** Worlds not dropped yet: a failed run drops them on its way out. */
const openWorlds = new Set<World>();

async function makeWorld(label: string): Promise<World> {
  const app = await startTestApp({ logLevel: 'silent' });
  const database = new URL(app.databaseUrl).pathname.slice(1);
  const t = await registerTenant(app.url, `ingest-${label}`);
  const networkId = await createNetwork(app.url, t.owner, `Ingest bench ${label}`);
  const daemon = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, networkId)).key);
  await registerDaemon(daemon, networkId);
  const subnet = await postSubnet(daemon, networkId, '10.20.0.0/16');
  const sessionId = randomUUID();
  const admin = await Admin.open(app.databaseUrl);
  await admin.rows(
    `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, started_at)
     values ($1, $2, $3, $4, $5::jsonb, 'Scanning', now())`,
    [sessionId, t.orgId, networkId, daemon.id, JSON.stringify({ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' })],
  );
  const ctx = { organizationId: t.orgId, networkId, daemonId: daemon.id, discoveryId: sessionId };
  const w: World = { app, database, admin, ctx, subnetId: subnet.id as string, reports: makeReports(daemon, networkId, subnet.id as string, HOSTS) };
  openWorlds.add(w);
  return w;
}

async function dropWorld(w: World) {
  openWorlds.delete(w);
  await w.admin.close().catch(() => undefined);
  await w.app.close();
}

const hex2 = (n: number) => (n & 255).toString(16).padStart(2, '0').toUpperCase();
const ipOf = (n: number) => `10.20.${(n >> 8) & 255}.${n & 255}`;
const macOf = (n: number) => `02:00:00:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`;

/** `count` distinct hosts as a Scanopy daemon reports them (the fixtures' POST /api/v1/hosts/discovery body). */
function makeReports(daemon: { id: string }, networkId: string, subnetId: string, count: number, offset = 0): DaemonHostRequest[] {
  return Array.from({ length: count }, (_, k) => {
    const i = k + offset;
    const a = 256 + 2 * i; // skip 10.20.0.x
    return hostReport(daemon as never, networkId, {
      hostname: `host-${i}.bench.lan`,
      interfaces: [
        { subnet_id: subnetId, ip_address: ipOf(a), mac_address: macOf(a), name: 'eth0' },
        { subnet_id: subnetId, ip_address: ipOf(a + 1), mac_address: macOf(a + 1), name: 'eth1' },
      ],
      ports: [{ number: 22 }, { number: 80 }, { number: 443 }, { number: 5432 }, { number: 161, protocol: 'Udp' }],
      services: [{ name: 'OpenSSH', ports: [22] }, { name: 'Nginx', ports: [80, 443] }, { name: 'PostgreSQL', ports: [5432, 161] }],
    }) as unknown as DaemonHostRequest;
  });
}

/** Live rows of the network (the daemon's own host, made by register, aside) and all *_history rows. */
async function inventory(w: World) {
  const [row] = await w.admin.rows(
    `with mine as (select id from hosts where network_id = $1 and id not in (select host_id from daemons where host_id is not null))
     select (select count(*)::int from mine) as hosts,
            (select count(*)::int from ip_addresses where host_id in (select id from mine)) as ips,
            (select count(*)::int from ports where host_id in (select id from mine)) as ports,
            (select count(*)::int from services where host_id in (select id from mine)) as services,
            (select count(*)::int from bindings b join services s on s.id = b.service_id where s.host_id in (select id from mine)) as bindings,
            (select count(*)::int from hosts_history where network_id = $1) as hosts_history,
            (select count(*)::int from ip_addresses_history where network_id = $1) as ip_addresses_history,
            (select count(*)::int from ports_history where network_id = $1) as ports_history,
            (select count(*)::int from services_history where network_id = $1) as services_history,
            (select count(*)::int from bindings_history where network_id = $1) as bindings_history,
            (select count(*)::int from subnets_history where network_id = $1) as subnets_history`,
    [w.ctx.networkId],
  );
  return row as Record<string, number>;
}

/** Exactly the batch in the network; the unchanged pass (`before` given) adds no history row. */
function verify(inv: Record<string, number>, hosts: number, before?: Record<string, number>) {
  const expected = { hosts, ips: hosts * PER_HOST.ips, ports: hosts * PER_HOST.ports, services: hosts * PER_HOST.services, bindings: hosts * PER_HOST.bindings };
  const problems: string[] = [];
  for (const [k, v] of Object.entries(expected)) if (inv[k] !== v) problems.push(`${k}: ${inv[k]} (expected ${v})`);
  const historyAdded: Record<string, number> = {};
  if (before) {
    for (const k of Object.keys(inv).filter((k) => k.endsWith('_history'))) {
      historyAdded[k] = inv[k]! - before[k]!;
      if (historyAdded[k] !== 0) problems.push(`${k}: +${historyAdded[k]} rows in the unchanged pass`);
    }
  }
  return { ok: problems.length === 0, problems, counts: inv, ...(before ? { historyRowsAdded: historyAdded } : {}) };
}

// ---- Worker services (as workers/context.ts builds them, on the world's database and prefix) ----

async function workerServices(w: World, concurrency: number, poolMax: number): Promise<WorkerServices & { close(): Promise<void> }> {
  const config = w.app.services.config;
  const settings: QueueSettings = loadQueueSettings(process.env, { discoverySyncConcurrency: concurrency });
  const orm = await createOrm(config.databaseUrl, poolMax);
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 3, connectTimeout: 5000 });
  const queues = openQueues(config, settings);
  const services: WorkerServices = {
    config, orm, redis, logger: createLogger('silent'), queues, settings,
    metrics: new SharedMetricsStore(redis, config.redisPrefix), versionPolicy: versionPolicyFromEnv(),
  };
  return {
    ...services,
    async close() {
      await queues.close();
      redis.disconnect();
      await orm.close(true);
    },
  };
}

// ---- Passes ------------------------------------------------------------------------------------

interface PassResult {
  pass: 'new' | 'unchanged';
  hosts: number;
  wallMs: number;
  hostsPerSec: number;
  [key: string]: unknown;
}

/** Runs `work` with counters and snapshots around it. */
async function measured(
  w: World, pass: 'new' | 'unchanged', hosts: number, work: () => Promise<Record<string, unknown>>, finish: () => Promise<void>,
): Promise<PassResult> {
  const historyBefore = pass === 'unchanged' ? await inventory(w) : undefined;
  const machineBusyBeforePercent = await waitForQuiet(QUIET_WAIT_MS);
  const statsBefore = await statsSnapshot(w.admin, w.database);
  const before = { ...(await snapshot(w.admin, w.database, w.app.services.redis)), ...statsBefore };
  resetCounters();
  const t0 = performance.now();
  const extra = await work();
  const wallMs = performance.now() - t0;
  const statements = statementSummary(hosts);
  const atEnd = await snapshot(w.admin, w.database, w.app.services.redis);
  // Backends flush pg_stat_database when idle at most once a second, or for good when they exit:
  // the pass's own pool is closed, so every backend that did the work has reported it.
  await finish();
  await settleStats();
  const after = { ...atEnd, ...(await statsSnapshot(w.admin, w.database)) };
  const result: PassResult = {
    pass, hosts, wallMs: Math.round(wallMs), hostsPerSec: round((hosts * 1000) / wallMs), machineBusyBeforePercent,
    ...extra,
    statements,
    resources: delta(before, after, hosts, wallMs),
    verification: verify(await inventory(w), HOSTS, historyBefore),
  };
  if (!(result.verification as { ok: boolean }).ok) log(`  VERIFICATION FAILED: ${(result.verification as { problems: string[] }).problems.join('; ')}`);
  return result;
}

/** Enqueues every report as a discovery-sync job, then runs a real Worker until all are done. */
async function queuePass(w: World, pass: 'new' | 'unchanged', concurrency: number, poolMax: number, tag: string, profile?: Session) {
  const services = await workerServices(w, concurrency, poolMax);
  const queue = services.queues.discoverySync;
  await queue.waitUntilReady();
  const jobs = w.reports.map((payload) => {
    const data: DiscoverySyncJob = { kind: 'host', ctx: w.ctx, payload: payload as unknown as Record<string, unknown> };
    // The producers' deterministic id, plus the pass: the same content re-sent while the first job
    // is kept would otherwise be deduplicated (which is the point in production, not here).
    return { name: 'host', data, opts: { jobId: `${discoverySyncJobId(data, payload.host.id)}-${tag}-${pass}` } };
  });
  const e0 = performance.now();
  for (let i = 0; i < jobs.length; i += 250) await queue.addBulk(jobs.slice(i, i + 250));
  const enqueueMs = performance.now() - e0;
  const waiting = await queue.getWaitingCount();
  if (waiting !== jobs.length) throw new Error(`expected ${jobs.length} waiting jobs, found ${waiting}`);

  const result = await measured(w, pass, jobs.length, async () => {
    const processing: number[] = [];
    const queueWait: number[] = [];
    let completed = 0;
    let failedAttempts = 0;
    const failures: string[] = [];
    if (profile) await profile.post('Profiler.start');
    const t0 = performance.now();
    const worker = await startDiscoverySync(services);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`queue pass timed out after ${PASS_TIMEOUT_MS} ms (${completed} completed)`)), PASS_TIMEOUT_MS);
      const done = () => {
        if (completed + failures.length >= jobs.length) {
          clearTimeout(timer);
          resolve();
        }
      };
      worker.on('completed', (job: Job) => {
        completed += 1;
        if (job.processedOn && job.finishedOn) processing.push(job.finishedOn - job.processedOn);
        if (job.processedOn) queueWait.push(job.processedOn - job.timestamp);
        done();
      });
      worker.on('failed', (job, err) => {
        failedAttempts += 1;
        if (!job || job.attemptsMade >= (job.opts.attempts ?? 1) || err.name === 'UnrecoverableError') {
          failures.push(err.message);
          done();
        }
      });
    });
    const wallMs = performance.now() - t0;
    const cpuProfile = profile ? (await profile.post('Profiler.stop')).profile : undefined;
    await worker.close();
    return {
      path: 'queue', concurrency, poolMax,
      jobs: jobs.length, jobsPerSec: round((jobs.length * 1000) / wallMs), completed, failed: failures.length, failedAttempts, firstFailures: failures.slice(0, 3),
      enqueueMs: Math.round(enqueueMs), enqueuePerSec: Math.round((jobs.length * 1000) / enqueueMs),
      jobMs: { p50: percentile(processing, 50), p95: percentile(processing, 95), p99: percentile(processing, 99), max: percentile(processing, 100), mean: round(processing.reduce((a, b) => a + b, 0) / Math.max(1, processing.length)) },
      ...(cpuProfile ? { cpuProfile: summarizeProfile(cpuProfile) } : {}),
    };
  }, async () => {
    await queue.obliterate({ force: true });
    await services.close();
  });
  return result;
}

/** ingestHost() directly (the synchronous path: validation as the route does, one transaction per host), `concurrency` at once. */
async function syncPass(w: World, pass: 'new' | 'unchanged', concurrency: number, hostsPerTransaction = 1) {
  const orm = await createOrm(w.app.databaseUrl, 10); // as the API's pool (src/core/db.ts), closed after the pass
  return measured(w, pass, w.reports.length, async () => {
    let next = 0;
    const batches: DaemonHostRequest[][] = [];
    for (let i = 0; i < w.reports.length; i += hostsPerTransaction) batches.push(w.reports.slice(i, i + hostsPerTransaction));
    const latencies: number[] = [];
    const runner = async () => {
      while (next < batches.length) {
        const batch = batches[next++]!;
        const t0 = performance.now();
        const db = new Db(orm.em.fork());
        await db.transaction(async (tx) => {
          for (const report of batch) {
            const { value, error } = daemonHostRequestBody.validate(report, { abortEarly: true, convert: true });
            if (error) throw error;
            await ingestHost(tx, w.ctx, value as DaemonHostRequest);
          }
        });
        latencies.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, runner));
    return {
      path: 'sync', concurrency, hostsPerTransaction,
      transactionMs: { p50: round(percentile(latencies, 50), 2), p95: round(percentile(latencies, 95), 2), p99: round(percentile(latencies, 99), 2) },
    };
  }, () => orm.close(true));
}

// ---- CPU profile summary -------------------------------------------------------------------------

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[]; startTime: number; endTime: number }

function categoryOf(url: string, fn: string): string {
  if (!url) return fn === '(garbage collector)' ? 'GC' : fn === '(idle)' ? 'idle' : fn === '(program)' ? 'program (native)' : `native ${fn}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return url;
  const src = /\/(src|workers|bench|test)\/([^/]+(?:\/[^/]+)*)$/.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  return url;
}

/** Internals and natives are charged to the nearest caller that is a package or a file of ours. */
const isOwner = (category: string) => !category.startsWith('node:') && !category.startsWith('native ') && category !== 'program (native)';

function summarizeProfile(profile: Profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + (deltas[i] ?? 0));
  const cat = (id: number) => {
    const n = byId.get(id)!;
    return categoryOf(n.callFrame.url, n.callFrame.functionName);
  };
  const ownerOf = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const c = cat(at);
      if (c === 'GC' || c === 'idle') return c;
      if (isOwner(c) && byId.get(at)!.callFrame.functionName !== '(root)') return c;
    }
    return cat(id);
  };
  let totalUs = 0;
  let idleUs = 0;
  const byCategory = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const c = cat(id);
    if (c === 'node:inspector') continue; // Profiler.stop itself
    if (c === 'idle') {
      idleUs += us;
      continue;
    }
    totalUs += us;
    byCategory.set(c, (byCategory.get(c) ?? 0) + us);
    const owner = ownerOf(id);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${c}:${n.callFrame.lineNumber + 1} <- ${owner}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  const top = (m: Map<string, number>, k: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, k)
    .map(([name, us]) => ({ name, ms: Math.round(us / 1000), percent: round((100 * us) / totalUs) }));
  return {
    busyMs: Math.round(totalUs / 1000), idleMs: Math.round(idleUs / 1000),
    note: 'percent of non-idle samples; byOwner charges node internals and natives to the nearest package or project file on the stack',
    byOwner: top(byOwner, 15), byCategory: top(byCategory, 15), topFunctions: top(byFunction, 25),
  };
}

// ---- EXPLAIN ANALYZE of every statement of one ingest -------------------------------------------

interface ExplainedStatement { statement: string; planningMs: number; executionMs: number; triggers: Array<{ name: string; relation: string; calls: number; ms: number }>; jit?: unknown; plan?: string }

/** Per statement (same position in every run), the median of each time; the first run's plan text. */
function medianExplain(runs: ExplainedStatement[][]): ExplainedStatement[] {
  const med = (xs: number[]) => round(percentile(xs, 50), 3);
  return runs[0]!.map((first, k) => {
    const all = runs.map((r) => r[k]!).filter((e) => e && e.statement === first.statement);
    return {
      ...first,
      planningMs: med(all.map((e) => e.planningMs)), executionMs: med(all.map((e) => e.executionMs)),
      triggers: first.triggers.map((t, n) => ({ ...t, ms: med(all.map((e) => e.triggers[n]?.ms ?? 0)) })),
    };
  });
}

/** Server time of one ingest: planning, execution, and inside execution the triggers by kind. */
function explainTotals(list: ExplainedStatement[]) {
  const sum = (f: (e: ExplainedStatement) => number) => round(list.reduce((a, e) => a + f(e), 0), 2);
  const trig = (re: RegExp) => sum((e) => e.triggers.filter((t) => re.test(t.name)).reduce((a, t) => a + t.ms, 0));
  return {
    statements: list.length, planningMs: sum((e) => e.planningMs), executionMs: sum((e) => e.executionMs),
    historyRecordTriggerMs: trig(/^history_record$/), historyStampTriggerMs: trig(/^history_stamp$/), foreignKeyTriggersMs: trig(/^RI_/),
  };
}

/**
 * Ingests one report with every statement first run under EXPLAIN (ANALYZE, BUFFERS) inside a
 * savepoint that is rolled back, then for real: server-side planning / execution / trigger time per
 * statement. `keepPlanOf` names statements whose text plan is kept.
 */
async function explainIngest(w: World, report: DaemonHostRequest, keepPlanOf: (label: string) => boolean): Promise<ExplainedStatement[]> {
  const out: ExplainedStatement[] = [];
  const db = new Db(w.app.services.orm.em.fork());
  await db.transaction(async (tx) => {
    const em = tx.em;
    const explaining = new Db(em);
    const realQuery = explaining.query.bind(explaining);
    const proxy = Object.create(tx) as Db;
    proxy.query = async function <T>(text: string, params: unknown[] = []): Promise<T[]> {
      const sql = rewrite.findHost && text.includes('candidates as materialized') ? rewriteFindHost(text) : text;
      const label = labelOf(sql);
      const raw = <R>(explain: string) => originalDbQuery.call(explaining, explain, params) as Promise<R[]>;
      await em.execute('savepoint bench_explain');
      const [json] = await raw<{ 'QUERY PLAN': any }>(`explain (analyze, buffers, format json) ${sql}`);
      let planText: string | undefined;
      if (keepPlanOf(label)) {
        const rows = await raw<{ 'QUERY PLAN': string }>(`explain (analyze, buffers, costs off) ${sql}`);
        planText = rows.map((r) => r['QUERY PLAN']).join('\n');
      }
      await em.execute('rollback to savepoint bench_explain');
      const plan = (typeof json!['QUERY PLAN'] === 'string' ? JSON.parse(json!['QUERY PLAN']) : json!['QUERY PLAN'])[0];
      out.push({
        statement: label, planningMs: round(plan['Planning Time'], 3), executionMs: round(plan['Execution Time'], 3),
        triggers: (plan.Triggers ?? []).map((t: any) => ({ name: t['Trigger Name'], relation: t.Relation, calls: t.Calls, ms: round(t.Time, 3) })),
        ...(plan.JIT ? { jit: plan.JIT } : {}),
        ...(planText ? { plan: planText } : {}),
      });
      return realQuery<T>(text, params);
    };
    proxy.one = async function <T>(sql: string, params: unknown[] = []) {
      return (await proxy.query<T>(sql, params))[0];
    };
    proxy.transaction = (fn) => fn(proxy);
    const { value } = daemonHostRequestBody.validate(report, { convert: true });
    await ingestHost(proxy, w.ctx, value as DaemonHostRequest);
  });
  return out;
}

/** What a few per-report steps of the worker cost in Node alone (ms per report, warm). */
function nodeMicro(reports: DaemonHostRequest[]) {
  const time = (fn: (r: DaemonHostRequest) => unknown) => {
    for (const r of reports.slice(0, 100)) fn(r); // warm-up
    const t0 = performance.now();
    for (const r of reports) fn(r);
    return round((performance.now() - t0) / reports.length, 4);
  };
  return {
    note: 'ms per report in this process, warm, no I/O',
    joiValidateMs: time((r) => daemonHostRequestBody.validate(r, { abortEarly: true, convert: true })),
    jsonRoundTripMs: time((r) => JSON.parse(JSON.stringify(r))),
    payloadBytes: Math.round(reports.reduce((a, r) => a + JSON.stringify(r).length, 0) / reports.length),
  };
}

// ---- Set-based prototype: one statement per kind for the whole batch --------------------------

const HISTORY_TABLES = ['hosts', 'ip_addresses', 'ports', 'services', 'bindings'];

/**
 * The SQL floor of a batch design, measured inside one transaction that is rolled back (nothing
 * stays): per batch, one statement each for the locks, the matching (every reported address probed
 * by index, children as JSON), the facts about new ids, and the upsert of each kind. Not the full
 * merge (no per-child comparison, no lineage reuse): the cost of the SQL a batch ingest cannot avoid.
 * `history`: 'row' = the history triggers as installed (one PL/pgSQL EXECUTE per row); 'statement'
 * = history_record disabled (in this rolled-back transaction) and each upsert writes its states to
 * <table>_history in the same statement, as a statement-level trigger with a transition table would.
 */
async function setBasedFloor(w: World, reports: DaemonHostRequest[], existing: boolean, history: 'row' | 'statement') {
  const steps: Record<string, number> = {};
  const orm = await createOrm(w.app.databaseUrl, 1);
  const db = new Db(orm.em.fork());
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const s = performance.now();
    const r = await fn();
    steps[name] = round(performance.now() - s, 1);
    return r;
  };
  const { organizationId, networkId, discoveryId } = w.ctx;
  const json = (v: unknown) => JSON.stringify(v);
  let totalMs = 0;
  await db.em.transactional(async (em) => {
    const tx = new Db(em as never);
    if (history === 'statement') for (const t of HISTORY_TABLES) await tx.query(`alter table ${t} disable trigger history_record`);
    const t0 = performance.now();
    const addresses = reports.flatMap((r, h) => r.interfaces.map((i, n) => ({ h, n, id: i.id, subnet_id: i.subnet_id, ip_address: i.ip_address, mac_address: i.mac_address })));
    // Locks bucketed: the shared lock table holds max_locks_per_transaction × max_connections entries (6,400 here).
    await step('locks (bucketed) + subnet check', () => tx.query(
      `with x as (select * from jsonb_to_recordset(?::jsonb) as x(h int, n int, id uuid, subnet_id uuid, ip_address inet, mac_address text)),
       keys as (select distinct abs(hashtextextended(k, 0)) % 4096 as b from (
         select 'ip:' || subnet_id || ':' || host(ip_address) as k from x union all select 'mac:' || ? || ':' || mac_address from x) k)
       select (select count(pg_advisory_xact_lock(b)) from (select b from keys order by b) o) as locked,
              (select count(*) from x left join subnets s on s.id = x.subnet_id and s.network_id = ? where s.id is null or not (x.ip_address <<= s.cidr)) as bad`,
      [json(addresses), networkId, networkId]));
    const matched = await step('match hosts + children as JSON', () => tx.query<{ h: number; host_id: string; children: unknown }>(
      `with x as materialized (select * from jsonb_to_recordset(?::jsonb) as x(h int, n int, id uuid, subnet_id uuid, ip_address inet, mac_address text)),
       c as (select distinct on (x.h) x.h, i.host_id from x
             cross join lateral (select host_id from ip_addresses i where i.subnet_id = x.subnet_id and i.ip_address = x.ip_address offset 0) i
             order by x.h, x.n)
       select c.h, c.host_id,
         (select coalesce(json_agg(i), '[]') from ip_addresses i where i.host_id = h.id) as ips,
         (select coalesce(json_agg(p), '[]') from ports p where p.host_id = h.id) as ports,
         (select coalesce(json_agg(s), '[]') from services s where s.host_id = h.id) as services,
         (select coalesce(json_agg(b), '[]') from bindings b where b.service_id = any(array(select id from services s where s.host_id = h.id))) as bindings
       from c join hosts h on h.id = c.host_id and h.network_id = ? for update of h`,
      [json(addresses), networkId]));
    if (existing) {
      if (matched.length !== reports.length) throw new Error(`set-based floor: matched ${matched.length} of ${reports.length}`);
      const update = `update hosts set last_seen_at = now(), last_discovery_id = ? where id = any(?::uuid[])`;
      await step('update hosts (last_seen_at, last_discovery_id)', () => tx.query(history === 'row' ? update
        : `with u as (${update} returning id, last_seen_at, last_discovery_id)
           update hosts_history hh set last_seen_at = u.last_seen_at, last_discovery_id = u.last_discovery_id from u where hh.id = u.id and hh.valid_to is null`,
      [discoveryId, matched.map((m) => m.host_id)]));
    } else {
      const ids = reports.flatMap((r) => [r.host.id, ...r.interfaces.map((i) => i.id), ...r.ports.map((p) => p.id), ...r.services.flatMap((s) => [s.id, ...s.bindings.map((b) => b.id)])]);
      await step('new facts (taken ids, lineage)', () => tx.query(
        `with x as materialized (select * from jsonb_to_recordset(?::jsonb) as x(h int, n int, id uuid, subnet_id uuid, ip_address inet, mac_address text)),
         ids as materialized (select unnest(?::uuid[]) as id)
         select array(select id from hosts_history where id in (select id from ids) union select id from ip_addresses_history where id in (select id from ids)
                      union select id from ports_history where id in (select id from ids) union select id from services_history where id in (select id from ids)
                      union select id from bindings_history where id in (select id from ids)) as taken,
                (select count(*) from x, lateral (select i.lineage_id from ip_addresses_history i where i.subnet_id = x.subnet_id and i.ip_address = x.ip_address
                                                   and not exists (select 1 from ip_addresses l where l.id = i.id) order by i.valid_from desc limit 1) l) as lineages`,
        [json(addresses), ids]));
      const owned = { organization_id: organizationId, network_id: networkId, first_discovery_id: discoveryId, last_discovery_id: discoveryId };
      const upsert = (table: string, owner: string, rows: Record<string, unknown>[], updatable: string[]) => {
        const cols = Object.keys(rows[0]!);
        const insert = `insert into ${table} (${cols.join(', ')}, last_seen_at)
           select ${cols.join(', ')}, now() from jsonb_populate_recordset(null::${table}, ?::jsonb)
           on conflict (id) do update set ${[...updatable.map((c) => `${c} = excluded.${c}`), 'last_seen_at = now()'].join(', ')}
           where ${table}.${owner} = excluded.${owner}`;
        return tx.query(history === 'row'
          ? `${insert} returning id`
          : `with w as (${insert} returning *), h as (insert into ${table}_history select w.*, null::timestamptz from w) select id from w`, [json(rows)]);
      };
      await step('upsert hosts', () => upsert('hosts', 'network_id', reports.map((r) => ({
        id: r.host.id, ...owned, name: r.host.name, hostname: r.host.hostname, description: r.host.description, hidden: false, tags: [],
        source: r.host.source, virtualization: r.host.virtualization, credential_assignments: [],
      })), ['hostname', 'source', 'last_discovery_id']));
      await step('upsert ip_addresses', () => upsert('ip_addresses', 'host_id', reports.flatMap((r) => r.interfaces.map((i, n) => ({
        id: i.id, ...owned, host_id: r.host.id, subnet_id: i.subnet_id, ip_address: i.ip_address, mac_address: i.mac_address, name: i.name, position: n,
      }))), ['subnet_id', 'ip_address', 'mac_address', 'name', 'last_discovery_id']));
      await step('upsert ports', () => upsert('ports', 'host_id', reports.flatMap((r) => r.ports.map((p) => ({
        id: p.id, ...owned, host_id: r.host.id, number: p.number, protocol: p.protocol, type: 'Custom',
      }))), ['number', 'protocol', 'type', 'last_discovery_id']));
      await step('upsert services', () => upsert('services', 'host_id', reports.flatMap((r) => r.services.map((s, n) => ({
        id: s.id, ...owned, host_id: r.host.id, name: s.name, service_definition: s.service_definition, position: n, source: s.source, tags: [], virtualization: null,
      }))), ['source', 'virtualization', 'last_discovery_id']));
      await step('upsert bindings', () => upsert('bindings', 'service_id', reports.flatMap((r) => r.services.flatMap((s) => s.bindings.map((b) => ({
        id: b.id, ...owned, service_id: s.id, type: b.type, port_id: b.port_id, ip_address_id: b.interface_id ?? null,
      })))), ['last_discovery_id']));
      await step('deferred constraints', () => tx.query('set constraints all immediate'));
    }
    totalMs = performance.now() - t0;
    throw new RollbackOnPurpose();
  }).catch((err) => {
    if (!(err instanceof RollbackOnPurpose)) throw err;
  });
  await orm.close(true);
  return {
    hosts: reports.length, existing, history, statements: Object.keys(steps).length,
    sqlMs: round(totalMs, 1), hostsPerSec: round((reports.length * 1000) / totalMs), stepsMs: steps,
  };
}

class RollbackOnPurpose extends Error {}

// ---- Main ------------------------------------------------------------------------------------------

async function machineInfo(admin: Admin) {
  const settings = await admin.rows<{ name: string; setting: string; unit: string | null }>(
    `select name, setting, unit from pg_settings where name in ('shared_buffers','work_mem','jit','jit_above_cost','synchronous_commit','fsync','wal_sync_method','max_connections','max_locks_per_transaction','shared_preload_libraries','commit_delay','wal_level')`);
  const [{ version }] = await admin.rows<{ version: string }>('select version()');
  const available = await admin.rows(`select 1 from pg_available_extensions where name = 'pg_stat_statements'`);
  let commit = 'unknown';
  let dirty: string[] = [];
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'workers', 'migrations'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    /* not a checkout */
  }
  return {
    machine: {
      cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 2 ** 30), loadAverageAtStart: os.loadavg().map((l) => round(l, 2)),
      node: process.version, postgres: version, postgresSettings: Object.fromEntries(settings.map((s) => [s.name, s.unit ? `${s.setting} (${s.unit})` : s.setting])),
      pgStatStatements: available.length ? 'available but not preloaded (shared_preload_libraries is empty): statements counted in-process instead' : 'not installed',
    },
    code: { commit, dirtyFiles: dirty },
  };
}

function summaryLine(name: string, r: PassResult) {
  const s = r.statements as ReturnType<typeof statementSummary>;
  const res = r.resources as ReturnType<typeof delta>;
  return `${name.padEnd(34)} ${r.pass.padEnd(9)} ${String(r.hostsPerSec).padStart(7)} hosts/s  ${String(r.wallMs).padStart(6)} ms  `
    + `${String(s.ingestStatementsPerHost).padStart(4)} stmt/host (${s.wireQueriesPerHost} on the wire)  node ${res.cpu.nodeMsPerHost} ms/host  pg ${res.cpu.postgresBackendsMsPerHost} ms/host  `
    + `machine ${res.cpu.machineBusyPercent}% busy (others ${res.cpu.foreignPercentOfOneCore}% of a core)  ${(r.verification as { ok: boolean }).ok ? 'verified' : 'VERIFICATION FAILED'}`;
}

async function main() {
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.LOG_LEVEL ??= 'silent';
  await prepareTemplate();
  const date = new Date().toISOString();
  const adminUrl = new URL(databaseUrl);
  adminUrl.pathname = '/postgres';
  const serverAdmin = await Admin.open(adminUrl.toString());
  const info = await machineInfo(serverAdmin);
  log(`${HOSTS} hosts × (${PER_HOST.ips} IPs, ${PER_HOST.ports} ports, ${PER_HOST.services} services, ${PER_HOST.bindings} bindings); ${info.machine.cpus} CPUs; configured discovery-sync concurrency ${CONFIGURED_CONCURRENCY}`);

  const scenarios: Record<string, unknown> = {};
  const lines: string[] = [];
  const record = (name: string, r: PassResult) => {
    lines.push(summaryLine(name, r));
    log(summaryLine(name, r));
  };
  const poolFor = (c: number) => Math.max(5, c + 1); // workers/context.ts: 5

  const pair = async (name: string, key: string, run: (pass: 'new' | 'unchanged') => Promise<PassResult>) => {
    const fresh = await run('new');
    record(name, fresh);
    const same = await run('unchanged');
    record(name, same);
    scenarios[key] = { new: fresh, unchanged: same };
    return { fresh, same };
  };
  const foreign = (r: PassResult) => (r.resources as ReturnType<typeof delta>).cpu.foreignPercentOfOneCore;
  const C = CONFIGURED_CONCURRENCY;

  // 1. The queue at the configured concurrency (the headline), then EXPLAIN ANALYZE of every
  //    statement of one new and one unchanged host, and the set-based floor, on the populated database.
  {
    // Others share this machine: a headline measured while they used much CPU is taken again (once).
    let w = await makeWorld('queue');
    for (let attempt = 1; ; attempt++) {
      const { fresh, same } = await pair(`queue c=${C}`, `queue_c${C}`, (pass) => queuePass(w, pass, C, poolFor(C), `c${attempt}`));
      const worst = Math.max(foreign(fresh), foreign(same));
      if (worst <= MAX_FOREIGN_PERCENT || attempt >= HEADLINE_ATTEMPTS) break;
      log(`  others used ${worst}% of a core during the headline: measuring it again on a fresh database`);
      scenarios[`queue_c${C}_discarded_attempt${attempt}`] = scenarios[`queue_c${C}`];
      await dropWorld(w);
      w = await makeWorld('queue');
    }
    // Five more hosts, each new then again unchanged (then unchanged with the findHost change): the
    // median of each statement's times, the text plans of the first.
    const extras = makeReports({ id: w.ctx.daemonId }, w.ctx.networkId, w.subnetId, EXPLAIN_HOSTS, HOSTS + 10);
    const detailed = (first: boolean) => (l: string) => first && (l.startsWith('findHost') || l.startsWith('newFacts') || l.startsWith('update hosts'));
    await waitForQuiet(QUIET_WAIT_MS);
    const runsNew: ExplainedStatement[][] = [];
    const runsSame: ExplainedStatement[][] = [];
    const runsFixed: ExplainedStatement[][] = [];
    for (const [k, extra] of extras.entries()) {
      runsNew.push(await explainIngest(w, extra, detailed(k === 0)));
      runsSame.push(await explainIngest(w, extra, detailed(k === 0)));
      rewrite.findHost = true;
      runsFixed.push((await explainIngest(w, extra, (l) => k === 0 && l.startsWith('findHost'))).filter((e) => e.statement.startsWith('findHost')));
      rewrite.findHost = false;
    }
    const explainNew = medianExplain(runsNew);
    const explainSame = medianExplain(runsSame);
    const explainFixed = medianExplain(runsFixed);
    scenarios.explain = {
      note: `server-side times of each statement of one ingest on the populated network (EXPLAIN ANALYZE in a rolled-back savepoint, then the statement for real); median of ${EXPLAIN_HOSTS} hosts`,
      totals: { new: explainTotals(explainNew), unchanged: explainTotals(explainSame) },
      new: explainNew, unchanged: explainSame, unchangedFindHostWithOffset0: explainFixed,
      jitUsed: [...explainNew, ...explainSame].some((e) => e.jit),
    };
    const brief = (list: ExplainedStatement[]) => list.map((e) => `${e.statement.replace(/ \(.*\)$/, '')} ${e.planningMs}+${e.executionMs}`).join(', ');
    log(`explain (planning+execution ms) new host: ${brief(explainNew)}`);
    log(`explain (planning+execution ms) unchanged host: ${brief(explainSame)}; findHost with offset 0: ${brief(explainFixed)}`);
    log(`explain totals: new ${JSON.stringify(explainTotals(explainNew))}; unchanged ${JSON.stringify(explainTotals(explainSame))}`);
    scenarios.nodeMicro = nodeMicro(w.reports);
    log(`node per report: ${JSON.stringify(scenarios.nodeMicro)}`);

    if (WHATIF) {
      // 1,000 other hosts (new, same network; rolled back), and the stored 1,000 again.
      const others = makeReports({ id: w.ctx.daemonId }, w.ctx.networkId, w.subnetId, HOSTS, HOSTS + 100);
      const floor: Record<string, unknown> = {};
      for (const history of ['row', 'statement'] as const) {
        await waitForQuiet(QUIET_WAIT_MS);
        const fresh = await setBasedFloor(w, others, false, history);
        const same = await setBasedFloor(w, w.reports, true, history);
        floor[`${history}LevelHistory`] = { new: fresh, unchanged: same };
        log(`set-based prototype, ${history}-level history: new ${fresh.hostsPerSec} hosts/s (${JSON.stringify(fresh.stepsMs)})`);
        log(`set-based prototype, ${history}-level history: unchanged ${same.hostsPerSec} hosts/s (${JSON.stringify(same.stepsMs)})`);
      }
      scenarios.setBasedPrototype = {
        note: 'one statement per kind for the whole batch of 1,000 in one transaction (rolled back); SQL time only, not the full merge logic: a floor',
        ...floor,
      };
    }
    await dropWorld(w);
  }

  // 2. The proposed findHost change (offset 0 in its LATERAL subqueries), same queue pass.
  if (WHATIF) {
    const w = await makeWorld('findhost-offset0');
    rewrite.findHost = true;
    await pair(`whatif: queue c=${C} findHost offset 0`, `whatif_queue_c${C}_findHost_offset0`, (pass) => queuePass(w, pass, C, poolFor(C), 'fix'));
    rewrite.findHost = false;
    await dropWorld(w);
  }

  // 3. The queue at other concurrencies.
  for (const c of OTHER_CONCURRENCIES.filter((c) => c !== C)) {
    const w = await makeWorld(`queue-c${c}`);
    await pair(`queue c=${c}`, `queue_c${c}`, (pass) => queuePass(w, pass, c, poolFor(c), `c${c}`));
    await dropWorld(w);
  }

  // 4. The synchronous path: ingestHost() sequential and SYNC_CONCURRENCY at once.
  for (const c of [1, SYNC_CONCURRENCY]) {
    const w = await makeWorld(`sync-c${c}`);
    await pair(`sync ingestHost c=${c}`, `sync_c${c}`, (pass) => syncPass(w, pass, c));
    await dropWorld(w);
  }

  if (WHATIF) {
    // 5. Per-transaction overhead: 50 hosts per transaction (the same statements per host), sequential.
    {
      const w = await makeWorld('sync-batch50');
      await pair('whatif: sync c=1, 50 hosts/transaction', 'whatif_sync_c1_50_hosts_per_transaction', (pass) => syncPass(w, pass, 1, 50));
      await dropWorld(w);
    }
    // 6. The cost of durable commits: synchronous_commit=off on the bench database only.
    {
      const w = await makeWorld('sync-commit-off');
      await w.admin.rows(`alter database "${w.database}" set synchronous_commit = off`); // the worker's new connections get it
      await pair(`whatif: queue c=${C} synchronous_commit=off`, `whatif_queue_c${C}_synchronous_commit_off`, (pass) => queuePass(w, pass, C, poolFor(C), 'nosync'));
      await dropWorld(w);
    }
  }

  // 7. Where Node's CPU goes: the queue pass once more, under the sampling profiler.
  if (PROFILE) {
    const w = await makeWorld('profile');
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    const { fresh, same } = await pair(`profiled queue c=${C}`, 'profiled_queue', (pass) => queuePass(w, pass, C, poolFor(C), 'prof', session));
    session.disconnect();
    (scenarios.profiled_queue as Record<string, unknown>).note = 'throughput under the profiler is lower; read the CPU split, not the rate';
    for (const r of [fresh, same]) {
      const p = r.cpuProfile as ReturnType<typeof summarizeProfile>;
      log(`profile ${r.pass} (by owner): ${p.byOwner.slice(0, 10).map((c) => `${c.name} ${c.percent}%`).join(', ')}`);
    }
    await dropWorld(w);
  }

  const head = scenarios[`queue_c${CONFIGURED_CONCURRENCY}`] as { new: PassResult; unchanged: PassResult };
  const targets = {
    newHostsPerSec: { target: TARGETS.newHostsPerSec, measured: head.new.hostsPerSec, met: head.new.hostsPerSec >= TARGETS.newHostsPerSec },
    unchangedHostsPerSec: { target: TARGETS.unchangedHostsPerSec, measured: head.unchanged.hostsPerSec, met: head.unchanged.hostsPerSec >= TARGETS.unchangedHostsPerSec },
    setBasedSql: {
      target: 'set-based SQL rather than a query per row',
      measured: `${(head.new.statements as { ingestStatementsPerHost: number }).ingestStatementsPerHost} statements per host new, ${(head.unchanged.statements as { ingestStatementsPerHost: number }).ingestStatementsPerHost} unchanged: set-based within a host (one statement per kind), but per host, not per batch`,
      met: false,
    },
    allVerified: Object.values(scenarios).every((s) => typeof s !== 'object' || !s || !('new' in s) || !((s as any).new.verification) || ((s as any).new.verification.ok && (s as any).unchanged.verification.ok)),
  };
  const headline = (r: PassResult) => {
    const st = r.statements as ReturnType<typeof statementSummary>;
    const res = r.resources as ReturnType<typeof delta>;
    return {
      jobsPerSec: r.jobsPerSec, hostsPerSec: r.hostsPerSec, wallMs: r.wallMs,
      sqlStatementsPerHost: st.ingestStatementsPerHost, wireQueriesPerHost: st.wireQueriesPerHost,
      nodeCpuMsPerHost: res.cpu.nodeMsPerHost, postgresCpuMsPerHost: res.cpu.postgresBackendsMsPerHost, othersPercentOfOneCore: res.cpu.foreignPercentOfOneCore,
    };
  };
  const results = {
    benchmark: 'discovery ingestion', date, ...info,
    headline: { path: `discovery-sync queue, BullMQ Worker of workers/discoverySync.ts, concurrency ${C}`, new: headline(head.new), unchanged: headline(head.unchanged) },
    config: { hosts: HOSTS, perHost: PER_HOST, configuredConcurrency: CONFIGURED_CONCURRENCY, syncConcurrency: SYNC_CONCURRENCY, workerPoolMax: 'max(5, concurrency + 1) (workers/context.ts uses 5)' },
    targets,
    scenarios,
    durationSeconds: Math.round((performance.now() - started) / 1000),
    loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)),
  };
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`ingest-${date.replace(/[:.]/g, '-')}.json`, dir);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  await serverAdmin.close();
  console.log(`\n${lines.join('\n')}\n`);
  console.log(`targets: new ${targets.newHostsPerSec.measured}/${TARGETS.newHostsPerSec} hosts/s (${targets.newHostsPerSec.met ? 'met' : 'MISSED'}), `
    + `unchanged ${targets.unchangedHostsPerSec.measured}/${TARGETS.unchangedHostsPerSec} hosts/s (${targets.unchangedHostsPerSec.met ? 'met' : 'MISSED'}); verification ${targets.allVerified ? 'ok' : 'FAILED'}`);
  console.log(`headline (queue c=${C}): new ${JSON.stringify(results.headline.new)}; unchanged ${JSON.stringify(results.headline.unchanged)}`);
  console.log(`results: ${file.pathname} (${results.durationSeconds} s)`);
  return targets.allVerified;
}

main().then(
  (verified) => process.exit(verified ? 0 : 1),
  async (err) => {
    console.error(err);
    for (const w of [...openWorlds]) await dropWorld(w).catch(() => undefined);
    process.exit(1);
  },
);
