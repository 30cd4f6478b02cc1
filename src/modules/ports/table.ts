import { HistoryTable } from '../../core/historyTable.js';

/** The `ports` table and its history twin (see src/core/historyTable.ts). */
export const portTable = new HistoryTable({
  table: 'ports',
  entity: 'Port',
  volatileColumns: ['last_seen_at', 'last_discovery_id'],
  columns: ['id', 'organization_id', 'network_id', 'host_id', 'number', 'protocol', 'type', 'offline_at', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
});
