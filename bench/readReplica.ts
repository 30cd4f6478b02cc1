// Read replica benchmark (issue 26.4): `node --import tsx bench/readReplica.ts`.
// A throwaway primary and its streaming standby (scripts/pgStandby.ts), one organization seeded with
// BENCH_REPLICA_HOSTS hosts (bench/seed.ts, history grown to ~4 states per row), and two API apps in
// this process on the same primary: one without a replica (the baseline), one with
// DATABASE_REPLICA_URL. Same run, interleaved requests:
//   1. `at` list (`GET /api/v1/hosts?limit=50&at=<middle>`) through each: p50/p99 and the ratio, and
//      how many of the replica app's reads the standby served (netinv_db_replica_reads_total);
//   2. replication delay under writes: 4 clients PATCH hosts for BENCH_REPLICA_WRITE_SECONDS while
//      every 50 ms the primary's WAL position is taken and the time until the standby has replayed
//      it is measured (p50/p99/max), with the lag gauges' samples;
//   3. read-your-writes: PATCH then at once GET its history, through each app: p50/p99 of the read,
//      and where the replica app's reads went (caught up on the standby, or the primary).
// On this 2-core machine the primary, the standby, both apps and the clients share the cores: the
// figures show overhead and correctness, not capacity.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import pg from 'pg';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrate } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { createOrm } from '../src/database.js';
import { startStandbyPair } from '../scripts/pgStandby.js';
import { seed } from './seed.js';

const HOSTS = Number(process.env.BENCH_REPLICA_HOSTS ?? 5000);
const AT_REQUESTS = Number(process.env.BENCH_REPLICA_AT_REQUESTS ?? 200);
const WRITE_SECONDS = Number(process.env.BENCH_REPLICA_WRITE_SECONDS ?? 20);
const RYW_ROUNDS = Number(process.env.BENCH_REPLICA_RYW_ROUNDS ?? 100);
const METRICS_TOKEN = 'bench-replica';
const log = (line: string) => console.error(line);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: sorted.length, p50: r(at(0.5)), p99: r(at(0.99)), max: r(sorted.at(-1) ?? Number.NaN) };
}

async function http(base: string, method: string, path: string, opts: { cookie?: string; body?: unknown; type?: string } = {}) {
  const headers: Record<string, string> = {};
  if (opts.cookie) headers.Cookie = opts.cookie;
  if (opts.body !== undefined) headers['Content-Type'] = opts.type ?? 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return { res, body: text.startsWith('{') ? JSON.parse(text) : text };
}

async function startApp(databaseUrl: string, replicaUrl: string | undefined, prefix: string) {
  const config = loadConfig({
    databaseUrl, databaseReplicaUrl: replicaUrl, redisPrefix: prefix, metricsToken: METRICS_TOKEN, logLevel: 'silent',
    userRateLimit: { capacity: 1_000_000, refillPerMinute: 10_000_000 },
  });
  const services = await createServices(config, createLogger('silent'));
  const server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    async reads() {
      const text = await (await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      const counts: Record<string, number> = {};
      for (const m of text.matchAll(/^netinv_db_replica_reads_total\{target="(\w+)",reason="(\w+)"\} (\d+)/gm)) counts[`${m[1]}:${m[2]}`] = Number(m[3]);
      return counts;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await closeServices(services);
    },
  };
}

const diff = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => (v as number) > 0));

async function main() {
  const started = Date.now();
  const pair = await startStandbyPair();
  const database = 'netinventory';
  const prefix = `bench-replica:${randomBytes(3).toString('hex')}:`;
  let primaryApp: Awaited<ReturnType<typeof startApp>> | undefined;
  let replicaApp: typeof primaryApp;
  const primary = new pg.Pool({ connectionString: pair.primaryUrl(database), max: 2 });
  const standby = new pg.Pool({ connectionString: pair.standbyUrl(database), max: 2 });
  try {
    const orm = await createOrm(pair.primaryUrl(database), 2);
    await migrate(orm);
    await orm.close(true);
    await pair.caughtUp();
    primaryApp = await startApp(pair.primaryUrl(database), undefined, `${prefix}p:`);
    replicaApp = await startApp(pair.primaryUrl(database), pair.standbyUrl(database), `${prefix}r:`);
    log(`[${Math.round((Date.now() - started) / 1000)} s] pair started and migrated; seeding ${HOSTS} hosts`);

    const email = `bench-${randomBytes(4).toString('hex')}@example.test`;
    const password = 'correct-horse-battery';
    const user = (await http(primaryApp.url, 'POST', '/api/auth/register', { body: { email, password, organization_name: 'Bench org' } })).body.data;
    const login = await http(primaryApp.url, 'POST', '/api/auth/login', { body: { email, password } });
    const cookie = login.res.headers.get('set-cookie')!.split(';')[0]!;
    const networkId = user.network_ids[0] as string;
    const subnet = (await http(primaryApp.url, 'POST', '/api/v1/subnets', { cookie, body: { network_id: networkId, cidr: '10.0.0.0/8', name: 'bench' } })).body.data;
    const seeded = await seed({
      databaseUrl: pair.primaryUrl(database), organizationId: user.organization_id, networkId, subnetId: subnet.id,
      hosts: HOSTS, minHistory: HOSTS * 16 * 4, batchHosts: 1000, parallel: 2, log: () => undefined,
    });
    await pair.caughtUp(120_000);
    log(`[${Math.round((Date.now() - started) / 1000)} s] seeded ${seeded.totalHistory} history rows in ${seeded.seconds.total} s; at = ${seeded.atInstant}`);

    // ---- 1. `at` list: primary app vs replica app, interleaved --------------------------------
    const atPath = (i: number) => `/api/v1/hosts?limit=50&offset=${(i * 50) % Math.max(50, HOSTS - 50)}&at=${encodeURIComponent(seeded.atInstant)}`;
    for (let i = 0; i < 10; i++) { await http(primaryApp.url, 'GET', atPath(i), { cookie }); await http(replicaApp.url, 'GET', atPath(i), { cookie }); } // warm both
    const atMs = { primary: [] as number[], replica: [] as number[] };
    const readsBefore = await replicaApp.reads();
    for (let i = 0; i < AT_REQUESTS; i++) {
      for (const [name, app] of (i % 2 ? [['primary', primaryApp], ['replica', replicaApp]] : [['replica', replicaApp], ['primary', primaryApp]]) as Array<['primary' | 'replica', typeof replicaApp]>) {
        const t = performance.now();
        await http(app!.url, 'GET', atPath(i), { cookie });
        atMs[name].push(performance.now() - t);
      }
    }
    const atReads = diff(await replicaApp.reads(), readsBefore);
    const at = { primary: percentiles(atMs.primary), replica: percentiles(atMs.replica) };
    log(`at list p50 ${at.primary.p50} → ${at.replica.p50} ms, p99 ${at.primary.p99} → ${at.replica.p99} ms; replica app's reads: ${JSON.stringify(atReads)}`);

    // ---- 2. replication delay under writes ---------------------------------------------------
    const hostIds = (await primary.query<{ id: string }>('select id from hosts order by id limit 2000')).rows.map((r) => r.id);
    let writing = true;
    let writes = 0;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = w; writing; i += 4) {
        await http(primaryApp!.url, 'PATCH', `/api/v1/hosts/${hostIds[i % hostIds.length]}`, { cookie, body: { description: `write ${i}` }, type: 'application/merge-patch+json' });
        writes++;
      }
    });
    const delays: number[] = [];
    const lagBytes: number[] = [];
    const sampling = (async () => {
      await sleep(1000); // the writers running
      while (writing) {
        const { lsn } = (await primary.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')).rows[0]!;
        const t = performance.now();
        for (;;) {
          const { done, bytes } = (await standby.query<{ done: boolean; bytes: string }>(
            'select pg_last_wal_replay_lsn() >= $1::pg_lsn as done, pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::text as bytes', [lsn])).rows[0]!;
          if (delays.length === lagBytes.length) lagBytes.push(Math.max(0, Number(bytes)));
          if (done) break;
          await sleep(2);
        }
        delays.push(performance.now() - t);
        await sleep(50);
      }
    })();
    await sleep(WRITE_SECONDS * 1000);
    writing = false;
    await Promise.all([...writers, sampling]);
    const delay = percentiles(delays);
    const bytes = percentiles(lagBytes);
    log(`${writes} PATCHes in ${WRITE_SECONDS} s; replay delay p50 ${delay.p50} / p99 ${delay.p99} / max ${delay.max} ms over ${delay.n} samples; WAL behind p50 ${bytes.p50} / p99 ${bytes.p99} bytes`);

    // ---- 3. read-your-writes: write, then read its history at once ------------------------------
    const rywMs = { primary: [] as number[], replica: [] as number[] };
    const rywBefore = await replicaApp.reads();
    for (let i = 0; i < RYW_ROUNDS; i++) {
      for (const [name, app] of [['primary', primaryApp], ['replica', replicaApp]] as Array<['primary' | 'replica', typeof replicaApp]>) {
        const id = hostIds[(i * 2 + (name === 'replica' ? 1 : 0)) % hostIds.length];
        const description = `${name} ${i}`;
        await http(app!.url, 'PATCH', `/api/v1/hosts/${id}`, { cookie, body: { description }, type: 'application/merge-patch+json' });
        const t = performance.now();
        const history = (await http(app!.url, 'GET', `/api/v1/hosts/${id}/history`, { cookie })).body.data;
        rywMs[name].push(performance.now() - t);
        if (history[0].description !== description) throw new Error(`read-your-writes broken on the ${name} app: ${history[0].description} !== ${description}`);
      }
    }
    const rywReads = diff(await replicaApp.reads(), rywBefore);
    const ryw = { primary: percentiles(rywMs.primary), replica: percentiles(rywMs.replica) };
    log(`history right after a write p50 ${ryw.primary.p50} → ${ryw.replica.p50} ms, p99 ${ryw.primary.p99} → ${ryw.replica.p99} ms; replica app's reads: ${JSON.stringify(rywReads)}`);

    const result = {
      when: new Date().toISOString(), machine: { cpus: os.cpus().length, load: os.loadavg() },
      hosts: HOSTS, history_rows: seeded.totalHistory,
      at_list: { ...at, ratio_p50: Math.round((at.replica.p50 / at.primary.p50) * 100) / 100, ratio_p99: Math.round((at.replica.p99 / at.primary.p99) * 100) / 100, replica_app_reads: atReads },
      replication_under_writes: { seconds: WRITE_SECONDS, writes, replay_delay_ms: delay, wal_bytes_behind: bytes },
      read_your_writes: { rounds: RYW_ROUNDS, ...ryw, ratio_p50: Math.round((ryw.replica.p50 / ryw.primary.p50) * 100) / 100, replica_app_reads: rywReads, all_saw_their_write: true },
    };
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    const file = new URL(`./results/replica-${result.when.replace(/[:.]/g, '-')}.json`, import.meta.url);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`written ${file.pathname}`);
  } finally {
    await primaryApp?.close().catch(() => undefined);
    await replicaApp?.close().catch(() => undefined);
    await primary.end();
    await standby.end();
    pair.stop();
  }
}

await main();
process.exit(0);
