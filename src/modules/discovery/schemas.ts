// What daemons send (reference daemon-protocol §1.1, §2), validated leniently: daemons add fields
// from release to release, so unknown keys are allowed (and ignored); the fields we use are checked.
// Ids are any GUID (daemons send the nil UUID for ids they do not know).
import Joi from 'joi';
import { networkCidr } from '../../http/cidr.js';
import { ADMIN_STATUSES, OPER_STATUSES } from '../interfaces/schemas.js';
import { SUBNET_TYPES } from '../subnets/schemas.js';
import { StorableJoi } from './storableText.js';
import { NAME_SOURCES } from './vocabulary.js';

export const anyUuid = () => Joi.string().guid().lowercase();
const open = (keys: Record<string, Joi.Schema>) => Joi.object(keys).unknown(true);
const text = (max: number) => Joi.string().max(max);
const mac = () => Joi.string().pattern(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/, 'colon-separated MAC').uppercase();
/** Daemons write nanoseconds (Rust's chrono); PostgreSQL keeps microseconds. */
const instant = () => Joi.string().pattern(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:?\d\d)$/, 'RFC 3339 date-time');
const opaque = () => Joi.object().unknown(true).allow(null).default(null);

export const PHASES = ['Pending', 'Starting', 'Started', 'Scanning', 'Complete', 'Failed', 'Cancelled'] as const;
export const TERMINAL_PHASES = ['Complete', 'Failed', 'Cancelled'];
export const DAEMON_MODES = ['daemon_poll', 'server_poll', 'pull', 'Pull', 'push', 'Push'];

/** `source`: `{type, metadata?, details?}`; metadata entries are the daemon's, kept as sent. */
export const daemonSource = () => open({ type: Joi.string().max(40).required(), metadata: Joi.array().items(Joi.object().unknown(true)).max(100) });

/** `discovery_type`: tagged by `type` (SelfReport | Network | Docker | later ones), kept as sent. */
export const discoveryType = () => open({ type: Joi.string().max(40).required() });

export const daemonSubnetBody = open({
  id: anyUuid().required(),
  cidr: networkCidr().required(),
  network_id: anyUuid().required(),
  name: Joi.string().min(1).max(100).required(),
  description: text(500).allow(null, '').empty('').default(null),
  subnet_type: Joi.string().valid(...SUBNET_TYPES).default('None'),
  source: daemonSource().required(),
  tags: Joi.array().items(anyUuid()).max(100).default([]),
});

const daemonBinding = open({
  id: anyUuid().required(),
  type: Joi.string().valid('Port', 'Interface').required(),
  port_id: anyUuid().allow(null).when('type', { is: 'Port', then: Joi.required().invalid(null) }),
  interface_id: anyUuid().allow(null).when('type', { is: 'Interface', then: Joi.required().invalid(null) }),
});

// ---- SNMP: Scanopy 0.14's IfEntry and host SNMP fields, and our agent's extensions ----

/** Most MACs one port's forwarding table may report (a busy uplink learns thousands). */
export const FDB_MACS_MAX = 4096;
const optionalText = (max: number) => text(max).allow(null, '').empty('');
const HOSTNAME_SOURCES = ['ptr', 'mdns', 'snmp'] as const;
const COLLECTION_STATES = ['complete', 'partial'] as const;

/** Scanopy's host SNMP fields (filled when empty, reference §2.2.4), and where `hostname` came from. */
const snmpHostFields = {
  hostname_source: Joi.string().valid(...HOSTNAME_SOURCES).allow(null)
    .description('Our agent: where `hostname` came from (a PTR record, mDNS, SNMP sysName); Scanopy daemons send none'),
  sys_descr: optionalText(2000).description('SNMP sysDescr'),
  sys_object_id: optionalText(500).description('SNMP sysObjectID'),
  sys_location: optionalText(500).description('SNMP sysLocation'),
  sys_contact: optionalText(500).description('SNMP sysContact'),
  chassis_id: optionalText(500).description('The host\'s own LLDP chassis id (often its base MAC)'),
};

/**
 * One SNMP ifTable row (Scanopy 0.14 IfEntry), stored as an interface of the host: upserted by
 * (host, if_index); a field left null or absent keeps what is stored. Ids and timestamps are the
 * daemon's and are ignored (an entry is its host's if_index). Texts are clipped to the columns,
 * never refused. `fdb_macs` is ours: the MACs the switch's BRIDGE/Q-BRIDGE forwarding table
 * learned on this port.
 */
const ifEntry = () => open({
  if_index: Joi.number().integer().min(0).max(2147483647).required(),
  if_descr: optionalText(1000),
  if_name: optionalText(1000),
  if_alias: optionalText(1000),
  if_type: Joi.number().integer().min(1).max(2147483647).allow(null),
  speed_bps: Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).allow(null),
  admin_status: Joi.string().valid(...ADMIN_STATUSES).allow(null),
  oper_status: Joi.string().valid(...OPER_STATUSES).allow(null),
  mac_address: mac().allow(null),
  interface_id: anyUuid().allow(null).description('The reported address (daemon `interfaces[].id`) this port carries'),
  ...Object.fromEntries(['lldp_chassis_id', 'lldp_port_id', 'lldp_port_desc', 'lldp_sys_name', 'lldp_sys_desc', 'lldp_mgmt_addr',
    'cdp_device_id', 'cdp_port_id', 'cdp_platform', 'cdp_address'].map((f) => [f, optionalText(1000)])),
  fdb_macs: Joi.array().items(mac()).max(FDB_MACS_MAX)
    .description('Our agent: MACs the switch\'s forwarding table (BRIDGE/Q-BRIDGE) learned on this port'),
}).label('DaemonIfEntry');

/**
 * Our agent: how complete each SNMP walk of the report was. A walk cut short is `partial`; nothing
 * a report leaves out is ever deleted either way, and a partial forwarding table adds to the stored one.
 */
const collections = () => Joi.object(Object.fromEntries(['system', 'if_table', 'fdb', 'lldp', 'arp']
  .map((k) => [k, Joi.string().valid(...COLLECTION_STATES)]))).unknown(true).allow(null)
  .description('Our agent: each SNMP collection "complete" or "partial" (a walk cut short)');

/** Cleaned of NUL characters before it is validated (storableText.ts): one bad byte never costs the host. */
export const daemonHostRequestBody = StorableJoi.object({
  host: open({
    id: anyUuid().required(),
    name: Joi.string().min(1).max(1000).required(),
    hostname: text(1000).allow(null, '').empty('').default(null),
    description: text(5000).allow(null, '').empty('').default(null),
    network_id: anyUuid().required(),
    hidden: Joi.boolean(),
    virtualization: opaque(),
    source: daemonSource().required(),
    ...snmpHostFields,
    device_type: optionalText(200).description('Our agent: the kind of device (NAS, Printer, Router, Camera…)'),
    device_model: optionalText(200).description('Our agent: the device\'s maker and model'),
    os_name: optionalText(200).description('Our agent: the operating system'),
    os_version: optionalText(200).description('Our agent: its version'),
    os_confidence: Joi.string().valid('Low', 'Medium', 'High', 'Certain').allow(null).description('Our agent: how sure the OS evidence is'),
    name_source: Joi.string().valid(...NAME_SOURCES).allow(null)
      .description('Our agent: where `name` came from; discovery renames a host it named when this changes, never one a person named'),
  }).required(),
  interfaces: Joi.array().items(open({
    id: anyUuid().required(),
    subnet_id: anyUuid().required(),
    ip_address: Joi.string().ip({ cidr: 'forbidden' }).required(),
    mac_address: mac().allow(null).default(null),
    name: text(1000).allow(null, '').empty('').default(null),
    position: Joi.number().integer().min(0),
    mac_vendor: text(200).allow(null, '').empty('').description('Our agent: the MAC\'s vendor, from the OUI database'),
    mac_random: Joi.boolean().allow(null).description('Our agent: the MAC is locally administered (bit 0x02 of the first octet); never identity alone'),
  })).max(1000).default([]),
  ports: Joi.array().items(open({
    id: anyUuid().required(),
    number: Joi.number().integer().min(0).max(65535).required(),
    protocol: Joi.string().valid('Tcp', 'Udp').required(),
  })).max(10000).default([]),
  services: Joi.array().items(open({
    id: anyUuid().required(),
    name: Joi.string().min(1).max(1000).required(),
    service_definition: Joi.string().min(1).max(1000).required(),
    virtualization: opaque(),
    source: daemonSource().required(),
    bindings: Joi.array().items(daemonBinding).max(1000).default([]),
  })).max(1000).default([]),
  if_entries: Joi.array().items(ifEntry()).max(10000).default([]),
  collections: collections(),
}).unknown(true);

/**
 * The run's report our agent adds to its session updates; Scanopy daemons never send
 * one. Unlike the rest of what daemons send it is ours, so it is checked strictly (no unknown key)
 * and every part is bounded: it is stored as sent and shown on the Daemons page.
 */
export const REPORT_LIMITS = { warnings: 100, incomplete: 100, text: 500, keys: 500, key: 200, count: 2 ** 32 } as const;
const count = () => Joi.number().integer().min(0).max(REPORT_LIMITS.count);
const counts = () => Joi.object().pattern(Joi.string().min(1).max(REPORT_LIMITS.key), count().required()).max(REPORT_LIMITS.keys);
export const sessionReport = () => Joi.object({
  addresses_tried: count().required().description('Addresses probed in this run'),
  alive_by_evidence: counts().required().description('Hosts found alive, by the evidence they were believed alive from (tcp_connect, tcp_refused, neighbour, …)'),
  services_by_rule: counts().required().description('Services recognised, by the fingerprint rule that named them'),
  warnings: Joi.array().items(Joi.string().max(REPORT_LIMITS.text)).max(REPORT_LIMITS.warnings).required(),
  incomplete: Joi.array().items(Joi.string().max(REPORT_LIMITS.text)).max(REPORT_LIMITS.incomplete).required()
    .description('Collections the run left incomplete (a cut-short walk, a target given up), each saying which and why'),
  probes_sent: count().required(),
}).unknown(false).label('DiscoveryReport');

export const discoveryUpdateBody = open({
  session_id: anyUuid().required(),
  daemon_id: anyUuid().required(),
  network_id: anyUuid().required(),
  phase: Joi.string().valid(...PHASES).required(),
  discovery_type: discoveryType().required(),
  progress: Joi.number().integer().min(0).max(100).default(0),
  error: Joi.string().max(10000).allow(null).default(null),
  started_at: instant().allow(null).default(null),
  finished_at: instant().allow(null).default(null),
  report: sessionReport().allow(null).default(null),
});

// ---- Daemon lifecycle bodies (src/modules/daemons/protocol.ts) ------------------------------------

export const capabilities = () => open({
  has_docker_socket: Joi.boolean().default(false),
  interfaced_subnet_ids: Joi.array().items(anyUuid()).max(10000).default([]),
});

export const registerBody = open({
  daemon_id: anyUuid().required(),
  network_id: anyUuid().required(),
  name: Joi.string().min(1).max(100).required(),
  mode: Joi.string().valid(...DAEMON_MODES).required(),
  capabilities: capabilities().default({ has_docker_socket: false, interfaced_subnet_ids: [] }),
  user_id: anyUuid().allow(null),
  version: text(50).allow(null),
  url: Joi.string().allow(null, ''),
});

export const startupBody = open({ daemon_version: text(50).allow(null) });

export const requestWorkBody = open({
  name: Joi.string().min(1).max(100),
  mode: Joi.string().valid(...DAEMON_MODES),
  version: text(50).allow(null),
});

export const heartbeatBody = open({
  name: Joi.string().min(1).max(100),
  mode: Joi.string().valid(...DAEMON_MODES),
  url: Joi.string().allow(null, ''),
});
