import { Migration } from '@mikro-orm/migrations';

/**
 * The Changes page (issue 39.4, src/modules/changes): an operator acknowledges what a Network scan
 * changed. Who and when, on the session: an acknowledgement is about that scan, not a state of the
 * inventory (no history, no event).
 */
export class Migration20261202000004ScanAcknowledged extends Migration {
  override up(): void {
    this.addSql(`alter table discovery_sessions add column acknowledged_at timestamptz, add column acknowledged_by uuid`);
  }
}
