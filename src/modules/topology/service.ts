// The topology of one network at one instant: the inventory read once (live tables, or the
// history tables as of `at`: one statement per table), then drawn by the pure graph.ts.
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import type { Queue } from 'bullmq';
import { availableViews, buildGraph, graphDigest, type Snapshot, type View } from './graph.js';
import { layoutFor } from './layout.js';

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

/** The graph of a query at one instant (the worker draws it again from the same inputs). */
export async function graphAt(db: Db, organizationId: string, q: TopologyQuery, at: string | undefined) {
  const snapshot = await loadSnapshot(db, organizationId, q.network_id, at);
  const graph = buildGraph(snapshot, q.view, { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: q.max_nodes, expand: q.expand });
  return { snapshot, graph, digest: graphDigest(graph) };
}

export const topologyService = {
  async get(db: Db, scope: Scope, q: TopologyQuery, layoutQueue: Queue) {
    await networkService.assertFilterable(db, scope, q.network_id, q.at);
    // One snapshot: every table read in one transaction, so `now` is one instant too.
    const { snapshot, graph, digest, asOf } = await db.transaction(async (tx) => {
      const now = q.at ?? (await tx.one<{ now: string }>(`select to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`))!.now;
      return { ...(await graphAt(tx, scope.organizationId, q, q.at)), asOf: now };
    });
    const layout = await layoutFor(db, layoutQueue, {
      organization_id: scope.organizationId, network_id: q.network_id, view: q.view, as_of: asOf, digest,
      tag_ids: q.tag_ids, include_hidden: q.include_hidden, max_nodes: q.max_nodes, expand: q.expand,
    }, new Set(graph.nodes.map((n) => n.id)));
    return {
      network_id: q.network_id,
      view: q.view,
      as_of: asOf,
      digest,
      available_views: availableViews(snapshot),
      nodes: graph.nodes,
      edges: graph.edges,
      layout,
      filtered_out: graph.filtered_out,
    };
  },
};

/** Pins (issue 11.4): positions fixed by hand, laid over every layout of the network's view. */
export const pinService = {
  async pin(db: Db, scope: Scope, input: { network_id: string; view: View; positions: Record<string, { x: number; y: number }> }) {
    await networkService.assertWritable(db, scope, input.network_id);
    const rows = Object.entries(input.positions).map(([node_id, p]) => ({ node_id, x: p.x, y: p.y }));
    await db.query(
      `insert into topology_pins (organization_id, network_id, view, node_id, x, y)
       select ?, ?, ?, r.node_id, r.x, r.y from jsonb_to_recordset(?::jsonb) as r(node_id text, x double precision, y double precision)
       on conflict (network_id, view, node_id) do update set x = excluded.x, y = excluded.y, updated_at = now()`,
      [scope.organizationId, input.network_id, input.view, JSON.stringify(rows)],
    );
    return this.list(db, input.network_id, input.view);
  },

  async unpin(db: Db, scope: Scope, q: { network_id: string; view: View; node_ids?: string[] }) {
    await networkService.assertFilterable(db, scope, q.network_id); // a query parameter: 404 / 403 as for lists
    if (q.node_ids?.length) {
      await db.query(`delete from topology_pins where network_id = ? and view = ? and node_id = any(?::text[])`, [q.network_id, q.view, q.node_ids]);
    } else {
      await db.query(`delete from topology_pins where network_id = ? and view = ?`, [q.network_id, q.view]);
    }
    return this.list(db, q.network_id, q.view);
  },

  async list(db: Db, networkId: string, view: View) {
    const rows = await db.query<{ node_id: string }>(`select node_id from topology_pins where network_id = ? and view = ? order by node_id`, [networkId, view]);
    return { network_id: networkId, view, pinned: rows.map((r) => r.node_id) };
  },
};
