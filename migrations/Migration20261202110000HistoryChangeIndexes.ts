import { Migration } from '@mikro-orm/migrations';

/**
 * A network's changes in a window, by the instants its states began or ended: the recent-changes diff
 * (its window of the last N change instants, the hosts whose states changed in it) and the timeline's
 * ticks read these, which without an index scanned the network's whole history (every state of every
 * row), so they cost in proportion to the network rather than to its changes. Ended states only for
 * valid_to: an open state has not ended. The diff also follows virtualization (a VM or container and
 * the service it runs under) at both instants: the few rows that run under a service get their own
 * index, which the whole history was scanned for.
 */
const TABLES = ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies'];

export class Migration20261202110000HistoryChangeIndexes extends Migration {
  override up(): void {
    for (const table of TABLES) {
      this.addSql(`create index ${table}_history_began_idx on ${table}_history (organization_id, network_id, valid_from)`);
      this.addSql(`create index ${table}_history_ended_idx on ${table}_history (organization_id, network_id, valid_to) where valid_to is not null`);
    }
    for (const table of ['hosts', 'services']) {
      this.addSql(`create index ${table}_history_runs_under_idx on ${table}_history (organization_id, network_id)
                   where virtualization #>> '{details,service_id}' is not null`);
      // Without statistics on the expression the planner takes it to be non-null in nearly every row
      // (773,000 of 700,000 estimated at 100,000 hosts, none there) and scans the history instead.
      this.addSql(`create statistics ${table}_history_runs_under_stats on (virtualization #>> '{details,service_id}') from ${table}_history`);
      this.addSql(`analyze ${table}_history`);
    }
  }
}
