import { Migration } from '@mikro-orm/migrations';

/**
 * A read as of an instant takes the open states from the live rows (their volatile columns are
 * there only: migration VolatileOnLiveRow); this index finds a network's rows valid since before
 * the instant without reading all of them.
 */
const TABLES = ['hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'daemons'];

export class Migration20261202135901OpenStatesByInstant extends Migration {
  override up(): void {
    for (const table of TABLES) this.addSql(`create index if not exists ${table}_valid_from_idx on ${table} (organization_id, network_id, valid_from)`);
  }
}
