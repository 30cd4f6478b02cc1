import { Migration } from '@mikro-orm/migrations';

/**
 * Topology layouts (issue 11.4): computed by the `topology-layout` worker and kept by (view, graph
 * digest), so an unchanged graph is laid out once, whatever process asks and across restarts.
 * Pins: positions a user fixed by hand, per network and view; every layout answer applies them.
 */
export class Migration20261125000011TopologyLayouts extends Migration {
  override up(): void {
    this.addSql(`
create table topology_layouts (
  view text not null,
  digest text not null,
  network_id uuid not null,
  status text not null check (status in ('pending', 'ready', 'failed')),
  positions jsonb,
  error text,
  node_count integer,
  duration_ms integer,
  updated_at timestamptz not null default now(),
  primary key (view, digest)
)`);
    this.addSql(`create index topology_layouts_network_idx on topology_layouts (network_id, updated_at)`);
    this.addSql(`
create table topology_pins (
  organization_id uuid not null references organizations(id) on delete cascade,
  network_id uuid not null,
  view text not null,
  node_id text not null,
  x double precision not null,
  y double precision not null,
  updated_at timestamptz not null default now(),
  primary key (network_id, view, node_id)
)`);
  }
}
