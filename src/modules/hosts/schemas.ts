import Joi from 'joi';
import { body, readOnlyNetworkId, SCANOPY_IGNORED, description, entityId, ipAddress, listQuery, name, orderQuery, SERVER_OWNED, tagIds, timestamp, uuid } from '../../http/schemas.js';
import { HOST_STATUSES } from './presence.js';

export const HOST_ORDER_FIELDS = ['name', 'hostname', 'created_at', 'updated_at', 'last_seen_at'] as const;

/** Opaque objects kept as given (decisions §10): a JSON object of at most 4 KiB, or null. */
export const virtualization = () =>
  Joi.object().unknown(true).allow(null).default(null).custom((value: object | null) => {
    if (value && Buffer.byteLength(JSON.stringify(value)) > 4096) throw new Error('must be at most 4 KiB of JSON');
    return value;
  });

export const macAddress = () => Joi.string().pattern(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/, 'colon-separated MAC').uppercase();
/** null (Scanopy's clients send it) means: the server decides, as when left out. */
export const position = () => Joi.number().integer().min(0).max(100000).allow(null).empty(null);

// Children sent back from a GET carry their server-owned fields; those are accepted and ignored.
const CHILD_OWNED = [...SERVER_OWNED, 'host_id', 'network_id', 'service_id', 'valid_from', 'valid_to'];
const child = (keys: Record<string, Joi.Schema>) => body(keys, CHILD_OWNED);

export const ipAddressInput = child({
  id: entityId(),
  subnet_id: uuid().required(),
  ip_address: ipAddress().required(),
  mac_address: macAddress().allow(null).default(null),
  name: Joi.string().max(100).allow(null, '').empty('').default(null),
  position: position(),
});

export const portInput = child({
  id: entityId(),
  number: Joi.number().integer().min(0).max(65535).required(),
  protocol: Joi.string().valid('Tcp', 'Udp').required(),
  type: Joi.any().strip(), // derived from number and protocol
});

export const bindingInput = child({
  id: entityId(),
  type: Joi.string().valid('Port', 'IPAddress').required(),
  port_id: uuid().when('type', { is: 'Port', then: Joi.required(), otherwise: Joi.valid(null).default(null) }),
  ip_address_id: uuid().allow(null).default(null).when('type', { is: 'IPAddress', then: Joi.required().invalid(null) }),
});

export const serviceInput = child({
  id: entityId(),
  name: name().required(),
  service_definition: Joi.string().min(1).max(100).required(),
  position: position(),
  tags: tagIds().default([]),
  virtualization: virtualization(),
  bindings: Joi.array().items(bindingInput).max(1000).default([]),
});

export const credentialAssignments = () =>
  Joi.array().items(Joi.object({ credential_id: uuid().required() }).unknown(true)).max(100);

const children = {
  ip_addresses: Joi.array().items(ipAddressInput).max(1000).allow(null),
  ports: Joi.array().items(portInput).max(10000).allow(null),
  services: Joi.array().items(serviceInput).max(1000).allow(null),
};

/** What a host's GET carries that a write sends back and the server ignores: its presence is discovery's (offline_at) or derived (status). */
const HOST_READ_ONLY = [...SERVER_OWNED, ...SCANOPY_IGNORED.host, 'offline_at', 'status'];

/** Ignoring a host also hides it; left out of a write, it is kept. */
const ignored = () => Joi.boolean().description('Ignore the host: never alerted on, hidden (hidden is set with it), and kept ignored whatever discovery finds; left out: unchanged');

export const hostCreate = body({
  id: Joi.any().strip(), // the server names new hosts
  name: name().required(),
  network_id: uuid().required(),
  hostname: Joi.string().max(253).allow(null, '').empty('').default(null),
  description: description(),
  hidden: Joi.boolean().default(false),
  ignored: ignored(),
  tags: tagIds().default([]),
  virtualization: virtualization(),
  credential_assignments: credentialAssignments().allow(null).default([]),
  ...children,
  interfaces: Joi.any().strip(),
}, HOST_READ_ONLY).example({
  network_id: '3f1c2a9e-7b1d-4c55-9a7e-0c1d2e3f4a5b', name: 'web-01', hostname: 'web-01.lan', description: 'Front web server',
  ip_addresses: [{ subnet_id: '9b2d4e61-0c3a-4f7e-8d15-2a6b7c8d9e0f', ip_address: '192.168.1.10' }],
  ports: [{ number: 443, protocol: 'Tcp' }],
  services: [{ name: 'nginx', service_definition: 'Nginx', bindings: [] }],
})

/** Spec §4.2: id, name, hidden and tags required; children synced when given (decisions §6). */
export const hostUpdate = body({
  id: uuid().required(),
  name: name().required(),
  hidden: Joi.boolean().required(),
  ignored: ignored(),
  tags: tagIds().required(),
  hostname: Joi.string().max(253).allow(null, '').empty('').default(null),
  description: description(),
  virtualization: virtualization(),
  expected_updated_at: timestamp().allow(null),
  credential_assignments: credentialAssignments().allow(null),
  ...children,
  network_id: readOnlyNetworkId('a host'), // a host never moves to another network: another one is 400
  interfaces: Joi.any().strip(), // discovered (SNMP); managed through /api/v1/interfaces
}, HOST_READ_ONLY);

export const hostListQuery = listQuery({
  ...orderQuery(HOST_ORDER_FIELDS),
  network_id: uuid(),
  tag_ids: Joi.array().items(uuid()).single().max(100),
  hidden: Joi.boolean(),
  q: Joi.string().max(100),
  device_type: Joi.string().max(200).description('Hosts whose device_type is this (case-insensitive): NAS, Printer, Router, Camera…'),
  os: Joi.string().max(200).description('Hosts whose os_name starts with this (case-insensitive), e.g. "Debian"'),
  status: Joi.string().valid(...HOST_STATUSES).description('Hosts with this status (online, offline, stale, ignored), as of `at` when given'),
});

