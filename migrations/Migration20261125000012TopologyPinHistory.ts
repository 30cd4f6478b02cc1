import { Migration } from '@mikro-orm/migrations';

/**
 * Pins are kept with their history (issue 11.4), by the same SCD2 mechanism as the inventory
 * (history_enable of the foundation migration): every move and every unpin is a state of
 * `topology_pins_history`.
 */
export class Migration20261125000012TopologyPinHistory extends Migration {
  override up(): void {
    this.addSql(`
alter table topology_pins
  add column id uuid not null default gen_random_uuid(),
  add column lineage_id uuid,
  add column created_at timestamptz not null default now(),
  add column valid_from timestamptz not null default now()`);
    this.addSql(`alter table topology_pins add constraint topology_pins_id_uq unique (id)`);
    this.addSql(`select history_enable('topology_pins', 'network_id')`);
  }
}
