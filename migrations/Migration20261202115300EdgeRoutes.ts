import { Migration } from '@mikro-orm/migrations';

/**
 * A layout's edge routes beside its positions: each edge's bend points around the boxes, made by
 * the layout worker with the positions (src/modules/topology/edgeRoutes.ts), so every client draws
 * the same paths and none routes. Null in layouts made before: their edges are drawn straight.
 */
export class Migration20261202115300EdgeRoutes extends Migration {
  override up(): void {
    this.addSql(`alter table topology_layouts add column routes jsonb`);
  }
}
