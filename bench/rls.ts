// What row-level security costs: the same service, the same database and the same requests, on
// the policies of migration RowSecurity (`tenant_rows` on every tenant table), three ways:
// - owner: connected as the tables' owner, no organization given (PostgreSQL skips RLS for it);
// - rls: connected as a login role without BYPASSRLS (a member of netinv_tenant), its organization
//   set for the role in this database: the policies' cost alone;
// - db: connected as the owner with DATABASE_ROW_SECURITY on (ingest: a Db with organizationId), the
//   real mechanism: every transaction begins with the set_config of the role and the organization,
//   and a statement outside a transaction is wrapped in one: the policies plus that round trip.
// Measured, interleaved in one run: the host list (live and `at`) and the PUT of a host with 50
// children (as bench/run.ts), and discovery ingestion of new and of unchanged hosts (ingestHost in
// one transaction per host, as bench/ingest.ts's sync pass), each way. The apps must answer the
// same bodies (checked; a small run checks it too), and under RLS another organization's rows must
// be invisible even to a statement without its organization predicate (both RLS ways checked).
//
// Run: node --import tsx bench/rls.ts. Environment: BENCH_HOSTS (10,000), BENCH_MIN_HISTORY
// (1,000,000), BENCH_DURATION (10 s), BENCH_CONNECTIONS (10), BENCH_REPEAT (3 interleaved rounds),
// RLS_INGEST_HOSTS (1,000 per pass), BENCH_SMALL=1 (300 hosts, 1 s, 1 round, 40 ingested hosts).
// Results: bench/results/rls-<date>.json.
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { writeFileSync } from 'node:fs';
import type autocannon from 'autocannon';
import pg from 'pg';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Db, migrate, quoteIdent, setRowSecurity, TENANT_ROLE } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { createOrm } from '../src/database.js';
import { ingestHost } from '../src/modules/discovery/ingest.js';
import { daemonHostRequestBody } from '../src/modules/discovery/schemas.js';
import type { DaemonHostRequest } from '../src/modules/discovery/vocabulary.js';
import { serverUrl } from '../test/support/app.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../test/daemons/world.js';
import { postSubnet } from '../test/discovery/reports.js';
import { createNetwork } from '../test/support/world.js';
import { boundStatement } from '../src/core/sql.js';
import { round, traceQueries, type TracedQuery } from './diagnose.js';
import { benchHostReports, hex2 } from './hostReports.js';
import { http, LoadGenerator, ok, putBodies, registerTenant, withServerIds } from './inventoryWorld.js';
import { seed } from './seed.js';
import { AllowAllRateLimiter, mustAgree, resultsFile, sized } from './small.js';

const CFG = {
  hosts: sized('BENCH_HOSTS', 10_000, 300),
  minHistory: sized('BENCH_MIN_HISTORY', 1_000_000, 3_000),
  durationSeconds: sized('BENCH_DURATION', 10, 1),
  connections: sized('BENCH_CONNECTIONS', 10, 4),
  repeat: sized('BENCH_REPEAT', 3, 1),
  ingestHosts: sized('RLS_INGEST_HOSTS', 1_000, 40),
};
/** The per-transaction setting a request sets; for the login role (side rls) set for it in the bench's database. */
const SETTING = 'netinv.organization_id';
const log = (line: string) => console.log(`[rls ${new Date().toISOString().slice(11, 19)}] ${line}`);
type Services = Awaited<ReturnType<typeof createServices>>;
/** One statement on `database` as the server's superuser (`postgres` by default). */
async function sql<T = Record<string, unknown>>(text: string, params: unknown[] = [], database = 'postgres'): Promise<T[]> {
  const client = new pg.Client({ connectionString: serverUrl(database) });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

/**
 * The login role of side rls: a member of netinv_tenant (its grants), its organization set for it in
 * this database. Answers the tables with the policy (the migration's, not this bench's).
 */
async function loginRole(database: string, role: string, password: string, organizationId: string): Promise<string[]> {
  for (const statement of [
    `create role ${quoteIdent(role)} login password '${password}' nosuperuser nobypassrls in role ${TENANT_ROLE}`,
    `alter role ${quoteIdent(role)} in database ${quoteIdent(database)} set ${SETTING} = '${organizationId}'`,
  ]) await sql(statement, [], database);
  return (await sql<{ t: string }>(`select distinct polrelid::regclass::text as t from pg_policy where polname = 'tenant_rows' order by 1`, [], database)).map((r) => r.t);
}

/** A plan's shape: its nodes in order, each with the index or table it reads (costs and conditions left out). */
async function planShape(client: pg.Client, q: TracedQuery): Promise<string> {
  const { text, values } = boundStatement(q.sql, q.params);
  const plan = (await client.query(`explain (format json, costs off) ${text}`, values as unknown[])).rows[0]['QUERY PLAN'][0].Plan;
  const nodes: string[] = [];
  const walk = (n: any) => {
    nodes.push(`${n['Node Type']}${n['Index Name'] ? `(${n['Index Name']})` : n['Relation Name'] ? `(${n['Relation Name']})` : ''}`);
    for (const child of n.Plans ?? []) walk(child);
  };
  walk(plan);
  return nodes.join(' > ');
}

type SideName = 'owner' | 'rls' | 'db';
const SIDES: SideName[] = ['owner', 'rls', 'db'];
interface Side { name: SideName; services: Services; base: string; close(): Promise<void> }

async function startSide(name: SideName, databaseUrl: string, redisPrefix: string): Promise<Side> {
  const config = loadConfig({ databaseUrl, redisPrefix, databaseRowSecurity: name === 'db' });
  const services = await createServices(config, createLogger(process.env.LOG_LEVEL ?? 'silent'));
  services.rateLimiter = new AllowAllRateLimiter(services.redis);
  const server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    name, services, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await closeServices(services);
    },
  };
}

/**
 * One discovery pass: each report ingested in a transaction of its own, `concurrency` at a time, by a
 * Db speaking for the daemon and its organization as the discovery-sync worker's (the actor's
 * settings open each transaction); `rowSecurity`: held to the organization (its settings join the actor's).
 */
async function ingestPass(databaseUrl: string, ctx: Parameters<typeof ingestHost>[1], reports: DaemonHostRequest[], concurrency = 4, rowSecurity = false) {
  const orm = await createOrm(databaseUrl, 10);
  setRowSecurity(orm.em, rowSecurity);
  try {
    let next = 0;
    const latencies: number[] = [];
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < reports.length) {
        const report = reports[next++]!;
        const { value, error } = daemonHostRequestBody.validate(report, { abortEarly: true, convert: true });
        if (error) throw error;
        const s = performance.now();
        await new Db(orm.em.fork(), { actor: { type: 'daemon', id: ctx.daemonId }, organizationId: ctx.organizationId }).transaction((tx) => ingestHost(tx, ctx, value as DaemonHostRequest));
        latencies.push(performance.now() - s);
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    return { hostsPerSecond: round(reports.length / seconds, 1), p50: round(pct(latencies, 50), 2), p99: round(pct(latencies, 99), 2) };
  } finally {
    await orm.close(true);
  }
}

async function main() {
  const id = randomBytes(4).toString('hex');
  const database = `netinv_bench_rls_${id}`;
  const ownerUrl = serverUrl(database);
  const role = `netinv_rls_${id}`;
  const password = randomBytes(12).toString('hex');
  const rlsUrl = (() => { const u = new URL(ownerUrl); u.username = role; u.password = password; return u.toString(); })();
  log(`database ${database}, ${os.cpus().length} CPUs, node ${process.version}, load ${os.loadavg()[0]!.toFixed(1)}`);
  const load = new LoadGenerator();
  const sides: Side[] = [];
  try {
    const owner = await startSide('owner', ownerUrl, `bench:rls:${id}:o:`);
    sides.push(owner);
    await migrate(owner.services.orm);
    const tenant = await registerTenant(owner.base);
    const other = await registerTenant(owner.base); // its rows must stay invisible under RLS
    ok(await http(owner.base, 'POST', '/api/v1/subnets', { cookie: other.cookie, body: { network_id: other.networkId, cidr: '10.9.0.0/16', name: 'other org' } }), 201, 'other subnet');
    log(`seeding ${CFG.hosts} hosts, ≥ ${CFG.minHistory} history states …`);
    const seeded = await seed({ databaseUrl: ownerUrl, ...tenant, hosts: CFG.hosts, minHistory: CFG.minHistory, batchHosts: 1000, parallel: 2, log });
    log(`seeded in ${seeded.seconds.total} s`);

    // Two networks of the tenant for ingestion, each with its daemon, subnet and discovery session.
    const auth = { cookie: tenant.cookie };
    const ingestWorlds = await Promise.all(SIDES.map(async (label, i) => {
      const networkId = await createNetwork(owner.base, auth, `Ingest ${label}`);
      const daemon = daemonClient(owner.base, (await createDaemonKey(owner.base, auth, networkId)).key);
      await registerDaemon(daemon, networkId);
      const subnet = await postSubnet(daemon, networkId, `10.${30 + i}.0.0/16`);
      const sessionId = randomUUID();
      await sql(
        `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, started_at) values ($1, $2, $3, $4, $5::jsonb, 'Scanning', now())`,
        [sessionId, tenant.organizationId, networkId, daemon.id, JSON.stringify({ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' })], database);
      const plan = { ip: (n: number) => `10.${30 + i}.${(n >> 8) & 255}.${n & 255}`, mac: (n: number) => `02:0${i}:00:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`.toUpperCase(), domain: 'bench.lan' };
      const all = benchHostReports(daemon, networkId, subnet.id, CFG.ingestHosts + 1, 0, plan);
      // The last one is traced for the plans, apart from the measured passes.
      return { ctx: { organizationId: tenant.organizationId, networkId, daemonId: daemon.id, discoveryId: sessionId }, reports: all.slice(0, -1), spare: all.slice(-1) };
    }));

    const tables = await loginRole(database, role, password, tenant.organizationId);
    log(`row-level security on ${tables.length} tables (migration RowSecurity); login role ${role} without BYPASSRLS; side db: DATABASE_ROW_SECURITY on`);
    const rls = await startSide('rls', rlsUrl, `bench:rls:${id}:r:`);
    sides.push(rls);
    const viaDb = await startSide('db', ownerUrl, `bench:rls:${id}:d:`);
    sides.push(viaDb);

    // The PUT host, its bodies with the server's ids (as bench/run.ts).
    const [putHost] = await sql<{ id: string }>(`select id from hosts where organization_id = $1 order by created_at, id offset $2 limit 1`, [tenant.organizationId, Math.floor(CFG.hosts / 2)], database);
    const placeholders = putBodies(putHost!.id, tenant.subnetId);
    const created = ok(await http(owner.base, 'PUT', `/api/v1/hosts/${putHost!.id}`, { cookie: tenant.cookie, body: placeholders.a }), 200, 'PUT');
    const bodies = withServerIds(placeholders, created);

    // Both sides answer the same, and RLS hides the other organization even without a predicate.
    const at = encodeURIComponent(seeded.atInstant);
    for (const path of ['/api/v1/hosts?limit=50', `/api/v1/hosts?limit=50&at=${at}`, `/api/v1/hosts/${putHost!.id}`, '/api/v1/subnets']) {
      const [a, b, c] = [await http(owner.base, 'GET', path, { cookie: tenant.cookie }), await http(rls.base, 'GET', path, { cookie: tenant.cookie }), await http(viaDb.base, 'GET', path, { cookie: tenant.cookie })];
      mustAgree(`GET ${path} as owner, under RLS as a login role and through the Db`, a.status === 200 && a.text === b.text && a.text === c.text, `${a.status} ${b.status} ${c.status}`);
    }
    const viaDbSeen = await new Db(viaDb.services.orm.em.fork(), { organizationId: tenant.organizationId }).one<{ orgs: string[] }>(`select array(select distinct organization_id::text from subnets) as orgs`);
    mustAgree('a statement without its organization predicate, through a Db with the organization, sees only it', JSON.stringify(viaDbSeen!.orgs) === JSON.stringify([tenant.organizationId]), JSON.stringify(viaDbSeen!.orgs));
    const rlsOrm = await createOrm(rlsUrl, 1);
    try {
      const seen = await rlsOrm.em.fork().execute<Array<{ orgs: string[] }>>(`select array(select distinct organization_id::text from subnets) as orgs`);
      mustAgree('a statement without its organization predicate, under RLS, sees only the set organization', JSON.stringify(seen[0]!.orgs) === JSON.stringify([tenant.organizationId]), JSON.stringify(seen[0]!.orgs));
    } finally {
      await rlsOrm.close(true);
    }
    log('owner and RLS answers equal; another organization invisible under RLS');

    // The statements of each request, planned as owner and under RLS: a policy can change a plan (a
    // condition with an operator that is not LEAKPROOF cannot be used in an index scan ahead of it).
    const traced: Record<string, TracedQuery[]> = {};
    const getAs = (path: string) => () => http(owner.base, 'GET', path, { cookie: tenant.cookie });
    for (const [key, fn] of [
      ['list', getAs('/api/v1/hosts?limit=50')], ['listAt', getAs(`/api/v1/hosts?limit=50&at=${at}`)],
      ['put', () => http(owner.base, 'PUT', `/api/v1/hosts/${putHost!.id}`, { cookie: tenant.cookie, body: bodies.b })],
      ['ingest', () => ingestPass(ownerUrl, ingestWorlds[0]!.ctx, ingestWorlds[0]!.spare, 1)],
    ] as const) traced[key] = (await traceQueries(owner.services, fn as () => Promise<unknown>)).queries;
    await http(owner.base, 'PUT', `/api/v1/hosts/${putHost!.id}`, { cookie: tenant.cookie, body: bodies.a });
    const plans: Array<{ request: string; sql: string; owner: string; rls: string }> = [];
    const [asOwner, asRls] = [new pg.Client({ connectionString: ownerUrl }), new pg.Client({ connectionString: rlsUrl })];
    await asOwner.connect();
    await asRls.connect();
    try {
      for (const [request, queries] of Object.entries(traced)) {
        for (const q of queries) {
          if (!/^\s*(with|select|insert|update|delete)\b/i.test(q.sql)) continue;
          const [o, r] = [await planShape(asOwner, q).catch((e) => `error: ${e.message}`), await planShape(asRls, q).catch((e) => `error: ${e.message}`)];
          plans.push({ request, sql: q.sql.replace(/\s+/g, ' ').slice(0, 240), owner: o, rls: r });
        }
      }
    } finally {
      await asOwner.end();
      await asRls.end();
    }
    // Under RLS the policy's condition often sits in a Result node above a scan (it is evaluated
    // there, not in the scan): the same access path. Another index, or a scan for an index, is not.
    const accessPath = (shape: string) => shape.split(' > ').filter((n) => n !== 'Result').join(' > ');
    const changedPlans = plans.filter((p) => accessPath(p.owner) !== accessPath(p.rls));
    log(`plans: ${plans.length} statements, ${plans.filter((p) => p.owner !== p.rls).length} with a policy filter node added, ${changedPlans.length} with another access path under RLS`);
    for (const p of changedPlans) log(`  ${p.request}: ${p.sql.slice(0, 120)}\n    owner: ${p.owner}\n    rls:   ${p.rls}`);

    // ---- Interleaved measurements ----
    const scenarios = [
      { key: 'list', connections: CFG.connections, request: (base: string) => ({ url: `${base}/api/v1/hosts?limit=50` }) },
      { key: 'listAt', connections: CFG.connections, request: (base: string) => ({ url: `${base}/api/v1/hosts?limit=50&at=${at}` }) },
      {
        key: 'put', connections: 1, request: (base: string) => ({
          url: base,
          requests: [bodies.b, bodies.a].map((b) => ({ method: 'PUT' as const, path: `/api/v1/hosts/${putHost!.id}`, headers: { 'content-type': 'application/json', cookie: tenant.cookie }, body: JSON.stringify(b) })),
        }),
      },
    ];
    const runs: Record<string, Array<{ reqPerSec: number; p50: number; p99: number; load: number }>> = {};
    for (let rep = 1; rep <= CFG.repeat; rep++) {
      for (const s of scenarios) for (const side of rep % 2 ? sides : [...sides].reverse()) {
        const options = { headers: { cookie: tenant.cookie }, connections: s.connections, duration: CFG.durationSeconds, ...s.request(side.base) } as autocannon.Options;
        const { result } = await load.run(options);
        if (result.non2xx || result.errors) throw new Error(`${s.key} ${side.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        const m = { reqPerSec: round(result['2xx'] / result.duration, 1), p50: result.latency.p50, p99: result.latency.p99, load: round(os.loadavg()[0]!, 1) };
        (runs[`${s.key}.${side.name}`] ??= []).push(m);
        log(`${s.key} ${side.name} (round ${rep}): ${m.reqPerSec} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms, load ${m.load}`);
      }
    }
    // Ingestion: new hosts, then the same reports again (unchanged), alternating which side goes first.
    const ingest: Record<string, unknown> = {};
    const order = [
      { name: 'owner', url: ownerUrl, world: ingestWorlds[0]!, rowSecurity: false },
      { name: 'rls', url: rlsUrl, world: ingestWorlds[1]!, rowSecurity: false },
      { name: 'db', url: ownerUrl, world: ingestWorlds[2]!, rowSecurity: true },
    ];
    for (const pass of ['new', 'unchanged'] as const) {
      for (const side of pass === 'new' ? order : [...order].reverse()) {
        const r = { ...(await ingestPass(side.url, side.world.ctx, side.world.reports, 4, side.rowSecurity)), load: round(os.loadavg()[0]!, 1) };
        ingest[`${pass}.${side.name}`] = r;
        log(`ingest ${pass} ${side.name}: ${r.hostsPerSecond} hosts/s, p50 ${r.p50} ms, p99 ${r.p99} ms, load ${r.load}`);
      }
    }
    const counts = await sql<{ network_id: string; n: number }>(`select network_id, count(*)::int as n from hosts where network_id = any($1::uuid[]) group by 1`, [ingestWorlds.map((w) => w.ctx.networkId)], database);
    mustAgree('every ingest pass stored every host', counts.length === 3 && counts.every((c) => c.n >= CFG.ingestHosts), JSON.stringify(counts));

    const median = (xs: number[]) => pct(xs, 50);
    const summary = Object.fromEntries(scenarios.map((s) => {
      const [o, r, d] = [runs[`${s.key}.owner`]!, runs[`${s.key}.rls`]!, runs[`${s.key}.db`]!];
      const stats = (xs: typeof o) => ({ reqPerSec: median(xs.map((x) => x.reqPerSec)), p50: median(xs.map((x) => x.p50)), p99: median(xs.map((x) => x.p99)) });
      return [s.key, {
        owner: stats(o), rls: stats(r), db: stats(d),
        throughputRatio: round(median(r.map((x) => x.reqPerSec)) / median(o.map((x) => x.reqPerSec)), 3),
        p99Ratio: round(median(r.map((x) => x.p99)) / Math.max(1, median(o.map((x) => x.p99))), 3),
        /** The real mechanism against the owner, and against the login role (the setting's round trip). */
        dbThroughputRatio: round(median(d.map((x) => x.reqPerSec)) / median(o.map((x) => x.reqPerSec)), 3),
        dbP99Ratio: round(median(d.map((x) => x.p99)) / Math.max(1, median(o.map((x) => x.p99))), 3),
        dbOverRlsThroughput: round(median(d.map((x) => x.reqPerSec)) / median(r.map((x) => x.reqPerSec)), 3),
      }];
    }));
    const rate = (k: string) => (ingest[k] as { hostsPerSecond: number }).hostsPerSecond;
    const ingestRatio = Object.fromEntries((['new', 'unchanged'] as const).map((p) => [p, { rls: round(rate(`${p}.rls`) / rate(`${p}.owner`), 3), db: round(rate(`${p}.db`) / rate(`${p}.owner`), 3), dbOverRls: round(rate(`${p}.db`) / rate(`${p}.rls`), 3) }]));
    const results = { date: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version, loadAverageAtEnd: os.loadavg() }, config: CFG, tables, seed: seeded, plans: { statements: plans.length, changed: changedPlans }, runs, summary, ingest, ingestRatio };
    const file = resultsFile(`rls-${results.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    for (const [k, v] of Object.entries(summary)) log(`${k}: owner ${v.owner.reqPerSec} req/s p99 ${v.owner.p99} ms; RLS login role ${v.rls.reqPerSec} req/s p99 ${v.rls.p99} ms (×${v.throughputRatio}, p99 ×${v.p99Ratio}); RLS through the Db ${v.db.reqPerSec} req/s p99 ${v.db.p99} ms (×${v.dbThroughputRatio}, p99 ×${v.dbP99Ratio}; db/rls ×${v.dbOverRlsThroughput})`);
    log(`ingest hosts/s ratios (rls/owner, db/owner, db/rls): ${JSON.stringify(ingestRatio)}`);
    log(`results: ${file.pathname}`);
  } finally {
    load.close();
    for (const side of sides.reverse()) {
      const keys = await side.services.redis.keys(`bench:rls:${id}:*`).catch(() => [] as string[]);
      if (keys.length) await side.services.redis.del(...keys).catch(() => undefined);
      await side.close().catch(() => undefined);
    }
    await sql(`drop database if exists ${quoteIdent(database)} with (force)`);
    await sql(`drop role if exists ${quoteIdent(role)}`).catch(() => undefined);
  }
}

main().then(() => log('done'), (err) => {
  console.error(err);
  process.exitCode = 1;
});
