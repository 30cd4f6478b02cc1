import { Migration } from '@mikro-orm/migrations';

/**
 * History written per statement where it can be, so that ingesting a batch of discovered hosts costs
 * one history statement per table instead of one dynamic EXECUTE per row (bench/README.md, ingestion):
 * - INSERT: a statement-level trigger copies the statement's new rows (a transition table) into
 *   `<table>_history` with one INSERT … SELECT;
 * - UPDATE: the row triggers (stamp + record) fire only when a column other than the volatile ones
 *   (last_seen_at, …) changed, a condition PostgreSQL evaluates without calling PL/pgSQL; a
 *   volatile-only change is copied into the open history state by one statement-level UPDATE, in
 *   place (no new state: decisions §5);
 * - DELETE: unchanged (row-level).
 * `history_triggers(table, volatile columns)` (re)creates them; the column list of the WHEN condition
 * is read from the catalog, so a migration that adds a column to such a table calls it again.
 */
const HISTORY_TABLES: Array<[string, string[]]> = [
  ['networks', []],
  ['tags', []],
  ['subnets', []],
  ['dependencies', []],
  ['hosts', ['last_seen_at', 'last_discovery_id']],
  ['ip_addresses', ['last_seen_at', 'last_discovery_id']],
  ['ports', ['last_seen_at', 'last_discovery_id']],
  ['services', ['last_seen_at', 'last_discovery_id']],
  ['bindings', ['last_seen_at', 'last_discovery_id']],
  ['interfaces', ['last_seen_at', 'last_discovery_id']],
  ['daemons', ['last_seen', 'consecutive_failures']],
];

export class Migration20261122000005HistoryBySet extends Migration {
  override up(): void {
    // The new rows of one INSERT statement, as their first state (columns of x_history: x's, then valid_to).
    this.addSql(`
create function history_record_inserts() returns trigger language plpgsql as $$
begin
  execute format('insert into %I select n.*, null::timestamptz from history_new_rows n', TG_TABLE_NAME || '_history');
  return null;
end $$`);
    // The volatile columns (trigger arguments) of the rows of one UPDATE statement, copied into their
    // open states where they differ. Rows whose other columns changed already have a fresh open state
    // (row trigger, which runs first) and are skipped by the IS DISTINCT FROM.
    this.addSql(`
create function history_record_volatile() returns trigger language plpgsql as $$
declare
  cols text[] := TG_ARGV::text[];
begin
  execute format(
    'update %I h set (%s) = row(%s) from history_new_rows n where h.id = n.id and h.valid_to is null and row(%s) is distinct from row(%s)',
    TG_TABLE_NAME || '_history',
    (select string_agg(quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('n.' || quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('h.' || quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('n.' || quote_ident(c), ', ') from unnest(cols) c));
  return null;
end $$`);
    this.addSql(`
create function history_triggers(tbl text, volatile_cols text[]) returns void language plpgsql as $$
declare
  args text := coalesce((select string_agg(quote_literal(c), ', ') from unnest(volatile_cols) c), '');
  changed text;
begin
  select format('row(%s) is distinct from row(%s)',
                string_agg('old.' || quote_ident(attname), ', ' order by attnum),
                string_agg('new.' || quote_ident(attname), ', ' order by attnum))
    into changed
    from pg_attribute
   where attrelid = tbl::regclass and attnum > 0 and not attisdropped and attname <> all (volatile_cols);
  execute format('drop trigger if exists history_stamp on %I', tbl);
  execute format('drop trigger if exists history_record on %I', tbl);
  execute format('drop trigger if exists history_stamp_update on %I', tbl);
  execute format('drop trigger if exists history_record_insert on %I', tbl);
  execute format('drop trigger if exists history_record_update on %I', tbl);
  execute format('drop trigger if exists history_record_delete on %I', tbl);
  execute format('drop trigger if exists history_record_volatile on %I', tbl);
  execute format('create trigger history_stamp before insert on %I for each row execute function history_stamp(%s)', tbl, args);
  execute format('create trigger history_stamp_update before update on %I for each row when (%s) execute function history_stamp(%s)', tbl, changed, args);
  execute format('create trigger history_record_insert after insert on %I referencing new table as history_new_rows for each statement execute function history_record_inserts()', tbl);
  execute format('create trigger history_record_update after update on %I for each row when (%s) execute function history_record()', tbl, changed);
  execute format('create trigger history_record_delete after delete on %I for each row execute function history_record()', tbl);
  if cardinality(volatile_cols) > 0 then
    execute format('create trigger history_record_volatile after update on %I referencing new table as history_new_rows for each statement execute function history_record_volatile(%s)', tbl, args);
  end if;
end $$`);
    // Tables enabled from now on get these triggers too.
    this.addSql(`
create or replace function history_enable(tbl text, scope_col text, volatile_cols text[] default '{}') returns void language plpgsql as $$
declare
  hist text := tbl || '_history';
begin
  execute format('create table %I (like %I including defaults)', hist, tbl);
  execute format('alter table %I add column valid_to timestamptz, add primary key (id, valid_from)', hist);
  execute format('alter table %I add constraint %I check (valid_to is null or valid_to > valid_from)', hist, hist || '_range_ck');
  execute format('create index %I on %I using gist (%I, tstzrange(valid_from, valid_to))', hist || '_asof_idx', hist, scope_col);
  execute format('create unique index %I on %I (id) where valid_to is null', hist || '_open_idx', hist);
  perform history_triggers(tbl, volatile_cols);
end $$`);
    for (const [table, volatile] of HISTORY_TABLES) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
  }
}
