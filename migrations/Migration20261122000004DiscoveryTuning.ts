import { Migration } from '@mikro-orm/migrations';

/**
 * What discovery ingestion needs (measured while building it):
 * - `last_discovery_id`, like `last_seen_at`, changes on every run that sees a host or child again;
 *   alone it must not make a new history state (decisions §5: a new state only when something changed);
 * - lineage lookups of a re-discovered address search the address history by (subnet, IP) and MAC;
 * - an address is on a host once per subnet (a user edit racing an ingest cannot duplicate it).
 */
export class Migration20261122000004DiscoveryTuning extends Migration {
  override up(): void {
    for (const table of ['hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces']) {
      this.addSql(`drop trigger history_stamp on ${table}`);
      this.addSql(`create trigger history_stamp before insert or update on ${table} for each row execute function history_stamp('last_seen_at', 'last_discovery_id')`);
    }
    // Owner/Admin "as of" lists filter by organization, not by network: index that too.
    for (const table of ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies', 'daemons']) {
      this.addSql(`create index ${table}_history_org_asof_idx on ${table}_history using gist (organization_id, tstzrange(valid_from, valid_to))`);
    }
    // The default order of lists is (created_at, id): with these, an "as of" page walks the history
    // in order and stops after `limit` matches instead of sorting every state valid at that instant.
    for (const table of ['hosts', 'subnets', 'dependencies', 'daemons']) {
      this.addSql(`create index ${table}_history_org_created_idx on ${table}_history (organization_id, created_at, id)`);
      this.addSql(`create index ${table}_history_network_created_idx on ${table}_history (network_id, created_at, id)`);
    }
    this.addSql(`create index ip_addresses_history_subnet_ip_idx on ip_addresses_history (subnet_id, ip_address)`);
    this.addSql(`create index ip_addresses_history_mac_idx on ip_addresses_history (network_id, mac_address) where mac_address is not null`);
    this.addSql(`alter table ip_addresses add constraint ip_addresses_host_subnet_ip_uq unique (host_id, subnet_id, ip_address) deferrable initially deferred`);
  }
}
