// Importing hosts from CSV into one network: the pure planning step. From the file's records and
// what the network holds now (ImportState, read by csvImportService.ts), `planImport` answers
// what would be created, changed and refused, without a database, so a dry run and a commit
// plan the same way (the commit re-plans inside its transaction and applies that plan).
// Unit-tested in test/hosts/csvImportPlan.spec.ts.
//
// Rules (README, "Importing hosts from CSV"):
// - a header row is required; its columns are CSV_COLUMNS in any order; `name` is required; an
//   unknown or repeated column refuses the whole file (CsvHeaderError);
// - the rows with one `name` are one host: each row may add an address (with its subnet and MAC),
//   ports, services and tags; hostname and description may be repeated but not contradicted;
// - a host named as one already in the network is changed, never replaced: the import only adds
//   (addresses, ports, services, tags; hostname/description when the cell differs); an empty cell
//   changes nothing; two hosts of that name in the network refuse its rows (which one?);
// - `subnet` names the address's subnet by CIDR: an existing one of the network, else it is
//   created; without it the smallest subnet of the network (or of the file) holding the address;
// - tags are named and must exist: they belong to the whole organization and only an Admin
//   creates them, while an import is a Member's write to one network;
// - a refused row is reported with its row (the header is row 1), column and reason; a commit
//   with any refused row stores nothing.
import { isIP } from 'node:net';
import { canonicalIp, type IpAddress, isNetworkCidr, networkOf, parseIp } from '../../core/ip.js';

export const CSV_COLUMNS = ['name', 'hostname', 'description', 'address', 'subnet', 'mac', 'ports', 'services', 'tags'] as const;
export type CsvColumn = typeof CSV_COLUMNS[number];
/** Rows after the header. */
export const MAX_IMPORT_ROWS = 5000;
/** Refusals listed in an answer (all are counted). */
export const MAX_LISTED_REFUSALS = 200;
const MAX_NAME = 100;
const MAX_HOSTNAME = 253;
const MAX_DESCRIPTION = 500;
const MAX_ADDRESSES_PER_HOST = 1000;
const MAX_SERVICES_PER_HOST = 1000;

export type Protocol = 'Tcp' | 'Udp';

/** What the network holds now, as far as the file's rows concern it. */
export interface ImportState {
  /** The network's hosts whose name is in the file. */
  hosts: ExistingHost[];
  /** Every subnet of the network. */
  subnets: Array<{ id: string; cidr: string }>;
  /** The organization's tags. */
  tags: Array<{ id: string; name: string }>;
  /** Addresses of the network whose IP is in the file, with their host. */
  addresses: Array<{ ip_address: string; subnet_id: string; host_id: string; host_name: string }>;
}

export interface ExistingHost {
  id: string;
  name: string;
  hostname: string | null;
  description: string | null;
  tags: string[];
  updated_at: string;
  ip_addresses: Array<{ id: string; ip_address: string; subnet_id: string; mac_address: string | null }>;
  ports: Array<{ number: number; protocol: Protocol }>;
  services: Array<{ name: string }>;
}

/** An address's subnet: an existing one, or one the import creates. */
export type SubnetRef = { id: string; cidr: string } | { id: null; cidr: string };

export interface PlannedAddress { ip_address: string; subnet: SubnetRef; mac_address: string | null }
export interface PlannedPort { number: number; protocol: Protocol }

export interface HostToCreate {
  name: string;
  rows: number[];
  hostname: string | null;
  description: string | null;
  tags: Array<{ id: string; name: string }>;
  ip_addresses: PlannedAddress[];
  ports: PlannedPort[];
  services: string[];
}

export interface HostToChange {
  id: string;
  name: string;
  rows: number[];
  /** The state the plan was made from: the commit's update is refused (409) if it moved since. */
  updated_at: string;
  hostname?: { from: string | null; to: string };
  description?: { from: string | null; to: string };
  add_ip_addresses: PlannedAddress[];
  /** A MAC set or changed on an address the host already has. */
  mac_changes: Array<{ ip_address: string; subnet: SubnetRef; address_id: string; from: string | null; to: string }>;
  add_ports: PlannedPort[];
  add_services: string[];
  add_tags: Array<{ id: string; name: string }>;
}

export interface Refusal { row: number; column: CsvColumn | null; value: string | null; message: string }

export interface ImportPlan {
  /** Rows read after the header. */
  rows: number;
  subnets_to_create: string[];
  create: HostToCreate[];
  change: HostToChange[];
  unchanged: Array<{ id: string; name: string; rows: number[] }>;
  /** Every refusal, in row order (an answer lists the first MAX_LISTED_REFUSALS). */
  refused: Refusal[];
}

/** The header is not usable: the whole file is refused (400). */
export class CsvHeaderError extends Error {}

/** The header's column of each cell; refuses unknown and repeated columns and a missing `name`. */
export function columnsOf(header: string[]): CsvColumn[] {
  const known = new Set<string>(CSV_COLUMNS);
  const columns = header.map((h) => h.trim().toLowerCase());
  const unknown = columns.filter((c) => !known.has(c));
  if (unknown.length) {
    throw new CsvHeaderError(`unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((c) => `'${c}'`).join(', ')} in the header row; the columns are ${CSV_COLUMNS.join(', ')}`);
  }
  const repeated = columns.find((c, i) => columns.indexOf(c) !== i);
  if (repeated) throw new CsvHeaderError(`column '${repeated}' appears twice in the header row`);
  if (!columns.includes('name')) throw new CsvHeaderError(`the header row has no 'name' column (required); the columns are ${CSV_COLUMNS.join(', ')}`);
  return columns as CsvColumn[];
}

export interface ImportRow {
  row: number;
  cells: Partial<Record<CsvColumn, string>>;
  /** The record has more or fewer fields than the header: refused with this reason. */
  fieldCount?: string;
}

/** Records (header first, as parseCsv reads them) into rows keyed by column. */
export function rowsOf(records: Array<{ row: number; cells: string[] }>): { columns: CsvColumn[]; rows: ImportRow[] } {
  const [header, ...data] = records;
  if (!header) throw new CsvHeaderError('the file is empty: a header row is required (name, and any of ' + CSV_COLUMNS.slice(1).join(', ') + ')');
  const columns = columnsOf(header.cells);
  return {
    columns,
    rows: data.map((r) => ({
      row: r.row,
      cells: Object.fromEntries(columns.map((c, i) => [c, r.cells[i] ?? ''])),
      fieldCount: r.cells.length === columns.length ? undefined
        : `has ${r.cells.length} field${r.cells.length === 1 ? '' : 's'}, the header has ${columns.length} (a value holding a comma goes in double quotes)`,
    })),
  };
}

/** `aa-bb-cc-dd-ee-ff`, `aabb.ccdd.eeff` or `AA:BB:…` → `AA:BB:CC:DD:EE:FF`; null if not a MAC. */
export function normalizeMac(text: string): string | null {
  const shapes = [/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i, /^[0-9a-f]{2}(-[0-9a-f]{2}){5}$/i, /^[0-9a-f]{4}(\.[0-9a-f]{4}){2}$/i, /^[0-9a-f]{12}$/i];
  if (!shapes.some((shape) => shape.test(text))) return null;
  return text.replace(/[:\-.]/g, '').toUpperCase().match(/../g)!.join(':');
}

/** `22/tcp`, `53/UDP`, `8080` (TCP) → a port; null when not one. */
export function parsePort(text: string): PlannedPort | null {
  const m = /^(\d{1,5})(?:\/(tcp|udp))?$/i.exec(text.trim());
  if (!m) return null;
  const number = Number(m[1]);
  if (number > 65535) return null;
  return { number, protocol: (m[2]?.toLowerCase() ?? 'tcp') === 'udp' ? 'Udp' : 'Tcp' };
}

export const portText = (p: PlannedPort) => `${p.number}/${p.protocol.toLowerCase()}`;
const list = (cell: string | undefined) => (cell ?? '').split(';').map((x) => x.trim()).filter(Boolean);

class Subnets {
  private readonly byCidr = new Map<string, SubnetRef>();
  constructor(existing: Array<{ id: string; cidr: string }>, declared: string[]) {
    for (const s of existing) this.byCidr.set(networkOf(s.cidr), { id: s.id, cidr: networkOf(s.cidr) });
    for (const cidr of declared) if (!this.byCidr.has(cidr)) this.byCidr.set(cidr, { id: null, cidr });
  }
  get(cidr: string): SubnetRef | undefined { return this.byCidr.get(cidr); }
  /** The smallest subnet holding `ip` (the most specific: a /24 inside a /16). */
  smallestHolding(ip: string): SubnetRef | undefined {
    const address = parseIp(ip);
    let best: SubnetRef | undefined;
    let bestPrefix = -1;
    for (const ref of this.byCidr.values()) {
      const prefix = this.network(ref.cidr)[1];
      if (prefix > bestPrefix && this.holds(ref.cidr, address)) { best = ref; bestPrefix = prefix; }
    }
    return best;
  }
  contains(cidr: string, ip: string): boolean { return this.holds(cidr, parseIp(ip)); }
  /** False across families (an IPv6 address is in no IPv4 subnet). */
  private holds(cidr: string, address: IpAddress): boolean {
    const [network, prefix] = this.network(cidr);
    return network.kind() === address.kind() && address.match(network, prefix);
  }
  private readonly networks = new Map<string, [IpAddress, number]>();
  /** Parsed once per subnet: every row of the file asks every subnet. */
  private network(cidr: string): [IpAddress, number] {
    let parsed = this.networks.get(cidr);
    if (!parsed) {
      const [address = '', prefix = ''] = cidr.split('/');
      parsed = [parseIp(address), Number(prefix)];
      this.networks.set(cidr, parsed);
    }
    return parsed;
  }
}

/** A CIDR cell: the canonical network, or why not. */
function parseCidr(text: string): { cidr: string } | { error: string } {
  const [address = '', prefix, extra] = text.split('/');
  const version = isIP(address);
  if (!version || prefix === undefined || extra !== undefined || !/^\d{1,3}$/.test(prefix) || Number(prefix) > (version === 6 ? 128 : 32)) {
    return { error: `'${text}' is not a CIDR (e.g. 10.0.1.0/24)` };
  }
  if (!isNetworkCidr(text)) return { error: `${text} has host bits set: did you mean ${networkOf(text)}?` };
  return { cidr: networkOf(text) };
}

const subnetKey = (ref: SubnetRef) => ref.id ?? `new:${ref.cidr}`;

interface Group {
  name: string;
  rows: number[];
  existing?: ExistingHost;
  hostname?: { value: string; row: number };
  description?: { value: string; row: number };
  addresses: Map<string, PlannedAddress & { row: number }>;
  ports: Map<string, PlannedPort>;
  services: Set<string>;
  tags: Map<string, { id: string; name: string }>;
}

/** The plan for `rows` against `state`: pure, deterministic (groups in the order of their first row). */
export function planImport(rows: ImportRow[], state: ImportState): ImportPlan {
  const refused: Refusal[] = [];
  // Every subnet the file names, so an address without a `subnet` cell may fall in one created by another row.
  const declared = new Set<string>();
  for (const r of rows) {
    const cell = r.cells.subnet?.trim();
    if (!cell) continue;
    const parsed = parseCidr(cell);
    if ('cidr' in parsed) declared.add(parsed.cidr);
  }
  const subnets = new Subnets(state.subnets, [...declared]);
  const tagsByName = new Map<string, Array<{ id: string; name: string }>>();
  for (const t of state.tags) tagsByName.set(t.name.toLowerCase(), [...(tagsByName.get(t.name.toLowerCase()) ?? []), t]);
  const hostsByName = new Map<string, ExistingHost[]>();
  for (const h of state.hosts) hostsByName.set(h.name, [...(hostsByName.get(h.name) ?? []), h]);
  // Who holds an address now: subnet id + IP → host.
  const held = new Map(state.addresses.map((a) => [`${a.subnet_id}|${canonicalIp(a.ip_address)}`, a]));
  // Who takes an address in this file: subnet key + IP → host name and row.
  const claimed = new Map<string, { name: string; row: number }>();
  const groups = new Map<string, Group>();
  const subnetsUsed = new Set<string>();

  for (const r of rows) {
    const errors: Refusal[] = [];
    const refuse = (column: CsvColumn | null, value: string | null, message: string) => errors.push({ row: r.row, column, value, message });
    const cell = (c: CsvColumn) => (r.cells[c] ?? '').trim();
    if (r.fieldCount) refuse(null, null, r.fieldCount);
    const name = cell('name');
    if (!name) refuse('name', null, 'is empty: every row names its host');
    else if (name.length > MAX_NAME) refuse('name', name, `is longer than ${MAX_NAME} characters`);
    const hostname = cell('hostname');
    if (hostname.length > MAX_HOSTNAME) refuse('hostname', hostname, `is longer than ${MAX_HOSTNAME} characters`);
    const description = cell('description');
    if (description.length > MAX_DESCRIPTION) refuse('description', description, `is longer than ${MAX_DESCRIPTION} characters`);

    const address = cell('address');
    const subnetCell = cell('subnet');
    const macCell = cell('mac');
    let ip: string | undefined;
    if (address) {
      if (isIP(address)) ip = canonicalIp(address);
      else refuse('address', address, `'${address}' is not an IP address (a subnet goes in the subnet column)`);
    }
    let subnet: SubnetRef | undefined;
    if (subnetCell) {
      const parsed = parseCidr(subnetCell);
      if ('error' in parsed) refuse('subnet', subnetCell, parsed.error);
      else if (!address) refuse('subnet', subnetCell, 'is given without an address: a subnet is the address\'s (add subnets with POST /api/v1/subnets)');
      else if (ip) {
        subnet = subnets.get(parsed.cidr)!;
        if (!subnets.contains(parsed.cidr, ip)) { refuse('address', address, `${ip} is outside its subnet ${parsed.cidr}`); subnet = undefined; }
      }
    } else if (ip) {
      subnet = subnets.smallestHolding(ip);
      if (!subnet) refuse('address', address, `no subnet of this network holds ${ip}: name its subnet in the subnet column (e.g. ${networkOf(`${ip}/${isIP(ip) === 6 ? 64 : 24}`)}), which the import then creates`);
    }
    let mac: string | null = null;
    if (macCell) {
      mac = normalizeMac(macCell);
      if (!mac) refuse('mac', macCell, `'${macCell}' is not a MAC address (e.g. AA:BB:CC:DD:EE:FF)`);
      else if (!address) { refuse('mac', macCell, 'is given without an address: a MAC belongs to one of the host\'s addresses'); mac = null; }
    }
    const ports: PlannedPort[] = [];
    for (const p of list(r.cells.ports)) {
      const port = parsePort(p);
      if (port) ports.push(port);
      else refuse('ports', r.cells.ports ?? '', `'${p}' is not a port (e.g. 22/tcp, 53/udp; several separated by ;)`);
    }
    const services = list(r.cells.services);
    for (const s of services) if (s.length > MAX_NAME) refuse('services', s, `service name '${s.slice(0, 20)}…' is longer than ${MAX_NAME} characters`);
    const tags: Array<{ id: string; name: string }> = [];
    for (const t of list(r.cells.tags)) {
      const found = tagsByName.get(t.toLowerCase()) ?? [];
      const exact = found.filter((x) => x.name === t);
      const tag = exact.length === 1 ? exact[0] : found.length === 1 ? found[0] : undefined;
      if (tag) tags.push(tag);
      else if (found.length > 1) refuse('tags', t, `tag '${t}' matches ${found.length} tags that differ only in case: write it exactly`);
      else refuse('tags', t, `no tag is named '${t}': an Admin creates tags (Tags, or POST /api/v1/tags); the import does not`);
    }

    // The host the row adds to.
    let group: Group | undefined;
    if (name && name.length <= MAX_NAME) {
      const same = hostsByName.get(name) ?? [];
      if (same.length > 1) refuse('name', name, `${same.length} hosts of this network are named '${name}': the import cannot tell which one to change (rename one first)`);
      group = groups.get(name) ?? { name, rows: [], existing: same.length === 1 ? same[0] : undefined, addresses: new Map(), ports: new Map(), services: new Set(), tags: new Map() };
      if (group.hostname && hostname && hostname !== group.hostname.value) refuse('hostname', hostname, `row ${group.hostname.row} gave this host the hostname '${group.hostname.value}'`);
      if (group.description && description && description !== group.description.value) refuse('description', description, `row ${group.description.row} gave this host another description`);
      if (ip && subnet) {
        const key = `${subnetKey(subnet)}|${ip}`;
        const other = claimed.get(key);
        const holder = subnet.id ? held.get(`${subnet.id}|${ip}`) : undefined;
        const mine = group.addresses.get(key);
        if (holder && holder.host_id !== group.existing?.id) refuse('address', address, `${ip} in ${subnet.cidr} is held by host '${holder.host_name}' (${holder.host_id}): one address is on one host per subnet`);
        else if (other && other.name !== name) refuse('address', address, `${ip} in ${subnet.cidr} is given to host '${other.name}' on row ${other.row}: one address is on one host per subnet`);
        else if (mine && mine.mac_address && mac && mine.mac_address !== mac) refuse('mac', macCell, `row ${mine.row} gave ${ip} the MAC ${mine.mac_address}`);
        else if (!mine && group.addresses.size >= MAX_ADDRESSES_PER_HOST) refuse('address', address, `host '${name}' would have more than ${MAX_ADDRESSES_PER_HOST} addresses`);
      }
      if (group.services.size + services.length > MAX_SERVICES_PER_HOST) refuse('services', r.cells.services ?? '', `host '${name}' would have more than ${MAX_SERVICES_PER_HOST} services`);
    }
    if (errors.length || !group) {
      refused.push(...errors);
      continue;
    }
    // The row is accepted: it adds to its host.
    groups.set(name, group);
    group.rows.push(r.row);
    if (hostname) group.hostname ??= { value: hostname, row: r.row };
    if (description) group.description ??= { value: description, row: r.row };
    if (ip && subnet) {
      const key = `${subnetKey(subnet)}|${ip}`;
      claimed.set(key, { name, row: r.row });
      const mine = group.addresses.get(key);
      if (mine) mine.mac_address ??= mac;
      else group.addresses.set(key, { ip_address: ip, subnet, mac_address: mac, row: r.row });
      if (!subnet.id) subnetsUsed.add(subnet.cidr);
    }
    for (const p of ports) group.ports.set(portText(p), p);
    for (const s of services) group.services.add(s);
    for (const t of tags) group.tags.set(t.id, t);
  }

  const plan: ImportPlan = { rows: rows.length, subnets_to_create: [...subnetsUsed], create: [], change: [], unchanged: [], refused };
  for (const g of groups.values()) {
    const addresses = [...g.addresses.values()].map(({ row: _row, ...a }) => a);
    if (!g.existing) {
      plan.create.push({
        name: g.name, rows: g.rows, hostname: g.hostname?.value ?? null, description: g.description?.value ?? null,
        tags: [...g.tags.values()], ip_addresses: addresses, ports: [...g.ports.values()], services: [...g.services],
      });
      continue;
    }
    const h = g.existing;
    const change: HostToChange = {
      id: h.id, name: h.name, rows: g.rows, updated_at: h.updated_at,
      add_ip_addresses: [], mac_changes: [], add_ports: [], add_services: [], add_tags: [],
    };
    if (g.hostname && g.hostname.value !== h.hostname) change.hostname = { from: h.hostname, to: g.hostname.value };
    if (g.description && g.description.value !== h.description) change.description = { from: h.description, to: g.description.value };
    const own = new Map(h.ip_addresses.map((a) => [`${a.subnet_id}|${canonicalIp(a.ip_address)}`, a]));
    for (const a of addresses) {
      const current = a.subnet.id ? own.get(`${a.subnet.id}|${a.ip_address}`) : undefined;
      if (!current) change.add_ip_addresses.push(a);
      else if (a.mac_address && a.mac_address !== current.mac_address) {
        change.mac_changes.push({ ip_address: a.ip_address, subnet: a.subnet, address_id: current.id, from: current.mac_address, to: a.mac_address });
      }
    }
    const ownPorts = new Set(h.ports.map(portText));
    change.add_ports = [...g.ports.values()].filter((p) => !ownPorts.has(portText(p)));
    const ownServices = new Set(h.services.map((s) => s.name));
    change.add_services = [...g.services].filter((s) => !ownServices.has(s));
    const ownTags = new Set(h.tags);
    change.add_tags = [...g.tags.values()].filter((t) => !ownTags.has(t.id));
    const changes = (change.hostname ? 1 : 0) + (change.description ? 1 : 0) + change.add_ip_addresses.length + change.mac_changes.length
      + change.add_ports.length + change.add_services.length + change.add_tags.length;
    if (changes) plan.change.push(change);
    else plan.unchanged.push({ id: h.id, name: h.name, rows: g.rows });
  }
  return plan;
}
