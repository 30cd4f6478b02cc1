import { Migration } from '@mikro-orm/migrations';

/**
 * The last report applied in full to each discovered host: its digest and the answer it got.
 * A report whose digest is there changes nothing when ingested again (the same report against the
 * same stored state gives the same outcome), so ingestion only moves the host's last_seen_at and
 * answers the stored answer (src/modules/discovery/hostIngest.ts, "unchanged hosts").
 *
 * That holds only while the stored state is the one the report met, so every write that could
 * change the outcome forgets the digest, whoever makes it (API, worker, SQL):
 * - a non-volatile change of the host (row trigger, same WHEN condition as its history);
 * - any insert, update or delete of its IP addresses, ports, services and bindings (statement
 *   triggers, one DELETE per statement);
 * - an address of another host that is the same IP on the same subnet or the same MAC (that host
 *   could now be the match).
 * Deleting the host deletes its row (foreign key). Subnets need nothing: every report's addresses
 * are checked against their subnets at each ingest, known host or not.
 */
export class Migration20261122000006DiscoveryDigests extends Migration {
  override up(): void {
    this.addSql(`
create table host_discovery_digests (
  host_id uuid primary key references hosts(id) on delete cascade,
  network_id uuid not null,
  digest text not null,
  -- The host as answered to the daemon (HostResponse JSON), kept as text: it is only ever passed on.
  -- lz4: ~5 KB per host are compressed at every full ingest; pglz took 4x the CPU (0.14 ms per host).
  response text compression lz4 not null
)`);
    this.addSql(`create index host_discovery_digests_network_idx on host_discovery_digests (network_id, digest)`);

    this.addSql(`
create function discovery_digests_forget() returns trigger language plpgsql as $$
begin
  if TG_TABLE_NAME = 'hosts' then
    delete from host_discovery_digests where host_id = NEW.id;
    return null;
  elsif TG_TABLE_NAME = 'bindings' then
    delete from host_discovery_digests d using digest_changed_rows c, services s where s.id = c.service_id and d.host_id = s.host_id;
  else
    delete from host_discovery_digests d using digest_changed_rows c where d.host_id = c.host_id;
  end if;
  if TG_TABLE_NAME = 'ip_addresses' and TG_OP <> 'DELETE' then
    delete from host_discovery_digests where host_id in (
      select i.host_id from digest_changed_rows c join ip_addresses i on i.subnet_id = c.subnet_id and i.ip_address = c.ip_address where i.host_id <> c.host_id
      union
      select i.host_id from digest_changed_rows c join ip_addresses i on i.network_id = c.network_id and i.mac_address = c.mac_address where i.host_id <> c.host_id);
  end if;
  return null;
end $$`);
    for (const table of ['ip_addresses', 'ports', 'services', 'bindings']) {
      this.addSql(`create trigger discovery_digests_forget_insert after insert on ${table} referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget()`);
      this.addSql(`create trigger discovery_digests_forget_update after update on ${table} referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget()`);
      this.addSql(`create trigger discovery_digests_forget_delete after delete on ${table} referencing old table as digest_changed_rows for each statement execute function discovery_digests_forget()`);
    }
    // The host itself: only what is not volatile (the same condition its history triggers use; like
    // theirs, it is generated from the columns hosts has now, so a migration adding a column to hosts
    // creates this trigger again).
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
  }
}
