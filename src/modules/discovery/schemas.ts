// What daemons send (reference daemon-protocol §1.1, §2), validated leniently: daemons add fields
// from release to release, so unknown keys are allowed (and ignored); the fields we use are checked.
// Ids are any GUID (daemons send the nil UUID for ids they do not know).
import Joi from 'joi';
import { SUBNET_TYPES } from '../subnets/schemas.js';

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
  cidr: Joi.string().ip({ cidr: 'required' }).required(),
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

export const daemonHostRequestBody = open({
  host: open({
    id: anyUuid().required(),
    name: Joi.string().min(1).max(1000).required(),
    hostname: text(1000).allow(null, '').empty('').default(null),
    description: text(5000).allow(null, '').empty('').default(null),
    network_id: anyUuid().required(),
    hidden: Joi.boolean(),
    virtualization: opaque(),
    source: daemonSource().required(),
  }).required(),
  interfaces: Joi.array().items(open({
    id: anyUuid().required(),
    subnet_id: anyUuid().required(),
    ip_address: Joi.string().ip({ cidr: 'forbidden' }).required(),
    mac_address: mac().allow(null).default(null),
    name: text(1000).allow(null, '').empty('').default(null),
    position: Joi.number().integer().min(0),
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
  if_entries: Joi.array().max(10000),
});

/**
 * The run's report our agent adds to its session updates (issue 25.3); Scanopy daemons never send
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
