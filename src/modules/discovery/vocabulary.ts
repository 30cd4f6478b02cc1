// The boundary between Scanopy daemons and this service, in one place. Daemons speak the 0.14
// vocabulary (reference §0): their host `interfaces` are our `ip_addresses`, a binding
// `{type: "Interface", interface_id}` is our `{type: "IPAddress", ip_address_id}`, and a Port
// binding's `interface_id` is our `ip_address_id`; their `if_entries` (SNMP) would be our
// `interfaces`. Everything a daemon sends is translated here on the way in, and everything it
// receives on the way out, in exactly the shapes of the recorded exchanges
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
}

export interface DaemonInterface {
  id: string;
  subnet_id: string;
  ip_address: string;
  mac_address: string | null;
  name: string | null;
  position?: number;
}

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
  if_entries?: unknown[];
}

// ---- The same, in this service's vocabulary ------------------------------------------------------

export interface DiscoveredHost {
  id: string;
  name: string;
  hostname: string | null;
  description: string | null;
  virtualization: object | null;
  source: DaemonSource;
}
export interface DiscoveredIp { id: string; subnet_id: string; ip_address: string; mac_address: string | null; name: string | null }
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
}

/** A stored host with the children a discovery request named (rows as the tables return them). */
export interface StoredDiscovery {
  host: Row;
  ip_addresses: Row[];
  ports: Row[];
  services: Array<Row & { bindings: Row[] }>;
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
    },
    ip_addresses: req.interfaces.map((i) => ({
      id: i.id, subnet_id: i.subnet_id, ip_address: i.ip_address, mac_address: i.mac_address?.toUpperCase() ?? null, name: clip(i.name, 100),
    })),
    ports: req.ports.map((p) => ({ id: p.id, number: p.number, protocol: p.protocol })),
    services: req.services.map((s) => ({
      id: s.id, name: clip(s.name, 100)!, service_definition: s.service_definition.slice(0, 100), virtualization: s.virtualization ?? null,
      source: s.source, bindings: s.bindings.map(bindingFromDaemon),
    })),
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

/** HostResponse (reference §2.2 point 9): the stored host, the children of the request, `if_entries: []`. */
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
    if_entries: [],
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
