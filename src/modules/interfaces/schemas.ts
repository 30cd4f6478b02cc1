import Joi from 'joi';
import { body, entityId, listQuery, orderQuery, readOnlyNetworkId, timestamp, uuid } from '../../http/schemas.js';
import { macAddress } from '../hosts/schemas.js';
import { CHILD_IGNORED, childResponseFields } from '../hosts/children.js';

/** SNMP ifAdminStatus / ifOperStatus as strings (decisions §10). */
export const ADMIN_STATUSES = ['Up', 'Down', 'Testing'] as const;
export const OPER_STATUSES = ['Up', 'Down', 'Testing', 'Unknown', 'Dormant', 'NotPresent', 'LowerLayerDown'] as const;
export const INTERFACE_ORDER_FIELDS = ['if_index', 'if_name', 'admin_status', 'oper_status', 'created_at', 'updated_at'] as const;

const text = () => Joi.string().max(255).allow(null).default(null);
const NEIGHBOR_FIELDS = [
  'cdp_address', 'cdp_device_id', 'cdp_platform', 'cdp_port_id',
  'lldp_chassis_id', 'lldp_mgmt_addr', 'lldp_port_desc', 'lldp_port_id', 'lldp_sys_desc', 'lldp_sys_name',
] as const;

/** An ifTable entry (spec §2.2). `neighbor` is resolved by discovery: read-only here (accepted and ignored). */
const fields = {
  id: entityId(),
  ip_address_id: uuid().allow(null).default(null),
  if_index: Joi.number().integer().min(0).max(2147483647).required(),
  if_type: Joi.number().integer().min(1).max(2147483647).default(1),
  if_name: Joi.string().max(255).allow(null, '').empty('').default(null),
  if_descr: Joi.string().max(255).allow('', null).empty(null).default(''),
  if_alias: Joi.string().max(255).allow(null, '').empty('').default(null),
  mac_address: macAddress().allow(null).default(null),
  speed_bps: Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).allow(null).default(null),
  admin_status: Joi.string().valid(...ADMIN_STATUSES).default('Up'),
  oper_status: Joi.string().valid(...OPER_STATUSES).default('Up'),
  ...Object.fromEntries(NEIGHBOR_FIELDS.map((f) => [f, text()])),
};
const ignored = [...CHILD_IGNORED, 'neighbor'];

export const interfaceCreate = body({ ...fields, host_id: uuid().required() }, ignored);
/** Full replace (an optional field left out is null / its default); `neighbor` is kept; `host_id` and `network_id` may be echoed, not changed. */
export const interfaceUpdate = body({ ...fields, host_id: uuid(), network_id: readOnlyNetworkId('an interface'), expected_updated_at: timestamp().allow(null) }, ignored);
export const INTERFACE_WRITABLE = ['ip_address_id', ...Object.keys(fields).filter((k) => k !== 'id' && k !== 'ip_address_id')];

export const interfaceListQuery = listQuery({
  ...orderQuery(INTERFACE_ORDER_FIELDS), network_id: uuid(), host_id: uuid(), ip_address_id: uuid(),
  admin_status: Joi.string().valid(...ADMIN_STATUSES), oper_status: Joi.string().valid(...OPER_STATUSES),
});

export const interfaceResponse = Joi.object({
  ...childResponseFields(), host_id: uuid(), ip_address_id: uuid().allow(null), if_index: Joi.number().integer(), if_type: Joi.number().integer(),
  if_name: Joi.string().allow(null), if_descr: Joi.string().allow(''), if_alias: Joi.string().allow(null), mac_address: Joi.string().allow(null),
  speed_bps: Joi.number().integer().allow(null), admin_status: Joi.string().valid(...ADMIN_STATUSES), oper_status: Joi.string().valid(...OPER_STATUSES),
  ...Object.fromEntries(NEIGHBOR_FIELDS.map((f) => [f, Joi.string().allow(null)])),
  neighbor: Joi.object({
    interface_id: uuid().optional().description('The interface at the other end, when resolved'),
    host_id: Joi.string().optional().description('The neighbour host (id or LLDP system name)'),
    port: Joi.string().optional().description('The neighbour port (LLDP/CDP port id)'),
  }).unknown(true).allow(null).label('InterfaceNeighbor').description('Set by discovery (LLDP/CDP); read-only'),
  fdb_macs: Joi.array().items(Joi.string()).description('MACs the switch\'s forwarding table (BRIDGE/Q-BRIDGE) learned on this port; read-only, from discovery'),
}).label('Interface');
