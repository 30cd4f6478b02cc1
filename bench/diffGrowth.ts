// The topology's change-sized reads against the network's size: at each size (DIFF_GROWTH_SIZES,
// default 10,000 and 100,000 hosts of one organization, seeded by growthSeed.ts as the growth curve
// seeds them: 112 states per host), then the same DIFF_GROWTH_CHANGES (50) change instants (one host
// renamed per transaction, each a distinct host), p50 / p99 over DIFF_GROWTH_RUNS (5) requests after
// one discarded, one at a time, graph cache and heavy-read budget off:
//   diff       GET /api/v1/topology/diff?last_changes=<changes>
//   timeline   GET /api/v1/topology/timeline?from=<just before those changes>
//   topology   GET /api/v1/topology (l3 at its default budget, drawn)
// with the 1-minute load average beside each figure (the machine is shared), and the slowest
// statements of one diff and one drawn map, EXPLAIN ANALYZEd (those the event loop's Db runs; a
// thread's snapshot reads are not traced). Each size is its own
// database, netinv_diffgrowth_<hosts>, kept and reused by the next run (seeding 100,000 hosts takes
// minutes; DIFF_GROWTH_DATABASE_PREFIX names them otherwise, e.g. copies made with createdb -T to
// measure a migration without touching the kept ones); DIFF_GROWTH_RESEED=1 seeds anew, DIFF_GROWTH_SEED_ONLY=1 only seeds. Results: bench/results/diff-growth-<date>.json.
// Run: node --import tsx bench/diffGrowth.ts (DIFF_GROWTH_LABEL names the code measured, e.g. before / after;
// DIFF_GROWTH_READS=topology measures only the drawn map).
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { quoteIdent } from '../src/core/db.js';
import { GraphCache } from '../src/modules/topology/graphCache.js';
import { adminQuery, FIXTURE_BUILDING, serverUrl } from '../test/support/app.js';
import { call, type Credential } from '../test/support/client.js';
import { login, registerTenant } from '../test/support/world.js';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrate } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import type { AddressInfo } from 'node:net';
import { checkHistory, growOrg, SEEDED_TABLES, withoutHistoryIndexes } from './growthSeed.js';
import { explainAll, traceQueries } from './diagnose.js';

const SIZES = (process.env.DIFF_GROWTH_SIZES ?? '10000,100000').split(',').map(Number);
const CHANGES = Number(process.env.DIFF_GROWTH_CHANGES ?? 50);
const RUNS = Number(process.env.DIFF_GROWTH_RUNS ?? 5);
const STATES_PER_HOST = 112;
const LABEL = 'diffgrowth';
const DATABASE_PREFIX = process.env.DIFF_GROWTH_DATABASE_PREFIX ?? 'netinv_diffgrowth_';
/** Which of diff, timeline, topology to measure (DIFF_GROWTH_READS, comma-separated; default all). */
const READS = new Set((process.env.DIFF_GROWTH_READS ?? 'diff,timeline,topology').split(','));
const skipped = { load: 0, error: 'skipped' } as Awaited<ReturnType<typeof measure>>;

const round = (x: number) => Math.round(x * 10) / 10;
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const load = () => round(os.loadavg()[0]!);
const log = (line: string) => console.log(`[diff-growth ${new Date().toISOString().slice(11, 19)}] ${line}`);

async function exists(database: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: serverUrl('postgres') });
  await client.connect();
  try {
    return (await client.query(`select 1 from pg_database where datname = $1`, [database])).rows.length > 0;
  } finally {
    await client.end();
  }
}

/** p50 / p99 of RUNS requests after one discarded; a refusal (e.g. topology_timeout past 30 s) is recorded as its code. */
async function measure(url: string, auth: Credential, path: string): Promise<{ p50?: number; p99?: number; load: number; error?: string; body?: any }> {
  let body: any;
  const get = async () => {
    const res = await call(url, 'GET', path, { auth });
    if (res.status !== 200) throw Object.assign(new Error(`${res.status}`), { code: (res.body as any)?.code ?? String(res.status) });
    body = (res.body as any).data;
  };
  const ms: number[] = [];
  try {
    await get();
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      await get();
      ms.push(performance.now() - t);
    }
  } catch (err) {
    return { load: load(), error: (err as { code: string }).code };
  }
  return { p50: round(pct(ms, 50)), p99: round(pct(ms, 99)), load: load(), body };
}

async function point(hosts: number) {
  const database = `${DATABASE_PREFIX}${hosts}`;
  const databaseUrl = serverUrl(database);
  const fresh = process.env.DIFF_GROWTH_RESEED === '1' || !(await exists(database));
  if (fresh) {
    await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
    await adminQuery(`create database ${quoteIdent(database)}`);
  }
  const config = loadConfig({ databaseUrl, redisPrefix: `bench:diffgrowth:${hosts}:`, heavyReadBudget: { burstMs: 0, refillMsPerSecond: 0 }, signupLimitPerHour: 0, ...FIXTURE_BUILDING });
  const services = await createServices(config, createLogger(process.env.LOG_LEVEL ?? 'silent'));
  services.topologyGraphs = new GraphCache(0); // every request draws
  const server = buildApp(services).listen(0, '127.0.0.1');
  server.keepAliveTimeout = 120_000;
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await migrate(services.orm);
    let orgId: string, networkId: string, auth: Credential;
    if (fresh) {
      const t = await registerTenant(url, LABEL);
      [orgId, networkId, auth] = [t.orgId, t.defaultNetworkId, t.owner];
      const s0 = performance.now();
      const rounds = Math.ceil(STATES_PER_HOST / 16) - 1;
      const base = new Date().toISOString();
      await withoutHistoryIndexes(databaseUrl, () => growOrg(databaseUrl, { organizationId: orgId, networkId, from: 0, to: hosts, rounds, tagId: null, tagEvery: 10, base, orgIndex: 0 }, { chunk: 5000, parallel: 2, log: () => undefined }));
      const problems = await checkHistory(databaseUrl, orgId);
      if (problems.length) throw new Error(`seeded history is not SCD2: ${problems.join('; ')}`);
      await pool.query('delete from event_outbox');
      for (const t of [...SEEDED_TABLES, 'subnets']) for (const u of [t, `${t}_history`]) await pool.query(`vacuum (analyze) ${u}`);
      await pool.query('vacuum (analyze) event_outbox');
      log(`${hosts}: seeded in ${Math.round((performance.now() - s0) / 1000)} s`);
    } else {
      const { rows } = await pool.query(`select u.email, u.organization_id, n.id as network_id from users u join networks n on n.organization_id = u.organization_id
                                         where u.email like '${LABEL}-%' order by n.created_at limit 1`);
      [orgId, networkId] = [rows[0].organization_id, rows[0].network_id];
      auth = await login(url, rows[0].email);
    }
    if (process.env.DIFF_GROWTH_SEED_ONLY === '1') return undefined;
    // The changes: CHANGES instants, each one host renamed (distinct hosts spread over the network).
    const before = (await pool.query(`select to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as t`)).rows[0].t as string;
    const { rows: changed } = await pool.query(
      `select id from hosts where organization_id = $1 and network_id = $2 order by id limit $3`, [orgId, networkId, CHANGES]);
    for (const [i, h] of changed.entries()) {
      await pool.query(`update hosts set name = $3 where organization_id = $1 and id = $2`, [orgId, h.id, `changed-${i}-${before}`]);
    }
    const q = `network_id=${networkId}`;
    const diff = READS.has('diff') ? await measure(url, auth, `/api/v1/topology/diff?${q}&last_changes=${CHANGES}`) : skipped;
    const timeline = READS.has('timeline') ? await measure(url, auth, `/api/v1/topology/timeline?${q}&from=${encodeURIComponent(before)}`) : skipped;
    const topology = READS.has('topology') ? await measure(url, auth, `/api/v1/topology?${q}`) : skipped;
    // The slowest statements of one request, explained (in a transaction rolled back).
    const slowest = async (path: string) => {
      const { queries } = await traceQueries(services, () => call(url, 'GET', path, { auth }));
      const explained = await explainAll(services, queries);
      return explained.sort((a, b) => (b.executionMs ?? 0) - (a.executionMs ?? 0)).slice(0, 4)
        .map((e) => ({ sql: e.sql.replace(/\s+/g, ' ').slice(0, 400), clientMs: round(e.clientMs), executionMs: e.executionMs, plan: e.plan.slice(0, 3000) }));
    };
    const explained = {
      diff: READS.has('diff') ? await slowest(`/api/v1/topology/diff?${q}&last_changes=${CHANGES}`) : [],
      topology: READS.has('topology') ? await slowest(`/api/v1/topology?${q}`) : [],
    };
    const figures = ({ body: _b, ...m }: Awaited<ReturnType<typeof measure>>) => m;
    const result = {
      hosts, database,
      diff: { ...figures(diff), nodes_listed: diff.body && diff.body.nodes.added.length + diff.body.nodes.removed.length + diff.body.nodes.changed.length },
      timeline: { ...figures(timeline), ticks: timeline.body?.ticks.length, nodes: timeline.body?.nodes.length },
      topology: { ...figures(topology), nodes: topology.body?.nodes.length },
    };
    log(JSON.stringify(result));
    Object.assign(result, { explained });
    return result;
  } finally {
    await pool.end();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await closeServices(services);
  }
}

async function main() {
  const started = new Date().toISOString();
  const label = process.env.DIFF_GROWTH_LABEL ?? 'run';
  const points: Array<NonNullable<Awaited<ReturnType<typeof point>>>> = [];
  for (const hosts of SIZES) {
    const p = await point(hosts);
    if (p) points.push(p);
  }
  if (!points.length) return;
  const ratio = (k: 'diff' | 'timeline' | 'topology') => {
    const [a, b] = [points[0]?.[k].p50, points.at(-1)?.[k].p50];
    return points.length > 1 && a && b ? Math.round((b / a) * 100) / 100 : null;
  };
  const out = { bench: 'diff-growth', label, started, cpus: os.cpus().length, changes: CHANGES, runs: RUNS, points,
    ratios: { diff: ratio('diff'), timeline: ratio('timeline'), topology: ratio('topology') } };
  log(`ratios ${points.at(-1)!.hosts}/${points[0]!.hosts}: ${JSON.stringify(out.ratios)}`);
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  writeFileSync(new URL(`diff-growth-${label}-${started.replace(/[:.]/g, '-')}.json`, dir), JSON.stringify(out, null, 2));
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
