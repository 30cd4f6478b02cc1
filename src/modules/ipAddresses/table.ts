import { HistoryTable } from '../../core/historyTable.js';

/** The `ip_addresses` table and its history twin (see src/core/historyTable.ts). */
export const ipAddressTable = new HistoryTable({
  table: 'ip_addresses',
  entity: 'IPAddress',
  volatileColumns: ['last_seen_at', 'last_discovery_id'],
  columns: ['id', 'organization_id', 'network_id', 'host_id', 'subnet_id', 'ip_address', 'mac_address', 'mac_vendor', 'mac_random', 'name', 'position', 'offline_at', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
});
