import { Migration } from '@mikro-orm/migrations';

/**
 * A discovery run's report (issue 25.3): what our agent sends with its session updates (addresses
 * tried, alive by evidence, services by rule, warnings, incomplete collections, probes sent), kept
 * on the session so the Daemons page shows the last run's. Null for Scanopy daemons (they never
 * send one) and for the sessions before this migration.
 */
export class Migration20261125000019SessionReports extends Migration {
  override up(): void {
    this.addSql(`alter table discovery_sessions add column report jsonb`);
  }
}
