import { Migration } from '@mikro-orm/migrations';

/**
 * A Network discovery session's summary, computed by the server when the session ends
 * (src/modules/discovery/sessionSummary.ts): hosts found, new, changed, unchanged and gone, services
 * found, and the first new and gone hosts by id and name. Kept on the session because "gone" and
 * "found" are only true as of the session's end (later sessions move the hosts' last_discovery_id).
 * Null for sessions that are not Network ones, that have not ended, or that ended before this migration.
 */
export class Migration20261128000002SessionSummaries extends Migration {
  override up(): void {
    this.addSql(`alter table discovery_sessions add column summary jsonb`);
  }
}
