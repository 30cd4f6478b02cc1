import { Migration } from '@mikro-orm/migrations';

/**
 * A network's completed Network scans, newest first: read on every map request (the last scan's new
 * hosts, src/modules/topology/service.ts) and by the Changes page. Schedules make a session every
 * few minutes per daemon, so without this those reads would scan every session of the organization.
 */
export class Migration20261202000005EndedScansIndex extends Migration {
  override up(): void {
    this.addSql(`create index discovery_sessions_network_ended_idx on discovery_sessions (organization_id, network_id, finished_at desc)
                 where discovery_type->>'type' = 'Network' and summary is not null`);
  }
}
