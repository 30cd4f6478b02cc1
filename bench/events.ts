// Events benchmark (issue 13; last part of `npm run bench`, or `node --import tsx bench/events.ts`).
// Each measure against its baseline in the same run, same database:
//  1. PUT of a host with 50 children (10 addresses, 20 ports, 20 services, all replaced), with the
//     event triggers on and a webhook subscribed, interleaved in blocks of 10 with the same PUTs
//     with the event triggers disabled (target: ≤ 10 % at p99). EVENTS_ROUNDS (400: a p99 of fewer is its few slowest samples).
//  2. Webhook deliveries per second to a local receiver with 10 endpoints (target ≥ 1,000/s), by the
//     worker process (dispatcher and queue), against the same number of POSTs sent straight from Node with
//     the same HTTP agent and concurrency. EVENTS_DELIVERY_EVENTS (300 events → 3,000 deliveries).
//  3. SSE commit-to-client latency with 500 subscribers (target p99 ≤ 200 ms): from the moment the
//     creating request has answered (its transaction committed) to the event's arrival at each
//     stream, against the same with 1 subscriber. EVENTS_SUBSCRIBERS (500).
//  4. Feed read throughput over 1 M events (EVENTS_FEED_SIZE): pages of 1,000 through
//     GET /api/v1/events, against the same pages read with the raw SQL.
// Checked (full and small runs): the PUTs with the triggers on made events and those with them off
// none; every delivery arrived; every SSE subscriber got every event; the API's feed and the raw SQL
// read the same events.
// BENCH_SMALL=1 (bench/small.ts): 20 PUT rounds, 20 events to 10 endpoints, 20 subscribers, 10 SSE
// events, a feed of 2,000; results in a temporary directory. The bench's database is dropped at the end.
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { spawn } from 'node:child_process';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Db, migrate, quoteIdent } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { adminQuery, serverUrl } from '../test/support/app.js';
import { buildBundles, bundlePath } from '../scripts/build.js';
import { STREAMS_PER_CREDENTIAL } from '../src/modules/events/streamLimit.js';
import { AllowAllRateLimiter, mustAgree, resultsFile, sized, SMALL } from './small.js';

// Each setting: its variable when set, else the small run's value under BENCH_SMALL=1, else the full run's.
const ROUNDS = sized('EVENTS_ROUNDS', 400, 20);
const DELIVERY_EVENTS = sized('EVENTS_DELIVERY_EVENTS', 300, 20);
const ENDPOINTS = 10;
const SUBSCRIBERS = sized('EVENTS_SUBSCRIBERS', 500, 20);
const SSE_EVENTS = sized('EVENTS_SSE_EVENTS', 50, 10);
const FEED_SIZE = sized('EVENTS_FEED_SIZE', 1_000_000, 2_000);
/** The longest wait for the worker's deliveries (a stalled worker fails the run rather than hanging it). */
const DELIVERY_TIMEOUT_MS = SMALL ? 60_000 : 600_000;
const TABLES = ['networks', 'tags', 'subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies', 'daemons'];

const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const round = (x: number) => Math.round(x * 10) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const id = randomBytes(4).toString('hex');
  const database = `netinv_bench_events_${id}`;
  const config = loadConfig({ databaseUrl: serverUrl(database), redisPrefix: `bench:${id}:`, webhookAllowedNetworks: ['127.0.0.0/8'] });
  const logger = createLogger('silent');
  const services = await createServices(config, logger);
  await migrate(services.orm);
  services.rateLimiter = new AllowAllRateLimiter(services.redis);
  const server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  server.maxConnections = 10_000;
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const db = new Db(services.orm.em.fork());
  const stamp = new Date().toISOString();
  console.log(`netinventory events bench ${stamp}: ${os.cpus().length} CPUs, node ${process.version}`);
  const result: Record<string, unknown> = { stamp, machine: { cpus: os.cpus().length, node: process.version } };
  try {
    const call = async (method: string, path: string, body?: unknown, cookie?: string) => {
      const res = await fetch(`${base}${path}`, { method, headers: { 'Content-Type': 'application/json', ...(cookie ? { Cookie: cookie } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
      const json = (await res.json()) as { data: any };
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return { res, data: json.data };
    };
    const email = `events-${id}@example.test`;
    const password = 'plum harbor lantern';
    const reg = (await call('POST', '/api/auth/register', { email, password, organization_name: 'Events bench' })).data;
    const cookie = (await call('POST', '/api/auth/login', { email, password })).res.headers.get('set-cookie')!.split(';')[0]!;
    const networkId = reg.network_ids[0];

    // ---- 1. The outbox's cost on a write ---------------------------------------------------------
    {
      const subnet = (await call('POST', '/api/v1/subnets', { network_id: networkId, cidr: '10.0.0.0/16', name: 'lan' }, cookie)).data;
      await call('POST', '/api/v1/webhooks', { name: 'bench', url: 'https://example.com/hook' }, cookie);
      const host = (await call('POST', '/api/v1/hosts', { network_id: networkId, name: 'h' }, cookie)).data;
      const body = (n: number) => ({
        id: host.id, name: `h${n}`, hidden: false, tags: [],
        ip_addresses: Array.from({ length: 10 }, (_, i) => ({ subnet_id: subnet.id, ip_address: `10.0.${n % 250}.${i + 1}` })),
        ports: Array.from({ length: 20 }, (_, i) => ({ number: 1000 + (n % 2) * 100 + i, protocol: 'Tcp' })),
        services: Array.from({ length: 20 }, (_, i) => ({ id: randomUUID(), name: `svc${i}-${n}`, service_definition: 'Custom', bindings: [] })),
      });
      const put = async (n: number) => {
        const started = performance.now();
        await call('PUT', `/api/v1/hosts/${host.id}`, body(n), cookie);
        return performance.now() - started;
      };
      const triggers = async (on: boolean) => {
        for (const t of TABLES) for (const trig of ['events_insert', 'events_update', 'events_delete']) await db.query(`alter table ${t} ${on ? 'enable' : 'disable'} trigger ${trig}`);
      };
      for (let n = 0; n < 10; n++) await put(n); // warm-up
      const withEvents: number[] = [];
      const without: number[] = [];
      // Events made so far (in the outbox or sequenced already: one snapshot, so a sequencing between two counts is not missed).
      const eventsMade = async () => Number((await db.one<{ n: string }>('select (select count(*) from event_outbox) + (select count(*) from events) as n'))!.n);
      const made = { with: 0, without: 0 };
      let n = 10;
      for (let r = 0; r < ROUNDS; r += 10) {
        await triggers(true);
        let before = await eventsMade();
        for (let i = 0; i < 10; i++) withEvents.push(await put(n++));
        made.with += (await eventsMade()) - before;
        await triggers(false);
        before = await eventsMade();
        for (let i = 0; i < 10; i++) without.push(await put(n++));
        made.without += (await eventsMade()) - before;
      }
      await triggers(true);
      // The baseline is the same write without its events; the measured one makes them.
      mustAgree('PUTs with the event triggers made events, without them none', made.with > 0 && made.without === 0, JSON.stringify(made));
      result.put_host_50_children = {
        rounds: ROUNDS,
        with_events_and_webhook_ms: { p50: round(pct(withEvents, 50)), p99: round(pct(withEvents, 99)) },
        without_event_triggers_ms: { p50: round(pct(without, 50)), p99: round(pct(without, 99)) },
        overhead_p50_percent: round((pct(withEvents, 50) / pct(without, 50) - 1) * 100),
        overhead_p99_percent: round((pct(withEvents, 99) / pct(without, 99) - 1) * 100),
      };
      console.log('PUT host (50 children)', JSON.stringify(result.put_host_50_children));
      await db.query('select events_sequence(1000000)');
      await db.query('delete from webhooks'); // measure 2 has its own endpoints
      await db.query(`insert into webhook_dispatch_cursor (singleton, last_event_id) values (true, (select coalesce(max(id), 0) from events))
                      on conflict (singleton) do update set last_event_id = excluded.last_event_id`);
    }

    // ---- 2. Deliveries per second to 10 endpoints --------------------------------------------------
    {
      let received = 0;
      const receiver = createServer((req, res) => {
        req.resume();
        req.on('end', () => { received += 1; res.writeHead(204).end(); });
      });
      receiver.maxConnections = 10_000;
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const expected = DELIVERY_EVENTS * ENDPOINTS;
      const waitFor = async (count: number) => {
        const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
        while (received < count && performance.now() < deadline) await sleep(5);
        mustAgree('every delivery arrived', received >= count, `${received} of ${count} within ${DELIVERY_TIMEOUT_MS / 1000} s`);
      };
      // Baseline: the same POSTs (same body size, same agent settings, 50 at a time) straight from Node.
      const agent = new Agent({ keepAlive: true, maxSockets: 50 });
      const payload = JSON.stringify({ type: 'tag.created', timestamp: new Date().toISOString(), data: { padding: 'x'.repeat(700) } });
      const rawStarted = performance.now();
      let next = 0;
      await Promise.all(Array.from({ length: 50 }, async () => {
        while (next < expected) {
          next += 1;
          await new Promise<void>((resolve, reject) => {
            const req = request(hookUrl, { method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } }, (res) => { res.resume(); res.on('end', resolve); });
            req.on('error', reject);
            req.end(payload);
          });
        }
      }));
      const rawSeconds = (performance.now() - rawStarted) / 1000;
      agent.destroy();
      mustAgree('the raw POSTs all arrived', received === expected, `${received} of ${expected}`);
      received = 0;

      for (let i = 0; i < ENDPOINTS; i++) await call('POST', '/api/v1/webhooks', { name: `endpoint ${i}`, url: hookUrl, event_types: ['tag.created'] }, cookie);
      // The worker first (ready and idle), then the events: dispatch, queue and delivery are what is timed.
      // The worker process as `npm start` runs it (its own core, as in production).
      await buildBundles();
      const worker = spawn(process.execPath, [...(process.env.EVENTS_WORKER_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=tmp/prof'] : []), bundlePath('worker')], {
        env: { ...process.env, DATABASE_URL: config.databaseUrl, REDIS_PREFIX: config.redisPrefix, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      const workerExited = new Promise((r) => worker.on('exit', r));
      // Ready once it has delivered a ping.
      const ping = (await call('POST', '/api/v1/webhooks', { name: 'ping', url: hookUrl, event_types: ['webhook.ping'] }, cookie)).data;
      await call('POST', `/api/v1/webhooks/${ping.id}/test`, undefined, cookie);
      await waitFor(1);
      await call('DELETE', `/api/v1/webhooks/${ping.id}`, undefined, cookie);
      received = 0;
      const values = Array.from({ length: DELIVERY_EVENTS }, (_, i) => `(gen_random_uuid(), '${reg.organization_id}', 'bench-${i}', 'Blue')`).join(', ');
      await db.query(`insert into tags (id, organization_id, name, color) values ${values}`);
      const started = performance.now();
      await db.query('select events_sequence(1000000)'); // its NOTIFY wakes the dispatcher
      await waitFor(expected);
      const seconds = (performance.now() - started) / 1000;
      mustAgree('one delivery per event and endpoint, as many as the raw POSTs', received === expected, `${received} delivered, ${expected} expected`);
      worker.kill('SIGTERM');
      await workerExited;
      receiver.closeAllConnections();
      receiver.close();
      result.webhook_deliveries = {
        endpoints: ENDPOINTS, deliveries: expected,
        per_second: Math.round(expected / seconds), seconds: round(seconds),
        raw_posts_per_second: Math.round(expected / rawSeconds),
        ratio_to_raw: Math.round((expected / seconds) / (expected / rawSeconds) * 100) / 100,
      };
      console.log('webhook deliveries', JSON.stringify(result.webhook_deliveries));
    }

    // ---- 3. SSE commit-to-client latency --------------------------------------------------------------
    // A credential opens at most STREAMS_PER_CREDENTIAL streams (src/modules/events/streamLimit.ts):
    // the subscribers are spread over as many sessions of the Owner as that takes.
    const sessions: string[] = [];
    while (sessions.length * STREAMS_PER_CREDENTIAL < SUBSCRIBERS) {
      sessions.push((await call('POST', '/api/auth/login', { email, password })).res.headers.get('set-cookie')!.split(';')[0]!);
    }
    const streamLatency = async (subscribers: number, events: number) => {
      const arrivals = new Map<string, number[]>(); // tag name → arrival times
      const controllers: AbortController[] = [];
      let ready = 0;
      await Promise.all(Array.from({ length: subscribers }, async (_, k) => {
        const controller = new AbortController();
        controllers.push(controller);
        const res = await fetch(`${base}/api/v1/events/stream?types=tag.created`, { headers: { Cookie: sessions[Math.floor(k / STREAMS_PER_CREDENTIAL)]! }, signal: controller.signal });
        if (res.status !== 200) throw new Error(`event stream ${k + 1} of ${subscribers}: ${res.status} ${(await res.text()).slice(0, 300)}`);
        ready += 1;
        void (async () => {
          let buffer = '';
          const decoder = new TextDecoder();
          try {
            for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
              const now = performance.now();
              buffer += decoder.decode(chunk, { stream: true });
              let end: number;
              while ((end = buffer.indexOf('\n\n')) >= 0) {
                const block = buffer.slice(0, end);
                buffer = buffer.slice(end + 2);
                const m = /"name":"(sse-[^"]+)"/.exec(block);
                if (m) arrivals.get(m[1]!)?.push(now);
              }
            }
          } catch { /* aborted */ }
        })();
      }));
      while (ready < subscribers) await sleep(10);
      await sleep(500); // every stream caught up and live
      const latencies: number[] = [];
      let missing = 0;
      for (let i = 0; i < events; i++) {
        const name = `sse-${subscribers}-${i}`;
        arrivals.set(name, []);
        await call('POST', '/api/v1/tags', { name, color: 'Blue' }, cookie);
        const committed = performance.now();
        const deadline = committed + 5000;
        while (arrivals.get(name)!.length < subscribers && performance.now() < deadline) await sleep(2);
        const got = arrivals.get(name)!;
        latencies.push(...got.map((t) => Math.max(0, t - committed)), ...Array(subscribers - got.length).fill(5000));
        missing += subscribers - got.length;
        await sleep(20);
      }
      for (const c of controllers) c.abort();
      await sleep(200);
      mustAgree(`every one of ${subscribers} SSE subscribers got every event within 5 s`, missing === 0, `${missing} of ${subscribers * events} arrivals missing`);
      return { subscribers, events, p50_ms: round(pct(latencies, 50)), p99_ms: round(pct(latencies, 99)), max_ms: round(Math.max(...latencies)) };
    };
    result.sse_latency = { one: await streamLatency(1, SSE_EVENTS), many: await streamLatency(SUBSCRIBERS, SSE_EVENTS) };
    console.log('SSE latency', JSON.stringify(result.sse_latency));

    // ---- 4. Feed read throughput over a large feed ----------------------------------------------
    {
      await db.query('select events_sequence(1000000)');
      await db.query(
        `insert into events (id, type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, changes, data)
         select nextval('events_id_seq'), 'host.updated', now(), ?::uuid, ?::uuid, 'host', gen_random_uuid(), 'system', null, gen_random_uuid(),
                jsonb_build_object('name', jsonb_build_array('old-' || g, 'new-' || g)),
                jsonb_build_object('id', gen_random_uuid(), 'name', 'new-' || g, 'hostname', 'h' || g || '.lan', 'hidden', false, 'tags', '[]'::jsonb,
                                   'created_at', now(), 'updated_at', now(), 'network_id', ?::text, 'organization_id', ?::text)
         from generate_series(1, ?::int) g`,
        [reg.organization_id, networkId, networkId, reg.organization_id, FEED_SIZE],
      );
      await db.query('analyze events');
      const total = Number((await db.one<{ n: string }>('select count(*) as n from events'))!.n);
      let after = '0';
      let read = 0;
      let apiIdSum = 0n; // the events read, by their ids (the API's and the raw SQL's must be the same)
      const apiStarted = performance.now();
      for (;;) {
        const res = await fetch(`${base}/api/v1/events?after=${after}&limit=1000`, { headers: { Cookie: cookie } });
        const json = (await res.json()) as { data: Array<{ id: string }>; meta: { cursor: { next: string; has_more: boolean } } };
        read += json.data.length;
        for (const e of json.data) apiIdSum += BigInt(e.id);
        after = json.meta.cursor.next;
        if (!json.meta.cursor.has_more) break;
      }
      const apiSeconds = (performance.now() - apiStarted) / 1000;
      let rawAfter = '0';
      let rawRead = 0;
      let rawIdSum = 0n;
      const rawStarted = performance.now();
      for (;;) {
        const rows = await db.query<{ id: string }>(
          `select * from events e where e.id > ?::bigint and e.organization_id = ? order by e.id limit 1000`, [rawAfter, reg.organization_id],
        );
        if (!rows.length) break;
        rawRead += rows.length;
        for (const r of rows) rawIdSum += BigInt(r.id);
        rawAfter = String(rows[rows.length - 1]!.id);
        JSON.stringify(rows);
      }
      const rawSeconds = (performance.now() - rawStarted) / 1000;
      mustAgree('the API\'s feed and the raw SQL read the same events', read === rawRead && apiIdSum === rawIdSum && read >= FEED_SIZE, `${read} read by the API, ${rawRead} by the raw SQL`);
      result.feed_read = {
        events_in_table: total, events_read: read,
        per_second: Math.round(read / apiSeconds), seconds: round(apiSeconds),
        raw_sql_per_second: Math.round(rawRead / rawSeconds), raw_seconds: round(rawSeconds),
        ratio_to_raw: Math.round((read / apiSeconds) / (rawRead / rawSeconds) * 100) / 100,
      };
      console.log('feed read', JSON.stringify(result.feed_read));
    }

    const file = resultsFile(`events-${stamp.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
    console.log(`wrote ${file.pathname}`);
  } finally {
    server.closeAllConnections();
    server.close();
    const keys = await services.redis.keys(`${config.redisPrefix}*`).catch(() => [] as string[]);
    if (keys.length) await services.redis.del(...keys).catch(() => undefined);
    await closeServices(services);
    await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
  }
}

await main();
process.exit(0);
