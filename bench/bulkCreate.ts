// Bulk create benchmark (issue 28; part of `npm run bench`, or `node --import tsx bench/bulkCreate.ts`):
// hosts per second created three ways, in the same run, interleaved round by round so that each
// sees the same machine:
//   bulk      POST /api/v1/hosts/bulk, 1,000 hosts in one request (the measured path);
//   single    the same hosts one by one through POST /api/v1/hosts, sequential (what a client did
//             before): the first BENCH_BULK_SINGLE_HOSTS (200) of each round, which at ~0.3 s a
//             request on the shared machine is already a minute a round; hosts/s is per host sent;
//   raw SQL   the same rows (hosts, ip_addresses, ports) with three INSERT … SELECT statements in one
//             transaction on a plain connection, history and event triggers firing as they do for
//             the API: the floor no API path can go below.
// Each host has 2 IP addresses (in a /16 of its own per round) and 2 ports. Every round uses a new
// network, so no pass finds the rows of another. Each pass is checked (1,000 hosts, 2,000
// addresses, 2,000 ports in its network).
// Requests are timed with a plain fetch (the test client's OpenAPI check of each answer is not the
// server's time).
// Checked (full and small runs), each round: the three ways wrote the same hosts, as the API answers
// them (GET /api/v1/hosts of each pass's network, ids, timestamps and the pass's /16 set aside).
// Environment: BENCH_BULK_ROUNDS (5), BENCH_BULK_HOSTS (1000), BENCH_BULK_SINGLE_HOSTS (200), DATABASE_URL, REDIS_URL.
// BENCH_SMALL=1 (bench/small.ts): one round, 100 hosts, 10 one by one; results in a temporary directory.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { prepareTemplate, releaseTestDatabases, startTestApp } from '../test/support/app.js';
import { call, expectOk } from '../test/support/client.js';
import { createNetwork, registerTenant } from '../test/support/world.js';
import { firstDifference } from './rawHosts.js';
import { mustAgree, resultsFile, sized } from './small.js';

// Each setting: its variable when set, else the small run's value under BENCH_SMALL=1, else the full run's.
const ROUNDS = sized('BENCH_BULK_ROUNDS', 5, 1);
const HOSTS = sized('BENCH_BULK_HOSTS', 1000, 100);
const SINGLE_HOSTS = Math.min(HOSTS, sized('BENCH_BULK_SINGLE_HOSTS', 200, 10));

const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const log = (line: string) => console.log(`[bulkCreate] ${line}`);

/** Host i of a round: two addresses of the round's /16 and ports 22 and 443. */
const hostBody = (networkId: string, subnetId: string, octet: number, i: number) => ({
  name: `bench-${i}`, network_id: networkId,
  ip_addresses: [0, 1].map((k) => ({ subnet_id: subnetId, ip_address: `10.${octet}.${Math.floor((2 * i + k) / 250)}.${1 + ((2 * i + k) % 250)}` })),
  ports: [{ number: 22, protocol: 'Tcp' }, { number: 443, protocol: 'Tcp' }],
});

async function main(): Promise<void> {
  await prepareTemplate();
  // No rate limit in the way of the one-by-one pass (it would wait out 429s).
  const app = await startTestApp({ userRateLimit: { capacity: 1_000_000, refillPerMinute: 6_000_000 } });
  const raw = new pg.Client({ connectionString: app.databaseUrl });
  await raw.connect();
  try {
    const t = await registerTenant(app.url, 'bench');
    let octet = 0;
    /** A fresh network with a /16 subnet for one pass. */
    const place = async (label: string) => {
      const network = await createNetwork(app.url, t.owner, `${label}-${octet}`);
      octet += 1;
      const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: network, cidr: `10.${octet}.0.0/16`, name: 'lan' } }), 201);
      return { network, subnet: subnet.id as string, octet };
    };
    /** POST as the Owner, timed without the test client's answer checks; answers the parsed body. */
    const post = async (path: string, body: unknown) => {
      const res = await fetch(app.url + path, { method: 'POST', headers: { Cookie: t.owner.cookie!, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      const answer = await res.json() as { data: { count?: number } };
      if (res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
      return answer.data;
    };
    const check = async (network: string, hosts = HOSTS) => {
      const { rows: [c] } = await raw.query(
        `select (select count(*) from hosts where network_id = $1)::int as hosts, (select count(*) from ip_addresses where network_id = $1)::int as ips,
                (select count(*) from ports where network_id = $1)::int as ports`, [network]);
      if (c.hosts !== hosts || c.ips !== 2 * hosts || c.ports !== 2 * hosts) throw new Error(`pass wrote ${JSON.stringify(c)}`);
    };

    /**
     * The first `count` hosts of a pass's network as the API answers them, made comparable across
     * passes: ids, timestamps and the pass's /16 (10.<octet>.) written as placeholders, in host order (bench-<i>).
     */
    const written = async (network: string, octet: number, count: number) => {
      const hosts: Array<{ name: string }> = [];
      for (let offset = 0; offset < count; offset += 1000) {
        hosts.push(...expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${network}&limit=1000&offset=${offset}`, { auth: t.owner })));
      }
      const number = (h: { name: string }) => Number(h.name.slice('bench-'.length));
      const text = JSON.stringify(hosts.filter((h) => number(h) < count).sort((a, b) => number(a) - number(b)))
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
        .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z/g, '<time>')
        .replaceAll(`"10.${octet}.`, '"10.<pass>.');
      return JSON.parse(text) as unknown[];
    };
    const seconds = { bulk: [] as number[], single: [] as number[], raw: [] as number[] };
    const bulkRequestMs: number[] = [];
    const singleRequestMs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const passes: Record<'bulk' | 'single' | 'raw', { network: string; octet: number }> = {} as never;
      // bulk: one request
      {
        const p = await place('bulk');
        passes.bulk = { network: p.network, octet: p.octet };
        const body = Array.from({ length: HOSTS }, (_, i) => hostBody(p.network, p.subnet, p.octet, i));
        const started = performance.now();
        const data = await post('/api/v1/hosts/bulk', body);
        const ms = performance.now() - started;
        if (data.count !== HOSTS) throw new Error(`bulk answered ${data.count}`);
        bulkRequestMs.push(ms);
        seconds.bulk.push(ms / 1000);
        await check(p.network);
      }
      // single: one request per host
      {
        const p = await place('single');
        passes.single = { network: p.network, octet: p.octet };
        const started = performance.now();
        for (let i = 0; i < SINGLE_HOSTS; i++) {
          const one = performance.now();
          await post('/api/v1/hosts', hostBody(p.network, p.subnet, p.octet, i));
          singleRequestMs.push(performance.now() - one);
        }
        seconds.single.push((performance.now() - started) / 1000);
        await check(p.network, SINGLE_HOSTS);
      }
      // raw SQL: the same rows, three statements, one transaction, triggers on
      {
        const p = await place('raw');
        passes.raw = { network: p.network, octet: p.octet };
        const ids = Array.from({ length: HOSTS }, () => randomUUID());
        const hosts = ids.map((id, i) => ({ id, organization_id: t.orgId, network_id: p.network, name: `bench-${i}`, source: { type: 'Manual' } }));
        const owned = (i: number) => ({ organization_id: t.orgId, network_id: p.network, host_id: ids[i] });
        const ips = ids.flatMap((_, i) => hostBody(p.network, p.subnet, p.octet, i).ip_addresses.map((a, k) => ({ id: randomUUID(), ...owned(i), ...a, position: k })));
        const ports = ids.flatMap((_, i) => [[22, 'Ssh'], [443, 'Https']].map(([number, type]) => ({ id: randomUUID(), ...owned(i), number, protocol: 'Tcp', type })));
        const insert = (table: string, rows: object[]) => {
          const cols = Object.keys(rows[0]!);
          return raw.query(`insert into ${table} (${cols.join(', ')}) select ${cols.join(', ')} from jsonb_populate_recordset(null::${table}, $1::jsonb)`, [JSON.stringify(rows)]);
        };
        const started = performance.now();
        await raw.query('begin');
        await insert('hosts', hosts);
        await insert('ip_addresses', ips);
        await insert('ports', ports);
        await raw.query('commit');
        seconds.raw.push((performance.now() - started) / 1000);
        await check(p.network);
      }
      // The raw SQL and the one-by-one pass wrote what the bulk wrote (the first SINGLE_HOSTS for the latter).
      const byBulk = await written(passes.bulk.network, passes.bulk.octet, HOSTS);
      let diff = firstDifference(byBulk, await written(passes.raw.network, passes.raw.octet, HOSTS));
      mustAgree('the raw SQL wrote the hosts the bulk create wrote', diff === null, diff ?? '');
      diff = firstDifference(byBulk.slice(0, SINGLE_HOSTS), await written(passes.single.network, passes.single.octet, SINGLE_HOSTS));
      mustAgree('the creates one by one wrote the hosts the bulk create wrote', diff === null, diff ?? '');
      log(`round ${r + 1}/${ROUNDS}: ${HOSTS} hosts: bulk ${round(seconds.bulk[r]!, 2)} s, raw SQL ${round(seconds.raw[r]!, 2)} s; ${SINGLE_HOSTS} hosts one by one ${round(seconds.single[r]!, 2)} s`);
    }

    const rate = (s: number[], n = HOSTS) => round((n * s.length) / s.reduce((a, b) => a + b, 0), 2);
    const perSecond = { bulk: rate(seconds.bulk), single: rate(seconds.single, SINGLE_HOSTS), raw_sql: rate(seconds.raw) };
    const result = {
      bench: 'bulkCreate', at: new Date().toISOString(), machine: { cpus: os.cpus().length, load: os.loadavg().map((x) => round(x, 2)) },
      hosts_per_round: HOSTS, single_hosts_per_round: SINGLE_HOSTS, rounds: ROUNDS, per_host: { ip_addresses: 2, ports: 2 },
      hosts_per_second: perSecond,
      ratios: { bulk_to_single: round(perSecond.bulk / perSecond.single, 2), bulk_to_raw_sql: round(perSecond.bulk / perSecond.raw_sql, 2) },
      request_ms: {
        bulk_1000_hosts: { p50: round(pct(bulkRequestMs, 50)), p99: round(pct(bulkRequestMs, 99)), samples: bulkRequestMs.length },
        single_host: { p50: round(pct(singleRequestMs, 50)), p99: round(pct(singleRequestMs, 99)), samples: singleRequestMs.length },
      },
      seconds_per_round: { bulk: seconds.bulk.map((s) => round(s, 2)), single: seconds.single.map((s) => round(s, 2)), raw_sql: seconds.raw.map((s) => round(s, 2)) },
    };
    console.log(JSON.stringify(result, null, 1));
    const file = resultsFile(`bulkCreate-${result.at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
    log(`wrote ${file.pathname}`);
  } finally {
    await raw.end();
    await app.close();
    await releaseTestDatabases();
  }
}

await main();
process.exit(0);
