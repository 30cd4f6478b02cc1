import { HistoryTable } from '../../core/historyTable.js';

/** The `daemons` table and its history twin (see src/core/historyTable.ts). */
export const daemonTable = new HistoryTable({
  table: 'daemons',
  entity: 'Daemon',
  volatileColumns: ['last_seen', 'consecutive_failures'],
  columns: [
    'id', 'organization_id', 'network_id', 'host_id', 'user_id', 'api_key_id', 'name', 'mode', 'url', 'tags', 'capabilities',
    'is_unreachable', 'consecutive_failures', 'standby', 'standby_cleared_at', 'last_seen', 'version', 'lineage_id', 'created_at',
    'updated_at', 'valid_from', 'suggested_host_id',
  ],
  networkColumn: 'network_id',
  jsonColumns: ['capabilities'],
});
