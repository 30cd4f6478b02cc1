// Rescan benchmark (`npm run bench:rescan`, issue 39 "What it must show"): an unchanged rescan of
// BENCH_RESCAN_HOSTS hosts (10,000) against a first scan of the same hosts, on a database of its own
// (cloned from the test template, as bench/ingest.ts does): one tenant, one network, one daemon, one
// /16 subnet, a webhook subscribed to everything (http://127.0.0.1:9/: no delivery worker runs here,
// deliveries are only counted as rows). Each pass is a Network session as a daemon runs it: the
// session's update (Scanning), every host reported (ingestHost(), as POST /api/v1/hosts/discovery
// does it: the route's validation, its current-session lookup, one host per transaction,
// BENCH_RESCAN_CONCURRENCY at once), then the terminal update (summary, presence, alerts).
//   A  first scan: discovery type Network with subnet_ids null (the agent's own run);
//   B  unchanged rescan by the same path: another session, the same discovery type;
//   C  unchanged rescan by another path: discovery type with subnet_ids = [the subnet] ("Scan now"
//      on the approved targets), so each record's source gains a metadata entry;
//   D  (BENCH_RESCAN_SECOND_DAEMON=1) the same hosts found by a second daemon of the network.
// Per pass: hosts/s (hosts only, and the whole run with the session's start and end), statements per
// host (Db.prototype.query: what the service issues; pg.Client.prototype.query: everything on the
// wire, BEGIN/COMMIT included), per-host latency p50/p95/p99, *_history rows added per table, events
// (event_outbox sequenced into events) and webhook deliveries added, os.loadavg() before the pass.
// The baseline is pass A of the same run: B/A and C/A ratios for hosts/s and statements per host.
// Exits 1 if B, C or D wrote a history row, an event or a webhook delivery, or if a pass leaves the
// inventory other than N hosts, 2N addresses, 5N ports, 3N services.
//
// Environment: BENCH_RESCAN_HOSTS (10000; 300 runs in seconds, for CI: BENCH_SMALL=1, bench/small.ts), BENCH_RESCAN_CONCURRENCY (4),
// BENCH_RESCAN_BATCH (1: hosts per ingestHosts() transaction; 100 is a discovery-sync job's batch,
// minus BullMQ, and then the latency is per batch), BENCH_RESCAN_SECOND_DAEMON (1), BENCH_RESCAN_ANALYZE (0;
// 1: ANALYZE the database after pass A, untimed, as autovacuum would in time: the daemon's one-host
// batches never analyze (src/modules/discovery/statistics.ts) and autovacuum may be off, as on the
// shared test server, so without it the rescans run on the statistics of an empty network), DATABASE_URL, REDIS_URL.
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { Db } from '../src/core/db.js';
import { AppError } from '../src/core/errors.js';
import { createOrm } from '../src/database.js';
import { ingestHosts, type IngestContext } from '../src/modules/discovery/ingest.js';
import { daemonHostRequestBody } from '../src/modules/discovery/schemas.js';
import { currentSessionId } from '../src/modules/discovery/sessions.js';
import type { DaemonHostRequest } from '../src/modules/discovery/vocabulary.js';
import { sequenceEvents } from '../src/modules/events/service.js';
import { dispatchEvents } from '../src/modules/webhooks/delivery.js';
import { ensureServices } from '../scripts/services.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../test/daemons/world.js';
import { postSubnet } from '../test/discovery/reports.js';
import { prepareTemplate, startTestApp, type TestApp } from '../test/support/app.js';
import { call, expectOk } from '../test/support/client.js';
import { createNetwork, registerTenant } from '../test/support/world.js';
import { benchHostReports, hex2, type AddressPlan } from './hostReports.js';
import { resultsFile, sized } from './small.js';
import { countStatements, UncountedClient } from './statementCounter.js';

// Each setting: its variable when set, else the small run's value under BENCH_SMALL=1 (bench/small.ts), else the full run's.
const HOSTS = sized('BENCH_RESCAN_HOSTS', 10_000, 300);
const CONCURRENCY = Math.max(1, sized('BENCH_RESCAN_CONCURRENCY', 4, 4));
const BATCH = Math.max(1, sized('BENCH_RESCAN_BATCH', 1, 1));
const SECOND_DAEMON = sized('BENCH_RESCAN_SECOND_DAEMON', 1, 1) === 1;
const ANALYZE = sized('BENCH_RESCAN_ANALYZE', 0, 0) === 1;
const PER_HOST = { ips: 2, ports: 5, services: 3 };
/** Our agent dates a metadata entry by when it first found the address: the same on every run (as test/discovery/rescan.spec.ts). */
const FOUND = '2026-11-22T10:00:00Z';

const started = performance.now();
const log = (line: string) => console.log(`[rescan ${String(Math.round((performance.now() - started) / 1000)).padStart(4)}s] ${line}`);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const percentile = (values: number[], p: number) => {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const loadavg = () => os.loadavg().map((l) => round(l, 2));

// ---- Statement counting (in this process; src/ untouched: bench/statementCounter.ts) -------------

/** A statement named by its first words (what it does to which table), for the per-pass breakdown. */
const labelOf = (sql: string) => {
  const flat = sql.replace(/\s+/g, ' ').trim();
  const write = /(?<!for )\b(insert into|update|delete from) (\w+)/i.exec(flat);
  return write ? `${write[1]!.toLowerCase()} ${write[2]}` : flat.slice(0, 70);
};
const counter = countStatements(labelOf);
const takeCounters = () => counter.take();

/** This bench's own reads of the database: not counted. */
const Admin = UncountedClient;
type Admin = UncountedClient;

function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: total - cpu[3]! - (cpu[4] ?? 0), total };
}

// ---- The world ----------------------------------------------------------------------------------

/** Locally administered MACs, as bench/ingest.ts's plan; a /16 holds 10,000 hosts of 2 addresses (256 + 2i + 1 < 65,536 up to 32,639 hosts). */
const ADDRESSES: AddressPlan = {
  ip: (n) => `10.20.${(n >> 8) & 255}.${n & 255}`,
  mac: (n) => `02:00:00:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`.toUpperCase(),
  domain: 'rescan.lan',
};

interface World {
  app: TestApp;
  admin: Admin;
  orgId: string;
  networkId: string;
  subnetId: string;
  daemons: DaemonClient[];
  historyTables: string[];
  /** The hosts as the first daemon reports them; each pass re-sources a copy. */
  reports: DaemonHostRequest[];
}

async function makeWorld(): Promise<World> {
  const app = await startTestApp({ logLevel: 'silent', webhookAllowedNetworks: ['127.0.0.0/8'] });
  const t = await registerTenant(app.url, 'rescan-bench');
  const networkId = await createNetwork(app.url, t.owner, 'Rescan bench');
  const daemons: DaemonClient[] = [];
  for (let i = 0; i < (SECOND_DAEMON ? 2 : 1); i++) {
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, networkId)).key, randomUUID());
    await registerDaemon(d, networkId);
    daemons.push(d);
  }
  const subnet = await postSubnet(daemons[0]!, networkId, '10.20.0.0/16');
  expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'everything', url: 'http://127.0.0.1:9/', event_types: ['*'] } }), 201);
  const admin = await Admin.open(app.databaseUrl);
  const historyTables = (await admin.rows<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = current_schema() and c.relname like '%\\_history' and c.relkind in ('r', 'p') and not c.relispartition order by 1`,
  )).map((r) => r.name);
  return {
    app, admin, orgId: t.orgId, networkId, subnetId: subnet.id as string, daemons, historyTables,
    reports: benchHostReports(daemons[0]!, networkId, subnet.id as string, HOSTS, 0, ADDRESSES),
  };
}

/** The Network discovery type of a run of `daemon`, as test/discovery/rescan.spec.ts writes it. */
const networkType = (daemon: DaemonClient, subnetIds: string[] | null) => ({
  type: 'Network', subnet_ids: subnetIds, host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] },
  probe_raw_socket_ports: false, daemon_id: daemon.id, date: FOUND,
});

/** The same hosts (same ids, same facts) as a run of this discovery type reports them: the host's and services' source metadata is the run's. */
function sourced(reports: DaemonHostRequest[], discoveryType: Record<string, unknown>): DaemonHostRequest[] {
  return reports.map((r) => {
    const copy = structuredClone(r) as unknown as { host: { source: { metadata: unknown[] } }; services: Array<{ source: { metadata: unknown[] } }> };
    copy.host.source.metadata = [{ ...discoveryType }];
    for (const s of copy.services) s.source.metadata = [{ ...discoveryType }];
    return copy as unknown as DaemonHostRequest;
  });
}

/** Rows the bench watches: every *_history table, the events (and those not sequenced yet), webhook deliveries. */
async function counts(w: World) {
  const history: Record<string, number> = {};
  for (const table of w.historyTables) history[table] = Number((await w.admin.rows(`select count(*)::bigint as n from ${table}`))[0]!.n);
  const [row] = await w.admin.rows(
    `select (select count(*)::bigint from events) as events, (select count(*)::bigint from event_outbox) as outbox,
            (select count(*)::bigint from webhook_deliveries) as deliveries`,
  );
  return { history, events: Number(row!.events), outbox: Number(row!.outbox), deliveries: Number(row!.deliveries) };
}

/** The live inventory of the network (the daemons' own hosts aside). */
async function inventory(w: World) {
  const [row] = await w.admin.rows(
    `with mine as (select id from hosts where network_id = $1 and id not in (select host_id from daemons where host_id is not null))
     select (select count(*)::int from mine) as hosts,
            (select count(*)::int from ip_addresses where host_id in (select id from mine)) as ips,
            (select count(*)::int from ports where host_id in (select id from mine)) as ports,
            (select count(*)::int from services where host_id in (select id from mine)) as services`,
    [w.networkId],
  );
  return row as Record<string, number>;
}

// ---- A pass: one Network session of one daemon -----------------------------------------------------

interface PassSpec { key: string; label: string; daemon: DaemonClient; discoveryType: Record<string, unknown>; reports: DaemonHostRequest[] }

async function runPass(w: World, spec: PassSpec) {
  const loadAverageBefore = loadavg();
  const before = await counts(w);
  const { daemon } = spec;
  const sessionId = randomUUID();
  const update = (phase: string, progress: number, finished: string | null) => ({
    session_id: sessionId, daemon_id: daemon.id, network_id: w.networkId, phase, discovery_type: spec.discoveryType, progress, error: null,
    started_at: new Date().toISOString(), finished_at: finished,
  });
  const orm = await createOrm(w.app.databaseUrl, 10); // as the API's pool (src/core/db.ts)
  const ctxBase: IngestContext = { organizationId: w.orgId, networkId: w.networkId, daemonId: daemon.id };
  const cpu0 = process.cpuUsage();
  const m0 = machineTicks();
  const t0 = performance.now();

  // The session starts (the daemon's update, over HTTP).
  takeCounters();
  expectOk(await daemon.post(`/api/v1/discovery/${sessionId}/update`, update('Scanning', 10, null)));
  const startMs = performance.now() - t0;
  const startStatements = takeCounters();

  // Every host, as the route does it: validation, the daemon's current session, ingestHost() (one transaction).
  const batches: DaemonHostRequest[][] = [];
  for (let i = 0; i < spec.reports.length; i += BATCH) batches.push(spec.reports.slice(i, i + BATCH));
  const latencies: number[] = [];
  let next = 0;
  const h0 = performance.now();
  const runner = async () => {
    while (next < batches.length) {
      const batch = batches[next++]!;
      const b0 = performance.now();
      const requests = batch.map((report) => {
        const { value, error } = daemonHostRequestBody.validate(report, { abortEarly: true, convert: true });
        if (error) throw error;
        return value as DaemonHostRequest;
      });
      const db = new Db(orm.em.fork());
      const ctx = { ...ctxBase, discoveryId: await currentSessionId(db, w.orgId, daemon.id) };
      const results = await ingestHosts(db, ctx, requests);
      const failed = results.find((r) => r instanceof AppError);
      if (failed) throw failed;
      latencies.push(performance.now() - b0);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, runner));
  const hostsMs = performance.now() - h0;
  const hostStatements = takeCounters();

  // The session ends: summary, presence, alerts (the daemon's terminal update, over HTTP).
  const e0 = performance.now();
  expectOk(await daemon.post(`/api/v1/discovery/${sessionId}/update`, update('Complete', 100, new Date().toISOString())));
  const endMs = performance.now() - e0;
  const endStatements = takeCounters();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const m1 = machineTicks();
  await orm.close(true);

  // Not timed: the events sequenced out of the outbox, then dispatched to the webhook (rows only).
  const d0 = performance.now();
  const dispatcher = new Db(w.app.services.orm.em.fork());
  const sequenced = await sequenceEvents(dispatcher);
  let dispatched = 0;
  for (;;) {
    const { events } = await dispatchEvents(dispatcher, 5000);
    dispatched += events;
    if (!events) break;
  }
  const dispatchMs = performance.now() - d0;
  takeCounters();

  const after = await counts(w);
  const historyRowsAdded = Object.fromEntries(w.historyTables.map((t) => [t, after.history[t]! - before.history[t]!]));
  const historyRowsTotal = Object.values(historyRowsAdded).reduce((a, b) => a + b, 0);
  const [{ summary }] = await w.admin.rows(`select summary from discovery_sessions where id = $1`, [sessionId]);
  const inv = await inventory(w);
  const expected = { hosts: HOSTS, ips: HOSTS * PER_HOST.ips, ports: HOSTS * PER_HOST.ports, services: HOSTS * PER_HOST.services };
  const problems = Object.entries(expected).filter(([k, v]) => inv[k] !== v).map(([k, v]) => `${k}: ${inv[k]} (expected ${v})`);
  const perHost = (n: number) => round(n / HOSTS, 2);
  const statementsOf = (c: ReturnType<typeof takeCounters>) => ({
    db: c.db, dbPerHost: perHost(c.db), wire: c.wire, wirePerHost: perHost(c.wire), transactions: c.wireBegin, commits: c.wireCommit,
    byStatement: Object.fromEntries([...c.byLabel].sort((a, b) => b[1].count - a[1].count).map(([label, s]) => [label, perHost(s.count)])),
  });
  const result = {
    pass: spec.key, label: spec.label, daemonId: daemon.id, sessionId, discoveryType: spec.discoveryType,
    loadAverageBefore,
    hosts: HOSTS,
    hostsMs: Math.round(hostsMs), hostsPerSec: round((HOSTS * 1000) / hostsMs),
    wallMs: Math.round(wallMs), hostsPerSecWholeRun: round((HOSTS * 1000) / wallMs),
    sessionStartMs: Math.round(startMs), sessionEndMs: Math.round(endMs),
    latencyMs: {
      per: BATCH === 1 ? 'host (validation, session lookup, one ingest transaction)' : `batch of ${BATCH} hosts`,
      p50: round(percentile(latencies, 50), 2), p95: round(percentile(latencies, 95), 2), p99: round(percentile(latencies, 99), 2), max: round(percentile(latencies, 100), 2),
    },
    statements: { hosts: statementsOf(hostStatements), sessionStart: statementsOf(startStatements), sessionEnd: statementsOf(endStatements) },
    historyRowsAdded, historyRowsTotal,
    eventsAdded: after.events - before.events, eventsPendingInOutbox: after.outbox, sequenced, dispatchedEvents: dispatched,
    webhookDeliveriesAdded: after.deliveries - before.deliveries, dispatchMs: Math.round(dispatchMs),
    cpu: {
      nodeMs: Math.round((cpu.user + cpu.system) / 1000), nodeMsPerHost: round((cpu.user + cpu.system) / 1000 / HOSTS, 3),
      machineBusyPercent: round((100 * (m1.busy - m0.busy)) / Math.max(1, m1.total - m0.total)),
    },
    summary: Object.fromEntries(Object.entries(summary ?? {}).filter(([, v]) => !Array.isArray(v) || v.every((x) => typeof x === 'string'))),
    inventory: inv,
    verification: { ok: problems.length === 0, problems },
  };
  log(`${spec.key} ${spec.label}: ${result.hostsPerSec} hosts/s (${result.hostsMs} ms; whole run ${result.hostsPerSecWholeRun} hosts/s, end of session ${result.sessionEndMs} ms), `
    + `${result.statements.hosts.dbPerHost} stmt/host (${result.statements.hosts.wirePerHost} on the wire), latency p50 ${result.latencyMs.p50} / p95 ${result.latencyMs.p95} ms, `
    + `history +${historyRowsTotal}, events +${result.eventsAdded}, deliveries +${result.webhookDeliveriesAdded}, load ${loadAverageBefore.join(' ')}`
    + `${problems.length ? `; INVENTORY WRONG: ${problems.join('; ')}` : ''}`);
  return result;
}

// ---- Main ------------------------------------------------------------------------------------------

async function main() {
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.LOG_LEVEL ??= 'silent';
  await prepareTemplate();
  const date = new Date().toISOString();
  let commit = 'unknown';
  let dirty: string[] = [];
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'workers', 'migrations'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    /* not a checkout */
  }
  const machine = {
    cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 2 ** 30), node: process.version,
    loadAverageAtStart: loadavg(), shared: 'other engineers\' tests and benches run on this machine at the same time',
  };
  log(`${HOSTS} hosts × (${PER_HOST.ips} IPs, ${PER_HOST.ports} ports, ${PER_HOST.services} services); ingestHosts() ${BATCH} host(s) per transaction, ${CONCURRENCY} at once; ${machine.cpus} CPUs, load ${machine.loadAverageAtStart.join(' ')}`);

  const w = await makeWorld();
  const [first, second] = w.daemons;
  const [server] = await w.admin.rows<{ version: string }>('select version()');
  const [{ autovacuum }] = await w.admin.rows<{ autovacuum: string }>('show autovacuum');
  let failed = true;
  try {
    const byNull = networkType(first!, null);
    const byScanNow = networkType(first!, [w.subnetId]);
    const plan: PassSpec[] = [
      { key: 'A', label: 'first scan (subnet_ids null)', daemon: first!, discoveryType: byNull, reports: sourced(w.reports, byNull) },
      { key: 'B', label: 'unchanged rescan, same path (subnet_ids null)', daemon: first!, discoveryType: byNull, reports: sourced(w.reports, byNull) },
      { key: 'C', label: 'unchanged rescan, another path (Scan now: subnet_ids [subnet])', daemon: first!, discoveryType: byScanNow, reports: sourced(w.reports, byScanNow) },
    ];
    if (second) {
      const bySecond = networkType(second, [w.subnetId]);
      plan.push({ key: 'D', label: 'unchanged rescan by a second daemon (subnet_ids [subnet])', daemon: second, discoveryType: bySecond, reports: sourced(w.reports, bySecond) });
    }
    const passes: Record<string, Awaited<ReturnType<typeof runPass>>> = {};
    let analyzeMs: number | null = null;
    for (const spec of plan) {
      passes[spec.key] = await runPass(w, spec);
      if (spec.key === 'A' && ANALYZE) {
        const a0 = performance.now();
        await w.admin.rows('analyze');
        analyzeMs = Math.round(performance.now() - a0);
        log(`analyzed the database after pass A (${analyzeMs} ms, untimed)`);
      }
    }

    const base = passes.A!;
    const ratios = Object.fromEntries(Object.values(passes).filter((p) => p.pass !== 'A').map((p) => [`${p.pass}/A`, {
      hostsPerSec: round(p.hostsPerSec / base.hostsPerSec, 2),
      statementsPerHost: round(p.statements.hosts.dbPerHost / base.statements.hosts.dbPerHost, 3),
      wireStatementsPerHost: round(p.statements.hosts.wirePerHost / base.statements.hosts.wirePerHost, 3),
      latencyP50: round(p.latencyMs.p50 / base.latencyMs.p50, 2),
    }]));
    const violations: string[] = [];
    for (const p of Object.values(passes)) {
      if (!p.verification.ok) violations.push(`${p.pass}: inventory ${p.verification.problems.join('; ')}`);
      if (p.pass === 'A') continue;
      for (const [table, n] of Object.entries(p.historyRowsAdded)) if (n !== 0) violations.push(`${p.pass}: ${table} +${n}`);
      if (p.eventsAdded !== 0) violations.push(`${p.pass}: events +${p.eventsAdded}`);
      if (p.webhookDeliveriesAdded !== 0) violations.push(`${p.pass}: webhook deliveries +${p.webhookDeliveriesAdded}`);
    }
    const results = {
      benchmark: 'unchanged rescan against a first scan (issue 39)', date,
      machine: { ...machine, postgres: server?.version, autovacuum },
      code: { commit, dirtyFiles: dirty },
      config: {
        hosts: HOSTS, perHost: PER_HOST, concurrency: CONCURRENCY, hostsPerTransaction: BATCH, secondDaemon: SECOND_DAEMON,
        statistics: ANALYZE ? `the database analyzed after pass A (${analyzeMs} ms, untimed)` : `as ingest leaves them (autovacuum ${autovacuum}; one-host batches never analyze)`,
        path: 'ingestHosts() in this process as POST /api/v1/hosts/discovery runs it (validation, current session, one transaction), session start/end through the daemon\'s HTTP update',
        webhook: 'one, event_types ["*"], http://127.0.0.1:9/ (no delivery worker: rows counted only)',
        historyTables: w.historyTables,
      },
      passes, ratios,
      assertions: { ok: violations.length === 0, rule: 'passes B, C, D: 0 history rows, 0 events, 0 webhook deliveries; every pass leaves exactly the N hosts', violations },
      durationSeconds: Math.round((performance.now() - started) / 1000),
      loadAverageAtEnd: loadavg(),
    };
    const file = resultsFile(`rescan-${date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);

    console.log('\npass  hosts/s  stmt/host (wire)  p50/p95 ms  history  events  deliveries  load before');
    for (const p of Object.values(passes)) {
      console.log(`${p.pass.padEnd(5)} ${String(p.hostsPerSec).padStart(7)}  ${String(p.statements.hosts.dbPerHost).padStart(5)} (${p.statements.hosts.wirePerHost})`.padEnd(33)
        + `${p.latencyMs.p50}/${p.latencyMs.p95}`.padEnd(12) + `${String(p.historyRowsTotal).padStart(7)}  ${String(p.eventsAdded).padStart(6)}  ${String(p.webhookDeliveriesAdded).padStart(10)}  ${p.loadAverageBefore.join(' ')}`);
    }
    console.log(`ratios: ${JSON.stringify(ratios)}`);
    console.log(violations.length ? `ASSERTIONS FAILED: ${violations.join('; ')}` : 'assertions ok: the unchanged rescans wrote 0 history rows, 0 events, 0 webhook deliveries');
    console.log(`results: ${file.pathname} (${results.durationSeconds} s)`);
    failed = violations.length > 0;
  } finally {
    await w.admin.close().catch(() => undefined);
    await w.app.close();
  }
  return !failed;
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
