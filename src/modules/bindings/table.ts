import type { Db } from '../../core/db.js';
import { groupBy, HistoryTable, type Row } from '../../core/historyTable.js';

/** The `bindings` table and its history twin (see src/core/historyTable.ts). */
export const bindingTable = new HistoryTable({
  table: 'bindings',
  entity: 'Binding',
  volatileColumns: ['last_seen_at', 'last_discovery_id'],
  columns: ['id', 'organization_id', 'network_id', 'service_id', 'type', 'port_id', 'ip_address_id', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
});

/** The order of a service's bindings: oldest first. */
export const BINDING_ORDER = 't.created_at, t.id';

/** Services with their bindings (live, or as of `at`), oldest first: one query for all of them. */
export async function withBindings(db: Db, org: string, services: Row[], at?: string): Promise<Row[]> {
  const bindings = groupBy(await bindingTable.byParent(db, org, 'service_id', services.map((s) => s.id as string), at, BINDING_ORDER), 'service_id');
  return services.map((s) => ({ ...s, bindings: bindings.get(s.id as string) ?? [] }));
}
