// Host history with children benchmark (issue 28.3; `node --import tsx bench/hostHistory.ts`): what
// GET /api/v1/hosts/{id}/history costs against reading the same host once, in the same run,
// interleaved request by request so each sees the same machine:
//   baseline   GET /api/v1/hosts/{id}          (the host with its children now: one snapshot)
//   at         GET /api/v1/hosts/{id}?at=<mid> (one snapshot from the history tables)
//   history    GET /api/v1/hosts/{id}/history?limit=L for L in 1, 20 and 100 (the most) (L snapshots, and changes)
// The host has BENCH_HISTORY_PORTS ports (100), 2 services bound to them and 2 addresses, and gets
// BENCH_HISTORY_CHANGES changes (300) through the API: a port renumbered, a service renamed, the
// host's description, in turn. Requests are timed with a plain fetch; each answer's entry count is checked.
// Environment: BENCH_HISTORY_PORTS, BENCH_HISTORY_CHANGES, BENCH_HISTORY_REQUESTS (20 per scenario).
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { prepareTemplate, releaseTestDatabases, startTestApp } from '../test/support/app.js';
import { call, expectOk } from '../test/support/client.js';
import { registerTenant } from '../test/support/world.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const PORTS = env('BENCH_HISTORY_PORTS', 100);
const CHANGES = env('BENCH_HISTORY_CHANGES', 300);
const REQUESTS = env('BENCH_HISTORY_REQUESTS', 20);
const LIMITS = [1, 20, 100];

const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const log = (line: string) => console.log(`[hostHistory] ${line}`);

async function main(): Promise<void> {
  await prepareTemplate();
  const app = await startTestApp({ userRateLimit: { capacity: 1_000_000, refillPerMinute: 6_000_000 } });
  try {
    const t = await registerTenant(app.url, 'bench');
    const ok = async (method: string, path: string, body?: unknown, status = 200) => expectOk(await call(app.url, method, path, { auth: t.owner, body }), status);
    const subnet = await ok('POST', '/api/v1/subnets', { network_id: t.defaultNetworkId, cidr: '10.9.0.0/16', name: 'lan' }, 201);
    const host = await ok('POST', '/api/v1/hosts', {
      network_id: t.defaultNetworkId, name: 'busy',
      ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.9.0.1' }, { subnet_id: subnet.id, ip_address: '10.9.0.2' }],
      ports: Array.from({ length: PORTS }, (_, i) => ({ number: 1000 + i, protocol: 'Tcp' })),
    }, 201);
    const services = [
      await ok('POST', '/api/v1/services', { host_id: host.id, name: 'svc-a', service_definition: 'Nginx', bindings: [{ type: 'Port', port_id: host.ports[0].id }] }, 201),
      await ok('POST', '/api/v1/services', { host_id: host.id, name: 'svc-b', service_definition: 'Nginx', bindings: [{ type: 'Port', port_id: host.ports[1].id }] }, 201),
    ];
    log(`host with ${PORTS} ports, 2 addresses, 2 services; making ${CHANGES} changes…`);
    for (let i = 0; i < CHANGES; i++) {
      if (i % 3 === 0) await ok('PUT', `/api/v1/ports/${host.ports[2 + (i % (PORTS - 2))].id}`, { number: 20000 + i, protocol: 'Tcp' });
      else if (i % 3 === 1) {
        const s = services[i % 2];
        await ok('PUT', `/api/v1/services/${s.id}`, { name: `${s.name.split('#')[0]}#${i}`, service_definition: 'Nginx', bindings: s.bindings.map((b: any) => ({ id: b.id, type: b.type, port_id: b.port_id })) });
      } else await ok('PUT', `/api/v1/hosts/${host.id}`, { id: host.id, name: 'busy', hidden: false, tags: [], hostname: null, description: `change ${i}` });
    }
    const entries = 3 + CHANGES; // the creation, two services, the changes
    const all = await ok('GET', `/api/v1/hosts/${host.id}/history?limit=100`);
    if (all.length !== Math.min(100, entries)) throw new Error(`history has ${all.length} entries, expected ${Math.min(100, entries)}`);
    const middle = all[Math.floor(all.length / 2)].valid_from as string;

    const scenarios: Array<{ name: string; path: string; expect?: number }> = [
      { name: 'baseline GET host', path: `/api/v1/hosts/${host.id}` },
      { name: 'GET host ?at=middle', path: `/api/v1/hosts/${host.id}?at=${encodeURIComponent(middle)}` },
      ...LIMITS.map((l) => ({ name: `history limit=${l}`, path: `/api/v1/hosts/${host.id}/history?limit=${l}`, expect: Math.min(l, entries) })),
    ];
    const ms = new Map(scenarios.map((s) => [s.name, [] as number[]]));
    const bytes = new Map<string, number>();
    const get = async (s: (typeof scenarios)[number]) => {
      const start = performance.now();
      const res = await fetch(app.url + s.path, { headers: { Cookie: t.owner.cookie! } }).catch((err: Error) => { throw new Error(`${s.name}: ${err.message} (${(err.cause as Error)?.message})`); });
      const text = await res.text();
      const took = performance.now() - start;
      if (res.status !== 200) throw new Error(`${s.path}: ${res.status} ${text.slice(0, 200)}`);
      if (s.expect !== undefined && JSON.parse(text).data.length !== s.expect) throw new Error(`${s.name}: not ${s.expect} entries`);
      bytes.set(s.name, Buffer.byteLength(text));
      return took;
    };
    for (const s of scenarios) await get(s); // warm-up
    for (let r = 0; r < REQUESTS; r++) for (const s of scenarios) ms.get(s.name)!.push(await get(s));

    const base = pct(ms.get('baseline GET host')!, 50);
    const rows = scenarios.map((s) => {
      const v = ms.get(s.name)!;
      return { scenario: s.name, entries: s.expect ?? 1, p50_ms: round(pct(v, 50)), p95_ms: round(pct(v, 95)), max_ms: round(Math.max(...v)), bytes: bytes.get(s.name)!, p50_vs_baseline: round(pct(v, 50) / base, 2) };
    });
    console.table(rows);
    const result = { bench: 'hostHistory', at: new Date().toISOString(), machine: { cpus: os.cpus().length, load: os.loadavg() }, ports: PORTS, changes: CHANGES, requests: REQUESTS, rows };
    mkdirSync(new URL('results/', import.meta.url), { recursive: true });
    const file = new URL(`results/hostHistory-${result.at.replace(/[:.]/g, '-')}.json`, import.meta.url);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${file.pathname}`);
  } finally {
    await app.close();
    await releaseTestDatabases();
  }
}

await main();
process.exit(0);
