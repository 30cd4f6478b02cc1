import { Migration } from '@mikro-orm/migrations';

/**
 * What our agent's SNMP, name and MAC-vendor discovery tells (issue 25.1), stored:
 * - hosts: where `hostname` came from (`hostname_source`: ptr | mdns | snmp), and Scanopy's SNMP
 *   system fields (`sys_descr`, `sys_object_id`, `sys_location`, `sys_contact`, `chassis_id`);
 * - ip_addresses: the MAC's vendor (OUI database) and whether the MAC is locally administered;
 * - interfaces: the MACs the switch's forwarding table learned on the port (`fdb_macs`).
 *
 * These tables have history twins. The statement trigger that records inserted rows copied them by
 * position (`n.*, null` for valid_to), which a column added after valid_to breaks: it now names the
 * columns. The triggers generated from a table's column list (history WHEN conditions, the hosts'
 * digest trigger) are made again for the new columns. Interfaces now come from discovery reports,
 * so any other write of one forgets its host's report digest, like the other children.
 */
const ADDED: Array<[table: string, columns: string]> = [
  ['hosts', `hostname_source varchar(10), sys_descr text, sys_object_id text, sys_location text, sys_contact text, chassis_id text`],
  ['ip_addresses', `mac_vendor text, mac_random boolean`],
  ['interfaces', `fdb_macs jsonb not null default '[]'`],
];

export class Migration20261125000020SnmpDiscovery extends Migration {
  override up(): void {
    this.addSql(`
create or replace function history_record_inserts() returns trigger language plpgsql as $$
declare
  cols text := (select string_agg(quote_ident(attname), ', ' order by attnum) from pg_attribute
                where attrelid = TG_RELID and attnum > 0 and not attisdropped);
begin
  execute format('insert into %I (%s) select %s from history_new_rows n', TG_TABLE_NAME || '_history', cols, cols);
  return null;
end $$`);
    for (const [table, columns] of ADDED) {
      const add = columns.split(', ').map((c) => `add column ${c}`).join(', ');
      this.addSql(`alter table ${table} ${add}`);
      this.addSql(`alter table ${table}_history ${add}`);
      this.addSql(`select history_triggers('${table}', array['last_seen_at', 'last_discovery_id']::text[])`);
    }
    this.addSql(`drop trigger discovery_digests_forget on hosts`);
    this.addSql(`
do $$
declare
  changed text;
begin
  select format('row(%s) is distinct from row(%s)', string_agg('old.' || quote_ident(attname), ', ' order by attnum), string_agg('new.' || quote_ident(attname), ', ' order by attnum))
    into changed from pg_attribute
   where attrelid = 'hosts'::regclass and attnum > 0 and not attisdropped and attname <> all (array['last_seen_at', 'last_discovery_id']);
  execute format('create trigger discovery_digests_forget after update on hosts for each row when (%s) execute function discovery_digests_forget()', changed);
end $$`);
    this.addSql(`create trigger discovery_digests_forget_insert after insert on interfaces referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget()`);
    this.addSql(`create trigger discovery_digests_forget_update after update on interfaces referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget()`);
    this.addSql(`create trigger discovery_digests_forget_delete after delete on interfaces referencing old table as digest_changed_rows for each statement execute function discovery_digests_forget()`);
  }
}
