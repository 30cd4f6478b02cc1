// Ingest as the network grows, under statistics taken before the network had hosts
// (`node --import tsx bench/ingestGrowth.ts`; SCHEMA_VARIANT=partitioned for that schema).
//
// Found while benchmarking issue 26 (bench/scaleOut.ts, run A): a large first discovery slowed from
// 143 to 23 hosts/s as the network grew, and an ANALYZE in the middle made it fast again. With
// statistics taken before the network had rows, ingest's probes (newFacts in
// src/modules/discovery/hostIngest.ts) went through the GiST (organization_id | network_id, valid
// range) indexes and read every state of the network or organization each.
//
// One database cloned from the test template: a tenant, the network, a daemon, one /12 subnet and a
// Network discovery session, and another network of the organization with BACKGROUND address
// history rows (SQL). SEED hosts ingested, then every table ANALYZEd: the statistics of a network
// without hosts. Autovacuum never analyzes the history tables here, so they stay so (the worst case,
// the same every run; autovacuum analyzes once 10 % of a table changed, never a partitioned parent;
// it still vacuums, and analyzes the other tables). Then ROUNDS
// rounds of HOSTS new hosts (2 addresses with MACs, 5 ports, 3 services each) in batches of BATCH
// (DISCOVERY_SYNC_BATCH: one discovery-sync job, one transaction) through ingestHosts(), what the
// worker calls. Per round: hosts/s and each ingest statement's p50 and total (Db.prototype.query is
// wrapped; the test app's event hub runs too, its statements are listed but are not ingest's). At
// the end one more batch's newFacts is EXPLAIN ANALYZEd as sent, then again after an ANALYZE.
//
// INGEST_GROWTH_WITHOUT_FIX=1 drops the ANALYZE ingest runs when the planner has not seen a batch's
// new rows (src/modules/discovery/statistics.ts): the numbers before the fix, same script;
// INGEST_GROWTH_WITHOUT_FIX=live drops only its analyzes of hosts and host_discovery_digests (the
// unchanged-host lookup's tables, followed since). INGEST_GROWTH_AUTO_EXPLAIN=1 has the server log
// (auto_explain, nested statements too) the plans of touchUnchanged over 1 s and of the bindings
// upsert over 150 ms; a statement running over 1 s is also shown with the database's activity.
// Environment: INGEST_GROWTH_SEED (0), INGEST_GROWTH_BACKGROUND (200000), INGEST_GROWTH_HOSTS (2000),
// INGEST_GROWTH_ROUNDS (5), INGEST_GROWTH_BATCH (100), INGEST_GROWTH_EXPLAIN (1),
// INGEST_GROWTH_KEEP_DATABASE (0: 1 leaves the database, for a look at its plans; drop it after).
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { Db } from '../src/core/db.js';
import { ingestHosts, type IngestContext } from '../src/modules/discovery/ingest.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../test/daemons/world.js';
import { postSubnet } from '../test/discovery/reports.js';
import { benchHostReports, hex2, type AddressPlan } from './hostReports.js';
import { prepareTemplate, releaseTestDatabases, startTestApp } from '../test/support/app.js';
import { createNetwork, registerTenant } from '../test/support/world.js';

const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const SEED = env('INGEST_GROWTH_SEED', 0);
const BACKGROUND = env('INGEST_GROWTH_BACKGROUND', 200_000);
const HOSTS = env('INGEST_GROWTH_HOSTS', 2000);
const ROUNDS = env('INGEST_GROWTH_ROUNDS', 5);
const BATCH = env('INGEST_GROWTH_BATCH', 100);
const EXPLAIN = env('INGEST_GROWTH_EXPLAIN', 1) === 1;
// '1': no analyze by ingest at all; 'live': only not of hosts and host_discovery_digests (the second fix).
const WITHOUT_FIX = process.env.INGEST_GROWTH_WITHOUT_FIX === 'live' ? 'live' : env('INGEST_GROWTH_WITHOUT_FIX', 0) === 1;
const AUTO_EXPLAIN = env('INGEST_GROWTH_AUTO_EXPLAIN', 0) === 1;
const VARIANT = process.env.SCHEMA_VARIANT === 'partitioned' ? 'partitioned' : 'plain';

const started = performance.now();
const log = (line: string) => console.log(`[ingest-growth ${String(Math.round((performance.now() - started) / 1000)).padStart(4)}s] ${line}`);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const p50 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)]! : 0;
};

/** Ingest statements by what they do (the ones that matter here; the rest by their first words). */
function labelOf(sql: string): string {
  if (sql.includes('host_taken')) return 'newFacts';
  if (/^\s*with hit as/.test(sql)) return 'touchUnchanged';
  if (sql.includes('candidates as materialized')) return 'findHosts';
  if (sql.includes('pg_advisory_xact_lock')) return 'lockAndCheck';
  if (/^\s*analyze\b/.test(sql)) return 'analyze';
  if (/^\s*explain\b/.test(sql)) return 'estimate';
  const write = /^\s*(insert into|update|delete from) (\w+)/.exec(sql);
  if (write) return `${write[1]} ${write[2]}`;
  return sql.trim().replace(/\s+/g, ' ').slice(0, 40);
}

let timings = new Map<string, number[]>();
/** Set in main: logs the database's active statements (wait events, blocking pids) while `label` runs long. */
let watchSlow: ((label: string) => Promise<void>) | undefined;
const slowSightings: Array<Record<string, unknown>> = [];
/** Set to have the next newFacts statement EXPLAIN ANALYZEd first, in its own transaction (it only reads). */
let explainNext: ((plan: any) => void) | undefined;
const originalQuery = Db.prototype.query;
Db.prototype.query = async function timedQuery<T>(this: Db, sql: string, params: unknown[] = []): Promise<T[]> {
  const label = labelOf(sql);
  if (label === 'newFacts' && explainNext) {
    const [row] = await (originalQuery.call(this, `explain (analyze, format json) ${sql}`, params) as Promise<any[]>);
    explainNext(row['QUERY PLAN'][0]);
    explainNext = undefined;
  }
  if (label === 'analyze' && (WITHOUT_FIX === true || (WITHOUT_FIX === 'live' && /\b(hosts|host_discovery_digests)(_p\d+)?\s*$/.test(sql)))) return [];
  if (AUTO_EXPLAIN && (label === 'touchUnchanged' || label === 'insert into bindings')) {
    // The plans of these statements and of their triggers' statements, in the server's log, when slow.
    await originalQuery.call(this, `load 'auto_explain'`);
    await originalQuery.call(this, `select set_config('auto_explain.log_min_duration', ?, true), set_config('auto_explain.log_analyze', 'on', true), set_config('auto_explain.log_nested_statements', 'on', true)`, [label === 'touchUnchanged' ? '1000' : '150']);
  }
  const t0 = performance.now();
  // A statement still running after a second: what the server says it is doing (waiting on a lock, or not).
  const watch = setTimeout(() => void watchSlow?.(label).catch(() => undefined), 1000);
  const rows = await (originalQuery.call(this, sql, params) as Promise<T[]>).finally(() => clearTimeout(watch));
  let list = timings.get(label);
  if (!list) timings.set(label, (list = []));
  list.push(performance.now() - t0);
  return rows;
};

// Universally administered MACs (02:… would be locally administered: ingest ignores those MACs).
const ADDRESSES: AddressPlan = {
  ip: (n) => `10.${16 + ((n >> 16) & 15)}.${(n >> 8) & 255}.${n & 255}`,
  mac: (n) => `00:16:3e:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`,
  domain: 'growth.lan',
};
const reports = (daemon: { id: string }, networkId: string, subnetId: string, count: number, offset: number) =>
  benchHostReports(daemon, networkId, subnetId, count, offset, ADDRESSES);

/** The plan's nodes, one line each (relation, index, rows estimated/actual, loops). */
function planLines(node: any, depth = 0, out: string[] = []): string[] {
  const what = [node['Node Type'], node['Relation Name'] && `on ${node['Relation Name']}`, node['Index Name'] && `using ${node['Index Name']}`].filter(Boolean).join(' ');
  const removed = node['Rows Removed by Filter'] ? `, ${node['Rows Removed by Filter']} filtered` : '';
  // EXPLAIN gives rows, rows filtered and time per loop: the time here is all loops'.
  out.push(`${'  '.repeat(depth)}${what} (est ${node['Plan Rows']}, actual ${node['Actual Rows']} x${node['Actual Loops']}${removed}, ${round((node['Actual Total Time'] ?? 0) * (node['Actual Loops'] ?? 1), 2)} ms)`);
  for (const child of node.Plans ?? []) planLines(child, depth + 1, out);
  return out;
}

async function main() {
  await prepareTemplate();
  const app = await startTestApp({ logLevel: 'silent' });
  const admin = new pg.Client({ connectionString: app.databaseUrl });
  await admin.connect();
  const result: Record<string, unknown> = {
    variant: VARIANT, withoutFix: WITHOUT_FIX, seed: SEED, background: BACKGROUND, hostsPerRound: HOSTS, batch: BATCH, loadBefore: os.loadavg().map((l) => round(l, 2)),
  };
  try {
    watchSlow = async (label) => {
      const { rows } = await admin.query(
        `select pid, backend_type, state, wait_event_type, wait_event, pg_blocking_pids(pid) as blocked_by, round(extract(epoch from now() - query_start)::numeric, 1) as seconds, left(regexp_replace(query, '\\s+', ' ', 'g'), 80) as query
         from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`);
      slowSightings.push({ label, at: round((performance.now() - started) / 1000), activity: rows });
      log(`  ${label} running over 1 s:\n${rows.map((r) => `      ${JSON.stringify(r)}`).join('\n')}`);
    };
    const t = await registerTenant(app.url, 'growth');
    const networkId = await createNetwork(app.url, t.owner, 'Ingest growth');
    const daemon = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, networkId)).key);
    await registerDaemon(daemon, networkId);
    const subnet = await postSubnet(daemon, networkId, '10.16.0.0/12');
    const discoveryId = randomUUID();
    await admin.query(
      `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, started_at) values ($1, $2, $3, $4, $5::jsonb, 'Scanning', now())`,
      [discoveryId, t.orgId, networkId, daemon.id, JSON.stringify({ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' })],
    );
    const ctx: IngestContext = { organizationId: t.orgId, networkId, daemonId: daemon.id, discoveryId };
    const db = new Db(app.services.orm.em.fork(), { actor: { type: 'daemon', id: daemon.id } });
    // The rest of the organization: another network's address history, written in SQL (history
    // tables have no foreign keys). The statistics below then know that network and not this one.
    const background = await createNetwork(app.url, t.owner, 'Background');
    const t1 = performance.now();
    await admin.query(
      `insert into ip_addresses_history (id, host_id, subnet_id, ip_address, mac_address, name, position, organization_id, network_id, lineage_id, valid_from, valid_to)
       select gen_random_uuid(), host_id, $1, '10.64.0.0'::inet + n, $2 || lpad(to_hex(n >> 16 & 255), 2, '0') || ':' || lpad(to_hex(n >> 8 & 255), 2, '0') || ':' || lpad(to_hex(n & 255), 2, '0'),
              'eth' || n % 2, n % 2, $3, $4, gen_random_uuid(), now() - interval '30 days', case when n % 3 = 0 then now() - interval '1 day' end
       from (select n, md5('bg' || (n / 2))::uuid as host_id from generate_series(1, $5::int) n) s`,
      [randomUUID(), '00:1c:42:', t.orgId, background, BACKGROUND],
    );
    log(`${BACKGROUND} address history rows of another network in ${round((performance.now() - t1) / 1000)} s`);
    // No autoanalyze of the history tables (their partitions): their statistics stay those taken
    // below, whatever the timing. Vacuum still runs (the outbox and digests would bloat without it).
    const { rows: tables } = await admin.query<{ name: string }>(
      `select quote_ident(relname) as name from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r' and relname ~ '_history(_p[0-7])?$'`);
    for (const { name } of tables) await admin.query(`alter table ${name} set (autovacuum_analyze_threshold = 2000000000)`);

    let offset = 0;
    const ingest = async (count: number) => {
      for (let k = 0; k < count; k += BATCH) {
        const batch = reports(daemon, networkId, subnet.id as string, Math.min(BATCH, count - k), offset + k);
        const answers = await db.transaction((tx) => ingestHosts(tx, ctx, batch));
        const refused = answers.find((a) => !('answer' in a));
        if (refused) throw new Error(`a report was refused: ${String(refused)}`);
      }
      offset += count;
    };
    await ingest(SEED);
    await admin.query('analyze');
    log(`${VARIANT}${WITHOUT_FIX === 'live' ? ', without the fix for hosts and digests' : WITHOUT_FIX ? ', without the fix' : ''}: ${SEED} hosts seeded and analyzed; ${ROUNDS} rounds of ${HOSTS} hosts in batches of ${BATCH}`);

    const rounds = [];
    for (let r = 1; r <= ROUNDS; r += 1) {
      timings = new Map();
      const t0 = performance.now();
      await ingest(HOSTS);
      const seconds = (performance.now() - t0) / 1000;
      const statements = Object.fromEntries([...timings].map(([label, ms]) => [label, { calls: ms.length, p50Ms: round(p50(ms), 2), maxMs: round(Math.max(...ms), 1), totalMs: Math.round(ms.reduce((a, b) => a + b, 0)) }]));
      rounds.push({ round: r, hostsBefore: SEED + (r - 1) * HOSTS, hostsPerSecond: round(HOSTS / seconds), statements });
      log(`  round ${r} (network of ${SEED + (r - 1) * HOSTS} hosts): ${round(HOSTS / seconds)} hosts/s; newFacts p50 ${round(p50(timings.get('newFacts') ?? []), 2)} ms, findHosts p50 ${round(p50(timings.get('findHosts') ?? []), 2)} ms`);
    }
    result.rounds = rounds;
    result.slowSightings = slowSightings;
    result.loadAfter = os.loadavg().map((l) => round(l, 2));
    result.firstToLast = round(rounds.at(-1)!.hostsPerSecond / rounds[0]!.hostsPerSecond, 2);

    if (EXPLAIN) {
      // One more batch of new hosts, its newFacts explained as sent; then the same after ANALYZE.
      const explained = async (label: string) => {
        let plan: any;
        explainNext = (p) => (plan = p);
        await ingest(BATCH);
        log(`  newFacts of a batch of ${BATCH} new hosts, ${label}: ${round(plan['Execution Time'], 2)} ms\n${planLines(plan.Plan).map((l) => `      ${l}`).join('\n')}`);
        const jit = plan.JIT ? { functions: plan.JIT.Functions, ms: round(plan.JIT.Timing.Total, 2) } : null;
        if (jit) log(`    JIT: ${jit.functions} functions, ${jit.ms} ms`);
        return { executionMs: round(plan['Execution Time'], 2), jit, plan: planLines(plan.Plan) };
      };
      result.newFactsStale = await explained('stale statistics');
      await admin.query('analyze');
      result.newFactsAnalyzed = await explained('after ANALYZE');
    }
  } finally {
    if (process.env.INGEST_GROWTH_KEEP_DATABASE === '1') {
      log(`kept ${app.databaseUrl} (drop it when done)`);
      process.exit(0);
    }
    watchSlow = undefined;
    await admin.end();
    await app.close();
    await releaseTestDatabases();
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  const file = new URL(`./results/ingest-growth-${VARIANT}${WITHOUT_FIX === 'live' ? '-without-live-fix' : WITHOUT_FIX ? '-without-fix' : ''}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`, import.meta.url);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  log(`written ${file.pathname}`);
}

await main();
process.exit(0);
