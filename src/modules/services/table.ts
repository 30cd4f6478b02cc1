import { HistoryTable } from '../../core/historyTable.js';

/** The `services` table and its history twin (see src/core/historyTable.ts). */
export const serviceTable = new HistoryTable({
  table: 'services',
  entity: 'Service',
  volatileColumns: ['last_seen_at', 'last_discovery_id', 'source'],
  columns: ['id', 'organization_id', 'network_id', 'host_id', 'name', 'service_definition', 'position', 'source', 'tags', 'virtualization', 'offline_at', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
  jsonColumns: ['source', 'virtualization'],
});
