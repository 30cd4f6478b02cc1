// Concurrent writers and the event wake-ups (issue 26.2; part of `npm run bench`, or
// `node --import tsx bench/concurrentIngest.ts`). Migration 13's outbox trigger NOTIFYed in every
// writing transaction, and PostgreSQL takes one database-wide lock at the commit of a transaction
// that NOTIFYed; migration 21 dropped that NOTIFY (the writer's process wakes the sequencer after
// its commit, the hub polls the outbox for the rest). Measured here, both in the same run on one
// database: the trigger is switched between the two bodies (eventsCaptureSql) pass by pass.
//
// A pass: BENCH_CONCURRENT_HOSTS (600) new daemon host reports (2 addresses, 5 ports, 3 services
// each) through ingestHost(), one host per transaction (a daemon's POST /api/v1/hosts/discovery
// minus HTTP), by 1 or 4 concurrent writers on the API process's own pool and hub, while one SSE
// stream of the tenant is open on that API. Passes alternate notify/no-notify × 1/4 writers,
// BENCH_CONCURRENT_REPEAT (5) rounds. Reported per configuration: hosts/s (median and spread of
// the rounds), COMMIT round-trip p50/p99 and whole-transaction p50/p99 (all rounds pooled), and
// write → stream delivery p50/p99 (commit resolved in the writer → the host.created frame read).
// In the notify mode a LISTEN netinv_outbox connection wakes the hub's sequencer, as migration 13's
// hub did; in the new mode the hub is woken by the writes' commits and its outbox poll.
// Then the same alternation with small writes, BENCH_CONCURRENT_SMALL_WRITES (800) transactions of one
// tag update each (history + outbox row), where the commit (its WAL flush) is most of the work:
// transactions/s and COMMIT p50/p99, 1 and 4 writers, NOTIFY per write or none.
// Then BENCH_CONCURRENT_RAW_WRITES (50) tags inserted by raw SQL on another connection (nothing wakes
// the hub but its poll, EVENT_OUTBOX_POLL_MS): write → stream p50/p99, and the poll probe's round trip.
// Checked (full and small runs): in both modes every host's event reached the stream (the baseline
// mode and the measured one deliver the same events), and every raw write's too.
// BENCH_SMALL=1 (bench/small.ts): 30 hosts a pass, one round, 20 small writes, 5 raw writes; results in
// a temporary directory.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { eventsCaptureSql } from '../migrations/Migration20261125000021OutboxWakeups.js';
import { Db } from '../src/core/db.js';
import { ingestHost, type IngestContext } from '../src/modules/discovery/ingest.js';
import { daemonHostRequestBody } from '../src/modules/discovery/schemas.js';
import type { DaemonHostRequest } from '../src/modules/discovery/vocabulary.js';
import { ensureServices } from '../scripts/services.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../test/daemons/world.js';
import { hostReport, postSubnet } from '../test/discovery/reports.js';
import { openStream } from '../test/scale/support.js';
import { prepareTemplate, startTestApp } from '../test/support/app.js';
import { createNetwork, registerTenant } from '../test/support/world.js';
import { mustAgree, resultsFile, sized, SMALL } from './small.js';

// Each setting: its variable when set, else the small run's value under BENCH_SMALL=1, else the full run's.
const HOSTS = sized('BENCH_CONCURRENT_HOSTS', 600, 30);
const REPEAT = sized('BENCH_CONCURRENT_REPEAT', 5, 1);
const RAW_WRITES = sized('BENCH_CONCURRENT_RAW_WRITES', 50, 5);
const SMALL_WRITES = sized('BENCH_CONCURRENT_SMALL_WRITES', 800, 20);
const WRITERS = [1, 4];
const MODES = ['notify_per_write', 'no_notify'] as const;
type Mode = (typeof MODES)[number];

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const pct = (values: number[], p: number) => {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const log = (line: string) => console.log(`[concurrent-ingest] ${line}`);

// COMMIT round trips, timed on the wire (every pg.Client of this process) while a pass runs.
let commitSamples: number[] | undefined;
type PgQuery = (this: pg.Client, ...args: unknown[]) => unknown;
const originalQuery = pg.Client.prototype.query as unknown as PgQuery;
(pg.Client.prototype as unknown as { query: PgQuery }).query = function timedQuery(this: pg.Client, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === 'string' ? first : (first as { text?: string } | null)?.text ?? '';
  const result = originalQuery.apply(this, args);
  const samples = commitSamples;
  if (samples && /^\s*commit\b/i.test(text) && result && typeof (result as Promise<unknown>).then === 'function') {
    const t0 = performance.now();
    (result as Promise<unknown>).then(() => samples.push(performance.now() - t0), () => undefined);
  }
  return result;
};

const hex2 = (n: number) => (n & 255).toString(16).padStart(2, '0').toUpperCase();
const ipOf = (n: number) => `10.30.${(n >> 8) & 255}.${n & 255}`;
const macOf = (n: number) => `02:00:00:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`;

async function main() {
  await ensureServices();
  await prepareTemplate();
  const app = await startTestApp({ logLevel: 'silent' });
  const admin = new pg.Client({ connectionString: app.databaseUrl });
  await admin.connect();
  const stamp = new Date().toISOString();
  log(`${stamp}: ${os.cpus().length} CPUs, node ${process.version}, ${HOSTS} hosts a pass, ${REPEAT} rounds`);
  try {
    const t = await registerTenant(app.url, 'concurrent-ingest');
    const networkId = await createNetwork(app.url, t.owner, 'Concurrent ingest');
    const daemon = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, networkId)).key);
    await registerDaemon(daemon, networkId);
    const subnet = await postSubnet(daemon, networkId, '10.30.0.0/16');
    const sessionId = randomUUID();
    await admin.query(
      `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, started_at)
       values ($1, $2, $3, $4, $5::jsonb, 'Scanning', now())`,
      [sessionId, t.orgId, networkId, daemon.id, JSON.stringify({ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' })],
    );
    const ctx: Required<IngestContext> = { organizationId: t.orgId, networkId, daemonId: daemon.id, discoveryId: sessionId };
    let nextHost = 0;
    const reports = (count: number) => Array.from({ length: count }, () => {
      const i = nextHost++;
      const a = 256 + 2 * i;
      const report = hostReport(daemon as never, networkId, {
        hostname: `ci-${i}.bench.lan`,
        interfaces: [
          { subnet_id: subnet.id as string, ip_address: ipOf(a), mac_address: macOf(a), name: 'eth0' },
          { subnet_id: subnet.id as string, ip_address: ipOf(a + 1), mac_address: macOf(a + 1), name: 'eth1' },
        ],
        ports: [{ number: 22 }, { number: 80 }, { number: 443 }, { number: 5432 }, { number: 161, protocol: 'Udp' }],
        services: [{ name: 'OpenSSH', ports: [22] }, { name: 'Nginx', ports: [80, 443] }, { name: 'PostgreSQL', ports: [5432, 161] }],
      });
      const { value, error } = daemonHostRequestBody.validate(report, { abortEarly: true, convert: true });
      if (error) throw error;
      return value as DaemonHostRequest;
    });

    // The API's hub, as it runs with a stream open; the stream records when each host arrives.
    const hub = app.services.events;
    const stream = await openStream(app.url, t.owner, `?types=host.created&network_id=${networkId}`);
    const arrivals = new Map<string, number>();
    let seen = 0;
    const arrivalsTimer = setInterval(() => {
      for (; seen < stream.events.length; seen++) arrivals.set(stream.events[seen]!.data.data.name, performance.now());
    }, 1);
    // The old wake-up: LISTEN netinv_outbox → sequence (only what the notify mode makes arrives).
    const listener = new pg.Client({ connectionString: app.databaseUrl });
    await listener.connect();
    listener.on('notification', () => hub.sequence());
    await listener.query('listen netinv_outbox');

    const outboxEmpty = async () => {
      for (let i = 0; i < 600; i++) {
        const { rows } = await admin.query(`select (select seq from event_outbox order by seq limit 1) is null as empty`);
        if (rows[0].empty) return;
        await sleep(50);
      }
      throw new Error('the outbox did not drain');
    };

    const pass = async (mode: Mode, writers: number) => {
      await admin.query(eventsCaptureSql({ notifyEachWrite: mode === 'notify_per_write' }));
      await outboxEmpty();
      const batch = reports(HOSTS);
      const committedAt = new Map<string, number>();
      const txMs: number[] = [];
      const commits: number[] = [];
      commitSamples = commits;
      let next = 0;
      const started = performance.now();
      await Promise.all(Array.from({ length: writers }, async () => {
        while (next < batch.length) {
          const report = batch[next++]!;
          const t0 = performance.now();
          await new Db(app.services.orm.em.fork()).transaction((tx) => ingestHost(tx, ctx, report));
          const t1 = performance.now();
          txMs.push(t1 - t0);
          committedAt.set(report.host.name as string, t1);
        }
      }));
      const seconds = (performance.now() - started) / 1000;
      commitSamples = undefined;
      // Every host's event in the stream (generous bound), then the latencies.
      const deadline = performance.now() + 30_000;
      while ([...committedAt.keys()].some((n) => !arrivals.has(n)) && performance.now() < deadline) await sleep(20);
      const delivery = [...committedAt].map(([n, t]) => (arrivals.has(n) ? arrivals.get(n)! - t : Number.NaN));
      const missing = delivery.filter(Number.isNaN).length;
      mustAgree(`${mode}, ${writers} writer(s): every host's event reached the stream`, missing === 0, `${missing} of ${HOSTS} missing after 30 s`);
      return { mode, writers, hosts: HOSTS, hostsPerSecond: HOSTS / seconds, commits, txMs, delivery: delivery.filter((x) => !Number.isNaN(x)), missing };
    };

    // Small writes: one tag update per transaction (a new state: history row, outbox row), each writer
    // its own tag (no row lock between writers), so the commit is most of the work.
    const tagIds = await Promise.all(Array.from({ length: 4 }, async (_, k) => {
      const id = randomUUID();
      await admin.query(`insert into tags (id, organization_id, name, color, lineage_id) values ($2, $1, $3, 'Blue', $2)`, [t.orgId, id, `small-${k}`]);
      return id;
    }));
    let smallCounter = 0;
    const smallPass = async (mode: Mode, writers: number) => {
      await admin.query(eventsCaptureSql({ notifyEachWrite: mode === 'notify_per_write' }));
      await outboxEmpty();
      const commits: number[] = [];
      commitSamples = commits;
      let left = SMALL_WRITES;
      const started = performance.now();
      await Promise.all(Array.from({ length: writers }, async (_, k) => {
        while (left-- > 0) {
          await new Db(app.services.orm.em.fork()).transaction((tx) => tx.query(`update tags set description = ? where id = ?`, [`d${smallCounter++}`, tagIds[k]!]));
        }
      }));
      const seconds = (performance.now() - started) / 1000;
      commitSamples = undefined;
      return { mode, writers, perSecond: SMALL_WRITES / seconds, commits };
    };
    const small = new Map<string, Array<Awaited<ReturnType<typeof smallPass>>>>();
    for (let r = 0; r < REPEAT; r++) {
      for (const writers of WRITERS) {
        for (const mode of r % 2 ? [...MODES].reverse() : MODES) {
          const res = await smallPass(mode, writers);
          const key = `${mode}_w${writers}`;
          small.set(key, [...(small.get(key) ?? []), res]);
          log(`round ${r + 1} small writes ${key}: ${Math.round(res.perSecond)} transactions/s, commit p50 ${round(pct(res.commits, 50), 2)} ms p99 ${round(pct(res.commits, 99), 2)} ms`);
        }
      }
    }
    const smallSummary = Object.fromEntries([...small].map(([key, runs]) => {
      const rates = runs.map((x) => x.perSecond).sort((a, b) => a - b);
      const commits = runs.flatMap((x) => x.commits);
      return [key, {
        transactions_per_second: { median: round(pct(rates, 50)), min: round(rates[0]!), max: round(rates[rates.length - 1]!), runs: rates.map((x) => round(x)) },
        commit_ms: { p50: round(pct(commits, 50), 2), p99: round(pct(commits, 99), 2), samples: commits.length },
      }];
    }));

    type PassResult = Awaited<ReturnType<typeof pass>>;
    const results = new Map<string, PassResult[]>();
    await pass('no_notify', 4); // warm-up: plans cached, pools filled (not reported)
    for (let r = 0; r < REPEAT; r++) {
      for (const writers of WRITERS) {
        // Alternate the order of the modes round by round, so neither always runs second.
        for (const mode of r % 2 ? [...MODES].reverse() : MODES) {
          const res = await pass(mode, writers);
          const key = `${mode}_w${writers}`;
          results.set(key, [...(results.get(key) ?? []), res]);
          log(`round ${r + 1} ${key}: ${Math.round(res.hostsPerSecond)} hosts/s, commit p50 ${round(pct(res.commits, 50), 2)} ms p99 ${round(pct(res.commits, 99), 2)} ms, delivery p50 ${round(pct(res.delivery, 50))} ms p99 ${round(pct(res.delivery, 99))} ms${res.missing ? `, ${res.missing} MISSING` : ''}`);
        }
      }
    }
    // Writes no process announces (raw SQL on another connection): found by the hub's outbox poll.
    // The tag stream reads them; the probe's own cost is timed on its own.
    const tagStream = await openStream(app.url, t.owner, '?types=tag.created');
    await sleep(300);
    const rawLatencies: number[] = [];
    let rawMissing = 0;
    for (let i = 0; i < RAW_WRITES; i++) {
      const name = `raw-${i}`;
      await admin.query(`insert into tags (id, organization_id, name, color, lineage_id) values ($2, $1, $3, 'Blue', $2)`, [t.orgId, randomUUID(), name]);
      const written = performance.now();
      const deadline = written + 10_000;
      while (!tagStream.events.some((e) => e.data.data.name === name) && performance.now() < deadline) await sleep(1);
      if (!tagStream.events.some((e) => e.data.data.name === name)) rawMissing += 1;
      rawLatencies.push(performance.now() - written);
      await sleep(37 + Math.random() * 60); // not in step with the poll
    }
    tagStream.close();
    mustAgree('every raw SQL write reached the stream (the hub\'s poll)', rawMissing === 0, `${rawMissing} of ${RAW_WRITES} missing after 10 s`);
    const probes = SMALL ? 100 : 1000;
    const probeStarted = performance.now();
    for (let i = 0; i < probes; i++) await admin.query(`select (select seq from event_outbox order by seq limit 1) is not null as pending`);
    const probeMs = (performance.now() - probeStarted) / probes;
    const unannounced = {
      writes: RAW_WRITES, delivery_ms: { p50: round(pct(rawLatencies, 50)), p99: round(pct(rawLatencies, 99)), max: round(Math.max(...rawLatencies)) },
      poll_probe_round_trip_ms: round(probeMs, 3),
    };
    log(`raw SQL writes → stream: ${JSON.stringify(unannounced)}`);
    clearInterval(arrivalsTimer);
    stream.close();
    await listener.end();

    const summary: Record<string, unknown> = {};
    for (const [key, runs] of results) {
      const rates = runs.map((x) => x.hostsPerSecond).sort((a, b) => a - b);
      const all = (f: (x: PassResult) => number[]) => runs.flatMap(f);
      summary[key] = {
        hosts_per_second: { median: round(pct(rates, 50)), min: round(rates[0]!), max: round(rates[rates.length - 1]!), runs: rates.map((x) => round(x)) },
        commit_ms: { p50: round(pct(all((x) => x.commits), 50), 2), p99: round(pct(all((x) => x.commits), 99), 2), samples: all((x) => x.commits).length },
        transaction_ms: { p50: round(pct(all((x) => x.txMs), 50), 2), p99: round(pct(all((x) => x.txMs), 99), 2) },
        delivery_ms: { p50: round(pct(all((x) => x.delivery), 50)), p99: round(pct(all((x) => x.delivery), 99)), max: round(Math.max(...all((x) => x.delivery))) },
        events_missing: runs.reduce((n, x) => n + x.missing, 0),
      };
    }
    const ratio = (w: number) => {
      const a = (summary[`no_notify_w${w}`] as { hosts_per_second: { median: number } }).hosts_per_second.median;
      const b = (summary[`notify_per_write_w${w}`] as { hosts_per_second: { median: number } }).hosts_per_second.median;
      return round(a / b, 2);
    };
    const result = {
      stamp, machine: { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg().map((x) => round(x, 2)) },
      hosts_per_pass: HOSTS, rounds: REPEAT, outbox_poll_ms: Number(process.env.EVENT_OUTBOX_POLL_MS ?? 100),
      summary,
      unannounced_writes: unannounced,
      small_writes: { per_pass: SMALL_WRITES, summary: smallSummary },
      ratio_no_notify_to_notify: { writers_1: ratio(1), writers_4: ratio(4) },
    };
    console.log(JSON.stringify(result, null, 1));
    const file = resultsFile(`concurrent-ingest-${stamp.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
    log(`wrote ${file.pathname}`);
  } finally {
    await admin.end().catch(() => undefined);
    await app.close();
  }
}

await main();
process.exit(0);
