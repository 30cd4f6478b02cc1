import { Migration } from '@mikro-orm/migrations';
import { HISTORY_TABLES } from './Migration20261202000002ProvenanceIsNoChange.js';

/**
 * A volatile-only change (last_seen_at, last_discovery_id, a discovery's provenance, a daemon's
 * heartbeat) writes the live row only. It used to be copied into the open state of the history as
 * well, one more row version for every touched row, each in every index of the history table: an
 * unchanged rescan, which moves last_seen_at of a host and of its addresses, ports and services,
 * wrote everything twice. The open state's volatile columns are now read from the live row (the
 * open state is the live row: src/core/historyTable.ts, statesOf), and the state takes them from the
 * row when it closes (an update that makes a new state, or a delete).
 */
export class Migration20261202135900VolatileOnLiveRow extends Migration {
  override up(): void {
    this.addSql(`
create or replace function history_record() returns trigger language plpgsql as $$
declare
  hist text := TG_ARGV[0];
  cols text := TG_ARGV[1];
  -- The volatile columns: the open state takes them from the live row when it closes.
  vols text := (select string_agg(quote_ident(c), ', ') from unnest(TG_ARGV[2:]) c);
  closing text;
begin
  if cols is null then
    raise exception 'history_record on %: needs the history table and its columns as arguments (history_triggers)', TG_RELID::regclass;
  end if;
  if TG_OP = 'UPDATE' and to_jsonb(NEW) = to_jsonb(OLD) then
    return null; -- an update that changes no column at all leaves the history alone
  end if;
  closing := case when vols is null then '' else format(', (%s) = (select %s from (select ($4).*) o)', vols, vols) end;
  if TG_OP in ('UPDATE', 'DELETE') then
    if OLD.valid_from = now() and TG_OP = 'DELETE' then
      -- Created (or changed) and deleted in one transaction: that state never was visible.
      execute format('delete from %s where id = $1 and organization_id = $2 and valid_to is null', hist) using OLD.id, OLD.organization_id;
      return null;
    elsif TG_OP = 'DELETE' then
      execute format('update %s set valid_to = greatest(now(), valid_from + interval ''1 microsecond'')%s where id = $1 and organization_id = $2 and valid_to is null', hist, closing)
        using OLD.id, OLD.organization_id, null::timestamptz, OLD;
      return null;
    elsif NEW.valid_from = OLD.valid_from then
      -- Same state (see history_stamp): replace the open state in place.
      execute format('delete from %s where id = $1 and organization_id = $2 and valid_to is null', hist) using OLD.id, OLD.organization_id;
    else
      execute format('update %s set valid_to = $3%s where id = $1 and organization_id = $2 and valid_to is null', hist, closing)
        using OLD.id, OLD.organization_id, NEW.valid_from, OLD;
    end if;
  end if;
  execute format('insert into %s (%s) select %s from (select ($1).*) n', hist, cols, cols) using NEW;
  return null;
end $$`);
    this.addSql(`
create or replace function history_triggers(tbl text, volatile_cols text[], mode text default null) returns void language plpgsql as $$
declare
  vol_args text := coalesce((select string_agg(quote_literal(c), ', ') from unnest(volatile_cols) c), '');
  hist text := format('%I', tbl || '_history');
  cols text;
  changed text;
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
  execute format('create trigger history_record_update after update on %I for each row when (%s) execute function history_record(%L, %L%s)', tbl, changed, hist, cols, case when vol_args = '' then '' else ', ' || vol_args end);
  execute format('create trigger history_record_delete after delete on %I for each row execute function history_record(%L, %L%s)', tbl, hist, cols, case when vol_args = '' then '' else ', ' || vol_args end);
end $$`);
    for (const [table, volatile] of HISTORY_TABLES.filter(([, v]) => v.length)) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
    this.addSql('drop function history_record_volatile()');
    this.addSql('drop function history_record_volatile_row()');
  }
}
