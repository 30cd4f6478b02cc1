// The topology of one network at one instant: the inventory read once (live tables, or the
// history tables as of `at`: one statement per table), then drawn by the pure graph.ts.
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import { availableViews, buildGraph, graphDigest, type Snapshot, type View } from './graph.js';

/** What each table contributes (only the columns a view draws). */
const COLUMNS = {
  subnets: 'id, cidr, name, subnet_type',
  hosts: 'id, name, hostname, hidden, tags, virtualization',
  ip_addresses: 'id, host_id, subnet_id, ip_address, position',
  ports: 'id, host_id, number, protocol',
  services: 'id, host_id, name, service_definition, position, tags, virtualization',
  bindings: 'id, service_id, type, port_id, ip_address_id',
  interfaces: 'id, host_id, if_index, if_name, if_descr, if_alias, mac_address, oper_status, lldp_sys_name, lldp_port_id, cdp_device_id, cdp_port_id, neighbor',
  dependencies: 'id, name, color, dependency_type, edge_style, members',
} as const;

async function rowsOf(db: Db, table: keyof typeof COLUMNS, networkId: string, at: string | undefined) {
  // host(ip_address) prints an address without its /32 (the column is inet).
  const cols = table === 'ip_addresses' ? COLUMNS[table].replace('ip_address,', 'host(ip_address) as ip_address,') : COLUMNS[table];
  return at
    ? db.query(`select ${cols} from ${table}_history where network_id = ? and tstzrange(valid_from, valid_to) @> ?::timestamptz`, [networkId, at])
    : db.query(`select ${cols} from ${table} where network_id = ?`, [networkId]);
}

/** The network's inventory as of `at` (now when absent). Tenancy: the caller checked the network. */
export async function loadSnapshot(db: Db, organizationId: string, networkId: string, at?: string): Promise<Snapshot> {
  const [subnets, hosts, ipAddresses, ports, services, bindings, interfaces, dependencies, tags] = await Promise.all([
    rowsOf(db, 'subnets', networkId, at), rowsOf(db, 'hosts', networkId, at), rowsOf(db, 'ip_addresses', networkId, at),
    rowsOf(db, 'ports', networkId, at), rowsOf(db, 'services', networkId, at), rowsOf(db, 'bindings', networkId, at),
    rowsOf(db, 'interfaces', networkId, at), rowsOf(db, 'dependencies', networkId, at),
    at
      ? db.query(`select id, name, color, is_application from tags_history where organization_id = ? and tstzrange(valid_from, valid_to) @> ?::timestamptz`, [organizationId, at])
      : db.query(`select id, name, color, is_application from tags where organization_id = ?`, [organizationId]),
  ]);
  return { subnets, hosts, ipAddresses, ports, services, bindings, interfaces, dependencies, tags };
}

export interface TopologyQuery {
  network_id: string; view: View; at?: string; tag_ids?: string[]; include_hidden: boolean; max_nodes: number; expand?: string[];
}

export const topologyService = {
  async get(db: Db, scope: Scope, q: TopologyQuery) {
    await networkService.assertFilterable(db, scope, q.network_id, q.at);
    // One snapshot: every table read in one transaction, so `now` is one instant too.
    const { snapshot, asOf } = await db.transaction(async (tx) => {
      const now = q.at ?? (await tx.one<{ now: string }>(`select to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`))!.now;
      return { snapshot: await loadSnapshot(tx, scope.organizationId, q.network_id, q.at), asOf: now };
    });
    const graph = buildGraph(snapshot, q.view, { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: q.max_nodes, expand: q.expand });
    return {
      network_id: q.network_id,
      view: q.view,
      as_of: asOf,
      digest: graphDigest(graph),
      available_views: availableViews(snapshot),
      nodes: graph.nodes,
      edges: graph.edges,
      // Laying out (elkjs in a worker, cached by digest) is the next step of issue 11: until then
      // the client lays the graph out itself.
      layout: { status: 'skipped' as const, positions: {}, pinned: [] },
      filtered_out: graph.filtered_out,
    };
  },
};
