import { Migration } from '@mikro-orm/migrations';
import { HISTORY_TABLES } from './Migration20261202000002ProvenanceIsNoChange.js';

/**
 * Whether a host is there (issue 39.2, src/modules/discovery/presence.ts): `offline_at`, set when a
 * completed Network scan of the host's subnet did not see it and cleared when a scan sees it again;
 * `ignored`, set by a person (never alerted on, hidden, and kept ignored whatever discovery finds).
 * Both are state, not provenance: going offline or coming back makes a history state and an event
 * (what alerts and the map at an instant read). A network's `host_expiry_days` says when an offline
 * host counts as stale (default 30). The triggers are made again from the catalog so that the new
 * columns are captured.
 */
export class Migration20261202000003HostPresence extends Migration {
  override up(): void {
    for (const table of ['hosts', 'hosts_history']) {
      this.addSql(`alter table ${table} add column offline_at timestamptz, add column ignored boolean not null default false`);
    }
    for (const table of ['networks', 'networks_history']) {
      this.addSql(`alter table ${table} add column host_expiry_days integer not null default 30`);
    }
    this.addSql(`alter table networks add constraint networks_host_expiry_days_check check (host_expiry_days between 1 and 3650)`);
    for (const [table, volatile] of HISTORY_TABLES.filter(([t]) => t === 'hosts' || t === 'networks')) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
    this.addSql(`select digest_triggers('hosts', 'hosts')`);
    // Hosts that discovery found and no scan has missed yet are online: offline_at stays null.
    this.addSql(`create index hosts_offline_at_idx on hosts (organization_id, network_id, offline_at) where offline_at is not null`);
  }
}
