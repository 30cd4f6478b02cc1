// Growth-curve benchmark (issue 27 part 6, `npm run bench:growth`): how the cost of the main requests
// grows with the organization, at 10,000 / 30,000 / 100,000 hosts holding 1 / 3 / 10 million
// history states (the same depth of history per host at every point: the organization grows, not
// the age of its rows). One organization under test among GROWTH_OTHER_ORGS others holding
// GROWTH_OTHER_SHARE as many hosts again (so every tenancy filter has other rows to skip).
//
// The database is grown in place from one point to the next (bench/growthSeed.ts), and at each point
// every operation is measured through the real HTTP API of the app running in this process, one
// request at a time, p50/p99 over GROWTH_RUNS requests after 2 discarded ones, each with its raw-SQL
// baseline in the same run where one exists:
//   list       GET /api/v1/hosts?limit=50                       raw: bench/rawHosts.ts's one statement
//   tagList    GET /api/v1/hosts?limit=50&tag_ids=<tag of 1 host in 10>   raw: the same with `tags && …`
//   atList     GET /api/v1/hosts?limit=50&at=<instant in the past>        raw: the same from the twins, GiST predicate
//   put        PUT /api/v1/hosts/{id} with 50 children (bodies A and B alternate; children updated in place)
//   topology   GET /api/v1/topology (default max_nodes budget): drawn (graph cache off, layout left
//              queued) and cached (graph cache on, after one layout job has stored positions)
//   layout     the layout job of that view, once (elk)
//   diff       GET /api/v1/topology/diff from just before this point's PUTs to now (one host and its
//              children changed); diffFullHistory: from the past instant (every node changed), once, up to 10,000 hosts
//   ingestNew / ingestSame   POST /api/v1/hosts/discovery as the daemon, GROWTH_INGEST new hosts one
//              request each, then the same reports again (unchanged)
// At each point the slow statements are explained (EXPLAIN ANALYZE, BUFFERS, in rolled-back
// transactions) and kept in the JSON.
//
// Schema variants: plain, and `partitioned` when the migrations know SCHEMA_VARIANT (issue 27 part
// 3); each variant gets its own database, created here and dropped afterwards unless BENCH_KEEP=1.
// Writes bench/results/growth-<stamp>.json and the chart bench/growth.svg.
//
// Environment: GROWTH_POINTS ("10000:1000000,30000:3000000,100000:10000000": hosts:states of the
// organization under test), GROWTH_VARIANTS (plain[,partitioned]; default: both if the migrations
// know SCHEMA_VARIANT), GROWTH_RUNS (40), GROWTH_TOPO_RUNS (5), GROWTH_DIFF_RUNS (5), GROWTH_FULL_DIFF_MAX_HOSTS
// (10000), GROWTH_INGEST (50), GROWTH_OTHER_ORGS (3), GROWTH_OTHER_SHARE (0.2), GROWTH_CHUNK (5000 hosts per seeding transaction),
// GROWTH_DROP_INDEXES=1 (seed with the twins' secondary indexes dropped, see below), GROWTH_SVG
// (bench/growth.svg), BENCH_KEEP=1, DATABASE_URL, REDIS_URL, LOG_LEVEL.
// `growth.ts --chart a.json b.json` draws one chart (GROWTH_SVG) and prints the tables from several
// runs' results, e.g. the two variants run as two processes at once (under the same load).
// BENCH_SMALL=1 (bench/small.ts): the plain schema, points 200 and 400 hosts, 2 runs per request, one
// other organization, 5 ingests; results and chart in a temporary directory.
// The request rate limiter and the heavy-read budget are off: the bench times requests, one at a time.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Db, migrate, quoteIdent } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { GraphCache } from '../src/modules/topology/graphCache.js';
import { sequenceEvents } from '../src/modules/events/service.js';
import { adminQuery, serverUrl } from '../test/support/app.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../test/daemons/world.js';
import { hostReport, postSubnet } from '../test/discovery/reports.js';
import { runLayoutJob } from '../workers/topologyLayout.js';
import { explainAll, traceQueries } from './diagnose.js';
import { compareHostLists, RAW_PATH, rawHostsRoute } from './rawHosts.js';
import { AllowAllRateLimiter, mustAgree, resultsDir, sized, sizedText, SMALL } from './small.js';
import { checkHistory, growOrg, ROWS_PER_HOST, SEEDED_TABLES, seedTimings, withoutHistoryIndexes } from './growthSeed.js';
import { ok, putBodies, withServerIds } from './inventoryWorld.js';

const migrationsKnowVariant = () => {
  const dir = new URL('../migrations/', import.meta.url);
  return readdirSync(dir).some((f) => readFileSync(new URL(f, dir), 'utf8').includes('SCHEMA_VARIANT'));
};
// Each setting: its variable when set, else the small run's value under BENCH_SMALL=1 (bench/small.ts), else the full run's.
const CFG = {
  points: sizedText('GROWTH_POINTS', '10000:1000000,30000:3000000,100000:10000000', '200:4000,400:8000').split(',').map((p) => {
    const [hosts, states] = p.split(':').map(Number);
    return { hosts: hosts!, states: states! };
  }),
  // A small run measures the plain schema only (test/bench/baselines.spec.ts checks the baseline on both: npm run audit:pruning runs it partitioned).
  variants: (process.env.GROWTH_VARIANTS ?? (migrationsKnowVariant() && !SMALL ? 'plain,partitioned' : 'plain')).split(',') as Array<'plain' | 'partitioned'>,
  runs: sized('GROWTH_RUNS', 40, 2),
  topoRuns: sized('GROWTH_TOPO_RUNS', 5, 1),
  diffRuns: sized('GROWTH_DIFF_RUNS', 5, 1),
  fullDiffMaxHosts: sized('GROWTH_FULL_DIFF_MAX_HOSTS', 10_000, 10_000),
  ingest: sized('GROWTH_INGEST', 50, 5),
  otherOrgs: sized('GROWTH_OTHER_ORGS', 3, 1),
  otherShare: sized('GROWTH_OTHER_SHARE', 0.2, 0.2),
  chunk: sized('GROWTH_CHUNK', 5000, 5000),
  /** The chart: bench/growth.svg, or next to the results of a small run. */
  svg: process.env.GROWTH_SVG ?? (SMALL ? new URL('growth.svg', resultsDir()).pathname : new URL('./growth.svg', import.meta.url).pathname),
  keep: process.env.BENCH_KEEP === '1',
};
const WARMUP = 2;
const TAG_EVERY = 10;
const RESULTS_DIR = resultsDir();

const started = performance.now();
const elapsed = () => `${Math.round((performance.now() - started) / 1000)}s`;
const log = (line: string) => console.log(`[growth ${elapsed().padStart(5)}] ${line}`);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
interface Stats { n: number; p50: number; p99: number; mean: number; min: number; max: number }
const stats = (ms: number[]): Stats => ({
  n: ms.length, p50: round(pct(ms, 50)), p99: round(pct(ms, 99)), mean: round(ms.reduce((a, b) => a + b, 0) / ms.length), min: round(Math.min(...ms)), max: round(Math.max(...ms)),
});

// ---- HTTP ------------------------------------------------------------------------------------------

async function call(base: string, method: string, path: string, opts: { cookie?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { 'Accept-Encoding': 'identity' };
  if (opts.cookie) headers.Cookie = opts.cookie;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** `runs` timed calls of fn after WARMUP untimed ones (or `warmup`); each call must succeed. */
async function timed(runs: number, fn: (i: number) => Promise<unknown>, warmup = WARMUP): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn(i);
    ms.push(performance.now() - t);
  }
  return ms;
}

async function registerOwner(base: string, label: string) {
  const email = `growth-${label}-${randomBytes(4).toString('hex')}@example.test`;
  const password = 'correct-horse-battery';
  const user = ok(await call(base, 'POST', '/api/auth/register', { body: { email, password, organization_name: `Growth ${label}` } }), 201, 'register');
  const login = await call(base, 'POST', '/api/auth/login', { body: { email, password } });
  ok(login, 200, 'login');
  return { organizationId: user.organization_id as string, networkId: user.network_ids[0] as string, cookie: login.headers.get('set-cookie')!.split(';')[0]! };
}

// ---- Raw-SQL baselines (same process, same pool, no auth/validation/repository) -------------------

// bench/rawHosts.ts's route: its one statement for the list, the same with the tag filter on the
// page and the count (`tag=`), and as of an instant from the twins, each read with the GiST-indexed
// period predicate (`at=`).

// The PUT bodies: bench/inventoryWorld.ts's (10 addresses, 30 ports, 10 services with 20 bindings).

// ---- Daemon reports ---------------------------------------------------------------------------------

const hex2 = (n: number) => (n & 255).toString(16).padStart(2, '0').toUpperCase();
/** Report i: 2 addresses in 172.16.0.0/16 with universal MACs 00:50:56:…, 5 ports, 3 services. */
function report(daemon: DaemonClient, networkId: string, subnetId: string, i: number) {
  const a = 256 + 2 * i;
  const ip = (n: number) => `172.16.${(n >> 8) & 255}.${n & 255}`;
  const mac = (n: number) => `00:50:56:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`;
  return hostReport(daemon, networkId, {
    hostname: `ingest-${i}.bench.lan`,
    interfaces: [
      { subnet_id: subnetId, ip_address: ip(a), mac_address: mac(a), name: 'eth0' },
      { subnet_id: subnetId, ip_address: ip(a + 1), mac_address: mac(a + 1), name: 'eth1' },
    ],
    ports: [{ number: 22 }, { number: 80 }, { number: 443 }, { number: 5432 }, { number: 161, protocol: 'Udp' }],
    services: [{ name: 'OpenSSH', ports: [22] }, { name: 'Nginx', ports: [80, 443] }, { name: 'PostgreSQL', ports: [5432, 161] }],
  });
}

// ---- One variant: a database grown through every point ---------------------------------------------

interface VariantResult { variant: string; database: string; partitionedTables: number; points: any[] }
interface Explained { op: string; statements: Array<{ sql: string; clientMs: number; executionMs: number | null }>; slowestPlan: string }

async function runVariant(variant: 'plain' | 'partitioned', onPoint: (partial: VariantResult) => void): Promise<VariantResult> {
  const id = randomBytes(4).toString('hex');
  const database = `netinv_growth_${variant}_${id}`;
  const databaseUrl = serverUrl(database);
  // The variant is a setting read by the migrations (issue 27 part 3).
  if (variant === 'partitioned') process.env.SCHEMA_VARIANT = 'partitioned';
  else delete process.env.SCHEMA_VARIANT;
  // The heavy-read budget (a per-organization CPU-time bucket for topology reads) off: the bench times
  // back-to-back topology reads of one organization, which the budget would answer 429 once they
  // cost more than its burst (it did at 30,000 hosts in the run of 2026-11-25 23:29).
  const config = loadConfig({ databaseUrl, redisPrefix: `bench:growth:${id}:`, heavyReadBudget: { burstMs: 0, refillMsPerSecond: 0 } });
  const services = await createServices(config, createLogger(process.env.LOG_LEVEL ?? 'silent'));
  let server: ReturnType<ReturnType<typeof buildApp>['listen']> | undefined;
  const points: any[] = [];
  try {
    await migrate(services.orm);
    const partitionedTables = await services.orm.em.fork().execute<Array<{ n: number }>>(`select count(*)::int as n from pg_partitioned_table`);
    log(`${variant}: database ${database}, ${partitionedTables[0]!.n} partitioned tables`);
    if (variant === 'partitioned' && partitionedTables[0]!.n === 0) throw new Error('SCHEMA_VARIANT=partitioned made no partitioned table');
    // The bench measures the request path, not the rate limiter (as bench/run.ts).
    services.rateLimiter = new AllowAllRateLimiter(services.redis);
    const graphCache = services.topologyGraphs;
    const app = buildApp(services);
    app.middleware.unshift(rawHostsRoute(services));
    server = app.listen(0, '127.0.0.1');
    // Node closes an idle keep-alive socket after 5 s; on this busy machine the client then reuses a
    // socket the server is closing (ECONNRESET). The bench's one client keeps its sockets longer.
    server.keepAliveTimeout = 120_000;
    server.headersTimeout = 121_000;
    await new Promise((r) => server!.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    // Tenants: the organization under test and the others, through the API.
    const owner = await registerOwner(base, 'under-test');
    const others: Array<Awaited<ReturnType<typeof registerOwner>>> = [];
    for (let k = 1; k <= CFG.otherOrgs; k++) others.push(await registerOwner(base, `other-${k}`));
    const tag = ok(await call(base, 'POST', '/api/v1/tags', { cookie: owner.cookie, body: { name: 'growth-tagged', color: 'Orange' } }), 201, 'tag');
    const putSubnet = ok(await call(base, 'POST', '/api/v1/subnets', { cookie: owner.cookie, body: { network_id: owner.networkId, cidr: '10.200.0.0/24', name: 'put' } }), 201, 'subnet');
    const daemon = daemonClient(base, (await createDaemonKey(base, owner as never, owner.networkId)).key);
    await registerDaemon(daemon, owner.networkId);
    const daemonSubnet = await postSubnet(daemon, owner.networkId, '172.16.0.0/16');
    const q = `network_id=${owner.networkId}`;
    await sequenceEvents(new Db(services.orm.em.fork()));
    const baseInstant = new Date().toISOString();

    let seededHosts = 0;
    const seededOthers = others.map(() => 0);
    let putHostId: string | null = null;
    let bodies: ReturnType<typeof putBodies> | null = null;
    let atInstant = '';
    for (const [pointIndex, point] of CFG.points.entries()) {
      const statesPerHost = point.states / point.hosts;
      const rounds = Math.max(1, Math.ceil(statesPerHost / ROWS_PER_HOST) - 1);
      const p0 = performance.now();
      log(`${variant}: point ${pointIndex + 1}: growing to ${point.hosts} hosts (${rounds} past states per row) and the others to ${Math.round(point.hosts * CFG.otherShare)} hosts in all …`);
      const seedLog = (s: string) => (process.env.GROWTH_VERBOSE ? log(s) : undefined);
      const seedPoint = async () => {
        await growOrg(databaseUrl, { ...owner, from: seededHosts, to: point.hosts, rounds, tagId: tag.id, tagEvery: TAG_EVERY, base: baseInstant, orgIndex: 0 },
          { chunk: CFG.chunk, parallel: 2, log: seedLog });
        seededHosts = point.hosts;
        for (const [k, other] of others.entries()) {
          const to = Math.round((point.hosts * CFG.otherShare) / CFG.otherOrgs);
          await growOrg(databaseUrl, { ...other, from: seededOthers[k]!, to, rounds, tagId: null, tagEvery: TAG_EVERY, base: baseInstant, orgIndex: k + 1 }, { chunk: CFG.chunk, parallel: 2, log: seedLog });
          seededOthers[k] = to;
        }
      };
      // GROWTH_DROP_INDEXES=1: the twins' secondary indexes dropped while seeding and built again
      // after (bench/growthSeed.ts). Measured (plain, 2026-11-26, shared machine): slower at 10,000
      // hosts (83 s against 73 s) and 30,000 (263 s against 220 s), faster at 100,000 (620 s, 381 of
      // them rebuilding, against 1,189 s): the rebuild covers the whole twin, not the increment, and PostgreSQL 15
      // builds the (uuid, tstzrange) GiST indexes without sorting. So off by default.
      if (process.env.GROWTH_DROP_INDEXES === '1') await withoutHistoryIndexes(databaseUrl, seedPoint, seedLog);
      else await seedPoint();
      const seedSeconds = round((performance.now() - p0) / 1000);
      const seedStatements = Object.fromEntries(Object.entries(seedTimings).map(([k, v]) => [k, round(v, 2)]));
      for (const k of Object.keys(seedTimings)) delete seedTimings[k];
      log(`${variant}: seeding statements (s, summed over chunks and connections): ${JSON.stringify(seedStatements)}`);
      const historyProblems = await checkHistory(databaseUrl, owner.organizationId);
      if (historyProblems.length) throw new Error(`seeded history is not SCD2: ${historyProblems.join('; ')}`);
      if (process.env.GROWTH_SEED_ONLY === '1') continue;
      // The seed's live inserts left one outbox row per row in the outbox. A running service would
      // have sequenced them into the feed as they came; sequencing 2 million here costs ~8 minutes
      // of this loaded machine and no measured request reads the feed, so they are deleted instead
      // (the tenants' registrations, before the seed, are sequenced as usual).
      const s0 = performance.now();
      const outbox = await services.orm.em.fork().execute<Array<{ n: number }>>(`with d as (delete from event_outbox returning 1) select count(*)::int as n from d`);
      const sequenced = outbox[0]!.n;
      const sequenceSeconds = round((performance.now() - s0) / 1000);
      const v0 = performance.now();
      const admin = services.orm.em.fork();
      for (const t of [...SEEDED_TABLES, 'subnets']) {
        await admin.execute(`vacuum (analyze) ${t}`);
        await admin.execute(`vacuum (analyze) ${t}_history`);
      }
      // The deleted outbox rows too: left to autovacuum, the dead index entries made the outbox's
      // 'anything pending?' probe (first seq) on every write read 5,315 buffers, 43 ms of the PUT at
      // 100,000 hosts (run of 2026-11-25 23:29), a cost of the bench's delete, not of the data's size.
      await admin.execute(`vacuum (analyze) event_outbox`);
      const vacuumSeconds = round((performance.now() - v0) / 1000);
      const counts = await admin.execute<Array<Record<string, number>>>(
        `select ${SEEDED_TABLES.map((t) => `(select count(*) from ${t}_history where organization_id = ?)::int as ${t}_org,
                 (select count(*) from ${t}_history)::int as ${t}_all`).join(', ')},
                (select count(*) from hosts where organization_id = ?)::int as hosts_live_org, (select count(*) from hosts)::int as hosts_live_all,
                pg_database_size(current_database())::bigint as database_bytes`,
        [...SEEDED_TABLES.map(() => owner.organizationId), owner.organizationId],
      );
      const c = counts[0]!;
      const historyOrg = SEEDED_TABLES.reduce((a, t) => a + c[`${t}_org`]!, 0);
      const historyAll = SEEDED_TABLES.reduce((a, t) => a + c[`${t}_all`]!, 0);
      log(`${variant}: point ${pointIndex + 1}: seeded in ${seedSeconds} s, ${sequenced} seed outbox rows deleted in ${sequenceSeconds} s, vacuum ${vacuumSeconds} s; `
        + `org: ${c.hosts_live_org} hosts, ${historyOrg} states; all orgs: ${c.hosts_live_all} hosts, ${historyAll} states; ${round(Number(c.database_bytes) / 2 ** 30, 2)} GiB`);

      // The past instant: half way through the seeded history of every host (states are 1 h apart,
      // the oldest `rounds` hours before its insert; points are inserted minutes apart).
      if (!atInstant) atInstant = new Date(Date.parse(baseInstant) - (rounds / 2) * 3600_000 + 1800_000).toISOString().replace(/(\.\d{3})Z$/, '$1000Z');
      // The PUT host: a seeded one from the middle of the first point (the same host at every point).
      if (!putHostId) {
        const [row] = await admin.execute<Array<{ id: string }>>(`select id from hosts where organization_id = ? and name = ?`, [owner.organizationId, `host-${String(Math.floor(point.hosts / 2)).padStart(6, '0')}`]);
        putHostId = row!.id;
        const placeholders = putBodies(putHostId, putSubnet.id);
        bodies = withServerIds(placeholders, ok(await call(base, 'PUT', `/api/v1/hosts/${putHostId}`, { cookie: owner.cookie, body: placeholders.a }), 200, 'PUT'));
      }

      // ---- Sanity: the API and the baselines answer the same pages ----
      const get = (path: string) => call(base, 'GET', path, { cookie: owner.cookie });
      const paths = {
        list: '/api/v1/hosts?limit=50',
        tagList: `/api/v1/hosts?limit=50&tag_ids=${tag.id}`,
        atList: `/api/v1/hosts?limit=50&at=${encodeURIComponent(atInstant)}`,
        rawList: `${RAW_PATH}?limit=50&organization_id=${owner.organizationId}`,
        rawTagList: `${RAW_PATH}?limit=50&tag=${tag.id}&organization_id=${owner.organizationId}`,
        rawAtList: `${RAW_PATH}?limit=50&at=${encodeURIComponent(atInstant)}&organization_id=${owner.organizationId}`,
        topology: `/api/v1/topology?${q}`,
        diff: `/api/v1/topology/diff?${q}&from=${encodeURIComponent(atInstant)}`,
      };
      // The same JSON (deep-equal after parsing: data, totals), on pages that are not empty.
      const compared = await compareHostLists(get, owner.organizationId, ['limit=50', `limit=50&tag_ids=${tag.id}`, `limit=50&at=${encodeURIComponent(atInstant)}`]);
      for (const c of compared) mustAgree(`GET /api/v1/hosts?${c.query} and ${RAW_PATH}`, c.difference === null && c.apiCount > 0, c.difference ?? 'empty page');
      const atPage = JSON.parse((await get(paths.atList)).text).data;
      if (!/ r\d+$/.test(atPage[0].name) || atPage[0].ports.length !== 5) throw new Error(`at list is not the past: ${atPage[0].name}`);

      // ---- Measurements ----
      const ms: Record<string, number[]> = {};
      // An operation that fails (e.g. the topology's 30 s limit on a loaded machine) is recorded as
      // failed and the point goes on; the lists and their baselines (below) must not fail.
      const failures: Record<string, string> = {};
      const measure = async (key: string, runs: number, fn: (i: number) => Promise<unknown>, warmup = WARMUP) => {
        try {
          ms[key] = await timed(runs, fn, warmup);
        } catch (err) {
          failures[key] = (err as Error).message.slice(0, 300);
          log(`${variant} ${point.hosts}: ${key}: FAILED: ${failures[key]}`);
          return;
        }
        const s = stats(ms[key]!);
        log(`${variant} ${point.hosts}: ${key}: p50 ${s.p50} ms, p99 ${s.p99} ms (n ${s.n})`);
      };
      const getOk = (path: string, what: string) => async () => ok(await get(path), 200, what);
      // Lists and their baselines, interleaved in pairs so that a busy moment hits both.
      for (const [api, raw] of [['list', 'rawList'], ['tagList', 'rawTagList'], ['atList', 'rawAtList']] as const) {
        const both: Record<string, number[]> = { [api]: [], [raw]: [] };
        for (const k of [api, raw]) await timed(0, getOk(paths[k], k));
        for (let i = 0; i < CFG.runs; i++) {
          for (const k of i % 2 ? [raw, api] : [api, raw]) {
            const t = performance.now();
            await getOk(paths[k], k)();
            both[k]!.push(performance.now() - t);
          }
        }
        Object.assign(ms, both);
        log(`${variant} ${point.hosts}: ${api} p50 ${stats(both[api]!).p50} ms (raw ${stats(both[raw]!).p50} ms), p99 ${stats(both[api]!).p99} ms (raw ${stats(both[raw]!).p99} ms)`);
      }
      const put = (body: unknown) => call(base, 'PUT', `/api/v1/hosts/${putHostId}`, { cookie: owner.cookie, body });
      // The recent diff's `from`: just before this point's PUTs (what changed since: that host and its 50 children).
      const [{ now: beforePuts }] = await admin.execute<Array<{ now: string }>>(`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`) as [{ now: string }];
      await measure('put', CFG.runs, async (i) => ok(await put(Math.abs(i) % 2 ? bodies!.a : bodies!.b), 200, 'PUT'));
      // Topology: drawn anew each time (graph cache off; the layout stays queued, no worker runs here) …
      services.topologyGraphs = new GraphCache(0);
      await measure('topologyDrawn', CFG.topoRuns, getOk(paths.topology, 'topology'), 1);
      const firstAnswer = await get(paths.topology);
      const first = firstAnswer.status === 200 ? JSON.parse(firstAnswer.text).data : null;
      // … the layout job once (elk), then served from the graph cache with the stored layout.
      let layout: unknown = null;
      if (first) {
        const l0 = performance.now();
        try {
          layout = await runLayoutJob(services, { organization_id: owner.organizationId, network_id: owner.networkId, view: 'l3', as_of: first.as_of, digest: first.digest, include_hidden: false, max_nodes: 2000 } as never);
          ms.layout = [performance.now() - l0];
        } catch (err) {
          failures.layout = `${(err as Error).message.slice(0, 200)} (after ${round((performance.now() - l0) / 1000)} s)`;
          log(`${variant} ${point.hosts}: layout: FAILED: ${failures.layout}`);
        }
      }
      services.topologyGraphs = graphCache;
      await measure('topologyCached', CFG.runs, getOk(paths.topology, 'topology'), 1);
      const cachedAnswer = await get(paths.topology);
      const cached = cachedAnswer.status === 200 ? JSON.parse(cachedAnswer.text).data : null;
      const recentDiffPath = `/api/v1/topology/diff?${q}&from=${encodeURIComponent(beforePuts)}`;
      await measure('diff', CFG.diffRuns, getOk(recentDiffPath, 'diff'), 1);
      const diffAnswer = await get(recentDiffPath);
      const diff = diffAnswer.status === 200 ? JSON.parse(diffAnswer.text).data : null;
      // The diff over the whole seeded history (every node changed) draws the view at both ends in
      // full: 9 s at 3,000 hosts on this machine, so only at the small points.
      let fullDiff: any = null;
      if (point.hosts <= CFG.fullDiffMaxHosts) {
        await measure('diffFullHistory', 1, getOk(paths.diff, 'diff'), 0);
        const full = await get(paths.diff);
        fullDiff = full.status === 200 ? JSON.parse(full.text).data : null;
      }
      // Daemon ingest: new hosts, then the same reports (unchanged).
      const reports = Array.from({ length: CFG.ingest }, (_, k) => report(daemon, owner.networkId, daemonSubnet.id, pointIndex * CFG.ingest + k));
      const before = await admin.execute<Array<{ n: number }>>(`select count(*)::int as n from hosts_history where organization_id = ?`, [owner.organizationId]);
      const ingest = async (i: number) => {
        const res = await daemon.post('/api/v1/hosts/discovery', reports[i]);
        if (res.status !== 200) throw new Error(`ingest: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      };
      await measure('ingestNew', CFG.ingest, ingest, 0);
      const mid = await admin.execute<Array<{ n: number }>>(`select count(*)::int as n from hosts_history where organization_id = ?`, [owner.organizationId]);
      await measure('ingestSame', CFG.ingest, ingest, 0);
      const after = await admin.execute<Array<{ n: number }>>(`select count(*)::int as n from hosts_history where organization_id = ?`, [owner.organizationId]);
      if (mid[0]!.n - before[0]!.n !== CFG.ingest || after[0]!.n !== mid[0]!.n) throw new Error(`ingest: ${mid[0]!.n - before[0]!.n} new host states (expected ${CFG.ingest}), then ${after[0]!.n - mid[0]!.n} (expected 0)`);

      // ---- Why: the statements of one request each, explained ----
      const explained: Explained[] = [];
      for (const [op, run, restore] of [
        ['list', () => get(paths.list), null],
        ['tagList', () => get(paths.tagList), null],
        ['atList', () => get(paths.atList), null],
        ['rawAtList', () => get(paths.rawAtList), null],
        ['put', () => put(bodies!.b), () => put(bodies!.a)],
      ] as const) {
        const { queries } = await traceQueries(services, run);
        if (restore) await restore();
        const ex = await explainAll(services, queries);
        const slowest = ex.reduce((a, b) => ((b.executionMs ?? 0) > (a.executionMs ?? 0) ? b : a));
        explained.push({
          op, statements: ex.map((e) => ({ sql: e.sql.replace(/\s+/g, ' ').slice(0, 240), clientMs: e.clientMs, executionMs: e.executionMs })),
          slowestPlan: slowest.plan,
        });
      }
      await put(bodies!.a);

      points.push({
        hosts: point.hosts, targetStates: point.states, rounds,
        counts: { ...c, historyOrg, historyAll },
        loadAverage: os.loadavg(), seedStatements,
        seconds: { seed: seedSeconds, deleteSeedOutbox: sequenceSeconds, vacuumAnalyze: vacuumSeconds, point: round((performance.now() - p0) / 1000) },
        seedOutboxRowsDeleted: sequenced,
        atInstant,
        ops: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, stats(v)])),
        samples: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v.map((x) => round(x, 2))])),
        failures,
        topology: first && { nodes: first.nodes.length, edges: first.edges.length, drawnLayoutStatus: first.layout.status, cachedLayoutStatus: cached?.layout.status, layoutJob: layout, filteredOut: first.filtered_out },
        diff: {
          recent: diff && { from: beforePuts, nodesChanged: diff.nodes.changed.length, nodesAdded: diff.nodes.added.length, nodesRemoved: diff.nodes.removed.length, edgesChanged: diff.edges.changed.length, truncated: diff.truncated },
          fullHistory: fullDiff && { from: atInstant, nodesChanged: fullDiff.nodes.changed.length, nodesAdded: fullDiff.nodes.added.length, nodesRemoved: fullDiff.nodes.removed.length, truncated: fullDiff.truncated },
        },
        explained,
      });
      onPoint({ variant, database, partitionedTables: partitionedTables[0]!.n, points });
    }
    return { variant, database, partitionedTables: partitionedTables[0]!.n, points };
  } finally {
    if (server) {
      server.closeAllConnections();
      await new Promise((r) => server!.close(r));
    }
    const keys = await services.redis.keys(`${config.redisPrefix}*`).catch(() => [] as string[]);
    if (keys.length) await services.redis.del(...keys).catch(() => undefined);
    await closeServices(services);
    if (CFG.keep) log(`kept database ${database} (BENCH_KEEP=1)`);
    else await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
  }
}

// ---- The chart: log-x hosts, log-y p50 ms; one colour per operation, plain solid, partitioned dashed --

export const CHART_OPS: Array<[string, string, string]> = [
  ['list', 'host list', '#1f77b4'],
  ['tagList', 'host list, tag filter', '#17becf'],
  ['atList', '`at` list', '#ff7f0e'],
  ['put', 'PUT host (50 children)', '#2ca02c'],
  ['topologyDrawn', 'topology, drawn', '#d62728'],
  ['topologyCached', 'topology, cached', '#e377c2'],
  ['diff', 'topology diff (recent)', '#9467bd'],
  ['ingestNew', 'ingest, new host', '#8c564b'],
  ['ingestSame', 'ingest, unchanged host', '#7f7f7f'],
  ['rawList', 'raw SQL: list', '#aec7e8'],
  ['rawAtList', 'raw SQL: `at` list', '#ffbb78'],
];

export function chartSvg(variants: Array<{ variant: string; points: Array<{ hosts: number; ops: Record<string, Stats> }> }>, title: string): string {
  const W = 900, H = 560, L = 70, R = 250, T = 40, B = 60;
  const all = variants.flatMap((v) => v.points);
  const xs = all.map((p) => p.hosts);
  const ys = all.flatMap((p) => CHART_OPS.map(([k]) => p.ops[k]?.p50).filter((y): y is number => !!y && y > 0));
  const [x0, x1] = [Math.log10(Math.min(...xs)) - 0.05, Math.log10(Math.max(...xs)) + 0.05];
  const [y0, y1] = [Math.floor(Math.log10(Math.min(...ys))), Math.ceil(Math.log10(Math.max(...ys)))];
  const px = (x: number) => L + ((Math.log10(x) - x0) / (x1 - x0)) * (W - L - R);
  const py = (y: number) => H - B - ((Math.log10(y) - y0) / (y1 - y0 || 1)) * (H - T - B);
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="22" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let e = y0; e <= y1; e++) {
    for (const m of [1, 2, 5]) {
      const y = m * 10 ** e;
      if (Math.log10(y) > y1) continue;
      out.push(`<line x1="${L}" x2="${W - R}" y1="${py(y).toFixed(1)}" y2="${py(y).toFixed(1)}" stroke="${m === 1 ? '#ccc' : '#eee'}"/>`);
      out.push(`<text x="${L - 6}" y="${(py(y) + 4).toFixed(1)}" text-anchor="end" fill="#555">${y >= 1 ? y : y.toFixed(Math.max(0, -e))}</text>`);
    }
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<line x1="${px(x).toFixed(1)}" x2="${px(x).toFixed(1)}" y1="${T}" y2="${H - B}" stroke="#ddd"/>`);
    out.push(`<text x="${px(x).toFixed(1)}" y="${H - B + 18}" text-anchor="middle" fill="#555">${x.toLocaleString('en')}</text>`);
  }
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 18}" text-anchor="middle">hosts in the organization (log scale)</text>`);
  out.push(`<text transform="translate(18 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">p50 latency, ms (log scale)</text>`);
  out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#888"/>`);
  let ly = T + 4;
  for (const [k, label, colour] of CHART_OPS) {
    for (const v of variants) {
      const pts = v.points.filter((p) => p.ops[k]?.p50).map((p) => `${px(p.hosts).toFixed(1)},${py(p.ops[k]!.p50).toFixed(1)}`);
      if (!pts.length) continue;
      const dash = v.variant === 'partitioned' ? ' stroke-dasharray="6 4"' : '';
      const thin = k.startsWith('raw') ? 1.5 : 2.5;
      out.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${colour}" stroke-width="${thin}"${dash}/>`);
      for (const pt of pts) out.push(`<circle cx="${pt.split(',')[0]}" cy="${pt.split(',')[1]}" r="3" fill="${colour}"/>`);
    }
    out.push(`<line x1="${W - R + 14}" x2="${W - R + 44}" y1="${ly + 6}" y2="${ly + 6}" stroke="${colour}" stroke-width="${k.startsWith('raw') ? 1.5 : 2.5}"/>`);
    out.push(`<text x="${W - R + 50}" y="${ly + 10}">${esc(label)}</text>`);
    ly += 18;
  }
  ly += 8;
  out.push(`<line x1="${W - R + 14}" x2="${W - R + 44}" y1="${ly + 6}" y2="${ly + 6}" stroke="#333" stroke-width="2"/><text x="${W - R + 50}" y="${ly + 10}">plain schema</text>`);
  ly += 18;
  out.push(`<line x1="${W - R + 14}" x2="${W - R + 44}" y1="${ly + 6}" y2="${ly + 6}" stroke="#333" stroke-width="2" stroke-dasharray="6 4"/><text x="${W - R + 50}" y="${ly + 10}">partitioned${variants.some((v) => v.variant === 'partitioned') ? '' : ' (not run)'}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

// ---- Main ---------------------------------------------------------------------------------------------

function gitState(): { commit: string; dirtyFiles: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: new URL('..', import.meta.url), encoding: 'utf8' }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), dirtyFiles: git('status', '--porcelain', '--', 'src', 'migrations').split('\n').filter(Boolean) };
  } catch {
    return { commit: 'unknown', dirtyFiles: [] };
  }
}

/** Ratios of each operation's p50 at the last point to its p50 at the first (the issue's 2× question). */
function growthRatios(points: Array<{ hosts: number; ops: Record<string, Stats> }>) {
  if (!points.length) return {};
  const first = points[0]!;
  const last = points[points.length - 1]!;
  return Object.fromEntries(Object.keys(last.ops).filter((k) => first.ops[k]).map((k) => [k, {
    p50: round(last.ops[k]!.p50 / first.ops[k]!.p50, 2), p99: round(last.ops[k]!.p99 / first.ops[k]!.p99, 2),
  }]));
}

/** The per-variant tables of p50 / p99 (markdown), as printed at the end of a run. */
function printTables(variants: Array<{ variant: string; points: any[] }>) {
  for (const v of variants) {
    const ops = CHART_OPS.map(([k]) => k).concat('rawTagList', 'layout', 'diffFullHistory').filter((k) => v.points.some((p: any) => p.ops[k]));
    console.log(`${v.variant}: p50 / p99 ms`);
    console.log(`| operation | ${v.points.map((p: any) => `${p.hosts.toLocaleString('en')} hosts, ${(p.counts.historyOrg / 1e6).toFixed(2)} M states`).join(' | ')} | ×, last/first p50 |`);
    console.log(`|---|${v.points.map(() => '---:').join('|')}|---:|`);
    const g = growthRatios(v.points);
    for (const k of ops) console.log(`| ${k} | ${v.points.map((p: any) => (p.ops[k] ? `${p.ops[k].p50} / ${p.ops[k].p99}` : p.failures?.[k] ? 'failed' : '–')).join(' | ')} | ${g[k]?.p50 ?? ''} |`);
    console.log(`| load average (1 min) | ${v.points.map((p: any) => round(p.loadAverage[0], 2)).join(' | ')} | |`);
  }
}

/**
 * `growth.ts --chart a.json b.json …`: one chart (GROWTH_SVG) and one set of tables from the results
 * of several runs (e.g. the plain and the partitioned variant run as two processes at once, so that
 * both curves were measured under the same load).
 */
function combine(files: string[]) {
  const variants = files.flatMap((f) => (JSON.parse(readFileSync(f, 'utf8')) as { variants: Array<{ variant: string; points: any[] }> }).variants)
    .filter((v) => v.points.length);
  const dates = files.map((f) => (JSON.parse(readFileSync(f, 'utf8')) as { date: string }).date.slice(0, 10));
  writeFileSync(CFG.svg, chartSvg(variants, `Growth curve, p50 per request (${[...new Set(dates)].join(', ')}; solid: plain schema, dashed: partitioned)`));
  printTables(variants);
  console.log(`chart: ${CFG.svg}`);
}

async function main() {
  const chartAt = process.argv.indexOf('--chart');
  if (chartAt >= 0) return combine(process.argv.slice(chartAt + 1));
  const stamp = new Date().toISOString();
  log(`growth bench ${stamp}: points ${CFG.points.map((p) => `${p.hosts}/${p.states}`).join(', ')}; variants ${CFG.variants.join(', ')}; ${os.cpus().length} CPUs`);
  const variants: VariantResult[] = [];
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = new URL(`./growth-${stamp.replace(/[:.]/g, '-')}.json`, RESULTS_DIR);
  // Written after every point, so a run stopped part way keeps what it measured (complete: false).
  const write = (complete: boolean) => {
    const totalSeconds = round((performance.now() - started) / 1000);
    const results = {
      date: stamp, complete, totalSeconds,
      machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 2 ** 30, 1), loadAverageAtEnd: os.loadavg(), node: process.version },
      code: gitState(),
      config: { ...CFG, partitionedVariantAvailable: migrationsKnowVariant(), rateLimiter: 'replaced by allow-all' },
      variants: variants.map((v) => ({ ...v, growth: growthRatios(v.points) })),
    };
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    if (variants.some((v) => v.points.length)) {
      writeFileSync(CFG.svg, chartSvg(variants, `Growth curve, p50 per request (${stamp.slice(0, 10)}; solid: plain schema, dashed: partitioned)`));
    }
    return totalSeconds;
  };
  for (const v of CFG.variants) {
    const slot = variants.push({ variant: v, database: '', partitionedTables: 0, points: [] }) - 1;
    variants[slot] = await runVariant(v, (partial) => {
      variants[slot] = partial;
      write(false);
    });
  }
  const totalSeconds = write(true);

  console.log('');
  printTables(variants);
  console.log(`results: ${file.pathname}\nchart: ${CFG.svg}\ntotal ${totalSeconds} s`);
  if (existsSync(CFG.svg)) log('done');
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
