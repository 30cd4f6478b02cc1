import { HistoryTable } from '../../core/historyTable.js';

/** The `interfaces` table and its history twin (see src/core/historyTable.ts). */
export const interfaceTable = new HistoryTable({
  table: 'interfaces',
  entity: 'Interface',
  volatileColumns: ['last_seen_at', 'last_discovery_id'],
  columns: ['id', 'organization_id', 'network_id', 'host_id', 'ip_address_id', 'if_index', 'if_type', 'if_name', 'if_descr', 'if_alias', 'mac_address', 'speed_bps', 'admin_status', 'oper_status', 'cdp_address', 'cdp_device_id', 'cdp_platform', 'cdp_port_id', 'lldp_chassis_id', 'lldp_mgmt_addr', 'lldp_port_desc', 'lldp_port_id', 'lldp_sys_desc', 'lldp_sys_name', 'neighbor', 'fdb_macs', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'network_id',
  jsonColumns: ['neighbor', 'fdb_macs'],
  bigintColumns: ['speed_bps'],
});
