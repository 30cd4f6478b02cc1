// Capture benchmark (issue 27.2): what the history / event / digest triggers cost on the write path,
// by how they are attached. `node --import tsx bench/capture.ts`
//
// On a database of its own (every migration applied, SCHEMA_VARIANT as set) with one organization,
// one network and BENCH_CAPTURE_HOSTS (1,000) hosts, each pass runs in a transaction that is rolled
// back (the tables stay the same size), alternating the modes round by round:
//   m20        migration 20's statement trigger, reading pg_attribute on every INSERT statement
//              to list the columns and deriving the twin from TG_TABLE_NAME (the baseline);
//   statement  statement triggers with transition tables, told the twin and the columns by their
//              arguments (migration 22, the plain schema's default);
//   row        row triggers doing only their row's organization's work (migration 22, the
//              partitioned schema's default: what a Citus distributed table allows).
// Workloads:
//   ports5000      one INSERT of 5,000 ports (5 per host): the discovery batch of the issue;
//   touch5000      one UPDATE of last_seen_at of those 5,000 ports (volatile: no new state);
//   change5000     one UPDATE of a tracked column of those 5,000 ports (a new state each);
//   hosts1x500     500 single-row INSERT statements of a host (the per-statement overhead).
// Prints medians and p90 per workload and mode, with ratios to m20 / statement, and writes
// bench/results/capture-<date>.json. Environment: BENCH_CAPTURE_HOSTS, BENCH_CAPTURE_ROUNDS (7), DATABASE_URL.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { createOrm } from '../src/database.js';
import { migrate } from '../src/core/db.js';
import { ensureServices } from '../scripts/services.js';

const HOSTS = Number(process.env.BENCH_CAPTURE_HOSTS ?? 1000);
const ROUNDS = Number(process.env.BENCH_CAPTURE_ROUNDS ?? 7);
const MODES = ['m20', 'statement', 'row'] as const;
type Mode = (typeof MODES)[number];

const { databaseUrl } = await ensureServices();
const url = new URL(databaseUrl);
const dbName = `netinv_bench_capture_${process.pid}`;
url.pathname = `/${dbName}`;
const admin = new pg.Client({ connectionString: new URL('/postgres', url).toString() });
await admin.connect();
await admin.query(`drop database if exists ${dbName}`);
const orm = await createOrm(url.toString(), 2);
await migrate(orm);
await orm.close(true);

const db = new pg.Client({ connectionString: url.toString(), options: '-c TimeZone=UTC -c jit=off' });
await db.connect();
const org = randomUUID();
const net = randomUUID();
await db.query(`insert into organizations (id, name) values ($1, 'bench')`, [org]);
await db.query(`insert into networks (id, organization_id, name) values ($1, $2, 'bench')`, [net, org]);
await db.query(
  `insert into hosts (id, organization_id, network_id, name) select gen_random_uuid(), $1, $2, 'h' || g from generate_series(1, $3) g`,
  [org, net, HOSTS],
);
const variant = (await db.query(`select relkind from pg_class where oid = 'ports'::regclass`)).rows[0].relkind === 'p' ? 'partitioned' : 'plain';

// Migration 20's INSERT trigger function, as it was, for the baseline.
await db.query(`
create or replace function history_record_inserts_m20() returns trigger language plpgsql as $$
declare
  cols text := (select string_agg(quote_ident(attname), ', ' order by attnum) from pg_attribute
                where attrelid = TG_RELID and attnum > 0 and not attisdropped);
begin
  execute format('insert into %I (%s) select %s from history_new_rows n', TG_TABLE_NAME || '_history', cols, cols);
  return null;
end $$`);

async function attach(mode: Mode): Promise<void> {
  const how = mode === 'row' ? 'row' : 'statement';
  for (const [table, entity, kind] of [['ports', 'port', 'host_child'], ['hosts', 'host', null]] as const) {
    await db.query(`select history_triggers($1, array['last_seen_at', 'last_discovery_id'], $2)`, [table, how]);
    await db.query(`select events_triggers($1, $2, $3)`, [table, entity, how]);
    if (kind) await db.query(`select digest_triggers($1, $2, $3)`, [table, kind, how]);
    if (mode === 'm20') {
      await db.query(`drop trigger history_record_insert on ${table}`);
      await db.query(`create trigger history_record_insert after insert on ${table} referencing new table as history_new_rows for each statement execute function history_record_inserts_m20()`);
    }
  }
}

const workloads: Record<string, () => Promise<void>> = {
  async ports5000() {
    await db.query(
      `insert into ports (id, organization_id, network_id, host_id, number, protocol, type)
       select gen_random_uuid(), $1, $2, h.id, 1000 + p, 'Tcp', 'Custom' from hosts h cross join generate_series(1, 5) p where h.organization_id = $1`,
      [org, net],
    );
  },
  async touch5000() {
    await db.query(`update ports set last_seen_at = now() where organization_id = $1`, [org]);
  },
  async change5000() {
    await db.query(`update ports set type = 'Changed' where organization_id = $1`, [org]);
  },
  async hosts1x500() {
    for (let i = 0; i < 500; i++) {
      await db.query(`insert into hosts (id, organization_id, network_id, name) values (gen_random_uuid(), $1, $2, 'single')`, [org, net]);
    }
  },
};
// touch/change need the ports to exist: inserted (and committed) once, outside the timings.
const PORTS_SETUP = workloads.ports5000!;

const samples: Record<string, Record<Mode, number[]>> = {};
for (const w of Object.keys(workloads)) samples[w] = { m20: [], statement: [], row: [] };

for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 ? [...MODES].reverse() : MODES) {
    await attach(mode);
    for (const [name, run] of Object.entries(workloads)) {
      await db.query('begin');
      if (name !== 'ports5000' && name !== 'hosts1x500') await PORTS_SETUP();
      const t0 = process.hrtime.bigint();
      await run();
      samples[name]![mode].push(Number(process.hrtime.bigint() - t0) / 1e6);
      await db.query('rollback');
    }
  }
  process.stdout.write('.');
}
process.stdout.write('\n');

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))]!;
};
const summary: Record<string, Record<string, unknown>> = {};
console.log(`schema: ${variant}, ${HOSTS} hosts, ${ROUNDS} rounds per mode (ms, median / p90)`);
console.log('| workload | m20 | statement | row | statement / m20 | row / statement |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const [name, byMode] of Object.entries(samples)) {
  const med = Object.fromEntries(MODES.map((m) => [m, q(byMode[m], 0.5)])) as Record<Mode, number>;
  const p90 = Object.fromEntries(MODES.map((m) => [m, q(byMode[m], 0.9)])) as Record<Mode, number>;
  summary[name] = { median: med, p90, statement_over_m20: med.statement / med.m20, row_over_statement: med.row / med.statement };
  console.log(`| ${name} | ${med.m20.toFixed(1)} / ${p90.m20.toFixed(1)} | ${med.statement.toFixed(1)} / ${p90.statement.toFixed(1)} | ${med.row.toFixed(1)} / ${p90.row.toFixed(1)} | ${(med.statement / med.m20).toFixed(2)} | ${(med.row / med.statement).toFixed(2)} |`);
}

await db.end();
await admin.query(`drop database if exists ${dbName}`);
await admin.end();
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const file = new URL(`./results/capture-${new Date().toISOString().replace(/[:.]/g, '-')}.json`, import.meta.url);
writeFileSync(file, JSON.stringify({ variant, hosts: HOSTS, rounds: ROUNDS, cpus: os.cpus().length, samples, summary }, null, 2));
console.log(`wrote ${file.pathname}`);
