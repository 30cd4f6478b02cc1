// The boundary between Scanopy daemons and this service, in one place. Daemons speak the 0.14
// vocabulary (reference §0): their host `interfaces` are our `ip_addresses`, a binding
// `{type: "Interface", interface_id}` is our `{type: "IPAddress", ip_address_id}`, and a Port
// binding's `interface_id` is our `ip_address_id`; their `if_entries` (SNMP) are our
// `interfaces` (one per host and if_index). Everything a daemon sends is translated here on the
// way in, and everything it receives on the way out, in exactly the shapes of the recorded exchanges
// (../shared/fixtures/scanopy-daemon/*/daemon_to_server.json).
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import type { Protocol } from '../ports/portTypes.js';

// ---- What daemons send (validated by ./schemas.ts) ----------------------------------------------

export interface DaemonSource {
  type: string;
  metadata?: unknown[];
  details?: unknown;
  [key: string]: unknown;
}

export interface DaemonSubnet {
  id: string;
  cidr: string;
  network_id: string;
  name: string;
  description: string | null;
  subnet_type: string;
  source: DaemonSource;
  tags?: string[];
}

export interface DaemonHost {
  id: string;
  name: string;
  hostname: string | null;
  description: string | null;
  network_id: string;
  hidden?: boolean;
  virtualization: object | null;
  source: DaemonSource;
  /** Ours: where `hostname` came from. */
  hostname_source?: HostnameSource | null;
  /** Ours: where `name` came from; absent from Scanopy daemons (their names are kept). */
  name_source?: NameSource | null;
  sys_descr?: string | null;
  sys_object_id?: string | null;
  sys_location?: string | null;
  sys_contact?: string | null;
  chassis_id?: string | null;
}

export type HostnameSource = 'ptr' | 'mdns' | 'snmp';
/** Where our agent took a host's name from, best first (agent/protocol/entities.ts namedBy). */
export const NAME_SOURCES = ['hostname', 'certificate', 'title', 'service', 'address'] as const;
export type NameSource = (typeof NAME_SOURCES)[number];
export const SNMP_HOST_FIELDS = ['sys_descr', 'sys_object_id', 'sys_location', 'sys_contact', 'chassis_id'] as const;
/** Ours: what the host is, from all the evidence; a report without them keeps what is stored. */
export const HOST_FACT_FIELDS = ['device_type', 'device_model', 'os_name', 'os_version', 'os_confidence'] as const;

export interface DaemonInterface {
  id: string;
  subnet_id: string;
  ip_address: string;
  mac_address: string | null;
  name: string | null;
  position?: number;
  /** Ours: the MAC's vendor (OUI database) and whether it is locally administered. */
  mac_vendor?: string | null;
  mac_random?: boolean | null;
}

/** An SNMP ifTable row (Scanopy 0.14 IfEntry; ids and timestamps ignored), with our `fdb_macs`. */
export interface DaemonIfEntry {
  if_index: number;
  if_descr?: string | null;
  if_name?: string | null;
  if_alias?: string | null;
  if_type?: number | null;
  speed_bps?: number | null;
  admin_status?: string | null;
  oper_status?: string | null;
  mac_address?: string | null;
  interface_id?: string | null;
  lldp_chassis_id?: string | null;
  lldp_port_id?: string | null;
  lldp_port_desc?: string | null;
  lldp_sys_name?: string | null;
  lldp_sys_desc?: string | null;
  lldp_mgmt_addr?: string | null;
  cdp_device_id?: string | null;
  cdp_port_id?: string | null;
  cdp_platform?: string | null;
  cdp_address?: string | null;
  fdb_macs?: string[];
}

/** Ours: how complete each SNMP walk of a report was. */
export type Collections = Partial<Record<'system' | 'if_table' | 'fdb' | 'lldp' | 'arp', 'complete' | 'partial'>>;

export interface DaemonPort {
  id: string;
  number: number;
  protocol: Protocol;
}

export interface DaemonBinding {
  id: string;
  type: 'Port' | 'Interface';
  port_id?: string | null;
  interface_id?: string | null;
}

export interface DaemonService {
  id: string;
  name: string;
  service_definition: string;
  virtualization: object | null;
  source: DaemonSource;
  bindings: DaemonBinding[];
}

/** `POST /api/v1/hosts/discovery` (and ServerPoll `GET /api/poll` entities). */
export interface DaemonHostRequest {
  host: DaemonHost;
  interfaces: DaemonInterface[];
  ports: DaemonPort[];
  services: DaemonService[];
  if_entries?: DaemonIfEntry[];
  collections?: Collections | null;
}

// ---- The same, in this service's vocabulary ------------------------------------------------------

export interface DiscoveredHost {
  id: string;
  name: string;
  hostname: string | null;
  description: string | null;
  virtualization: object | null;
  source: DaemonSource;
  hostname_source: HostnameSource | null;
  name_source: NameSource | null;
  facts: Record<(typeof HOST_FACT_FIELDS)[number], string | null>;
  snmp: Record<(typeof SNMP_HOST_FIELDS)[number], string | null>;
}
export interface DiscoveredIp {
  id: string; subnet_id: string; ip_address: string; mac_address: string | null; name: string | null; mac_vendor: string | null; mac_random: boolean | null;
}
/** An interface (ifTable row) as reported: null is "not reported" (keeps what is stored). */
export type DiscoveredIfEntry = Omit<DaemonIfEntry, 'fdb_macs'> & { fdb_macs: string[] | null };
export interface DiscoveredPort { id: string; number: number; protocol: Protocol }
export interface DiscoveredBinding { id: string; type: 'Port' | 'IPAddress'; port_id: string | null; ip_address_id: string | null }
export interface DiscoveredService {
  id: string; name: string; service_definition: string; virtualization: object | null; source: DaemonSource; bindings: DiscoveredBinding[];
}
export interface Discovery {
  host: DiscoveredHost;
  ip_addresses: DiscoveredIp[];
  ports: DiscoveredPort[];
  services: DiscoveredService[];
  interfaces: DiscoveredIfEntry[];
  collections: Collections;
}

/** A stored host with the children a discovery request named (rows as the tables return them). */
export interface StoredDiscovery {
  host: Row;
  ip_addresses: Row[];
  ports: Row[];
  services: Array<Row & { bindings: Row[] }>;
  interfaces: Row[];
}

// ---- In --------------------------------------------------------------------------------------------

const clip = (text: string | null | undefined, max: number) => (text == null ? null : text.slice(0, max));

export function bindingFromDaemon(b: DaemonBinding): DiscoveredBinding {
  return b.type === 'Interface'
    ? { id: b.id, type: 'IPAddress', port_id: null, ip_address_id: b.interface_id ?? null }
    : { id: b.id, type: 'Port', port_id: b.port_id ?? null, ip_address_id: b.interface_id ?? null };
}

export function discoveryFromDaemon(req: DaemonHostRequest): Discovery {
  const h = req.host;
  return {
    host: {
      id: h.id,
      // Real hostnames can exceed our name limit; a daemon's report is clipped, never refused.
      name: clip(h.name, 100)!,
      hostname: clip(h.hostname, 253),
      description: clip(h.description, 500),
      virtualization: h.virtualization ?? null,
      source: h.source,
      // A hostname_source without a hostname says nothing.
      hostname_source: h.hostname ? h.hostname_source ?? null : null,
      name_source: h.name_source ?? null,
      facts: Object.fromEntries(HOST_FACT_FIELDS.map((f) => [f, clip((h as unknown as Record<string, string | null | undefined>)[f], 200)])) as DiscoveredHost['facts'],
      snmp: Object.fromEntries(SNMP_HOST_FIELDS.map((f) => [f, clip(h[f], 2000)])) as DiscoveredHost['snmp'],
    },
    ip_addresses: req.interfaces.map((i) => ({
      id: i.id, subnet_id: i.subnet_id, ip_address: i.ip_address, mac_address: i.mac_address?.toUpperCase() ?? null, name: clip(i.name, 100),
      mac_vendor: clip(i.mac_vendor, 200), mac_random: i.mac_random ?? null,
    })),
    ports: req.ports.map((p) => ({ id: p.id, number: p.number, protocol: p.protocol })),
    services: req.services.map((s) => ({
      id: s.id, name: clip(s.name, 100)!, service_definition: s.service_definition.slice(0, 100), virtualization: s.virtualization ?? null,
      source: s.source, bindings: s.bindings.map(bindingFromDaemon),
    })),
    interfaces: (req.if_entries ?? []).map((e) => ({
      ...e, if_descr: clip(e.if_descr, 255), if_name: clip(e.if_name, 255), if_alias: clip(e.if_alias, 255),
      mac_address: e.mac_address?.toUpperCase() ?? null, fdb_macs: e.fdb_macs ? [...new Set(e.fdb_macs.map((m) => m.toUpperCase()))] : null,
    })),
    collections: req.collections ?? {},
  };
}

/** Scanopy's mode spellings: `push`/`Push` was server_poll and `pull`/`Pull` daemon_poll before 0.14. */
export function modeFromDaemon(mode: string): 'daemon_poll' | 'server_poll' {
  return /^(server_poll|push)$/i.test(mode) ? 'server_poll' : 'daemon_poll';
}

// ---- Out -------------------------------------------------------------------------------------------

const stamps = (r: Row) => ({ created_at: isoTimestamp(r.created_at), updated_at: isoTimestamp(r.updated_at) });

export function subnetToDaemon(s: Row) {
  return {
    id: s.id, ...stamps(s), cidr: s.cidr, network_id: s.network_id, name: s.name, description: s.description,
    subnet_type: s.subnet_type, source: s.source, tags: s.tags,
  };
}

export function bindingToDaemon(b: Row) {
  const common = { id: b.id, ...stamps(b), service_id: b.service_id, network_id: b.network_id };
  return b.type === 'IPAddress'
    ? { ...common, type: 'Interface', interface_id: b.ip_address_id }
    : { ...common, type: 'Port', port_id: b.port_id, interface_id: b.ip_address_id ?? null };
}

/** An interface as an IfEntry (Scanopy 0.14): `interface_id` is the address it carries; with our `fdb_macs`. */
export function ifEntryToDaemon(i: Row) {
  return {
    id: i.id, ...stamps(i), host_id: i.host_id, network_id: i.network_id, if_index: i.if_index, if_descr: i.if_descr, if_name: i.if_name,
    if_alias: i.if_alias, if_type: i.if_type, speed_bps: i.speed_bps, admin_status: i.admin_status, oper_status: i.oper_status,
    mac_address: i.mac_address, interface_id: i.ip_address_id, lldp_chassis_id: i.lldp_chassis_id, lldp_port_id: i.lldp_port_id,
    lldp_port_desc: i.lldp_port_desc, lldp_sys_name: i.lldp_sys_name, lldp_sys_desc: i.lldp_sys_desc, lldp_mgmt_addr: i.lldp_mgmt_addr,
    cdp_device_id: i.cdp_device_id, cdp_port_id: i.cdp_port_id, cdp_platform: i.cdp_platform, cdp_address: i.cdp_address,
    neighbor: i.neighbor, fdb_macs: i.fdb_macs,
  };
}

/** HostResponse (reference §2.2 point 9): the stored host, the children of the request, its `if_entries` (those of the request). */
export function discoveryToDaemon(d: StoredDiscovery) {
  const h = d.host;
  return {
    id: h.id, ...stamps(h), name: h.name, hostname: h.hostname, network_id: h.network_id, description: h.description,
    source: h.source, virtualization: h.virtualization, hidden: h.hidden, tags: h.tags,
    interfaces: d.ip_addresses.map((i) => ({
      id: i.id, ...stamps(i), network_id: i.network_id, host_id: i.host_id, subnet_id: i.subnet_id, ip_address: i.ip_address,
      mac_address: i.mac_address, name: i.name, position: i.position,
    })),
    ports: d.ports.map((p) => ({
      id: p.id, ...stamps(p), host_id: p.host_id, network_id: p.network_id, number: p.number, protocol: p.protocol, type: p.type,
    })),
    services: d.services.map((s) => ({
      id: s.id, ...stamps(s), host_id: s.host_id, network_id: s.network_id, name: s.name, service_definition: s.service_definition,
      position: s.position, virtualization: s.virtualization, tags: s.tags, source: s.source, bindings: s.bindings.map(bindingToDaemon),
    })),
    if_entries: d.interfaces.map(ifEntryToDaemon),
  };
}

/** A daemon as the protocol shows it (register): `last_seen`, `version`, `api_key_id` left out when null. */
export function daemonToDaemon(d: Row) {
  const out: Record<string, unknown> = {
    id: d.id, ...stamps(d), host_id: d.host_id, network_id: d.network_id, url: d.url, capabilities: d.capabilities, mode: d.mode,
    name: d.name, tags: d.tags, user_id: d.user_id, is_unreachable: d.is_unreachable, standby: d.standby,
  };
  if (d.last_seen != null) out.last_seen = isoTimestamp(d.last_seen);
  if (d.version != null) out.version = d.version;
  if (d.api_key_id != null) out.api_key_id = d.api_key_id;
  return out;
}
