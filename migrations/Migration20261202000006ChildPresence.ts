import { Migration } from '@mikro-orm/migrations';
import { DIGEST_TABLES } from './Migration20261125000022CaptureByArguments.js';
import { HISTORY_TABLES } from './Migration20261202000002ProvenanceIsNoChange.js';

/**
 * Whether an address, a port or a service is there, as hosts already know
 * (src/modules/discovery/presence.ts): `offline_at`, set when a completed scan that covered it did
 * not see it, cleared when one sees it again. Nothing discovery found is deleted any more: a stopped
 * service or a closed port is offline, and every change of presence is a history state and an event.
 *
 * An unchanged child found again moves its last_seen_at (presence reads it), which is volatile: no
 * state, no event. The children's digest triggers forgot their host's report digest on every update,
 * so that write would have made every later rescan a full one; their update trigger is now per row
 * and fires only when something other than last_seen_at / last_discovery_id changed (the condition
 * the hosts' trigger already has). Inserts and deletes keep their statement-level triggers.
 */
const CHILDREN = ['ip_addresses', 'ports', 'services'];

export class Migration20261202000006ChildPresence extends Migration {
  override up(): void {
    for (const table of CHILDREN) {
      for (const t of [table, `${table}_history`]) this.addSql(`alter table ${t} add column offline_at timestamptz`);
    }
    for (const [table, volatile] of HISTORY_TABLES.filter(([t]) => CHILDREN.includes(t))) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
    this.addSql(`
create or replace function digest_triggers(tbl text, kind text, mode text default null) returns void language plpgsql as $$
declare
  per_row boolean := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
  changed text;
begin
  -- Only what is not volatile: the same condition as the history triggers, generated from the columns.
  select format('row(%s) is distinct from row(%s)', string_agg('old.' || quote_ident(attname), ', ' order by attnum), string_agg('new.' || quote_ident(attname), ', ' order by attnum))
    into changed from pg_attribute
   where attrelid = tbl::regclass and attnum > 0 and not attisdropped and attname <> all (array['last_seen_at', 'last_discovery_id']);
  if kind = 'hosts' then
    execute format('drop trigger if exists discovery_digests_forget on %I', tbl);
    execute format('create trigger discovery_digests_forget after update on %I for each row when (%s) execute function discovery_digests_forget(%L)', tbl, changed, kind);
    return;
  end if;
  execute format('drop trigger if exists discovery_digests_forget_insert on %I', tbl);
  execute format('drop trigger if exists discovery_digests_forget_update on %I', tbl);
  execute format('drop trigger if exists discovery_digests_forget_delete on %I', tbl);
  execute format('create trigger discovery_digests_forget_update after update on %I for each row when (%s) execute function discovery_digests_forget_row(%L)', tbl, changed, kind);
  if per_row then
    execute format('create trigger discovery_digests_forget_insert after insert on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_delete after delete on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
  else
    execute format('create trigger discovery_digests_forget_insert after insert on %I referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_delete after delete on %I referencing old table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
  end if;
end $$`);
    for (const [table, kind] of DIGEST_TABLES) this.addSql(`select digest_triggers('${table}', '${kind}')`);
    for (const table of CHILDREN) {
      this.addSql(`create index ${table}_offline_at_idx on ${table} (organization_id, network_id, offline_at) where offline_at is not null`);
    }
  }
}
