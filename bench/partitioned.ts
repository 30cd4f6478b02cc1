// Plain vs partitioned schema (issue 27.3: should PARTITION BY HASH (organization_id) be the default?).
// `node --import tsx bench/partitioned.ts`
//
// Two databases made in the same run by the migrations, one per SCHEMA_VARIANT, each seeded the same
// way by SQL: BENCH_PART_ORGS (8) organizations, each with one network of BENCH_PART_HOSTS (1,500)
// hosts, every host with 2 IP addresses, 5 ports and 2 services (the history triggers record it all).
// Then, alternating the two databases for BENCH_PART_ROUNDS (5) rounds, through a real API in this
// process (the first organization's owner session):
//   list      GET /api/v1/hosts?limit=50 (hosts with their children), 40 requests
//   at list   the same with at=<after the seed>, 40 requests
//   get       GET /api/v1/hosts/{id}, 40 requests
//   put       PUT /api/v1/hosts/{id} renaming it and adding a port then removing it, 20 requests
//   ingest    one INSERT of 5,000 ports (1,000 hosts × 5, the capture bench's batch), in a rolled-back
//             transaction: statement-level capture on plain tables, row-level on partitioned ones
// Prints p50 / p99 per scenario and the ratio partitioned / plain; writes bench/results/partitioned-<date>.json.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { createOrm } from '../src/database.js';
import { migrate } from '../src/core/db.js';
import { ensureServices } from '../scripts/services.js';
import { call, expectOk } from '../test/support/client.js';
import { serverUrl, startTestApp, type TestApp } from '../test/support/app.js';
import { registerTenant, type Tenant } from '../test/support/world.js';
import { AllowAllRateLimiter } from './small.js';

const ORGS = Number(process.env.BENCH_PART_ORGS ?? 8);
const HOSTS = Number(process.env.BENCH_PART_HOSTS ?? 1500);
const ROUNDS = Number(process.env.BENCH_PART_ROUNDS ?? 5);
const VARIANTS = ['plain', 'partitioned'] as const;
type Variant = (typeof VARIANTS)[number];

const { databaseUrl, redisUrl } = await ensureServices();
process.env.DATABASE_URL = databaseUrl;
process.env.REDIS_URL = redisUrl;
process.env.LOG_LEVEL ??= 'silent';

interface World { variant: Variant; db: string; app: TestApp; t: Tenant; hostIds: string[]; at: string; orgIds: string[] }

async function seed(variant: Variant): Promise<World> {
  const db = `netinv_bench_part_${variant}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl('postgres') });
  await admin.connect();
  await admin.query(`drop database if exists ${db}`);
  await admin.end();
  process.env.SCHEMA_VARIANT = variant;
  const orm = await createOrm(serverUrl(db), 2);
  await migrate(orm);
  await orm.close(true);
  const app = await startTestApp({ databaseUrl: serverUrl(db), userRateLimit: { capacity: 1_000_000, refillPerMinute: 6_000_000 } });
  // The bench measures the request path, not the rate limiter (as bench/growth.ts): registering
  // BENCH_PART_ORGS tenants from one address is otherwise refused by the sign-up limit.
  app.services.rateLimiter = new AllowAllRateLimiter(app.services.redis);
  const c = new pg.Client({ connectionString: serverUrl(db) });
  await c.connect();
  const tenants: Tenant[] = [];
  for (let i = 0; i < ORGS; i++) tenants.push(await registerTenant(app.url, `org${i}`));
  const orgIds: string[] = [];
  for (const t of tenants) {
    const { rows: [n] } = await c.query(`select organization_id from networks where id = $1`, [t.defaultNetworkId]);
    const org = n.organization_id as string;
    orgIds.push(org);
    const subnet = randomUUID();
    await c.query(`insert into subnets (id, organization_id, network_id, cidr, name) values ($1, $2, $3, '10.0.0.0/8', 'all')`, [subnet, org, t.defaultNetworkId]);
    await c.query(`insert into hosts (id, organization_id, network_id, name) select gen_random_uuid(), $1, $2, 'host-' || g from generate_series(1, $3) g`, [org, t.defaultNetworkId, HOSTS]);
    await c.query(
      `insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address, position)
       select gen_random_uuid(), $1, $2, h.id, $3, ('10.0.0.0'::inet + (row_number() over () * 2 + k)::bigint), k
         from hosts h cross join generate_series(0, 1) k where h.organization_id = $1`, [org, t.defaultNetworkId, subnet]);
    await c.query(
      `insert into ports (id, organization_id, network_id, host_id, number, protocol, type)
       select gen_random_uuid(), $1, $2, h.id, 20 + p, 'Tcp', 'Custom' from hosts h cross join generate_series(1, 5) p where h.organization_id = $1`, [org, t.defaultNetworkId]);
    await c.query(
      `insert into services (id, organization_id, network_id, host_id, name, service_definition, position)
       select gen_random_uuid(), $1, $2, h.id, 'svc' || k, 'Custom', k from hosts h cross join generate_series(0, 1) k where h.organization_id = $1`, [org, t.defaultNetworkId]);
  }
  await c.query('vacuum analyze');
  await c.end();
  const at = new Date().toISOString();
  const t = tenants[0]!;
  const list = expectOk(await call(app.url, 'GET', `/api/v1/hosts?limit=50&network_id=${t.defaultNetworkId}`, { auth: t.owner }));
  return { variant, db, app, t, hostIds: list.map((h: any) => h.id), at, orgIds };
}

const timed = async (n: number, fn: (i: number) => Promise<unknown>) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
};

const scenarios: Record<string, (w: World) => Promise<number[]>> = {
  list: (w) => timed(40, async () => expectOk(await call(w.app.url, 'GET', `/api/v1/hosts?limit=50`, { auth: w.t.owner }))),
  'at list': (w) => timed(40, async () => expectOk(await call(w.app.url, 'GET', `/api/v1/hosts?limit=50&at=${encodeURIComponent(w.at)}`, { auth: w.t.owner }))),
  get: (w) => timed(40, async (i) => expectOk(await call(w.app.url, 'GET', `/api/v1/hosts/${w.hostIds[i % w.hostIds.length]}`, { auth: w.t.owner }))),
  put: async (w) => {
    const id = w.hostIds[0]!;
    const out: number[] = [];
    await timed(20, async (i) => {
      const host = expectOk(await call(w.app.url, 'GET', `/api/v1/hosts/${id}`, { auth: w.t.owner }));
      const ports = host.ports.filter((p: any) => p.number !== 9000).map((p: any) => ({ id: p.id, number: p.number, protocol: p.protocol }));
      if (i % 2 === 0) ports.push({ number: 9000, protocol: 'Tcp' });
      const t0 = process.hrtime.bigint();
      expectOk(await call(w.app.url, 'PUT', `/api/v1/hosts/${id}`, { auth: w.t.owner, body: { id, name: `renamed-${i}`, hidden: false, tags: [], hostname: host.hostname, description: host.description, ports } }));
      out.push(Number(process.hrtime.bigint() - t0) / 1e6);
    });
    return out;
  },
  ingest: async (w) => {
    const c = new pg.Client({ connectionString: serverUrl(w.db), options: '-c jit=off' });
    await c.connect();
    const out = await timed(3, async () => {
      await c.query('begin');
      await c.query(
        `insert into ports (id, organization_id, network_id, host_id, number, protocol, type)
         select gen_random_uuid(), h.organization_id, h.network_id, h.id, 1000 + p, 'Tcp', 'Custom'
           from (select * from hosts where organization_id = $1 limit 1000) h cross join generate_series(1, 5) p`, [w.orgIds[0]]);
      await c.query('rollback');
    });
    await c.end();
    return out;
  },
};

const worlds: World[] = [];
for (const v of VARIANTS) worlds.push(await seed(v));
const samples: Record<string, Record<Variant, number[]>> = {};
for (const name of Object.keys(scenarios)) samples[name] = { plain: [], partitioned: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const w of r % 2 ? [...worlds].reverse() : worlds) {
    for (const [name, run] of Object.entries(scenarios)) samples[name]![w.variant].push(...(await run(w)));
  }
  process.stdout.write('.');
}
process.stdout.write('\n');
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))]! : NaN;
};
const summary: Record<string, unknown> = {};
console.log(`${ORGS} organizations × ${HOSTS} hosts, ${ROUNDS} rounds (ms)`);
console.log('| scenario | plain p50 / p99 | partitioned p50 / p99 | p50 ratio |');
console.log('|---|---:|---:|---:|');
for (const [name, s] of Object.entries(samples)) {
  if (!s.plain.length) continue;
  const row = { plain: [q(s.plain, 0.5), q(s.plain, 0.99)], partitioned: [q(s.partitioned, 0.5), q(s.partitioned, 0.99)] };
  summary[name] = { ...row, ratio_p50: row.partitioned[0]! / row.plain[0]! };
  console.log(`| ${name} | ${row.plain.map((x) => x.toFixed(1)).join(' / ')} | ${row.partitioned.map((x) => x.toFixed(1)).join(' / ')} | ${(row.partitioned[0]! / row.plain[0]!).toFixed(2)} |`);
}
for (const w of worlds) await w.app.close();
const admin = new pg.Client({ connectionString: serverUrl('postgres') });
await admin.connect();
for (const w of worlds) await admin.query(`drop database if exists ${w.db} with (force)`);
await admin.end();
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const file = new URL(`./results/partitioned-${new Date().toISOString().replace(/[:.]/g, '-')}.json`, import.meta.url);
writeFileSync(file, JSON.stringify({ orgs: ORGS, hosts: HOSTS, rounds: ROUNDS, samples, summary }, null, 2));
console.log(`wrote ${file.pathname}`);
process.exit(0);
