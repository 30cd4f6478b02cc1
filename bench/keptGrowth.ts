// The topology's change-sized reads on databases kept by growth.ts (BENCH_KEEP=1), so that two
// versions of the code are measured on the same rows: KEPT_DATABASES (comma-separated, e.g. the 10,000
// and the 100,000-host point's) each get, through the API of this checkout, one request at a time,
// graph cache and heavy-read budget off, p50 / p90 over KEPT_RUNS (9) after 2 discarded:
//   topology   GET /api/v1/topology (l3 at its default budget, drawn)
//   diff       GET /api/v1/topology/diff?last_changes=50 (the point's ingest: 50 new hosts)
//   diffPuts   GET /api/v1/topology/diff?from=<just before the point's PUTs> (one host's 42 PUTs; the
//              ingest after them too), the growth curve's "recent diff"
//   timeline   GET /api/v1/topology/timeline?from=<the same instant> (to now)
// with the 1-minute load average, and with KEPT_EXPLAIN=1 every statement of one request (client time,
// EXPLAIN ANALYZE time; a thread's snapshot reads are not traced, so tasks run inline here).
// KEPT_MIGRATE=0 leaves the schema as it is (code older than the newest migration).
// Results: bench/results/kept-growth-<label>-<date>.json (KEPT_LABEL, e.g. before / after).
// Run: KEPT_DATABASES=netinv_growth_plain_a,netinv_growth_plain_b node --import tsx bench/keptGrowth.ts
// BENCH_SMALL=1 without KEPT_DATABASES (bench:small): growth.ts's small run keeps its database for
// this one, which measures it with 2 runs per read and drops it; results in the small run's directory.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Db, migrate, quoteIdent } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { GraphCache } from '../src/modules/topology/graphCache.js';
import { INLINE_BELOW } from '../src/modules/topology/pool.js';
import { adminQuery, serverUrl } from '../test/support/app.js';
import { explainAll, traceQueries } from './diagnose.js';
import { AllowAllRateLimiter, resultsDir, sized, SMALL } from './small.js';

const RUNS = sized('KEPT_RUNS', 9, 2);
const LABEL = process.env.KEPT_LABEL ?? 'run';
const EXPLAIN = process.env.KEPT_EXPLAIN === '1';

/** The databases to measure: KEPT_DATABASES, or (small run) the one growth.ts's small run kept, made here. */
function databases(): { names: string[]; made: boolean } {
  const named = (process.env.KEPT_DATABASES ?? '').split(',').filter(Boolean);
  if (named.length) return { names: named, made: false };
  if (!SMALL) throw new Error('KEPT_DATABASES names the databases kept by growth.ts (BENCH_KEEP=1)');
  const growth = spawnSync(process.execPath, ['--import', 'tsx', new URL('./growth.ts', import.meta.url).pathname], { stdio: 'inherit', env: { ...process.env, BENCH_KEEP: '1', BENCH_RESULTS_DIR: fileURLToPath(resultsDir()) } });
  if (growth.status !== 0) throw new Error(`growth.ts's small run failed (${growth.status ?? growth.signal})`);
  return { names: growthResults().flatMap((r) => r.variants.map((v: any) => v.database as string)).slice(0, 1), made: true };
}
// Inline: every statement goes through the traced Db (a thread reads on a connection of its own).
if (EXPLAIN) for (const k of Object.keys(INLINE_BELOW)) (INLINE_BELOW as Record<string, number>)[k] = Number.MAX_SAFE_INTEGER;

const round = (x: number) => Math.round(x * 10) / 10;
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const log = (line: string) => console.log(`[kept-growth ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** growth.ts's results, newest first. */
function growthResults(): any[] {
  const dir = resultsDir();
  return readdirSync(dir).filter((f) => f.startsWith('growth-') && f.endsWith('.json')).sort().reverse()
    .map((f) => JSON.parse(readFileSync(new URL(f, dir), 'utf8'))).filter((r) => Array.isArray(r.variants));
}

/** The recent diff's `from` growth.ts used at this database's (last) point, from its results. */
function putsInstant(database: string): string | undefined {
  for (const r of growthResults()) {
    const v = r.variants.find((x: any) => x.database === database);
    if (v) return v.points.at(-1)?.diff?.recent?.from;
  }
  return undefined;
}

async function measureDatabase(database: string) {
  const config = loadConfig({ databaseUrl: serverUrl(database), redisPrefix: `bench:kept:${randomBytes(3).toString('hex')}:`, heavyReadBudget: { burstMs: 0, refillMsPerSecond: 0 } });
  const services = await createServices(config, createLogger('silent'));
  const server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    if (process.env.KEPT_MIGRATE !== '0') await migrate(services.orm);
    services.rateLimiter = new AllowAllRateLimiter(services.redis);
    services.topologyGraphs = new GraphCache(0);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const db = new Db(services.orm.em.fork());
    // growth.ts's organization under test and its password.
    const [user] = await db.query<{ email: string }>(`select email from users where email like 'growth-under-test-%'`);
    const login = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: user!.email, password: 'correct-horse-battery' }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const networkId = ((await (await fetch(`${base}/api/v1/networks`, { headers: { cookie } })).json()) as any).data[0].id as string;
    const [{ hosts }] = await db.query<{ hosts: number }>(`select count(*)::int as hosts from hosts where network_id = ?`, [networkId]) as [{ hosts: number }];
    const from = putsInstant(database);
    const paths: Record<string, string> = {
      topology: `/api/v1/topology?network_id=${networkId}`,
      diff: `/api/v1/topology/diff?network_id=${networkId}&last_changes=50`,
      ...(from ? {
        diffPuts: `/api/v1/topology/diff?network_id=${networkId}&from=${encodeURIComponent(from)}`,
        timeline: `/api/v1/topology/timeline?network_id=${networkId}&from=${encodeURIComponent(from)}`,
      } : {}),
    };
    const out: Record<string, unknown> = { database, hosts };
    for (const [name, path] of Object.entries(paths)) {
      const get = async () => {
        const r = await fetch(base + path, { headers: { cookie } });
        const text = await r.text();
        if (r.status !== 200) throw new Error(`${name}: ${r.status} ${text.slice(0, 300)}`);
        return text;
      };
      const answer = JSON.parse(await get()).data;
      await get();
      const ms: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await get();
        ms.push(performance.now() - t);
      }
      const size = name === 'topology' || name === 'timeline' ? { nodes: answer.nodes.length } : { changed: answer.nodes.changed.length, added: answer.nodes.added.length, removed: answer.nodes.removed.length };
      const row: Record<string, unknown> = { p50: round(pct(ms, 50)), p90: round(pct(ms, 90)), load: round(os.loadavg()[0]!), ...size };
      log(`${database} (${hosts} hosts) ${name}: p50 ${row.p50} ms, p90 ${row.p90} ms, load ${row.load} ${JSON.stringify(size)}`);
      if (EXPLAIN) {
        const { queries } = await traceQueries(services, get);
        const explained = await explainAll(services, queries);
        row.statements = queries.map((q, i) => ({ sql: q.sql.replace(/\s+/g, ' ').slice(0, 200), clientMs: q.ms, executionMs: explained[i]!.executionMs }));
        for (const s of row.statements as Array<{ sql: string; clientMs: number; executionMs: number }>) log(`   ${s.clientMs} ms (explain ${s.executionMs}): ${s.sql.slice(0, 140)}`);
      }
      out[name] = row;
    }
    return out;
  } finally {
    server.close();
    await closeServices(services);
  }
}

const started = new Date().toISOString();
const points: Array<Record<string, unknown>> = [];
const { names, made } = databases();
try {
  for (const database of names) points.push(await measureDatabase(database));
} finally {
  if (made) for (const database of names) await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
}
const ratios = Object.fromEntries(['topology', 'diff', 'diffPuts', 'timeline'].map((k) => {
  const [a, b] = [points[0]?.[k] as { p50: number } | undefined, points.at(-1)?.[k] as { p50: number } | undefined];
  return [k, a && b && points.length > 1 ? Math.round((b.p50 / a.p50) * 100) / 100 : null];
}));
log(`p50 ratios, last database / first: ${JSON.stringify(ratios)}`);
const dir = resultsDir();
mkdirSync(dir, { recursive: true });
const file = new URL(`kept-growth-${LABEL}-${started.replace(/[:.]/g, '-')}.json`, dir);
writeFileSync(file, JSON.stringify({ bench: 'kept-growth', label: LABEL, started, cpus: os.cpus().length, runs: RUNS, points, ratios }, null, 2));
log(`results: ${file.pathname}`);
