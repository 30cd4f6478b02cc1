// Inventory benchmark (`npm run bench`): one network of 10,000 hosts with ≥ 1,000,000 history
// states; host list vs a raw-SQL baseline, list `at` vs live, and PUT of a host with 50 children,
// all measured with autocannon against the real app in this process. See bench/README.md.
//
// Environment (all optional; bench/README.md lists them): BENCH_HOSTS, BENCH_MIN_HISTORY,
// BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_PROFILE_SECONDS, BENCH_QUIET_WAIT,
// BENCH_MAX_FOREIGN, BENCH_ATTEMPTS, BENCH_REPEAT, BENCH_KEEP=1, DATABASE_URL, REDIS_URL, LOG_LEVEL.
// BENCH_SMALL=1 (bench/small.ts): 300 hosts, 1 s measurements, no profile, results in a temporary directory.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import type autocannon from 'autocannon';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Db, migrate, quoteIdent } from '../src/core/db.js';
import { createOrm } from '../src/database.js';
import { createLogger } from '../src/core/logger.js';
import { cpuProfile, cpuWindow, explainAll, explainWhatIfs, machineBusyPercent, round, summarizeProfile, traceQueries, type CpuWindow, type TracedQuery } from './diagnose.js';
import { compareHostLists, firstDifference, RAW_PATH, rawHostsRoute } from './rawHosts.js';
import { seed } from './seed.js';
import { sequenceEvents } from '../src/modules/events/service.js';
import { http, LoadGenerator, ok, putBodies, registerTenant, withServerIds } from './inventoryWorld.js';
import { AllowAllRateLimiter, mustAgree, resultsDir, sized } from './small.js';
import { adminQuery, serverUrl } from '../test/support/app.js';

// Each setting: its variable when set, else the small run's value under BENCH_SMALL=1, else the full run's.
const CFG = {
  hosts: sized('BENCH_HOSTS', 10_000, 300),
  minHistory: sized('BENCH_MIN_HISTORY', 1_000_000, 3_000),
  durationSeconds: sized('BENCH_DURATION', 10, 1),
  warmupSeconds: sized('BENCH_WARMUP', 3, 0),
  listConnections: sized('BENCH_CONNECTIONS', 10, 4),
  putConnections: 1,
  profileSeconds: sized('BENCH_PROFILE_SECONDS', 5, 0),
  /** Before each measurement, wait up to this long for the machine to be quiet (others' test runs). */
  quietWaitSeconds: sized('BENCH_QUIET_WAIT', 60, 0),
  /** Interleaved repeats of every measurement (see below). */
  repeat: sized('BENCH_REPEAT', 1, 1),
  /** A measurement during which other processes used more than this much CPU (% of one core) is retried … */
  maxForeignPercent: sized('BENCH_MAX_FOREIGN', 15, 15),
  /** … up to this many attempts in all. */
  attempts: sized('BENCH_ATTEMPTS', 3, 1),
  keep: process.env.BENCH_KEEP === '1',
};
const TARGETS = { listVsRawThroughput: 0.5, putP99Ms: 50, atVsLiveLatency: 2 };
const RESULTS_DIR = resultsDir();

const log = (line: string) => console.log(line);
const firstDifferenceOf = (a: string, b: string) => firstDifference(JSON.parse(a), JSON.parse(b));
const started = performance.now();
const elapsed = () => `${Math.round((performance.now() - started) / 1000)}s`;

interface Scenario {
  key: string;
  title: string;
  connections: number;
  request: Partial<autocannon.Options>;
}

interface Measured {
  title: string;
  connections: number;
  durationSeconds: number;
  requests: number;
  reqPerSec: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  bytesPerResponse: number;
  errors: number;
  non2xx: number;
  cpu: CpuWindow & { loadGeneratorMs: number; foreignPercentOfOneCore: number; machineBusyBeforePercent: number };
}

// ---- Main ---------------------------------------------------------------------------------------

let drained = async () => {};

/** The commit measured, and whether src/ or migrations/ had uncommitted changes (others edit them). */
function gitState(): { commit: string; dirtyFiles: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: new URL('..', import.meta.url), encoding: 'utf8' }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), dirtyFiles: git('status', '--porcelain', '--', 'src', 'migrations').split('\n').filter(Boolean) };
  } catch {
    return { commit: 'unknown', dirtyFiles: [] };
  }
}

/** Waits (bounded) until the machine is quiet: other processes' CPU would distort the numbers. */
async function waitForQuiet(): Promise<number> {
  const deadline = performance.now() + CFG.quietWaitSeconds * 1000;
  let busy = await machineBusyPercent(1000);
  while (busy > 20 && performance.now() < deadline) {
    log(`  machine busy ${busy}% while we are idle (another process); waiting …`);
    busy = await machineBusyPercent(3000);
  }
  return busy;
}

async function main() {
  const id = randomBytes(4).toString('hex');
  const database = `netinv_bench_${id}`;
  const databaseUrl = serverUrl(database);
  const stamp = new Date().toISOString();
  log(`netinventory bench ${stamp}: database ${database}, ${os.cpus().length} CPUs, node ${process.version}`);

  // The real services and app; the database is created by createOrm and migrated here.
  const config = loadConfig({ databaseUrl, redisPrefix: `bench:${id}:` });
  const services = await createServices(config, createLogger(process.env.LOG_LEVEL ?? 'silent'));
  let server: ReturnType<ReturnType<typeof buildApp>['listen']> | undefined;
  const load = new LoadGenerator();
  try {
    await migrate(services.orm);
    // The user bucket (150 burst, 300/min) would answer 429 within a second of load. The bench
    // measures the inventory path, so the limiter is replaced by one that always allows; the real
    // limiter costs one Redis round trip (an EVALSHA) per request, which is therefore not included.
    services.rateLimiter = new AllowAllRateLimiter(services.redis);
    const app = buildApp(services);
    app.middleware.unshift(rawHostsRoute(services)); // the baseline, first; passes every other path on
    // Outermost: counts requests in flight, so a phase starts only once the previous one's last
    // request (autocannon does not wait for it) has finished.
    let inFlight = 0;
    app.middleware.unshift(async (_ctx, next) => {
      inFlight++;
      try {
        await next();
      } finally {
        inFlight--;
      }
    });
    drained = async () => {
      while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server!.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const pgInfo = await services.orm.em.fork().execute<Array<Record<string, string>>>(
      `select version() as version, current_setting('shared_buffers') as shared_buffers, current_setting('work_mem') as work_mem,
              current_setting('jit') as jit, current_setting('max_connections') as max_connections`,
    );
    const tenant = await registerTenant(base);

    // ---- Seed ----
    log(`[${elapsed()}] seeding ${CFG.hosts} hosts, ≥ ${CFG.minHistory} history states …`);
    const seeded = await seed({
      databaseUrl, ...tenant, hosts: CFG.hosts, minHistory: CFG.minHistory, batchHosts: 1000, parallel: 2, log,
    });
    log(`[${elapsed()}] seeded in ${seeded.seconds.total} s (insert ${seeded.seconds.insert} s, history ${seeded.seconds.growth} s, vacuum/analyze ${seeded.seconds.vacuumAnalyze} s); ${seeded.totalHistory} history rows; at = ${seeded.atInstant}`);
    // The seed's changes are in the events outbox; the service's sequencer would work through them
    // while the phases run (PostgreSQL busy beside the measured requests). Sequenced here first, as a
    // running service would have done long before anyone measured it.
    const sequenced = await sequenceEvents(new Db(services.orm.em.fork()));
    await services.orm.em.fork().execute('vacuum analyze event_outbox, events');
    log(`[${elapsed()}] sequenced the seed's ${sequenced} events`);

    // ---- The host that the PUT scenario rewrites: one from the middle, not on the first page ----
    const db = services.orm.em.fork();
    const [putHost] = await db.execute<Array<{ id: string }>>(
      `select id from hosts order by created_at, id offset ${Math.floor(CFG.hosts / 2)} limit 1`,
    );
    const placeholders = putBodies(putHost!.id, tenant.subnetId);
    const created = ok(await http(base, 'PUT', `/api/v1/hosts/${putHost!.id}`, { cookie: tenant.cookie, body: placeholders.a }), 200, 'PUT');
    const bodies = withServerIds(placeholders, created);
    const childIds = (data: any) => [...data.ip_addresses, ...data.ports, ...data.services, ...data.services.flatMap((x: any) => x.bindings)].map((c: any) => c.id).sort();
    for (const body of [bodies.b, bodies.a]) {
      const data = ok(await http(base, 'PUT', `/api/v1/hosts/${putHost!.id}`, { cookie: tenant.cookie, body }), 200, 'PUT');
      if (data.ip_addresses.length + data.ports.length + data.services.length !== 50) throw new Error('PUT host does not have 50 children');
      // Updated in place, not recreated: the same children as the first PUT made.
      if (JSON.stringify(childIds(data)) !== JSON.stringify(childIds(created))) throw new Error('the PUT recreated the children instead of updating them');
    }

    // ---- Same JSON from the API and the baseline (fails loudly otherwise) ----
    const rawPath = `${RAW_PATH}?limit=50&organization_id=${tenant.organizationId}`;
    // The first page, a page holding the PUT host (its 50 children), the last page, and the first
    // page `at` the middle instant (bench/rawHosts.ts answers it from the twins too).
    const middle = Math.floor(CFG.hosts / 2);
    const queries = ['limit=50', `limit=50&offset=${Math.max(0, middle - 10)}`, `limit=7&offset=${Math.max(0, CFG.hosts - 2)}`, `limit=50&at=${encodeURIComponent(seeded.atInstant)}`];
    const get = (path: string) => http(base, 'GET', path, { cookie: tenant.cookie });
    const compared = await compareHostLists(get, tenant.organizationId, queries);
    for (const c of compared) mustAgree(`GET /api/v1/hosts?${c.query} and ${RAW_PATH}`, c.difference === null && c.apiCount > 0, c.difference ?? 'empty page');
    // The baseline with the session lookup answers the same.
    for (const q of queries.slice(0, 3)) {
      const [api, raw] = [await get(`/api/v1/hosts?${q}`), await get(`${RAW_PATH}?${q}&auth=session`)];
      const diff = firstDifferenceOf(api.text, raw.text);
      mustAgree(`GET /api/v1/hosts?${q} and ${RAW_PATH}?auth=session`, diff === null, diff ?? '');
    }
    const equality = compared.map(({ query, apiBytes, rawBytes }) => ({ query, apiBytes, rawBytes }));
    const atList = ok(await http(base, 'GET', `/api/v1/hosts?limit=50&at=${encodeURIComponent(seeded.atInstant)}`, { cookie: tenant.cookie }));
    if (atList.length !== 50 || !/ r\d+$/.test(atList[0].name) || atList[0].ports.length !== 5) throw new Error(`unexpected at list: ${JSON.stringify(atList[0]).slice(0, 300)}`);
    log(`[${elapsed()}] baseline body equals the API body (deep-equal) for ${equality.map((e) => e.query).join(', ')} (and with auth=session)`);

    // ---- Measurements ----
    const headers = { cookie: tenant.cookie };
    const scenarios: Scenario[] = [
      { key: 'raw', title: 'GET raw SQL baseline ?limit=50', connections: CFG.listConnections, request: { url: base + rawPath } },
      { key: 'api', title: 'GET /api/v1/hosts?limit=50', connections: CFG.listConnections, request: { url: `${base}/api/v1/hosts?limit=50` } },
      { key: 'apiAt', title: 'GET /api/v1/hosts?limit=50&at=<middle>', connections: CFG.listConnections, request: { url: `${base}/api/v1/hosts?limit=50&at=${encodeURIComponent(seeded.atInstant)}` } },
      { key: 'rawSession', title: 'GET raw baseline + session lookup', connections: CFG.listConnections, request: { url: `${base}${RAW_PATH}?limit=50&auth=session` } },
      {
        key: 'put', title: 'PUT /api/v1/hosts/{id} (50 children)', connections: CFG.putConnections,
        // autocannon cycles through `requests` per connection: A, B, A, B, … so every PUT changes the host.
        request: {
          url: base,
          requests: [bodies.b, bodies.a].map((b) => ({ method: 'PUT' as const, path: `/api/v1/hosts/${putHost!.id}`, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(b) })),
        },
      },
    ];
    // Every backend of the database, the one answering this query too (it is a pool connection
    // that serves requests as well; leaving it out would count its whole lifetime once it returns).
    const backends = () => services.orm.em.fork().execute<Array<{ pid: number; backend_type: string }>>(
      `select pid, backend_type from pg_stat_activity where datname = current_database()`,
    );

    // Other processes on this 2-core machine (e.g. a test run) take CPU from the API and PostgreSQL.
    // A measurement during which they used more than BENCH_MAX_FOREIGN % of a core is retried (up
    // to BENCH_ATTEMPTS); with BENCH_REPEAT > 1 the scenarios are measured again, interleaved. The
    // headline figure of a scenario is its least disturbed measurement; all of them are kept.
    const repeats: Record<string, Measured[]> = {};
    for (let rep = 1; rep <= CFG.repeat; rep++) {
      for (const s of scenarios) for (let attempt = 1; attempt <= CFG.attempts; attempt++) {
        const options = { headers, connections: s.connections, ...s.request } as autocannon.Options;
        await drained();
        const idleBusyPercent = await waitForQuiet();
        if (CFG.warmupSeconds > 0) await load.run({ ...options, duration: CFG.warmupSeconds });
        await drained();
        const stop = await cpuWindow(backends);
        const { result, cpuMs } = await load.run({ ...options, duration: CFG.durationSeconds });
        const window = await stop();
        await drained();
        // CPU the machine spent that was neither the API, its PostgreSQL backends nor autocannon.
        const ours = window.serverMs + window.postgresMs + cpuMs;
        const foreignPercent = Math.max(0, round((window.machineBusyPercent * window.machineCores * result.duration * 10 - ours) / (result.duration * 10), 0));
        const cpu = { ...window, loadGeneratorMs: Math.round(cpuMs), foreignPercentOfOneCore: foreignPercent, machineBusyBeforePercent: idleBusyPercent };
        const m: Measured = {
          title: s.title,
          connections: s.connections,
          durationSeconds: result.duration,
          requests: result['2xx'],
          reqPerSec: round(result['2xx'] / result.duration, 1),
          latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: round(result.latency.mean) },
          bytesPerResponse: Math.round(result.throughput.total / Math.max(1, result['2xx'])),
          errors: result.errors,
          non2xx: result.non2xx,
          cpu,
        };
        if (m.non2xx || m.errors || !m.requests) throw new Error(`${s.title}: ${m.non2xx} non-2xx, ${m.errors} errors, ${m.requests} ok`);
        (repeats[s.key] ??= []).push(m);
        log(`[${elapsed()}] ${s.title} (repeat ${rep}, attempt ${attempt}): ${m.reqPerSec} req/s, p50 ${m.latencyMs.p50} ms, p99 ${m.latencyMs.p99} ms, other CPU ${foreignPercent}%`);
        if (foreignPercent <= CFG.maxForeignPercent) break;
      }
    }
    const measured: Record<string, Measured> = Object.fromEntries(Object.entries(repeats).map(([k, list]) =>
      [k, list.reduce((best, m) => (m.cpu.foreignPercentOfOneCore < best.cpu.foreignPercentOfOneCore ? m : best))]));

    // ---- Diagnostics: SQL of one request, EXPLAIN ANALYZE, CPU profiles (after the measurements) ----
    const atPath = `/api/v1/hosts?limit=50&at=${encodeURIComponent(seeded.atInstant)}`;
    const one = (path: string, method = 'GET', body?: unknown) => http(base, method, path, { cookie: tenant.cookie, body });
    const traces: Record<string, unknown> = {};
    const tracedQueries: Record<string, TracedQuery[]> = {};
    const put = (body: unknown) => one(`/api/v1/hosts/${putHost!.id}`, 'PUT', body);
    for (const [key, warm, run, before] of [
      ['api', () => one('/api/v1/hosts?limit=50'), () => one('/api/v1/hosts?limit=50'), null],
      ['apiAt', () => one(atPath), () => one(atPath), null],
      ['raw', () => one(rawPath), () => one(rawPath), null],
      // A real change (A → B) is traced; the EXPLAIN replay then needs the host back in state A.
      ['put', () => put(bodies.a), () => put(bodies.b), () => put(bodies.a)],
    ] as const) {
      await drained();
      await warm(); // warm the statement path
      const t0 = performance.now();
      const { queries } = await traceQueries(services, run);
      const totalMs = round(performance.now() - t0);
      if (before) await before();
      const explained = await explainAll(services, queries);
      traces[key] = {
        requestMs: totalMs,
        statements: explained.map((e) => ({
          sql: e.sql.replace(/\s+/g, ' ').slice(0, 300), clientMs: e.clientMs, executionMs: e.executionMs, planningMs: e.planningMs,
        })),
        plans: explained.map((e) => e.plan),
      };
      log(`[${elapsed()}] traced ${key}: ${queries.length} statements, ${totalMs} ms (sum of statement round trips ${round(queries.reduce((a, q) => a + q.ms, 0))} ms)`);
      tracedQueries[key] = queries;
    }

    // What the two host-page statements would cost written differently (evidence for the report;
    // every variant runs in a rolled-back transaction, so the schema is unchanged).
    // The host page statement (with or without a `count(*) over ()` window, which earlier versions used).
    // Live: `from hosts t`; as of an instant: the states (HistoryTable.states: the history's closed states and the live rows).
    const pageOf = (key: string) => tracedQueries[key]!.find((q) => /from hosts t\b|from hosts_history\b/.test(q.sql) && q.sql.includes(' limit '))!;
    const withoutCount = (q: TracedQuery) => q.sql.replace(', count(*) over () as total_count', '');
    // The count is the API's own statement beside the page (the as-of page is two branches cut on their own, HistoryTable.pageAt).
    const countOf = (key: string) => tracedQueries[key]!.find((q) => /^select count\(\*\) as n from /.test(q.sql) && /\bhosts(_history)?\b/.test(q.sql))!;
    const live = pageOf('api');
    const asOf = pageOf('apiAt');
    const [liveCount, asOfCount] = [countOf('api'), countOf('apiAt')];
    const whatIfs = await explainWhatIfs(services, [
      { name: 'live page, as the API runs it', why: 'reference', sql: live.sql, params: live.params },
      { name: 'live page without count(*) over ()', why: 'the page alone can stop after 50 index entries', sql: withoutCount(live), params: live.params },
      { name: 'live count(*), as the API runs it', why: 'a separate count is an index-only scan', sql: liveCount.sql, params: liveCount.params },
      { name: 'at page, as the API runs it', why: 'reference', sql: asOf.sql, params: asOf.params },
      { name: 'at page without count(*) over ()', why: 'isolates the window count', sql: withoutCount(asOf), params: asOf.params },
      { name: 'at count(*), as the API runs it', why: 'isolates the count', sql: asOfCount.sql, params: asOfCount.params },
      {
        name: 'at page with a GiST index on (organization_id, period)', why: 'the Owner query filters organization_id, the existing GiST index leads with network_id',
        setup: ['create index bench_whatif_org_asof on hosts_history using gist (organization_id, tstzrange(valid_from, valid_to))'], sql: asOf.sql, params: asOf.params,
      },
      {
        name: 'at page without count, btree (organization_id, created_at, id) on the history', why: 'ordered scan that stops after 50 valid states',
        setup: ['create index bench_whatif_org_created on hosts_history (organization_id, created_at, id)'], sql: withoutCount(asOf), params: asOf.params,
      },
    ]);
    for (const w of whatIfs) log(`  what-if: ${w.name}: ${w.executionMs} ms`);

    const profiles: Record<string, unknown> = {};
    if (CFG.profileSeconds > 0) {
      mkdirSync(new URL('./profiles/', RESULTS_DIR), { recursive: true });
      for (const s of scenarios.filter((x) => x.key !== 'rawSession')) {
        const options = { headers, connections: s.connections, ...s.request, duration: CFG.profileSeconds } as autocannon.Options;
        await drained();
        const { result, profile } = await cpuProfile(() => load.run(options));
        const file = new URL(`./profiles/inventory-${stamp.replace(/[:.]/g, '-')}-${s.key}.cpuprofile`, RESULTS_DIR);
        writeFileSync(file, JSON.stringify(profile));
        profiles[s.key] = { file: file.pathname.replace(/^.*\/bench\//, 'bench/'), reqPerSecWhileProfiling: round(result.result['2xx'] / result.result.duration, 1), ...summarizeProfile(profile) };
        log(`[${elapsed()}] profiled ${s.key}`);
      }
    }

    // ---- Verdict ----
    const ratios = {
      listVsRawThroughput: round(measured.api!.reqPerSec / measured.raw!.reqPerSec, 3),
      listVsRawSessionThroughput: round(measured.api!.reqPerSec / measured.rawSession!.reqPerSec, 3),
      atVsLiveP50: round(measured.apiAt!.latencyMs.p50 / measured.api!.latencyMs.p50, 3),
      atVsLiveP99: round(measured.apiAt!.latencyMs.p99 / measured.api!.latencyMs.p99, 3),
      liveVsAtThroughput: round(measured.api!.reqPerSec / measured.apiAt!.reqPerSec, 3),
    };
    const targets = [
      { name: 'list throughput ≥ 50% of the raw baseline', target: `≥ ${TARGETS.listVsRawThroughput}`, value: ratios.listVsRawThroughput, met: ratios.listVsRawThroughput >= TARGETS.listVsRawThroughput },
      { name: 'PUT p99 < 50 ms at 1 client', target: `< ${TARGETS.putP99Ms} ms`, value: measured.put!.latencyMs.p99, met: measured.put!.latencyMs.p99 < TARGETS.putP99Ms },
      { name: '`at` list ≤ 2× the live list (p50 latency)', target: `≤ ${TARGETS.atVsLiveLatency}`, value: ratios.atVsLiveP50, met: ratios.atVsLiveP50 <= TARGETS.atVsLiveLatency },
    ];

    const results = {
      date: stamp,
      machine: {
        cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 2 ** 30, 1), loadAverageAtEnd: os.loadavg(),
        node: process.version, postgres: pgInfo[0], autocannon: '9.0.0',
      },
      code: gitState(),
      config: { ...CFG, logLevel: process.env.LOG_LEVEL ?? 'silent', rateLimiter: 'replaced by allow-all', pgPoolMax: 10 },
      seed: seeded,
      equality,
      scenarios: measured,
      repeats,
      ratios,
      targets,
      disturbedBy: Object.fromEntries(Object.entries(measured).map(([k, m]) => [k, m.cpu.foreignPercentOfOneCore])),
      traces,
      whatIfs,
      profiles,
    };
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = new URL(`./inventory-${stamp.replace(/[:.]/g, '-')}.json`, RESULTS_DIR);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);

    // ---- Summary ----
    log('');
    log(`| scenario | conns | req/s | p50 ms | p90 ms | p99 ms | max ms | KiB/resp | API CPU¹ | PG CPU¹ | load CPU¹ | other CPU¹ | machine busy |`);
    log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
    for (const m of Object.values(measured)) {
      const pct = (ms: number) => `${Math.round(ms / (m.durationSeconds * 10))}%`;
      log(`| ${m.title} | ${m.connections} | ${m.reqPerSec} | ${m.latencyMs.p50} | ${m.latencyMs.p90} | ${m.latencyMs.p99} | ${m.latencyMs.max} | ${round(m.bytesPerResponse / 1024, 1)} | ${pct(m.cpu.serverMs)} | ${pct(m.cpu.postgresMs)} | ${pct(m.cpu.loadGeneratorMs)} | ${m.cpu.foreignPercentOfOneCore}% | ${m.cpu.machineBusyPercent}% of ${m.cpu.machineCores} |`);
    }
    log('¹ % of one core over the measurement (API = this process; PG = backends of the bench database; other = the rest of the machine)');
    log('');
    for (const t of targets) log(`${t.met ? 'MET   ' : 'MISSED'} ${t.name}: ${t.value} (target ${t.target})`);
    const disturbed = Object.values(measured).filter((m) => m.cpu.foreignPercentOfOneCore > CFG.maxForeignPercent);
    if (disturbed.length) {
      log(`WARNING: other processes used > ${CFG.maxForeignPercent}% of a core during: ${disturbed.map((m) => `${m.title} (${m.cpu.foreignPercentOfOneCore}%)`).join('; ')}. Those figures are pessimistic; rerun on a quiet machine (or raise BENCH_ATTEMPTS).`);
    }
    log(`ratios: ${JSON.stringify(ratios)}`);
    log(`results: ${file.pathname}`);
  } finally {
    load.close();
    if (server) {
      server.closeAllConnections();
      await new Promise((resolve) => server!.close(resolve));
    }
    const keys = await services.redis.keys(`${config.redisPrefix}*`).catch(() => [] as string[]);
    if (keys.length) await services.redis.del(...keys).catch(() => undefined);
    await closeServices(services);
    if (CFG.keep) log(`kept database ${database} (BENCH_KEEP=1)`);
    else await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
  }
}

main().then(
  () => log(`done in ${elapsed()}`),
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
