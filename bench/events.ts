// Events benchmark (issue 13), first part: the cost of the outbox on a write. PUT of a host with 50
// children (10 addresses, 20 ports, 20 services) p50/p99, with the event triggers on and one webhook
// subscribed, against the same PUTs with the event triggers disabled, in the same run and database
// (runs interleaved, so both see the same machine). Not yet here: deliveries/s, SSE latency with 500
// subscribers, feed throughput over 1 M events.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Db, migrate } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import type { RateLimiter } from '../src/http/rateLimiter.js';
import { serverUrl } from '../test/support/app.js';

const ROUNDS = Number(process.env.EVENTS_ROUNDS ?? 100);
const TABLES = ['networks', 'tags', 'subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies', 'daemons'];
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const round = (x: number) => Math.round(x * 10) / 10;

async function main() {
  const id = randomBytes(4).toString('hex');
  const config = loadConfig({ databaseUrl: serverUrl(`netinv_bench_events_${id}`), redisPrefix: `bench:${id}:` });
  const services = await createServices(config, createLogger('silent'));
  await migrate(services.orm);
  services.rateLimiter = { degraded: false, take: async (_k: string, p: { capacity: number; refillPerMinute: number }) => ({ allowed: true, remaining: p.capacity, resetSeconds: 0, retryAfterSeconds: 0, limit: p.refillPerMinute }) } as unknown as RateLimiter;
  const server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const db = new Db(services.orm.em.fork());
  try {
    const post = async (path: string, body: unknown, cookie?: string) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...(cookie ? { Cookie: cookie } : {}) }, body: JSON.stringify(body) });
      return { res, json: (await res.json()) as { data: any } };
    };
    const email = `events-${id}@example.test`;
    const password = 'plum harbor lantern';
    const reg = (await post('/api/auth/register', { email, password, organization_name: 'Events bench' })).json.data;
    const cookie = (await post('/api/auth/login', { email, password })).res.headers.get('set-cookie')!.split(';')[0]!;
    const networkId = reg.network_ids[0];
    const subnet = (await post('/api/v1/subnets', { network_id: networkId, cidr: '10.0.0.0/16', name: 'lan' }, cookie)).json.data;
    await post('/api/v1/webhooks', { name: 'bench', url: 'https://example.com/hook' }, cookie);
    const host = (await post('/api/v1/hosts', { network_id: networkId, name: 'h' }, cookie)).json.data;
    // Each PUT changes every child (new names, numbers, addresses), so each writes 50 children.
    const body = (round: number) => ({
      id: host.id, name: `h${round}`, hidden: false, tags: [],
      ip_addresses: Array.from({ length: 10 }, (_, i) => ({ subnet_id: subnet.id, ip_address: `10.0.${round % 250}.${i + 1}` })),
      ports: Array.from({ length: 20 }, (_, i) => ({ number: 1000 + (round % 2) * 100 + i, protocol: 'Tcp' })),
      services: Array.from({ length: 20 }, (_, i) => ({ id: randomUUID(), name: `svc${i}-${round}`, service_definition: 'Custom', bindings: [] })),
    });
    const put = async (round: number) => {
      const started = performance.now();
      const res = await fetch(`${base}/api/v1/hosts/${host.id}`, { method: 'PUT', headers: { 'Content-Type': 'application/json', Cookie: cookie }, body: JSON.stringify(body(round)) });
      if (res.status !== 200) throw new Error(`PUT ${res.status}: ${await res.text()}`);
      return performance.now() - started;
    };
    const triggers = async (on: boolean) => {
      for (const t of TABLES) for (const trig of ['events_insert', 'events_update', 'events_delete']) await db.query(`alter table ${t} ${on ? 'enable' : 'disable'} trigger ${trig}`);
    };
    for (let r = 0; r < 10; r++) await put(r); // warm-up
    const withEvents: number[] = [];
    const without: number[] = [];
    let n = 10;
    for (let r = 0; r < ROUNDS; r += 10) {
      await triggers(true);
      for (let i = 0; i < 10; i++) withEvents.push(await put(n++));
      await triggers(false);
      for (let i = 0; i < 10; i++) without.push(await put(n++));
    }
    await triggers(true);
    const events = Number((await db.one<{ n: string }>('select count(*) as n from events'))!.n) + Number((await db.one<{ n: string }>('select count(*) as n from event_outbox'))!.n);
    const result = {
      stamp: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version }, rounds: ROUNDS,
      put_host_50_children_ms: {
        with_events_and_webhook: { p50: round(pct(withEvents, 50)), p99: round(pct(withEvents, 99)) },
        without_event_triggers: { p50: round(pct(without, 50)), p99: round(pct(without, 99)) },
      },
      overhead_p99_percent: round((pct(withEvents, 99) / pct(without, 99) - 1) * 100),
      overhead_p50_percent: round((pct(withEvents, 50) / pct(without, 50) - 1) * 100),
      events_written: events,
    };
    console.log(JSON.stringify(result, null, 1));
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    const file = new URL(`./results/events-${result.stamp.replace(/[:.]/g, '-')}.json`, import.meta.url);
    writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
    console.log(`wrote ${file.pathname}`);
  } finally {
    server.close();
    await closeServices(services);
  }
}

await main();
