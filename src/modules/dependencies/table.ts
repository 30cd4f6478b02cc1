import { HistoryTable } from '../../core/historyTable.js';

/** The `dependencies` table and its history twin (see src/core/historyTable.ts). */
export const dependencyTable = new HistoryTable({
  table: 'dependencies',
  entity: 'Dependency',
  columns: ['id', 'organization_id', 'network_id', 'name', 'description', 'color', 'dependency_type', 'edge_style', 'members', 'tags', 'source', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
  jsonColumns: ['members', 'source'],
});
