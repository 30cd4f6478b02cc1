import { Migration } from '@mikro-orm/migrations';

/**
 * The newest event of a network, and an organization's newest without a network (tags): together
 * the topology graph cache's version of a network (src/modules/topology/graphCache.ts), so that
 * changes in an organization's other networks do not make its maps draw again.
 */
export class Migration20261125000015EventsByNetwork extends Migration {
  override up(): void {
    this.addSql(`create index events_network_idx on events (network_id, organization_id, id)`);
  }
}
