import { HistoryTable } from '../../core/historyTable.js';

/** The `subnets` table and its history twin (see src/core/historyTable.ts). */
export const subnetTable = new HistoryTable({
  table: 'subnets',
  entity: 'Subnet',
  columns: ['id', 'organization_id', 'network_id', 'cidr', 'name', 'description', 'subnet_type', 'source', 'tags', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
  jsonColumns: ['source'],
});
