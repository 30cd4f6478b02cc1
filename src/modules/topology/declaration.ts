// What the topology drawing (graph.ts) reads and what it emits, declared once. The service's SQL
// (service.ts: column lists, the reads of given hosts and their children, the element count,
// the available views, the pins' checks, the tables watched for a diff's or a timeline's changes)
// and the threads (thread.ts: element rows, a snapshot without given hosts) are derived from it,
// so a column graph.ts starts to read is added here, once, and the reads follow.
// test/topology/declaration.spec.ts draws generated networks through rows that record every
// field read and fails when graph.ts reads a table, a column or emits a node kind not declared
// here (or when something declared is never read).
//
// Pure: no I/O, no Node; the web app may import it.

/** A Snapshot's tables, by the names graph.ts knows them by. */
export const SNAPSHOT_TABLES = ['subnets', 'hosts', 'ipAddresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies', 'tags'] as const;
export type SnapshotTable = (typeof SNAPSHOT_TABLES)[number];

/**
 * How a table's rows belong to a host: `self` (the hosts), `host_id` (a host's children), `service`
 * (through the service of `service_id`: bindings), or to none (drawn whole: subnets, dependencies,
 * tags). A read of given hosts (the budgeted l3, a diff's compared hosts) reads their rows and
 * their children's by this, and a change of such a row is a change of its host.
 */
export type HostLink = 'self' | 'host_id' | 'service' | null;

export interface TableDeclaration {
  /** The live table in PostgreSQL (`<sql>_history` holds its past states). */
  sql: string;
  /** The columns graph.ts reads (a read adds the one that ties a row to its host: readColumns). */
  columns: readonly string[];
  hostLink: HostLink;
  /** The network's rows (organization_id and network_id), or the organization's (tags). */
  owner: 'network' | 'organization';
}

export const TABLES: Record<SnapshotTable, TableDeclaration> = {
  subnets: { sql: 'subnets', hostLink: null, owner: 'network', columns: ['id', 'cidr', 'name', 'subnet_type'] },
  hosts: { sql: 'hosts', hostLink: 'self', owner: 'network', columns: ['id', 'name', 'hostname', 'hidden', 'tags', 'virtualization', 'chassis_id', 'device_type', 'offline_at'] },
  ipAddresses: { sql: 'ip_addresses', hostLink: 'host_id', owner: 'network', columns: ['id', 'host_id', 'subnet_id', 'ip_address', 'position', 'mac_address', 'offline_at'] },
  ports: { sql: 'ports', hostLink: 'host_id', owner: 'network', columns: ['id', 'number', 'protocol'] },
  services: { sql: 'services', hostLink: 'host_id', owner: 'network', columns: ['id', 'host_id', 'name', 'service_definition', 'position', 'tags', 'virtualization', 'offline_at'] },
  bindings: { sql: 'bindings', hostLink: 'service', owner: 'network', columns: ['id', 'service_id', 'type', 'port_id', 'ip_address_id'] },
  interfaces: {
    sql: 'interfaces', hostLink: 'host_id', owner: 'network',
    columns: ['id', 'host_id', 'if_index', 'if_name', 'if_descr', 'if_alias', 'mac_address', 'oper_status', 'lldp_sys_name', 'lldp_port_id', 'cdp_device_id', 'cdp_port_id', 'neighbor', 'lldp_chassis_id', 'lldp_port_desc', 'fdb_macs'],
  },
  dependencies: { sql: 'dependencies', hostLink: null, owner: 'network', columns: ['id', 'name', 'color', 'dependency_type', 'edge_style', 'members'] },
  tags: { sql: 'tags', hostLink: null, owner: 'organization', columns: ['id', 'name', 'color', 'is_application'] },
};

/** The column that ties a row to its host (declaration's hostLink), which a read of given hosts filters on. */
const LINK_COLUMN: Record<NonNullable<HostLink>, string> = { self: 'id', host_id: 'host_id', service: 'service_id' };

/** The columns a table is read with: those graph.ts reads, and the one that ties a row to its host. */
export const readColumns = (table: SnapshotTable): string[] => {
  const { columns, hostLink } = TABLES[table];
  return hostLink && !columns.includes(LINK_COLUMN[hostLink]) ? [...columns, LINK_COLUMN[hostLink]] : [...columns];
};

/** The network's own tables (every table but the organization's tags): what its history holds. */
export const NETWORK_TABLES = SNAPSHOT_TABLES.filter((t) => TABLES[t].owner === 'network');
/** The tables whose rows belong to a host (its own row and its children's). */
export const HOST_TABLES = SNAPSHOT_TABLES.filter((t) => TABLES[t].hostLink !== null);

/**
 * The tables whose rows become element nodes: what a drawing's work grows with (hosts, addresses,
 * services and interfaces are each at most one node; subnets, tags and dependencies are few).
 */
export const ELEMENT_TABLES = ['hosts', 'ipAddresses', 'services', 'interfaces'] as const satisfies readonly SnapshotTable[];

/** A Snapshot's rows that become element nodes. */
export const elementRowsOf = (s: Record<SnapshotTable, unknown[]>) => ELEMENT_TABLES.reduce((n, t) => n + s[t].length, 0);

/**
 * A view: the tables it reads, the node kinds it draws (each from the tables whose rows its node
 * ids name, `<kind>:<row id>`: what a pin of that kind must name), and when it has anything to
 * draw (`drawsWhen`: a condition on a table's rows, asked of SQL; none: always).
 */
export interface ViewDeclaration {
  reads: readonly SnapshotTable[];
  nodes: Record<string, readonly SnapshotTable[]>;
  drawsWhen?: { table: SnapshotTable; where: string };
}

/** The columns of an interface that are neighbour evidence (LLDP/CDP, or a neighbour resolved at ingest), and its forwarding table. */
const L2_EVIDENCE = `t.neighbor is not null or t.lldp_sys_name is not null or t.cdp_device_id is not null or t.lldp_chassis_id is not null or t.fdb_macs <> '[]'`;

/**
 * Scanopy's four views (reference topology-peers.md §1); graph.ts says what each draws. Every
 * view reads the hosts, their addresses and services (an address's or a service's presence:
 * graph.ts markPresence), and all but application their interfaces (a host's kind: hostKind.ts).
 */
export const VIEWS = ['l3', 'workloads', 'application', 'l2'] as const;
export type View = (typeof VIEWS)[number];

export const VIEW_DECLARATIONS: Record<View, ViewDeclaration> = {
  l3: {
    reads: ['subnets', 'hosts', 'ipAddresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies'],
    nodes: { subnet: ['subnets'], summary: ['subnets'], ip_address: ['ipAddresses'], host: ['hosts'], ghost: ['services'] },
  },
  workloads: {
    reads: ['subnets', 'hosts', 'ipAddresses', 'services', 'bindings', 'interfaces', 'dependencies'],
    nodes: { host: ['hosts'], summary: ['subnets'], service: ['services'], ghost: ['services'] },
    drawsWhen: { table: 'services', where: 'true' },
  },
  application: {
    reads: ['hosts', 'ipAddresses', 'services', 'bindings', 'dependencies', 'tags'],
    nodes: { tag: ['tags'], service: ['services'], ghost: ['services'] },
    // From the organization's few application tags to a service carrying one (the other way round
    // scanned every service of the network when there was no application tag).
    drawsWhen: { table: 'tags', where: 't.is_application and exists (select 1 from $services s where t.id = any(s.tags))' },
  },
  l2: {
    reads: ['hosts', 'ipAddresses', 'services', 'interfaces'],
    // A port is an interface, or drawn from an address (a host placed only by a forwarding table).
    nodes: { host: ['hosts'], interface: ['interfaces', 'ipAddresses'] },
    drawsWhen: { table: 'interfaces', where: L2_EVIDENCE },
  },
};

/** The tables a node of `kind` of `view` is drawn from (undefined: the view draws no such node). */
export const nodeSources = (view: View, kind: string): readonly SnapshotTable[] | undefined =>
  Object.hasOwn(VIEW_DECLARATIONS[view].nodes, kind) ? VIEW_DECLARATIONS[view].nodes[kind] : undefined;
