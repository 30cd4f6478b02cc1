import { HistoryTable } from '../../core/historyTable.js';

/** The `hosts` table and its history twin (see src/core/historyTable.ts). */
export const hostTable = new HistoryTable({
  table: 'hosts',
  entity: 'Host',
  volatileColumns: ['last_seen_at', 'last_discovery_id', 'source'],
  columns: ['id', 'organization_id', 'network_id', 'name', 'hostname', 'description', 'hidden', 'tags', 'source', 'virtualization', 'credential_assignments', 'hostname_source', 'name_source', 'device_type', 'device_model', 'os_name', 'os_version', 'os_confidence', 'sys_descr', 'sys_object_id', 'sys_location', 'sys_contact', 'chassis_id', 'offline_at', 'ignored', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
  jsonColumns: ['source', 'virtualization', 'credential_assignments'],
});
