// What the server and the map in the browser both name, one way: a file exported from a view
// (the API's exports, GET /api/v1/topology/export in service.ts, and the map's own PNG, SVG and
// draw.io: web/src/mapExports.ts), and a container's title (the map writes it, the layout sizes a
// subnet to fit it, layout.ts). Pure: no Node, no DOM (web/src bundles this module).

/**
 * A file exported from a view: topology-<network>-<view>-<YYYY-MM-DD>.<extension>, the day of the
 * instant drawn. `instant`: an ISO date-time; `extension` without the dot.
 */
export function exportFileName(network: string, view: string, instant: string, extension: string): string {
  const slug = network.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'network';
  return `topology-${slug}-${view}-${instant.slice(0, 10)}.${extension}`;
}

/** The fields of a graph node a title reads (GraphNode's, which both sides have). */
export interface TitledNode {
  id: string;
  kind: string;
  label: string;
  cidr?: unknown;
  host_id?: unknown;
  hosts?: unknown;
}

/** How many hosts a subnet's children stand for (those folded in its summary node too). */
function hostsIn(children: TitledNode[]): number {
  return new Set(children.flatMap((c) => (c.kind === 'summary' && Array.isArray(c.hosts) ? (c.hosts as Array<{ id: string }>).map((x) => x.id) : [String(c.host_id ?? c.id)]))).size;
}

/**
 * A container's title, longest first: a subnet with its CIDR and how many hosts it holds
 * ("dmz · 10.10.3.0/24 · 5 hosts"), then without the CIDR, with the bare count, the name alone;
 * other containers (a host, a tag) by name.
 */
export function containerTitles(n: TitledNode, children: TitledNode[]): string[] {
  if (n.kind !== 'subnet') return [n.label];
  const hosts = hostsIn(children);
  const count = `${hosts} host${hosts === 1 ? '' : 's'}`;
  const cidr = typeof n.cidr === 'string' && n.cidr && n.cidr !== n.label ? ` · ${n.cidr}` : '';
  return [`${n.label}${cidr} · ${count}`, ...(cidr ? [`${n.label} · ${count}`] : []), `${n.label} · ${hosts}`, n.label];
}

/** A container's whole title. */
export const containerTitle = (n: TitledNode, children: TitledNode[]): string => containerTitles(n, children)[0]!;
