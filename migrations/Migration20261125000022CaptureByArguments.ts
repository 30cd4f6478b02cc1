import { Migration } from '@mikro-orm/migrations';

/**
 * Capture that survives partitioning (issue 27.2). Every trigger that records history, events or
 * forgets a discovery digest is now TOLD what it writes by its trigger arguments, fixed when the
 * trigger is (re)created, instead of deriving it at run time:
 * - `TG_TABLE_NAME || '_history'` named the twin: on a partition (or a Citus shard) the trigger's
 *   table is `hosts_p3` / `hosts_102008`, whose `_history` does not exist;
 * - since migration 20 the INSERT trigger also read pg_attribute on every statement to list the
 *   columns: `history_triggers` now reads them once and passes them as an argument.
 * No trigger function reads TG_TABLE_NAME any more (test/core/tenantSchemaLint.spec.ts).
 *
 * Statement-level triggers with transition tables (one INSERT … SELECT per statement, migration 5)
 * cannot exist on a Citus distributed table. The installers (`history_triggers`, `events_triggers`,
 * `digest_triggers`) therefore choose per table: statement-level on a plain table, row-level on a
 * partitioned one (`mode` forces either, for bench/capture.ts). Row-level capture writes only rows of
 * the row's own organization (local work on its shard). bench/README.md, "Capture", has the cost of
 * each on a 5,000-port batch.
 */
export const HISTORY_TABLES: Array<[string, string[]]> = [
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
  ['topology_pins', []],
];

export const EVENT_TABLES: Array<[table: string, entity: string]> = [
  ['networks', 'network'], ['tags', 'tag'], ['subnets', 'subnet'], ['hosts', 'host'], ['ip_addresses', 'ip_address'],
  ['ports', 'port'], ['services', 'service'], ['bindings', 'binding'], ['interfaces', 'interface'],
  ['dependencies', 'dependency'], ['daemons', 'daemon'],
];

/** Children whose writes forget their host's report digest, and how the host is found from a row. */
export const DIGEST_TABLES: Array<[table: string, kind: string]> = [
  ['ip_addresses', 'ip_addresses'], ['ports', 'host_child'], ['services', 'host_child'], ['bindings', 'bindings'], ['interfaces', 'host_child'],
];

export class Migration20261125000022CaptureByArguments extends Migration {
  override up(): void {
    // Row-level history: TG_ARGV[0] the twin (quoted), TG_ARGV[1] the columns to copy (quoted, comma-separated).
    // Every statement names organization_id so that it touches one partition / shard.
    this.addSql(`
create or replace function history_record() returns trigger language plpgsql as $$
declare
  hist text := TG_ARGV[0];
  cols text := TG_ARGV[1];
begin
  if cols is null then
    raise exception 'history_record on %: needs the history table and its columns as arguments (history_triggers)', TG_RELID::regclass;
  end if;
  if TG_OP = 'UPDATE' and to_jsonb(NEW) = to_jsonb(OLD) then
    return null; -- an update that changes no column at all leaves the history alone
  end if;
  if TG_OP in ('UPDATE', 'DELETE') then
    if OLD.valid_from = now() and TG_OP = 'DELETE' then
      -- Created (or changed) and deleted in one transaction: that state never was visible.
      execute format('delete from %s where id = $1 and organization_id = $2 and valid_to is null', hist) using OLD.id, OLD.organization_id;
      return null;
    elsif TG_OP = 'DELETE' then
      execute format('update %s set valid_to = greatest(now(), valid_from + interval ''1 microsecond'') where id = $1 and organization_id = $2 and valid_to is null', hist)
        using OLD.id, OLD.organization_id;
      return null;
    elsif NEW.valid_from = OLD.valid_from then
      -- Same state (see history_stamp): replace the open state in place.
      execute format('delete from %s where id = $1 and organization_id = $2 and valid_to is null', hist) using OLD.id, OLD.organization_id;
    else
      execute format('update %s set valid_to = $3 where id = $1 and organization_id = $2 and valid_to is null', hist)
        using OLD.id, OLD.organization_id, NEW.valid_from;
    end if;
  end if;
  execute format('insert into %s (%s) select %s from (select ($1).*) n', hist, cols, cols) using NEW;
  return null;
end $$`);
    // Statement-level INSERT (plain tables): the same arguments, one INSERT … SELECT per statement.
    this.addSql(`
create or replace function history_record_inserts() returns trigger language plpgsql as $$
begin
  execute format('insert into %s (%s) select %s from history_new_rows n', TG_ARGV[0], TG_ARGV[1], TG_ARGV[1]);
  return null;
end $$`);
    // Volatile columns copied into the open state: TG_ARGV[0] the twin, the rest the volatile columns.
    this.addSql(`
create or replace function history_record_volatile() returns trigger language plpgsql as $$
declare
  cols text[] := TG_ARGV[1:];
begin
  execute format(
    'update %s h set (%s) = row(%s) from history_new_rows n where h.id = n.id and h.organization_id = n.organization_id and h.valid_to is null and row(%s) is distinct from row(%s)',
    TG_ARGV[0],
    (select string_agg(quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('n.' || quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('h.' || quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('n.' || quote_ident(c), ', ') from unnest(cols) c));
  return null;
end $$`);
    // The same per row (partitioned tables), fired only when a volatile column moved.
    this.addSql(`
create or replace function history_record_volatile_row() returns trigger language plpgsql as $$
declare
  cols text := (select string_agg(quote_ident(c), ', ') from unnest(TG_ARGV[1:]) c);
begin
  execute format('update %s h set (%s) = (select %s from (select ($1).*) n) where h.id = $2 and h.organization_id = $3 and h.valid_to is null', TG_ARGV[0], cols, cols)
    using NEW, NEW.id, NEW.organization_id;
  return null;
end $$`);
    this.addSql(`drop function history_triggers(text, text[])`);
    this.addSql(`
create or replace function history_triggers(tbl text, volatile_cols text[], mode text default null) returns void language plpgsql as $$
declare
  vol_args text := coalesce((select string_agg(quote_literal(c), ', ') from unnest(volatile_cols) c), '');
  hist text := format('%I', tbl || '_history');
  cols text;
  changed text;
  volatile_changed text;
  per_row boolean;
begin
  per_row := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
  select string_agg(quote_ident(attname), ', ' order by attnum) into cols
    from pg_attribute where attrelid = tbl::regclass and attnum > 0 and not attisdropped;
  select format('row(%s) is distinct from row(%s)',
                string_agg('old.' || quote_ident(attname), ', ' order by attnum),
                string_agg('new.' || quote_ident(attname), ', ' order by attnum))
    into changed
    from pg_attribute
   where attrelid = tbl::regclass and attnum > 0 and not attisdropped and attname <> all (volatile_cols);
  select format('row(%s) is distinct from row(%s)',
                string_agg('old.' || quote_ident(c), ', '), string_agg('new.' || quote_ident(c), ', '))
    into volatile_changed from unnest(volatile_cols) c;
  execute format('drop trigger if exists history_stamp on %I', tbl);
  execute format('drop trigger if exists history_record on %I', tbl);
  execute format('drop trigger if exists history_stamp_update on %I', tbl);
  execute format('drop trigger if exists history_record_insert on %I', tbl);
  execute format('drop trigger if exists history_record_update on %I', tbl);
  execute format('drop trigger if exists history_record_delete on %I', tbl);
  execute format('drop trigger if exists history_record_volatile on %I', tbl);
  execute format('create trigger history_stamp before insert on %I for each row execute function history_stamp(%s)', tbl, vol_args);
  execute format('create trigger history_stamp_update before update on %I for each row when (%s) execute function history_stamp(%s)', tbl, changed, vol_args);
  if per_row then
    execute format('create trigger history_record_insert after insert on %I for each row execute function history_record(%L, %L)', tbl, hist, cols);
  else
    execute format('create trigger history_record_insert after insert on %I referencing new table as history_new_rows for each statement execute function history_record_inserts(%L, %L)', tbl, hist, cols);
  end if;
  execute format('create trigger history_record_update after update on %I for each row when (%s) execute function history_record(%L, %L)', tbl, changed, hist, cols);
  execute format('create trigger history_record_delete after delete on %I for each row execute function history_record(%L, %L)', tbl, hist, cols);
  if cardinality(volatile_cols) > 0 and per_row then
    execute format('create trigger history_record_volatile after update on %I for each row when (%s) execute function history_record_volatile_row(%L, %s)', tbl, volatile_changed, hist, vol_args);
  elsif cardinality(volatile_cols) > 0 then
    execute format('create trigger history_record_volatile after update on %I referencing new table as history_new_rows for each statement execute function history_record_volatile(%L, %s)', tbl, hist, vol_args);
  end if;
end $$`);

    // Events, one outbox row per new state, per row (partitioned tables). TG_ARGV[0]: the entity.
    // Same rows as the statement-level events_capture (migration 13), without its NOTIFY (migration 21).
    this.addSql(`
create or replace function events_capture_row() returns trigger language plpgsql as $$
declare
  actor_type text := coalesce(nullif(current_setting('netinv.actor_type', true), ''), 'system');
  actor_id uuid := nullif(current_setting('netinv.actor_id', true), '')::uuid;
  batch uuid := nullif(current_setting('netinv.batch_id', true), '')::uuid;
begin
  if TG_OP = 'UPDATE' and NEW.valid_from = OLD.valid_from then
    return null;
  end if;
  if batch is null then
    batch := gen_random_uuid();
    perform set_config('netinv.batch_id', batch::text, true);
  end if;
  if TG_OP = 'INSERT' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    values ('c', TG_ARGV[0], NEW.id, NEW.valid_from, actor_type, actor_id, batch);
  elsif TG_OP = 'DELETE' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    values ('d', TG_ARGV[0], OLD.id, OLD.valid_from, actor_type, actor_id, batch);
  else
    insert into event_outbox (op, entity, entity_id, state_from, prev_from, actor_type, actor_id, batch_id)
    values ('u', TG_ARGV[0], NEW.id, NEW.valid_from, OLD.valid_from, actor_type, actor_id, batch);
  end if;
  return null;
end $$`);
    this.addSql(`
create or replace function events_triggers(tbl text, entity text, mode text default null) returns void language plpgsql as $$
declare
  per_row boolean := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
begin
  execute format('drop trigger if exists events_insert on %I', tbl);
  execute format('drop trigger if exists events_update on %I', tbl);
  execute format('drop trigger if exists events_delete on %I', tbl);
  if per_row then
    execute format('create trigger events_insert after insert on %I for each row execute function events_capture_row(%L)', tbl, entity);
    execute format('create trigger events_update after update on %I for each row when (old.valid_from is distinct from new.valid_from) execute function events_capture_row(%L)', tbl, entity);
    execute format('create trigger events_delete after delete on %I for each row execute function events_capture_row(%L)', tbl, entity);
  else
    execute format('create trigger events_insert after insert on %I referencing new table as events_new for each statement execute function events_capture(%L)', tbl, entity);
    execute format('create trigger events_update after update on %I referencing old table as events_old new table as events_new for each statement execute function events_capture(%L)', tbl, entity);
    execute format('create trigger events_delete after delete on %I referencing old table as events_old for each statement execute function events_capture(%L)', tbl, entity);
  end if;
end $$`);

    // Report digests (migration 6): TG_ARGV[0] says how the host is found: 'hosts' (the row is the
    // host), 'host_child' (host_id), 'bindings' (through the service), 'ip_addresses' (host_id, and
    // other hosts holding the same IP in the subnet or the same MAC in the network).
    this.addSql(`
create or replace function discovery_digests_forget() returns trigger language plpgsql as $$
declare
  kind text := TG_ARGV[0];
begin
  if kind = 'hosts' then
    delete from host_discovery_digests where host_id = NEW.id;
    return null;
  elsif kind = 'bindings' then
    delete from host_discovery_digests d using digest_changed_rows c, services s
     where s.id = c.service_id and s.organization_id = c.organization_id and d.host_id = s.host_id;
  else
    delete from host_discovery_digests d using digest_changed_rows c where d.host_id = c.host_id;
  end if;
  if kind = 'ip_addresses' and TG_OP <> 'DELETE' then
    delete from host_discovery_digests where host_id in (
      select i.host_id from digest_changed_rows c join ip_addresses i on i.subnet_id = c.subnet_id and i.ip_address = c.ip_address and i.organization_id = c.organization_id where i.host_id <> c.host_id
      union
      select i.host_id from digest_changed_rows c join ip_addresses i on i.network_id = c.network_id and i.mac_address = c.mac_address and i.organization_id = c.organization_id where i.host_id <> c.host_id);
  end if;
  return null;
end $$`);
    this.addSql(`
create or replace function discovery_digests_forget_row() returns trigger language plpgsql as $$
declare
  kind text := TG_ARGV[0];
  r record;
begin
  if TG_OP = 'DELETE' then r := OLD; else r := NEW; end if;
  if kind = 'bindings' then
    delete from host_discovery_digests d using services s
     where s.id = r.service_id and s.organization_id = r.organization_id and d.host_id = s.host_id;
  else
    delete from host_discovery_digests where host_id = r.host_id;
  end if;
  if kind = 'ip_addresses' and TG_OP <> 'DELETE' then
    delete from host_discovery_digests where host_id in (
      select i.host_id from ip_addresses i where i.organization_id = r.organization_id and i.subnet_id = r.subnet_id and i.ip_address = r.ip_address and i.host_id <> r.host_id
      union
      select i.host_id from ip_addresses i where i.organization_id = r.organization_id and i.network_id = r.network_id and i.mac_address = r.mac_address and i.host_id <> r.host_id);
  end if;
  return null;
end $$`);
    this.addSql(`
create or replace function digest_triggers(tbl text, kind text, mode text default null) returns void language plpgsql as $$
declare
  per_row boolean := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
  changed text;
begin
  if kind = 'hosts' then
    -- Only what is not volatile: the same condition as the history triggers, generated from the columns.
    select format('row(%s) is distinct from row(%s)', string_agg('old.' || quote_ident(attname), ', ' order by attnum), string_agg('new.' || quote_ident(attname), ', ' order by attnum))
      into changed from pg_attribute
     where attrelid = tbl::regclass and attnum > 0 and not attisdropped and attname <> all (array['last_seen_at', 'last_discovery_id']);
    execute format('drop trigger if exists discovery_digests_forget on %I', tbl);
    execute format('create trigger discovery_digests_forget after update on %I for each row when (%s) execute function discovery_digests_forget(%L)', tbl, changed, kind);
    return;
  end if;
  execute format('drop trigger if exists discovery_digests_forget_insert on %I', tbl);
  execute format('drop trigger if exists discovery_digests_forget_update on %I', tbl);
  execute format('drop trigger if exists discovery_digests_forget_delete on %I', tbl);
  if per_row then
    execute format('create trigger discovery_digests_forget_insert after insert on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_update after update on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_delete after delete on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
  else
    execute format('create trigger discovery_digests_forget_insert after insert on %I referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_update after update on %I referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_delete after delete on %I referencing old table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
  end if;
end $$`);

    // A deleted service or binding leaves every dependency that lists it: TG_ARGV the member kind and field.
    this.addSql(`
create or replace function dependency_members_forget() returns trigger language plpgsql as $$
declare
  kind text := TG_ARGV[0];
  field text := TG_ARGV[1];
begin
  update dependencies
     set members = jsonb_set(members, array[field], (members -> field) - OLD.id::text)
   where organization_id = OLD.organization_id and network_id = OLD.network_id and members ->> 'type' = kind and jsonb_exists(members -> field, OLD.id::text);
  return null;
end $$`);
    this.addSql(`
create or replace function dependency_members_triggers(tbl text, kind text, field text) returns void language plpgsql as $$
begin
  execute format('drop trigger if exists dependency_members_forget on %I', tbl);
  execute format('create trigger dependency_members_forget after delete on %I for each row execute function dependency_members_forget(%L, %L)', tbl, kind, field);
end $$`);

    for (const [table, volatile] of HISTORY_TABLES) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
    for (const [table, entity] of EVENT_TABLES) this.addSql(`select events_triggers('${table}', '${entity}')`);
    this.addSql(`select digest_triggers('hosts', 'hosts')`);
    for (const [table, kind] of DIGEST_TABLES) this.addSql(`select digest_triggers('${table}', '${kind}')`);
    this.addSql(`select dependency_members_triggers('services', 'Services', 'service_ids')`);
    this.addSql(`select dependency_members_triggers('bindings', 'Bindings', 'binding_ids')`);
  }
}
