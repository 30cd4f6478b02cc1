// Scanopy 0.14 entities (daemon-protocol.md §1.1 "Shapes used in step 4", §2.3) built from what the
// scanner found. Ids are derived from what identifies the thing (network, address, port, rule), and
// dates from when the agent first found the address: an unchanged host gives a byte-identical
// report, which the server's digest turns into two statements and no history.
import { createHash } from 'node:crypto';
import { maskSecrets } from '../../src/core/secretFields.js';
import { hostFacts } from '../fingerprint/hostFacts.js';
import type { FoundHost, FoundService, SnmpInterface } from '../scan/types.js';
import type { DiscoveryType } from './client.js';

export const NIL = '00000000-0000-0000-0000-000000000000';

/** A UUID (version 5 layout) from a SHA-256 of the parts: the same parts, the same id, on any machine. */
export function stableUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * SNMP secrets (every field core/secretFields.ts declares: a community, a v3 user's passwords)
 * travel in plaintext only in work payloads; everywhere else (session updates, entities' source
 * metadata) they are masked (§0).
 */
export function redactDiscoveryType(dt: DiscoveryType): Record<string, unknown> {
  return maskSecrets(structuredClone(dt)) as Record<string, unknown>;
}

/** A Network discovery type with every field a 0.14.13 daemon sends (defaults filled). */
export function networkDiscoveryType(subnetIds: string[] | null, base: Partial<Record<string, unknown>> = {}): DiscoveryType {
  return {
    type: 'Network',
    subnet_ids: subnetIds,
    host_naming_fallback: (base.host_naming_fallback as 'Ip' | 'BestService') ?? 'BestService',
    snmp_credentials: (base.snmp_credentials as any) ?? { default_credential: null, ip_overrides: [] },
    probe_raw_socket_ports: (base.probe_raw_socket_ports as boolean) ?? false,
  };
}

/** One `source.metadata` entry: the discovery type's fields flattened, the daemon, the date (§2.3). */
export const metadataEntry = (dt: DiscoveryType, daemonId: string, date: string) => ({ ...redactDiscoveryType(dt), daemon_id: daemonId, date });

export interface SubnetBody {
  id: string;
  created_at: string;
  updated_at: string;
  cidr: string;
  network_id: string;
  name: string;
  description: string | null;
  subnet_type: string;
  source: { type: 'Discovery'; metadata: Array<Record<string, unknown>> };
  tags: string[];
}

export function subnetBody(opts: { cidr: string; networkId: string; daemonId: string; discoveryType: DiscoveryType; date: string; subnetType?: string; name?: string }): SubnetBody {
  return {
    id: stableUuid('subnet', opts.networkId, opts.cidr),
    created_at: opts.date,
    updated_at: opts.date,
    cidr: opts.cidr,
    network_id: opts.networkId,
    name: opts.name ?? opts.cidr,
    description: null,
    subnet_type: opts.subnetType ?? 'Unknown',
    source: { type: 'Discovery', metadata: [metadataEntry(opts.discoveryType, opts.daemonId, opts.date)] },
    tags: [],
  };
}

/** The body of POST /api/v1/hosts/discovery. */
export interface HostRequest {
  host: Record<string, unknown> & { id: string; name: string };
  interfaces: Array<Record<string, unknown>>;
  ports: Array<Record<string, unknown>>;
  services: Array<Record<string, unknown>>;
  /** SNMP interfaces (Scanopy's IfEntry + our fdb_macs), when the host answered SNMP. */
  if_entries?: Array<Record<string, unknown>>;
  /** Each SNMP walk "complete" or "partial" (ours). */
  collections?: Record<string, 'complete' | 'partial'>;
}

export interface HostContext {
  networkId: string;
  daemonId: string;
  subnetId: string;
  discoveryType: DiscoveryType;
  /** When the agent first found the address: created_at, updated_at and the metadata's date. */
  date: string;
  description: string | null;
}

/** The evidence as one honest line (sent as the description of a host found for the first time). */
export function evidenceSummary(found: FoundHost): string {
  const kinds = found.evidence.map((e) => ('port' in e ? `${e.kind} ${e.port}` : e.kind === 'neighbour' || e.kind === 'arp' ? `${e.kind} ${e.mac}`
    : e.kind === 'snmp_arp' ? `the ARP table of ${e.device} (${e.mac})` : e.kind));
  return `Found by the NetInventory agent (alive by ${[...new Set(kinds)].join(', ') || 'no evidence'})`.slice(0, 500);
}

const CONFIDENCE_ORDER = ['Low', 'Medium', 'High', 'Certain'];

/**
 * A host's name from the best source it has: the name it gave (PTR, mDNS, SNMP sysName),
 * then a certificate's DNS name, then a page title that is not a product's own; a service's name only
 * when nothing else names it (host_naming_fallback BestService, §1.2.5), else the address.
 */
export function namedBy(found: FoundHost, fallback: string | undefined): { name: string; source: 'hostname' | 'certificate' | 'title' | 'service' | 'address' } {
  if (found.hostname) return { name: found.hostname, source: 'hostname' };
  const services = [...found.services].filter((s) => CONFIDENCE_ORDER.indexOf(s.confidence) >= 2)
    .sort((a, b) => CONFIDENCE_ORDER.indexOf(b.confidence) - CONFIDENCE_ORDER.indexOf(a.confidence) || a.port - b.port);
  const productNames = new Set(found.services.flatMap((s) => [s.name, ...(s.findings ?? []).map((f) => f.name)]).map((n) => n.toLowerCase()));
  for (const s of services) {
    const dns = certificateName(s.facts);
    if (dns) return { name: dns, source: 'certificate' };
  }
  for (const s of services) {
    const title = s.facts?.title?.trim();
    if (title && isNameLike(title, productNames)) return { name: title.slice(0, 200), source: 'title' };
  }
  if (fallback !== 'Ip' && services[0]) return { name: services[0].name, source: 'service' };
  return { name: found.ip, source: 'address' };
}

/** The certificate's DNS name (SAN first, then the subject CN) when it is a host name, not a product's default or an address. */
function certificateName(facts: Record<string, string> | undefined): string | null {
  const candidates = [...(facts?.san ?? '').split(/,\s*/).flatMap((e) => (e.startsWith('DNS:') ? [e.slice(4)] : [])), facts?.subject ?? ''];
  return candidates.find((n) => /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)+$/i.test(n)
    && !/^(localhost|.*\.local(domain)?|.*\.invalid|example\.(com|org|net))$/i.test(n) && !/^\d+(\.\d+){3}$/.test(n) && !n.startsWith('*')) ?? null;
}

/** A title that names this machine, not a product's stock page ("Welcome to nginx!", "Grafana", "Login"). */
function isNameLike(title: string, products: Set<string>): boolean {
  if (title.length < 2 || title.length > 80) return false;
  const lower = title.toLowerCase();
  if (products.has(lower)) return false;
  return !/^(welcome|index of|directory listing|login|log in|sign in|home|dashboard|error|40\d|50\d|redirect|loading|untitled|document|it works)/i.test(title)
    && ![...products].some((p) => p.length > 2 && lower.includes(p));
}

function portEntity(hostId: string, number: number, protocol: 'Tcp' | 'Udp', date: string) {
  return { id: stableUuid(hostId, 'port', protocol, String(number)), created_at: date, updated_at: date, host_id: NIL, network_id: NIL, number, protocol, type: 'Custom' };
}

/**
 * The match's reason, with the facts it read (title, product, version, os…): a 0.14 service has no
 * other field for them, and they are what an operator wants to see next to the rule.
 */
export function reasonText(svc: FoundService): string {
  const facts = Object.entries(svc.facts ?? {}).filter(([, v]) => v !== '');
  const text = facts.length ? `${svc.reason} (${facts.map(([k, v]) => `${k}: ${v}`).join('; ')})` : svc.reason;
  return text.length > 1000 ? `${text.slice(0, 999)}…` : text;
}

function serviceEntity(
  ctx: HostContext, hostId: string, interfaceId: string, svc: FoundService, position: number, portId: string, metadata: Record<string, unknown>,
) {
  const id = stableUuid(hostId, 'service', svc.rule, svc.protocol, String(svc.port));
  return {
    id, created_at: ctx.date, updated_at: ctx.date, host_id: hostId, network_id: ctx.networkId, name: svc.name, service_definition: svc.definition,
    position, virtualization: null, tags: [],
    bindings: [{
      id: stableUuid(id, 'binding', portId), created_at: ctx.date, updated_at: ctx.date, interface_id: interfaceId, network_id: NIL, port_id: portId,
      service_id: NIL, type: 'Port',
    }],
    source: { type: 'DiscoveryWithMatch', metadata: [metadata], details: { confidence: svc.confidence, reason: { type: 'reason', data: reasonText(svc) } } },
  };
}

/** The server keeps at most this many MACs per port (FDB_MACS_MAX) and entries per host. */
const FDB_MACS_MAX = 4096;
const IF_ENTRIES_MAX = 10_000;

/** One SNMP interface as an IfEntry; `interfaceId` when it carries the reported address (its MAC is the host's). */
export function ifEntry(iface: SnmpInterface, interfaceId: string | null): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    if_index: iface.ifIndex, if_descr: iface.descr, if_name: iface.name, if_alias: iface.alias, if_type: iface.type && iface.type > 0 ? iface.type : null,
    speed_bps: iface.speedBps, admin_status: iface.adminStatus, oper_status: iface.operStatus, mac_address: iface.mac, interface_id: interfaceId,
  };
  if (iface.lldp) {
    Object.assign(entry, {
      lldp_chassis_id: iface.lldp.chassisId, lldp_port_id: iface.lldp.portId, lldp_port_desc: iface.lldp.portDesc,
      lldp_sys_name: iface.lldp.sysName, lldp_sys_desc: iface.lldp.sysDesc, lldp_mgmt_addr: iface.lldp.mgmtAddr,
    });
  }
  if (iface.fdbMacs) entry.fdb_macs = iface.fdbMacs.slice(0, FDB_MACS_MAX);
  return entry;
}

/** One FoundHost as one host report: its address, MAC, open ports and recognised services (bound to port and interface). */
export function hostRequest(found: FoundHost, ctx: HostContext): HostRequest {
  const hostId = stableUuid('host', ctx.networkId, ctx.subnetId, found.ip);
  const metadata = metadataEntry(ctx.discoveryType, ctx.daemonId, ctx.date);
  const interfaceId = stableUuid(hostId, 'interface', ctx.subnetId, found.ip);
  const ports = new Map<string, ReturnType<typeof portEntity>>();
  const portOf = (number: number, protocol: 'Tcp' | 'Udp') => {
    const k = `${protocol}/${number}`;
    if (!ports.has(k)) ports.set(k, portEntity(hostId, number, protocol, ctx.date));
    return ports.get(k)!;
  };
  for (const p of [...found.openPorts].sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol))) portOf(p.port, p.protocol);
  const services = found.services.map((svc, i) => serviceEntity(ctx, hostId, interfaceId, svc, i, portOf(svc.port, svc.protocol).id, metadata));
  const mac = found.mac ? found.mac.toUpperCase() : null;
  const snmp = found.snmp;
  const sys = snmp?.system;
  const named = namedBy(found, (ctx.discoveryType as any).host_naming_fallback);
  const facts = hostFacts(found);
  const request: HostRequest = {
    host: {
      id: hostId, created_at: ctx.date, updated_at: ctx.date, name: named.name, name_source: named.source,
      hostname: found.hostname, network_id: ctx.networkId, description: ctx.description, source: { type: 'Discovery', metadata: [metadata] },
      virtualization: null, hidden: false, tags: [],
      ...(found.hostnameSource && found.hostname ? { hostname_source: found.hostnameSource } : {}),
      ...(facts.deviceType ? { device_type: facts.deviceType } : {}),
      ...(facts.deviceModel ? { device_model: facts.deviceModel } : {}),
      ...(facts.osName ? { os_name: facts.osName, os_version: facts.osVersion, os_confidence: facts.osConfidence } : {}),
      ...(sys ? { sys_descr: sys.descr, sys_object_id: sys.objectId, sys_location: sys.location, sys_contact: sys.contact, chassis_id: sys.chassisId } : {}),
    },
    interfaces: [{
      id: interfaceId, created_at: ctx.date, updated_at: ctx.date, network_id: ctx.networkId, host_id: NIL, subnet_id: ctx.subnetId,
      ip_address: found.ip, mac_address: mac, name: null, position: 0,
      ...(mac ? { mac_vendor: found.macVendor ?? null, mac_random: found.macIsRandom ?? false } : {}),
    }],
    ports: [...ports.values()],
    services,
  };
  if (snmp) {
    request.if_entries = snmp.interfaces.slice(0, IF_ENTRIES_MAX).map((i) => ifEntry(i, mac && i.mac === mac ? interfaceId : null));
    request.collections = { ...snmp.collections };
  }
  return request;
}
