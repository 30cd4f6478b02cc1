import { Migration } from '@mikro-orm/migrations';

/**
 * Where a host's name came from (issue 38.4), so discovery may name a host it named and never one a
 * person named: `name_source` is what our agent said (hostname, certificate, title, service,
 * address), null for a name a person gave or that a Scanopy daemon sent (those are never replaced).
 * A person's write of another name sets it back to null (src/modules/hosts/service.ts). Hosts that
 * discovery named after one of their services or their address before this column are marked so.
 * The history twin has the column (inserted rows are copied by name); a change of it alone is not a
 * new state (the history triggers compare the columns they were made with).
 */
export class Migration20261201000001HostNameSource extends Migration {
  override up(): void {
    this.addSql(`alter table hosts add column name_source varchar(12)`);
    this.addSql(`alter table hosts_history add column name_source varchar(12)`);
    this.addSql(`update hosts h set name_source = 'service' where h.source->>'type' <> 'Manual'
                   and exists (select 1 from services s where s.organization_id = h.organization_id and s.host_id = h.id and s.name = h.name)`);
    this.addSql(`update hosts h set name_source = 'address' where h.source->>'type' <> 'Manual' and h.name_source is null
                   and exists (select 1 from ip_addresses i where i.organization_id = h.organization_id and i.host_id = h.id and host(i.ip_address) = h.name)`);
  }
}
