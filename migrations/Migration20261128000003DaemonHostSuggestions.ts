import { Migration } from '@mikro-orm/migrations';

/**
 * A daemon's "same host?" suggestion (src/modules/discovery/selfReport.ts): a self-report that resolved
 * to a host a person created (source Manual) is not adopted; the host is named here instead, for a
 * person to look at (GET /api/v1/daemons/:id, `suggested_host_id`). Null: nothing to suggest. Added to
 * the history twin too, so reads as of an instant (which select the table's columns) find it; the
 * capture triggers, told their columns when installed, leave it null there.
 */
export class Migration20261128000003DaemonHostSuggestions extends Migration {
  override up(): void {
    this.addSql(`alter table daemons add column suggested_host_id uuid`);
    this.addSql(`alter table daemons_history add column suggested_host_id uuid`);
  }
}
