// The network drawn as a graph: pure functions from one instant's inventory (a
// Snapshot, read by service.ts) to the nodes and edges of a view. No I/O here, so every rule is
// unit-testable and the same code draws the live network and any past instant.
//
// Ids are derived from entity ids (`<kind>:<entity id>`), so a client can diff two answers and keep
// its positions. Views (Scanopy's four, reference topology-peers.md §1):
//   l3         subnets holding one node per IP address, with the services bound there
//   workloads  hosts holding their services; hypervisor / container-runtime edges
//   application  application tags holding the services that carry them
//   l2         hosts holding their interfaces; physical links from LLDP/CDP neighbour data and
//              switches' forwarding tables
// Dependencies are edges in every view where their member services are drawn. What each view reads
// (tables, columns) and the node kinds it draws are declared in declaration.ts, which the service's
// SQL is derived from.
import { createHash } from 'node:crypto';
import { groupBy } from '../../core/historyTable.js';
import { hostKindIn } from './hostKind.js';
import { SNAPSHOT_TABLES, VIEW_DECLARATIONS, type SnapshotTable, type View } from './declaration.js';

export { VIEWS, type View } from './declaration.js';

type Row = Record<string, any>;

/** One instant's inventory: each table's rows, with the columns declaration.ts declares. */
export type Snapshot = Record<SnapshotTable, Row[]>;

export interface GraphNode {
  id: string;
  kind: string;
  entity_id: string | null;
  parent_id: string | null;
  label: string;
  [field: string]: unknown;
}

export interface GraphEdge {
  id: string;
  kind: string;
  source: string;
  target: string;
  [field: string]: unknown;
}

export interface GraphOptions {
  tagIds?: string[];
  includeHidden?: boolean;
  maxNodes: number;
  expand?: string[];
  /** Hosts the last completed scan found new: their nodes say so (`new`). */
  newHostIds?: string[];
}

export interface FilteredOut {
  hidden_hosts: number;
  hosts_without_tag: number;
  collapsed_containers: number;
  collapsed_nodes: number;
  /** Element nodes still over max_nodes once every container is collapsed (none are dropped). */
  over_budget: number;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  filtered_out: FilteredOut;
}

/** A comparator over columns, in order (ids last, so every order is total). */
const byKeys = (...keys: string[]) => (a: Row, b: Row) => {
  for (const k of keys) {
    const x = a[k] ?? '';
    const y = b[k] ?? '';
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
};

/** The hosts drawn: hidden ones only when asked, and with `tagIds` only those carrying one of them. */
function visibleHosts(s: Snapshot, o: GraphOptions, out: FilteredOut): Row[] {
  const tags = o.tagIds?.length ? new Set(o.tagIds) : undefined;
  return s.hosts.filter((h) => {
    if (h.hidden && !o.includeHidden) {
      out.hidden_hosts += 1;
      return false;
    }
    if (tags && !(h.tags as string[] ?? []).some((t) => tags.has(t))) {
      out.hosts_without_tag += 1;
      return false;
    }
    return true;
  });
}

/** A service's member ids of a dependency, in order (binding members stand for their service). */
function dependencyServices(dep: Row, serviceOfBinding: Map<string, string>): string[] {
  const m = dep.members ?? {};
  const ids: string[] = m.type === 'Bindings'
    ? (m.binding_ids ?? []).map((b: string) => serviceOfBinding.get(b)).filter(Boolean)
    : m.service_ids ?? [];
  return [...new Set(ids)]; // first occurrences, in order (indexOf per member was quadratic: 10^6 steps at 1,000 members)
}

/** Why a member service of a dependency is not drawn in a view. */
function whyNotDrawn(host: Row | undefined, shown: Set<string>): string {
  if (host && !shown.has(host.id)) return host.hidden ? 'hidden host' : 'filtered out';
  return 'not in this view';
}

/**
 * Dependency edges between the nodes where member services are drawn (`nodeOfService`). A member
 * not drawn is never skipped over (that drew edges which do not exist: a hidden hub's spokes joined
 * to each other, a path's A->C without B): a hub, or a path member, not drawn becomes a ghost node
 * (`ghost:<service id>`, with its `reason`); a spoke not drawn just has no edge.
 */
function dependencyEdges(s: Snapshot, nodeOfService: Map<string, string>, hosts: Row[]): { nodes: GraphNode[]; edges: GraphEdge[] } {
  if (!s.dependencies.length) return { nodes: [], edges: [] };
  const serviceOfBinding = new Map(s.bindings.map((b) => [b.id as string, b.service_id as string]));
  const serviceById = new Map(s.services.map((x) => [x.id as string, x]));
  const hostById = new Map(s.hosts.map((h) => [h.id as string, h]));
  const shown = new Set(hosts.map((h) => h.id as string));
  const ghosts = new Map<string, GraphNode>();
  const edges: GraphEdge[] = [];
  const endOf = (id: string): string => {
    const drawn = nodeOfService.get(id);
    if (drawn) return drawn;
    const svc = serviceById.get(id)!;
    const host = hostById.get(svc.host_id);
    const reason = whyNotDrawn(host, shown);
    const ghost = ghosts.get(id) ?? { id: `ghost:${id}`, kind: 'ghost', entity_id: id, parent_id: null, label: `${svc.name} · ${host?.name ?? '?'} (${reason})`, reason, service_id: id, service_host_id: svc.host_id };
    ghosts.set(id, ghost);
    return ghost.id;
  };
  for (const dep of s.dependencies) {
    // Members this snapshot does not hold (another network's, or not read) are left out.
    const members = dependencyServices(dep, serviceOfBinding).filter((id) => serviceById.has(id));
    if (!members.some((id) => nodeOfService.has(id))) continue;
    const hub = dep.dependency_type === 'HubAndSpoke';
    // [from, to, step]: a path's edge i joins member i and i + 1, in its order.
    const pairs: Array<[string, string, number]> = hub
      ? members.slice(1).filter((m) => nodeOfService.has(m)).map((m) => [members[0]!, m, 0])
      : members.slice(1).map((m, i) => [members[i]!, m, i + 1]);
    for (const [from, to, step] of pairs) {
      edges.push({
        id: `dependency:${dep.id}:${from}:${to}`,
        kind: hub ? 'hub_and_spoke' : 'request_path',
        source: endOf(from),
        target: endOf(to),
        dependency_id: dep.id,
        label: dep.name,
        color: dep.color,
        edge_style: dep.edge_style,
        source_service_id: from,
        target_service_id: to,
        ...(hub ? {} : { step }),
      });
    }
  }
  return { nodes: [...ghosts.values()], edges };
}

function sortedGroups(rows: Row[], key: string, order: (a: Row, b: Row) => number): Map<string, Row[]> {
  const groups = groupBy(rows, key);
  for (const list of groups.values()) list.sort(order);
  return groups;
}

/** Quiet hosts of a subnet fold into one summary node from this many on (fewer read fine one by one). */
export const FOLD_MIN = 8;

/**
 * What a summary card says besides its count: its hosts by kind (most first) and how
 * many are offline (completed scans no longer see them) or new (found by the last scan).
 */
function cardOf(s: Snapshot, hosts: Row[], newHostIds: string[] | undefined) {
  const kinds: Record<string, number> = {};
  for (const h of hosts) {
    const kind = hostKindIn(s, h.id) ?? 'host';
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  const fresh = new Set(newHostIds ?? []);
  return {
    host_kinds: Object.fromEntries(Object.entries(kinds).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))),
    offline_count: hosts.filter((h) => h.offline_at != null).length,
    new_count: hosts.filter((h) => h.offline_at == null && fresh.has(h.id)).length,
  };
}

/**
 * The summary nodes (l3 and workloads): per subnet, its hosts with one
 * address there and no service (so in no dependency), when at least FOLD_MIN, as one node listing
 * them (names, ids, addresses: search and the host list still find them) with what its card says
 * (cardOf); `expand=summary:<subnet id>` draws them one by one. `parentOf`: the node a summary
 * lies in (l3: its subnet; workloads: none).
 */
function quietFolds(s: Snapshot, hosts: Row[], ipsOf: Map<string, Row[]>, servicesOf: Map<string, Row[]>, o: GraphOptions, parentOf: (subnetId: string) => string | null, quietToo: (host: Row) => boolean = () => true) {
  const open = new Set(o.expand ?? []);
  const subnets = new Map(s.subnets.map((x) => [x.id as string, x]));
  const bySubnet = new Map<string, Array<{ host: Row; ip: Row }>>();
  for (const host of hosts) {
    const ips = ipsOf.get(host.id) ?? [];
    if (ips.length !== 1 || servicesOf.get(host.id)?.length || !subnets.has(ips[0]!.subnet_id) || !quietToo(host)) continue;
    const list = bySubnet.get(ips[0]!.subnet_id) ?? bySubnet.set(ips[0]!.subnet_id, []).get(ips[0]!.subnet_id)!;
    list.push({ host, ip: ips[0]! });
  }
  const folded = new Set<string>();
  const nodes: GraphNode[] = [];
  for (const [subnetId, quiet] of bySubnet) {
    if (quiet.length < FOLD_MIN || open.has(`summary:${subnetId}`)) continue;
    for (const q of quiet) folded.add(q.host.id);
    const subnet = subnets.get(subnetId)!;
    nodes.push({
      id: `summary:${subnetId}`, kind: 'summary', entity_id: subnetId, parent_id: parentOf(subnetId),
      label: `${quiet.length} hosts · ${subnet.cidr}`, counts: { host: quiet.length }, cidr: subnet.cidr, subnet_name: subnet.name || subnet.cidr,
      ...cardOf(s, quiet.map((q) => q.host), o.newHostIds),
      hosts: quiet.map((q) => ({ id: q.host.id, name: q.host.name, hostname: q.host.hostname, ip_address_id: q.ip.id, ip_address: q.ip.ip_address })),
    });
  }
  return { folded, nodes };
}

function l3(s: Snapshot, hosts: Row[], o: GraphOptions): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const subnetIds = new Set<string>();
  for (const sub of s.subnets) {
    subnetIds.add(sub.id);
    nodes.push({ id: `subnet:${sub.id}`, kind: 'subnet', entity_id: sub.id, parent_id: null, label: sub.name || sub.cidr, cidr: sub.cidr, name: sub.name, subnet_type: sub.subnet_type });
  }
  // Grouped first, then each host's few rows sorted: a sort of every row costs more than the drawing.
  const ipsOf = sortedGroups(s.ipAddresses, 'host_id', byKeys('position', 'id'));
  const servicesOf = sortedGroups(s.services, 'host_id', byKeys('position', 'id'));
  const bindingsOf = groupBy(s.bindings, 'service_id');
  const port = new Map(s.ports.map((p) => [p.id as string, p]));
  const nodeOfService = new Map<string, string>();
  const folds = quietFolds(s, hosts, ipsOf, servicesOf, o, (subnetId) => `subnet:${subnetId}`);
  nodes.push(...folds.nodes);
  for (const host of hosts) {
    if (folds.folded.has(host.id)) continue;
    const ips = ipsOf.get(host.id) ?? [];
    const listed = new Map<string, Row[]>(ips.map((ip) => [ip.id, []])); // address id → services drawn on it
    const boundTo = new Map<string, Set<Row>>(); // address id → services bound to that address by name
    for (const svc of servicesOf.get(host.id) ?? []) {
      const bindings = bindingsOf.get(svc.id) ?? [];
      const ports = bindings.filter((b) => b.type === 'Port' && port.has(b.port_id)).map((b) => {
        const p = port.get(b.port_id)!;
        return { number: p.number, protocol: p.protocol };
      });
      const entry = { id: svc.id, name: svc.name, service_definition: svc.service_definition, ports, ...(svc.offline_at != null ? { offline: true } : {}) };
      // Where it is drawn: the addresses it is bound to; a port binding without one means every
      // address of the host; no binding at all, the host's first address.
      const on = new Set<string>();
      for (const b of bindings) {
        if (b.ip_address_id && listed.has(b.ip_address_id)) {
          on.add(b.ip_address_id);
          boundTo.set(b.ip_address_id, (boundTo.get(b.ip_address_id) ?? new Set()).add(svc));
        }
        else if (b.type === 'Port' && !b.ip_address_id) ips.forEach((ip) => on.add(ip.id));
      }
      if (!on.size && ips.length) on.add(ips[0]!.id);
      for (const ip of ips) if (on.has(ip.id)) listed.get(ip.id)!.push(entry);
      if (ips.length) {
        const first = ips.find((ip) => on.has(ip.id));
        if (first) nodeOfService.set(svc.id, `ip_address:${first.id}`);
      } else {
        nodeOfService.set(svc.id, `host:${host.id}`);
      }
    }
    if (!ips.length) {
      const services = (servicesOf.get(host.id) ?? []).map((svc) => ({ id: svc.id, name: svc.name, service_definition: svc.service_definition, ports: [] }));
      nodes.push({ id: `host:${host.id}`, kind: 'host', entity_id: host.id, parent_id: null, label: host.name, host_id: host.id, host_name: host.name, hostname: host.hostname, services, host_kind: hostKindIn(s, host.id) });
      continue;
    }
    ips.forEach((ip, i) => {
      // An address of one container (a service run under another, e.g. traefik under Docker) is
      // named by it: seven addresses of docker-01 all read "docker-01" otherwise.
      const only = boundTo.get(ip.id)?.size === 1 ? [...boundTo.get(ip.id)!][0]! : undefined;
      const under = only && runsUnder(only.virtualization);
      nodes.push({
        ...(under && under !== only.id ? { workload: only.name } : {}),
        id: `ip_address:${ip.id}`, kind: 'ip_address', entity_id: ip.id,
        parent_id: subnetIds.has(ip.subnet_id) ? `subnet:${ip.subnet_id}` : null,
        label: `${host.name} ${ip.ip_address}`, host_id: host.id, host_name: host.name, ip_address: ip.ip_address, host_kind: hostKindIn(s, host.id),
        services: listed.get(ip.id),
      });
      if (i > 0) {
        const prev = ips[i - 1]!;
        edges.push({ id: `same_host:${prev.id}:${ip.id}`, kind: 'same_host', source: `ip_address:${prev.id}`, target: `ip_address:${ip.id}`, host_id: host.id });
      }
    });
  }
  const deps = dependencyEdges(s, nodeOfService, hosts);
  return { nodes: [...nodes, ...deps.nodes], edges: [...edges, ...deps.edges] };
}

/** `virtualization.details.service_id`, as Scanopy daemons report the service a VM or container runs under. */
const runsUnder = (v: any): string | undefined => (typeof v?.details?.service_id === 'string' ? v.details.service_id : undefined);

function workloads(s: Snapshot, hosts: Row[], o: GraphOptions): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const shown = new Set(hosts.map((h) => h.id as string));
  const services = [...s.services].sort(byKeys('position', 'id')).filter((svc) => shown.has(svc.host_id));
  const nodeOfService = new Map(services.map((svc) => [svc.id as string, `service:${svc.id}`]));
  // Quiet hosts (no service, one address, not a VM of a drawn service) fold per subnet, as in l3:
  // 96 workstations were 96 boxes of "ws-…" at Fit.
  const folds = quietFolds(s, hosts, groupBy(s.ipAddresses, 'host_id'), groupBy(services, 'host_id'), o, () => null, (h) => !nodeOfService.has(runsUnder(h.virtualization) ?? ''));
  nodes.push(...folds.nodes);
  for (const host of hosts) {
    if (folds.folded.has(host.id)) continue;
    nodes.push({ id: `host:${host.id}`, kind: 'host', entity_id: host.id, parent_id: null, label: host.name, hostname: host.hostname, host_kind: hostKindIn(s, host.id) });
    const under = runsUnder(host.virtualization);
    if (under && nodeOfService.has(under)) {
      edges.push({ id: `hypervisor:${under}:${host.id}`, kind: 'hypervisor', source: `service:${under}`, target: `host:${host.id}` });
    }
  }
  for (const svc of services) {
    nodes.push({ id: `service:${svc.id}`, kind: 'service', entity_id: svc.id, parent_id: `host:${svc.host_id}`, label: svc.name, service_definition: svc.service_definition, host_id: svc.host_id });
    const under = runsUnder(svc.virtualization);
    if (under && under !== svc.id && nodeOfService.has(under)) {
      edges.push({ id: `container_runtime:${under}:${svc.id}`, kind: 'container_runtime', source: `service:${under}`, target: `service:${svc.id}` });
    }
  }
  const deps = dependencyEdges(s, nodeOfService, hosts);
  return { nodes: [...nodes, ...deps.nodes], edges: [...edges, ...deps.edges] };
}

function application(s: Snapshot, hosts: Row[]): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const apps = s.tags.filter((t) => t.is_application).sort((a, b) => String(a.name).localeCompare(String(b.name)) || String(a.id).localeCompare(String(b.id)));
  const appIds = new Set(apps.map((t) => t.id as string));
  const shown = new Set(hosts.map((h) => h.id as string));
  const hostName = new Map(hosts.map((h) => [h.id as string, h.name as string]));
  const nodes: GraphNode[] = [];
  const nodeOfService = new Map<string, string>();
  const used = new Set<string>();
  const services = [...s.services].sort(byKeys('name', 'id')).filter((svc) => shown.has(svc.host_id));
  for (const svc of services) {
    // A service with several application tags is drawn once, in the first of them by name.
    const tag = apps.find((t) => (svc.tags as string[] ?? []).includes(t.id));
    if (!tag) continue;
    used.add(tag.id);
    nodeOfService.set(svc.id, `service:${svc.id}`);
    nodes.push({ id: `service:${svc.id}`, kind: 'service', entity_id: svc.id, parent_id: `tag:${tag.id}`, label: svc.name, service_definition: svc.service_definition, host_id: svc.host_id, host_name: hostName.get(svc.host_id) });
  }
  const containers = apps.filter((t) => used.has(t.id) && appIds.has(t.id))
    .map((t): GraphNode => ({ id: `tag:${t.id}`, kind: 'tag', entity_id: t.id, parent_id: null, label: t.name, color: t.color }));
  const deps = dependencyEdges(s, nodeOfService, hosts);
  return { nodes: [...containers, ...nodes, ...deps.nodes], edges: deps.edges };
}

// ---- l2 -------------------------------------------------------------------------------------------
// Links come from two kinds of evidence:
// - LLDP/CDP neighbour data on an interface (either end, or both: one edge): the neighbour's system
//   name (a host's name or hostname, or its first label) or its chassis id (a host's chassis_id, or
//   one of its MACs) names the host, and the port id or description one of its ports (name,
//   description, alias, or MAC: lldpd announces a port by its MAC);
// - a switch's forwarding table (`fdb_macs` of its ports): a MAC of a host's address or interface,
//   learned on a port, places that host on the port (one of the switch's own MACs places nothing).
//   A MAC is learned on every port on its way (the uplinks too), so it goes to the port that learned
//   the fewest MACs (the access port), never to one whose LLDP neighbour is another switch; ties go
//   to the first port in switch name, if_index order.
// A host placed only by the forwarding table has no SNMP interface with that MAC: its port is drawn
// from its address (kind `interface`, `entity_kind: 'ip_address'`, the address's id), at read time,
// so nothing invented is stored and the port follows the MAC when it moves.

const lower = (x: unknown) => (x == null || x === '' ? undefined : String(x).toLowerCase());

/** The ways a host is named in neighbour data: id, name, hostname and its first label. */
function hostNames(h: Row): string[] {
  const hostname = lower(h.hostname);
  return [lower(h.id), lower(h.name), hostname, hostname?.split('.')[0]].filter((x): x is string => !!x);
}

/** The ways a port is named in neighbour data. */
const portNames = (i: Row) => [i.if_name, i.if_descr, i.if_alias, i.mac_address].map(lower).filter((x): x is string => !!x);

interface L2Index {
  byId: Map<string, Row>;
  /** `host key|port key` → interface (real or drawn from an address). */
  byHostPort: Map<string, Row>;
  /** chassis id or MAC (lower case) → host id. */
  hostByChassis: Map<string, string>;
}

/** The interface an interface's neighbour data names, among the network's interfaces. */
function neighbourOf(iface: Row, x: L2Index, hostById: Map<string, Row>): Row | undefined {
  const n = iface.neighbor ?? {};
  const direct = n.interface_id ?? n.id;
  if (typeof direct === 'string' && x.byId.has(direct)) return x.byId.get(direct);
  const ports = [n.port, iface.lldp_port_id, iface.lldp_port_desc, iface.cdp_port_id].map(lower).filter((p): p is string => !!p);
  const chassisHost = hostById.get(x.hostByChassis.get(lower(iface.lldp_chassis_id) ?? '') ?? '');
  const hostKeys = [lower(n.host_id), lower(iface.lldp_sys_name), lower(iface.cdp_device_id), ...(chassisHost ? [lower(chassisHost.id)] : [])]
    .filter((k): k is string => !!k);
  for (const hostKey of hostKeys) {
    for (const port of ports) {
      const found = x.byHostPort.get(`${hostKey}|${port}`);
      if (found) return found;
    }
  }
  return undefined;
}

function l2(s: Snapshot, hosts: Row[]): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const shown = new Map(hosts.map((h) => [h.id as string, h]));
  // Port order: by if_index, then by name in natural order (Gi1/0/2 before Gi1/0/10).
  const interfaces = s.interfaces.filter((i) => shown.has(i.host_id)).sort((a, b) => (a.if_index ?? 0) - (b.if_index ?? 0)
    || String(a.if_name ?? '').localeCompare(String(b.if_name ?? ''), 'en', { numeric: true }) || String(a.id).localeCompare(String(b.id)));
  // Ports that may be drawn from addresses: one per host and MAC (its first address), for MACs no interface of the host has.
  const macsWithInterface = new Set(interfaces.filter((i) => i.mac_address).map((i) => `${i.host_id}|${lower(i.mac_address)}`));
  const addressPorts = new Map<string, Row>();
  for (const a of [...s.ipAddresses].sort(byKeys('host_id', 'position', 'id'))) {
    const key = `${a.host_id}|${lower(a.mac_address)}`;
    if (!a.mac_address || !shown.has(a.host_id) || macsWithInterface.has(key) || addressPorts.has(key)) continue;
    addressPorts.set(key, { id: a.id, host_id: a.host_id, mac_address: a.mac_address, from_address: true });
  }

  const x: L2Index = { byId: new Map(interfaces.map((i) => [i.id as string, i])), byHostPort: new Map(), hostByChassis: new Map() };
  // Interfaces first (a later one of a name wins), then ports from addresses where no interface has the name.
  const owners = new Map<string, Row[]>(); // MAC → the interfaces, then the address ports, that have it
  for (const i of [...interfaces, ...addressPorts.values()]) {
    for (const hostKey of hostNames(shown.get(i.host_id)!)) {
      for (const port of portNames(i)) if (!i.from_address || !x.byHostPort.has(`${hostKey}|${port}`)) x.byHostPort.set(`${hostKey}|${port}`, i);
    }
    const mac = lower(i.mac_address);
    if (!mac) continue;
    if (!x.hostByChassis.has(mac)) x.hostByChassis.set(mac, i.host_id);
    (owners.get(mac) ?? owners.set(mac, []).get(mac)!).push(i);
  }
  for (const h of hosts) if (h.chassis_id) x.hostByChassis.set(lower(h.chassis_id)!, h.id);
  for (const p of addressPorts.values()) x.byId.set(p.id, p);

  const edges = new Map<string, GraphEdge>();
  const drawnPorts = new Set<Row>(interfaces);
  const link = (i: Row, other: Row, extra: Record<string, unknown> = {}) => {
    if (other.id === i.id) return;
    drawnPorts.add(other);
    const [a, b] = [i.id as string, other.id as string].sort();
    // A link is recorded on one side or both (or also by a forwarding table): one edge either way.
    if (!edges.has(`${a}:${b}`)) edges.set(`${a}:${b}`, { id: `physical_link:${a}:${b}`, kind: 'physical_link', source: `interface:${a}`, target: `interface:${b}`, ...extra });
  };
  const neighbour = new Map<string, Row>();
  for (const i of interfaces) {
    const other = neighbourOf(i, x, shown);
    if (!other) continue;
    neighbour.set(i.id, other);
    if (other.id) neighbour.set(other.id, neighbour.get(other.id) ?? i);
    link(i, other);
  }
  // Whose MAC a port learned: an interface of another host, else a port drawn from another host's address.
  // None when the MAC is the switch's own (one of its interfaces or addresses, its chassis id; its table
  // lists them, as self or mgmt, often on a real port), even if another host has it too.
  const ownMacs = new Set(hosts.filter((h) => h.chassis_id).map((h) => `${h.id}|${lower(h.chassis_id)}`));
  for (const [mac, list] of owners) for (const o of list) ownMacs.add(`${o.host_id}|${mac}`);
  const ownerOf = (mac: string, hostOfPort: string) => (ownMacs.has(`${hostOfPort}|${mac}`) ? undefined : owners.get(mac)?.find((o) => o.host_id !== hostOfPort));
  placeByForwardingTables(s, interfaces, neighbour, ownerOf, (port, owner) => {
    // LLDP already joins this port to the owner's host (through another of its ports, maybe): that link says it.
    if (neighbour.get(port.id)?.host_id !== owner.host_id) link(port, owner, { evidence: 'forwarding_table' });
  });

  const ports = [...drawnPorts];
  const withPorts = new Set(ports.map((i) => i.host_id as string));
  const nodes: GraphNode[] = hosts.filter((h) => withPorts.has(h.id))
    .map((h) => ({ id: `host:${h.id}`, kind: 'host', entity_id: h.id, parent_id: null, label: h.name, hostname: h.hostname, host_kind: hostKindIn(s, h.id) }));
  for (const i of interfaces) {
    nodes.push({
      id: `interface:${i.id}`, kind: 'interface', entity_id: i.id, parent_id: `host:${i.host_id}`,
      label: i.if_name || i.if_descr || `if${i.if_index}`, if_index: i.if_index, mac_address: i.mac_address, oper_status: i.oper_status,
    });
  }
  for (const p of ports.filter((i) => i.from_address)) {
    nodes.push({ id: `interface:${p.id}`, kind: 'interface', entity_id: p.id, entity_kind: 'ip_address', parent_id: `host:${p.host_id}`, label: p.mac_address, mac_address: p.mac_address });
  }
  return { nodes, edges: [...edges.values()] };
}

/**
 * Forwarding-table placement (see above): for each MAC learned on the ports of `interfaces`, the
 * port it belongs on, and `place(port, owner)` for the MAC's owner (`ownerOf`). Ports whose
 * LLDP/CDP neighbour is on a switch (a host with a forwarding table, or drawn as one) are uplinks.
 */
function placeByForwardingTables(
  s: Snapshot, interfaces: Row[], neighbour: Map<string, Row>,
  ownerOf: (mac: string, hostOfPort: string) => Row | undefined, place: (port: Row, owner: Row) => void,
): void {
  const learning = interfaces.filter((i) => Array.isArray(i.fdb_macs) && i.fdb_macs.length);
  if (!learning.length) return;
  const switches = new Set(learning.map((i) => i.host_id as string));
  const isSwitch = (hostId: string) => switches.has(hostId) || hostKindIn(s, hostId) === 'switch';
  const hostName = new Map(s.hosts.map((h) => [h.id as string, String(h.name ?? '')]));
  const candidates = learning.filter((i) => {
    const other = neighbour.get(i.id);
    return !(other && other.host_id !== i.host_id && isSwitch(other.host_id));
  }).sort((a, b) => a.fdb_macs.length - b.fdb_macs.length || (hostName.get(a.host_id) ?? '').localeCompare(hostName.get(b.host_id) ?? '')
    || String(a.host_id).localeCompare(String(b.host_id)) || (a.if_index ?? 0) - (b.if_index ?? 0));
  const placed = new Set<string>();
  for (const port of candidates) {
    for (const mac of (port.fdb_macs as string[]).map((m) => m.toLowerCase())) {
      if (placed.has(mac)) continue;
      const owner = ownerOf(mac, port.host_id);
      if (!owner) continue;
      placed.add(mac);
      place(port, owner);
    }
  }
}

const BUILDERS: Record<View, (s: Snapshot, hosts: Row[], o: GraphOptions) => { nodes: GraphNode[]; edges: GraphEdge[] }> = { l3, workloads, application, l2 };

/** The most element nodes a view shows, whatever max_nodes and expand ask (the largest max_nodes accepted). */
export const MAX_NODES_CAP = 5000;

/**
 * Which containers to collapse: the ones with the most elements first (ties by id), until at most
 * `maxNodes` element nodes remain; `expand` names containers that stay open, while the view stays
 * within MAX_NODES_CAP: over it, they are collapsed too, biggest first. `elements` counts every
 * element node, in containers or not. Shared by the drawing below and by the service's budgeted
 * read, which takes the counts from SQL instead of drawing every element first.
 */
export function chooseCollapsed(counts: Map<string, number>, elements: number, o: Pick<GraphOptions, 'maxNodes' | 'expand'>, out: FilteredOut): Set<string> {
  const collapsed = new Set<string>();
  if (elements <= o.maxNodes) return collapsed;
  const keepOpen = new Set(o.expand ?? []);
  const biggestFirst = (a: [string, number], b: [string, number]) => b[1] - a[1] || a[0].localeCompare(b[0]);
  const collapseUntil = (limit: number, candidates: Array<[string, number]>) => {
    for (const [container, n] of candidates.sort(biggestFirst)) {
      if (elements <= limit) break;
      collapsed.add(container);
      elements -= n - 1; // the children go, the container becomes an element
      out.collapsed_containers += 1;
      out.collapsed_nodes += n;
    }
  };
  const containers = [...counts.entries()].filter(([, n]) => n > 0);
  collapseUntil(o.maxNodes, containers.filter(([id]) => !keepOpen.has(id)));
  collapseUntil(Math.max(o.maxNodes, MAX_NODES_CAP), containers.filter(([id]) => keepOpen.has(id)));
  out.over_budget = Math.max(0, elements - o.maxNodes);
  return collapsed;
}

/** When an item of a timeline's union existed: ISO instants, `to` null while it still does. */
export interface Interval { from: string; to: string | null }

/** Intervals merged where they overlap or touch. */
function mergeIntervals(intervals: Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a.from.localeCompare(b.from));
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last && (last.to === null || i.from <= last.to)) {
      if (last.to !== null && (i.to === null || i.to > last.to)) last.to = i.to;
    } else out.push({ ...i });
  }
  return out;
}

/**
 * Collapsed containers become one node of kind `collapsed` with their counts per kind, and take
 * over their children's edges. Between two collapsed containers only dependency edges are kept (a
 * budgeted read does not load the hosts that lie wholly inside collapsed containers). On a
 * timeline's union (items with `intervals`), a collapsed container keeps its own intervals and a
 * merged edge exists whenever one of the edges it stands for did.
 */
export function applyCollapse(nodes: GraphNode[], edges: GraphEdge[], collapsed: Map<string, Record<string, number>>): { nodes: GraphNode[]; edges: GraphEdge[] } {
  if (!collapsed.size) return { nodes, edges };
  const closed = new Map<string, string>(); // child node id → collapsed container id
  for (const n of nodes) if (n.parent_id && collapsed.has(n.parent_id)) closed.set(n.id, n.parent_id);
  const keptNodes = nodes.filter((n) => !closed.has(n.id)).map((n) => {
    const counts = collapsed.get(n.id);
    if (!counts) return n;
    return { id: n.id, kind: 'collapsed', entity_id: n.entity_id, parent_id: n.parent_id, label: n.label, collapsed_kind: n.kind, counts, ...(n.intervals ? { intervals: n.intervals } : {}) };
  });
  const merged = new Map<string, GraphEdge>();
  const mergedIntervals = new Map<string, Interval[]>(); // a timeline's: joined once, after the loop
  for (const e of edges) {
    const source = closed.get(e.source) ?? e.source;
    const target = closed.get(e.target) ?? e.target;
    if (source === target) continue;
    if (source === e.source && target === e.target) {
      merged.set(e.id, e);
      continue;
    }
    if (collapsed.has(source) && collapsed.has(target) && !e.dependency_id) continue;
    const id = `collapsed:${e.kind}:${source}:${target}`;
    const prev = merged.get(id);
    const style = e.dependency_id ? { color: e.color, edge_style: e.edge_style } : {};
    merged.set(id, { ...(prev ?? { id, kind: e.kind, source, target, ...style }), count: ((prev?.count as number) ?? 0) + 1 });
    if (e.intervals) (mergedIntervals.get(id) ?? mergedIntervals.set(id, []).get(id)!).push(...(e.intervals as Interval[]));
  }
  for (const [id, intervals] of mergedIntervals) merged.get(id)!.intervals = mergeIntervals(intervals);
  return { nodes: keptNodes, edges: [...merged.values()] };
}

export function collapse<N extends GraphNode, E extends GraphEdge>(nodes: N[], edges: E[], o: Pick<GraphOptions, 'maxNodes' | 'expand'>, out: FilteredOut): { nodes: N[]; edges: E[] } {
  const children = groupBy(nodes.filter((n) => n.parent_id), 'parent_id');
  const elements = nodes.filter((n) => !children.has(n.id)).length;
  const counts = new Map([...children.entries()].map(([id, kids]) => [id, kids.length]));
  const chosen = chooseCollapsed(counts, elements, o, out);
  const collapsed = new Map<string, Record<string, number>>();
  for (const id of chosen) {
    const byKind: Record<string, number> = {};
    for (const k of children.get(id)!) byKind[k.kind] = (byKind[k.kind] ?? 0) + 1;
    collapsed.set(id, byKind);
  }
  return applyCollapse(nodes, edges, collapsed) as { nodes: N[]; edges: E[] };
}

/**
 * The tables `view` reads (declaration.ts; the others empty, so a view draws from nothing it does
 * not declare), in one order whatever order the database read them in (live and history tables
 * differ). Services are ordered by each view as it draws them (per host in l3).
 */
function ordered(s: Snapshot, view: View): Snapshot {
  const reads = new Set<SnapshotTable>(VIEW_DECLARATIONS[view].reads);
  const declared = Object.fromEntries(SNAPSHOT_TABLES.map((t) => [t, reads.has(t) ? s[t] : []])) as Snapshot;
  const sorted = (t: SnapshotTable, ...keys: string[]) => (reads.has(t) ? [...s[t]].sort(byKeys(...keys)) : []);
  return { ...declared, subnets: sorted('subnets', 'cidr', 'id'), hosts: sorted('hosts', 'name', 'id'), dependencies: sorted('dependencies', 'name', 'id') };
}

export const emptyFilteredOut = (): FilteredOut => ({ hidden_hosts: 0, hosts_without_tag: 0, collapsed_containers: 0, collapsed_nodes: 0, over_budget: 0 });

/**
 * The budgeted read's drawing (service.ts budgetedL3): the elements per container and in all,
 * counted in SQL before the snapshot was reduced to the hosts that stay visible, and what that
 * read counted of the filters' work.
 */
export interface CountedElements { counts: Map<string, number>; elements: number; filteredOut: FilteredOut }

/**
 * `counted`: the containers to collapse are chosen from these counts (and the elements SQL does not
 * count, which the drawing adds) instead of from the drawing, which holds only what stays
 * visible; `filtered_out` then starts from what that read counted.
 */
export function buildGraph(snapshot: Snapshot, view: View, o: GraphOptions, counted?: CountedElements): Graph {
  const s = ordered(snapshot, view);
  const filtered_out = counted ? { ...counted.filteredOut } : emptyFilteredOut();
  const hosts = visibleHosts(s, o, counted ? emptyFilteredOut() : filtered_out);
  const drawn = BUILDERS[view](s, hosts, o);
  markPresence(drawn.nodes, s, hosts, o.newHostIds ?? []);
  if (!counted) return { ...collapse(drawn.nodes, drawn.edges, o, filtered_out), filtered_out };
  // What the SQL counts leave out: ghosts, and subnets without an element (drawn as elements themselves).
  const uncounted = drawn.nodes.filter((n) => n.kind === 'ghost' || (n.kind === 'subnet' && !counted.counts.get(n.id))).length;
  const chosen = chooseCollapsed(counted.counts, counted.elements + uncounted, o, filtered_out);
  const { nodes, edges } = applyCollapse(drawn.nodes, drawn.edges, new Map([...chosen].map((id) => [id, { ip_address: counted.counts.get(id)! }])));
  return { nodes, edges, filtered_out };
}

/**
 * The nodes of a host that completed scans no longer see (hosts.offline_at) say so (`offline`: the
 * map greys them), as do an address or a service no longer seen on a host that is; those of a host
 * the last scan found new say `new` (the map marks them).
 */
function markPresence(nodes: GraphNode[], s: Snapshot, hosts: Row[], newHostIds: string[]): void {
  const offline = new Set(hosts.filter((h) => h.offline_at != null).map((h) => h.id as string));
  const offlineChildren = new Set([...s.ipAddresses, ...s.services].filter((r) => r.offline_at != null).map((r) => r.id as string));
  const fresh = new Set(newHostIds);
  if (!offline.size && !offlineChildren.size && !fresh.size) return;
  for (const n of nodes) {
    if ((n.kind === 'ip_address' || n.kind === 'service') && offlineChildren.has(n.entity_id as string)) n.offline = true;
    const hostId = (n.host_id as string | undefined) ?? (n.kind === 'host' ? n.entity_id as string : undefined);
    if (!hostId) continue;
    if (offline.has(hostId)) n.offline = true;
    else if (fresh.has(hostId)) n.new = true;
  }
}

/** A short hash of what is drawn: equal graphs, equal digests (the layout cache's key). */
export function graphDigest(graph: Pick<Graph, 'nodes' | 'edges'>): string {
  const h = createHash('sha256');
  for (const n of [...graph.nodes].sort((a, b) => a.id.localeCompare(b.id))) h.update(JSON.stringify(n)).update('\n');
  for (const e of [...graph.edges].sort((a, b) => a.id.localeCompare(b.id))) h.update(JSON.stringify(e)).update('\n');
  return h.digest('hex').slice(0, 32);
}
