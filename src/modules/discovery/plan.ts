// Pure planning of a discovery merge (no SQL): which stored child each reported one is, what a
// stored host keeps and what discovery may fill, how source metadata merges, and which reported
// bindings can be added under the binding rules. ./ingest.ts runs the SQL around these.
import { maskSecrets } from '../../core/secretFields.js';
import type { DaemonSource, DiscoveredBinding } from './vocabulary.js';

/** Discovery metadata kept per entity (reference §2.2: MAX_DISCOVERY_METADATA_ENTRIES). */
export const MAX_METADATA = 10;

/** JSON with sorted keys: two values are "the same" whatever order their keys came in (jsonb sorts them). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * New entries first, then the stored ones, at most 10. An entry already stored is not added again,
 * so a replayed report changes nothing.
 */
export function mergeMetadata(incoming: unknown[], stored: unknown[]): unknown[] {
  const seen = new Set(stored.map(canonical));
  const fresh: unknown[] = [];
  for (const entry of incoming) {
    const key = canonical(entry);
    if (!seen.has(key)) fresh.push(entry);
    seen.add(key);
  }
  return [...fresh, ...stored].slice(0, MAX_METADATA);
}

/**
 * An entity's metadata entries (a daemon's discovery type flattened into each): their credentials'
 * secrets masked (core/secretFields.ts), so what a daemon reports never stores one, nor puts one in
 * an event, a webhook or the history.
 */
const metadataOf = (source: DaemonSource | null | undefined): unknown[] => (Array.isArray(source?.metadata) ? maskSecrets(source.metadata) : []);

/** A new entity's source: the reported one, its metadata cut to 10. */
export function newSource(incoming: DaemonSource, type = 'Discovery'): DaemonSource {
  return { ...incoming, type: incoming.type || type, metadata: metadataOf(incoming).slice(0, MAX_METADATA) };
}

const CONFIDENCE = ['NotApplicable', 'Low', 'Medium', 'High', 'Certain'];
const confidence = (s: DaemonSource) => CONFIDENCE.indexOf(String((s.details as { confidence?: string } | undefined)?.confidence));

/**
 * A stored source after a discovery. Manual stays as it is (a user's record); Discovery-like
 * sources of the same type merge their metadata (and for DiscoveryWithMatch keep the more confident
 * details); anything else (System, Unknown, another type) becomes the reported source.
 */
export function mergeSource(stored: DaemonSource | null, incoming: DaemonSource): DaemonSource {
  if (!stored) return newSource(incoming);
  if (stored.type === 'Manual') return stored;
  if (stored.type !== incoming.type) return newSource(incoming);
  const merged: DaemonSource = { ...stored, metadata: mergeMetadata(metadataOf(incoming), metadataOf(stored)) };
  if (incoming.details !== undefined && confidence(incoming) > confidence(stored)) merged.details = incoming.details;
  return merged;
}

/** A key that identifies a child: on the reported side and on the stored side (null: no key). */
export type MatchKey<I, S> = [(reported: I) => string | null, (stored: S) => string | null];

/**
 * Pairs each reported child with at most one stored child, trying the keys in order (each stored
 * child is claimed once; earlier reported children win). Returns, per reported child, the stored
 * one or undefined (a new child).
 */
export function matchChildren<I, S>(reported: I[], stored: S[], keys: Array<MatchKey<I, S>>): Array<S | undefined> {
  const result: Array<S | undefined> = new Array(reported.length).fill(undefined);
  const claimed = new Set<S>();
  for (const [reportedKey, storedKey] of keys) {
    const index = new Map<string, S[]>();
    for (const s of stored) {
      const k = storedKey(s);
      if (k === null || claimed.has(s)) continue;
      const list = index.get(k);
      if (list) list.push(s);
      else index.set(k, [s]);
    }
    reported.forEach((r, n) => {
      if (result[n] !== undefined) return;
      const k = reportedKey(r);
      const candidate = k === null ? undefined : index.get(k)?.find((s) => !claimed.has(s));
      if (candidate !== undefined) {
        result[n] = candidate;
        claimed.add(candidate);
      }
    });
  }
  return result;
}

export interface BindingFact {
  id: string;
  service_id: string;
  type: 'Port' | 'IPAddress';
  port_id: string | null;
  ip_address_id: string | null;
}

/**
 * The reported bindings that can join the stored ones of a host under the binding rules
 * (bindings/rules.ts): a port is bound by one service of the host; within a service an IPAddress
 * binding and a Port binding on the same address (or on all addresses) exclude each other. A
 * reported binding that breaks a rule is dropped (discovery never fails a whole host over one), and
 * one identical to a stored binding is that binding. Returns, per reported binding, the stored
 * binding it is, itself (to add), or null (dropped).
 */
export function acceptBindings(stored: BindingFact[], reported: BindingFact[]): Array<BindingFact | null> {
  const key = (b: BindingFact) => `${b.service_id}|${b.type}|${b.port_id}|${b.ip_address_id}`;
  const byKey = new Map(stored.map((b) => [key(b), b]));
  const all = [...stored];
  const portOwner = new Map(stored.filter((b) => b.type === 'Port').map((b) => [b.port_id!, b.service_id]));
  return reported.map((b) => {
    const same = byKey.get(key(b));
    if (same) return same;
    const mine = all.filter((x) => x.service_id === b.service_id);
    if (b.type === 'Port') {
      const owner = portOwner.get(b.port_id!);
      if (owner !== undefined && owner !== b.service_id) return null;
      if (mine.some((x) => x.type === 'IPAddress' && (b.ip_address_id === null || x.ip_address_id === b.ip_address_id))) return null;
      portOwner.set(b.port_id!, b.service_id);
    } else if (mine.some((x) => x.type === 'Port' && (x.ip_address_id === null || x.ip_address_id === b.ip_address_id))) {
      return null;
    }
    all.push(b);
    byKey.set(key(b), b);
    return b;
  });
}

/** Reported binding → facts on the stored side (ids already translated); null when a target is unknown. */
export function bindingFacts(b: DiscoveredBinding, serviceId: string, portId: (id: string) => string | undefined, ipId: (id: string) => string | undefined): BindingFact | null {
  const port = b.port_id ? portId(b.port_id) : null;
  const ip = b.ip_address_id ? ipId(b.ip_address_id) : null;
  if (port === undefined || ip === undefined) return null;
  if (b.type === 'Port' && !port) return null;
  if (b.type === 'IPAddress' && !ip) return null;
  return { id: b.id, service_id: serviceId, type: b.type, port_id: b.type === 'Port' ? port : null, ip_address_id: ip };
}

// ---- Batches: which reports of a batch go together -------------------------------------------

/** Reports that share no identity key (id, MAC, subnet+IP) with any other report of the batch. */
export function loneReports<R>(reports: R[], keysOf: (r: R) => string[]): R[] {
  const uses = new Map<string, number>();
  for (const r of reports) for (const k of new Set(keysOf(r))) uses.set(k, (uses.get(k) ?? 0) + 1);
  return reports.filter((r) => keysOf(r).every((k) => uses.get(k) === 1));
}

/**
 * The next round of a batch: the reports, in order, that share no identity key with an earlier
 * pending report (a later report of one machine waits until the earlier one is stored); `later`
 * keeps the others, in order.
 */
export function nextRound<R>(pending: R[], keysOf: (r: R) => string[]): { round: R[]; later: R[] } {
  const seen = new Set<string>();
  const round: R[] = [];
  const later: R[] = [];
  for (const r of pending) {
    const keys = keysOf(r);
    (keys.some((k) => seen.has(k)) ? later : round).push(r);
    for (const k of keys) seen.add(k);
  }
  return { round, later };
}

/**
 * Reports of a round matched to stored hosts (`[report position, stored host id]`, any order):
 * the first report of each stored host keeps it; the positions of the others, which must wait for
 * a later round, are returned too.
 */
export function claimStoredHosts(found: Array<[number, string]>): { claimed: Map<number, string>; deferred: Set<number> } {
  const claimed = new Map<number, string>();
  const owners = new Set<string>();
  const deferred = new Set<number>();
  for (const [h, hostId] of [...found].sort((a, b) => a[0] - b[0])) {
    if (owners.has(hostId)) deferred.add(h);
    else {
      owners.add(hostId);
      claimed.set(h, hostId);
    }
  }
  return { claimed, deferred };
}

// ---- MACs and SNMP interfaces ---------------------------------------------------

/**
 * A locally administered MAC (bit 0x02 of the first octet): phones, laptops and VMs randomise
 * theirs per network or per day, so one is never identity alone (two machines may show it, one
 * machine drops it): hosts match by such a MAC neither across reports nor within a host.
 */
export function isLocallyAdministered(mac: string | null | undefined): boolean {
  return !!mac && (Number.parseInt(mac.slice(0, 2), 16) & 0x02) === 0x02;
}

/** The interface columns a discovery report may set (all but ids, ownership, `neighbor` and timestamps). */
export const IF_ENTRY_COLUMNS = [
  'ip_address_id', 'if_index', 'if_type', 'if_name', 'if_descr', 'if_alias', 'mac_address', 'speed_bps', 'admin_status', 'oper_status',
  'cdp_address', 'cdp_device_id', 'cdp_platform', 'cdp_port_id', 'lldp_chassis_id', 'lldp_mgmt_addr', 'lldp_port_desc', 'lldp_port_id',
  'lldp_sys_desc', 'lldp_sys_name', 'fdb_macs',
] as const;
const REPORTED_TEXT = IF_ENTRY_COLUMNS.filter((c) => c !== 'ip_address_id' && c !== 'if_index' && c !== 'fdb_macs');
/** Defaults of a new interface (the table's) for what its first report leaves out. */
const IF_ENTRY_DEFAULTS: Record<string, unknown> = { if_type: 1, if_descr: '', admin_status: 'Up', oper_status: 'Up' };

export interface ReportedIfEntry extends Record<string, unknown> {
  if_index: number;
  interface_id?: string | null;
  mac_address?: string | null;
  fdb_macs: string[] | null;
}

/**
 * A reported interface merged into the stored one of the same if_index (reference §2.2.8), pure:
 * a field the report leaves null or absent keeps the stored value; the forwarding table replaces the
 * stored one, or adds to it when its walk was cut short (`fdbPartial`), kept sorted. The address it
 * carries: the reported address it names (`interface_id`), else the host's address with its MAC,
 * else the stored link. Answers the columns of IF_ENTRY_COLUMNS.
 */
export function mergeIfEntry(
  reported: ReportedIfEntry, stored: Record<string, unknown> | undefined, linkTo: { byReportedId: (id: string) => string | undefined; byMac: (mac: string) => string | undefined },
  fdbPartial: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = { if_index: reported.if_index };
  for (const c of REPORTED_TEXT) out[c] = reported[c] ?? stored?.[c] ?? IF_ENTRY_DEFAULTS[c] ?? null;
  const storedFdb = (stored?.fdb_macs as string[] | undefined) ?? [];
  const fdb = reported.fdb_macs === null ? storedFdb : fdbPartial ? [...storedFdb, ...reported.fdb_macs] : reported.fdb_macs;
  out.fdb_macs = [...new Set(fdb)].sort();
  const mac = out.mac_address as string | null;
  out.ip_address_id = (reported.interface_id ? linkTo.byReportedId(reported.interface_id) : undefined)
    ?? (mac ? linkTo.byMac(mac) : undefined) ?? stored?.ip_address_id ?? null;
  return out;
}
