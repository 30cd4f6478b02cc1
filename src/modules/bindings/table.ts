import { HistoryTable } from '../../core/historyTable.js';

/** The `bindings` table and its history twin (see src/core/historyTable.ts). */
export const bindingTable = new HistoryTable({
  table: 'bindings',
  entity: 'Binding',
  columns: ['id', 'organization_id', 'network_id', 'service_id', 'type', 'port_id', 'ip_address_id', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
});
