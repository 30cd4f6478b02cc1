// Laying a topology graph out. elkjs's layered algorithm with compound containers
// runs in the `topology-layout` worker (workers/topologyLayout.ts, on a thread of its CPU pool), never in a request's event loop; its result
// is kept in `topology_layouts` by (view, digest), so an unchanged graph is laid out once. A GET
// answers at once: the stored layout, or `pending` after enqueueing the job. Pins (positions a user
// fixed) are stored apart and laid over every answer, so a new layout never moves a pinned node.
import { createRequire } from 'node:module';
import type { ELK as ElkApi, ELKConstructorArguments } from 'elkjs/lib/elk-api.js';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../../core/redis.js';
import type { Db } from '../../core/db.js';
import { JsonText } from '../../http/jsonText.js';
import type { GraphEdge, GraphNode, View } from './graph.js';
import { cardLines, cardSize } from './card.js';
import { containerTitle } from './names.js';

// elkjs ships CommonJS whose export is the constructor itself: required, not imported, and only
// when a layout is made (loading it costs ~180 ms, which every API process would pay at start).
// Edges are routed around the boxes after the layout (edgeRoutes.ts), in the same task.
type ElkConstructor = new (args?: ELKConstructorArguments) => ElkApi;
let elkConstructor: ElkConstructor | undefined;
const loadElk = () => (elkConstructor ??= createRequire(import.meta.url)('elkjs/lib/elk.bundled.js') as ElkConstructor);

export interface Box { x: number; y: number; width: number; height: number }

export interface Layout {
  status: 'ready' | 'pending' | 'failed' | 'skipped';
  /** As stored (JSON text spliced into the answer) when no pin applies, else with the pins laid over. */
  positions: Record<string, Box> | JsonText;
  /**
   * Each edge's bend points around the boxes (edgeRoutes.ts), absolute, from its source's centre to
   * its target's (neither included; none: a straight line crosses no box). Made for the laid-out
   * positions: a route whose end was pinned elsewhere no longer starts level with it, and the map
   * draws that edge straight. Stored text, spliced into the answer.
   */
  routes: Record<string, Array<{ x: number; y: number }>> | JsonText;
  pinned: string[];
  error?: string;
}

/** What the worker needs to draw the same graph again: the query, at the answer's instant. */
export interface LayoutJob {
  organization_id: string;
  network_id: string;
  view: View;
  as_of: string;
  digest: string;
  tag_ids?: string[];
  include_hidden: boolean;
  max_nodes: number;
  expand?: string[];
  /** The union over an interval (the timeline) rather than one instant. */
  timeline?: { from: string; to: string };
}

/**
 * elk's options. Measured on synthetic l3 graphs (10 subnets, a dependency edge per 7 addresses;
 * 3 rounds after a warm-up, medians): at 2,010 nodes these took 522 ms, elk's defaults 559 ms,
 * BRANDES_KOEPF alone 451 ms, LINEAR_SEGMENTS 764 ms, SIMPLE placement without crossing
 * minimisation 372 ms (edges then cross freely); at 1,010 nodes 350 ms against 455 ms. The tenfold
 * spread reported for other graphs did not show on these: the choice is for the drawing (left to
 * right, compact components), and every option set tried stays under a second at 2,000 nodes.
 * Containers are laid out one by one (SEPARATE_CHILDREN): with the whole hierarchy at once
 * (INCLUDE_CHILDREN) addresses without edges between hosts all fell into one layer, and a subnet
 * of 250 hosts became one column 54,000 px tall (422 px wide); laid out alone, its components
 * are packed in rows: 4,448 × 4,912 px, for ~1.5× the time (1,000 elements: 190 → 274 ms; 2,000:
 * 358 → 557 ms; tmp measurements after a warm-up). Edges are not routed by elk (edgeRoutes.ts
 * routes them around the boxes once every box is placed, across levels), so nothing is lost by not
 * laying them out across levels.
 */
export const ELK_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'RIGHT',
  'elk.hierarchyHandling': 'SEPARATE_CHILDREN',
  'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
  'elk.layered.thoroughness': '1',
  'elk.spacing.nodeNode': '24',
  'elk.layered.spacing.nodeNodeBetweenLayers': '48',
  'elk.padding': '[top=36,left=16,bottom=16,right=16]',
  'elk.separateConnectedComponents': 'true',
};

/** Graph units per character of a label or title at Fit (the map draws text at a constant size on screen, so larger when zoomed out). */
const CHAR_WIDTH = 9;
/**
 * Names read at Fit (the map draws a label whole or not at all): an element is wide
 * enough for its name, and a container for its title, at a zoom of about 0.6 (a 12 px label is ~7.5 px
 * a character on screen in the browser's sans-serif, 13 graph units there; the icon and padding besides).
 */
const NAME_CHAR = 13;
const TITLE_CHAR = 13.5;

/** What an element is named at Fit, as the map's first label says (web/src/mapState.ts labelsOf). */
function nameOf(node: GraphNode): string {
  const host = typeof node.host_name === 'string' ? node.host_name : node.label;
  if (node.kind === 'service') return typeof node.host_name === 'string' ? `${node.label} · ${node.host_name}` : node.label;
  if (node.kind === 'ip_address') return typeof node.workload === 'string' ? `${node.workload} · ${host}` : host;
  return node.label;
}

/**
 * An element's size: wide enough for its label, one line more per service listed on it. A summary
 * card is sized for its lines (card.ts); a ghost (italic, whose label names the host) is as wide
 * as its whole label, which nothing else says.
 */
function sizeOf(node: GraphNode): { width: number; height: number } {
  const services = Array.isArray(node.services) ? node.services.length : 0;
  // A summary card (quiet hosts folded, a container collapsed): its lines whole at Fit (card.ts).
  const card = cardLines(node);
  if (card) return cardSize(card);
  if (node.kind === 'ghost') return { width: Math.round(Math.min(480, Math.max(120, 40 + NAME_CHAR * node.label.length))), height: 36 };
  // (An l3 address keeps the width of its "name address" label: l3 is often as wide as the screen
  // at Fit already, and wider addresses only lowered its zoom there; measured on the realistic network.)
  const fit = node.kind === 'ip_address' ? 0 : 40 + NAME_CHAR * nameOf(node).length;
  return { width: Math.round(Math.min(320, Math.max(120, 16 + 7 * node.label.length, fit))), height: 36 + 16 * services };
}

/** A subnet's minimum width: its title, as the map writes it (names.ts), fits in it at Fit. */
function titleWidth(container: GraphNode, children: GraphNode[]): number {
  // A host's or a tag's name, with its icon, read at Fit.
  if (container.kind !== 'subnet') return Math.round(Math.min(400, 70 + TITLE_CHAR * container.label.length));
  return 24 + CHAR_WIDTH * containerTitle(container, children).length;
}

/** Positions (absolute, top-left) of every node of the graph: l2 (hosts holding interfaces) as a wiring diagram, the others by elk. */
export async function layoutGraph(nodes: GraphNode[], edges: GraphEdge[], options: Record<string, string> = ELK_OPTIONS): Promise<Record<string, Box>> {
  return isL2(nodes) ? keepApart(nodes, layoutL2(nodes, edges)) : layoutWithElk(nodes, edges, options);
}

/** elk's layered layout of any view but l2 (which lays switches out as faceplates). */
export async function layoutWithElk(nodes: GraphNode[], edges: GraphEdge[], options: Record<string, string> = ELK_OPTIONS): Promise<Record<string, Box>> {
  type ElkNode = { id: string; width?: number; height?: number; x?: number; y?: number; children?: ElkNode[]; layoutOptions?: Record<string, string> };
  const byId = new Map<string, ElkNode>();
  const isContainer = new Set(nodes.filter((n) => n.parent_id).map((n) => n.parent_id!));
  // A container's padding leaves room for its title above its elements.
  // The same algorithm options on every container: elk refuses hierarchy-aware processors in a
  // child whose options differ from the root's.
  const containerOptions = { ...options, 'elk.padding': '[top=40,left=16,bottom=16,right=16]' };
  const childrenOf = new Map<string, GraphNode[]>();
  for (const n of nodes) if (n.parent_id) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n);
  const minimum = (n: GraphNode): Record<string, string> => {
    const width = titleWidth(n, childrenOf.get(n.id) ?? []);
    return width ? { 'elk.nodeSize.constraints': 'MINIMUM_SIZE', 'elk.nodeSize.minimum': `(${width}, 0)` } : {};
  };
  for (const n of nodes) byId.set(n.id, isContainer.has(n.id) ? { id: n.id, children: [], layoutOptions: { ...containerOptions, ...minimum(n) } } : { id: n.id, ...sizeOf(n) });
  const parentOf = new Map(nodes.map((n) => [n.id, n.parent_id ?? null]));
  const roots: ElkNode[] = [];
  for (const n of nodes) {
    const parent = n.parent_id ? byId.get(n.parent_id) : undefined;
    (parent?.children ?? roots).push(byId.get(n.id)!);
  }
  const graph = {
    id: 'root',
    layoutOptions: options,
    children: roots,
    // Addresses of one host in one container are linked in a chain (same_host): laid out as a path,
    // a container host's seven addresses became one row seven boxes wide. Left out, they are packed
    // as the container's other elements are.
    edges: edges.filter((e) => byId.has(e.source) && byId.has(e.target) && !(e.kind === 'same_host' && parentOf.get(e.source) === parentOf.get(e.target)))
      .map((e) => ({ id: e.id, sources: [e.source], targets: [e.target] })),
  };
  const elk = new (loadElk())();
  const laid = (await elk.layout(graph as Parameters<typeof elk.layout>[0])) as unknown as ElkNode;
  const positions: Record<string, Box> = {};
  const walk = (node: ElkNode, dx: number, dy: number) => {
    for (const child of node.children ?? []) {
      const x = dx + (child.x ?? 0);
      const y = dy + (child.y ?? 0);
      positions[child.id] = { x: Math.round(x), y: Math.round(y), width: Math.round(child.width ?? 0), height: Math.round(child.height ?? 0) };
      walk(child, x, y);
    }
  };
  walk(laid, 0, 0);
  return keepApart(nodes, positions);
}

const isL2 = (nodes: GraphNode[]) => nodes.some((n) => n.kind === 'interface');

/** Switch port order: by if_index, then by name in natural order (Gi1/0/2 before Gi1/0/10). */
export const portOrder = (a: GraphNode, b: GraphNode) => Number(a.if_index ?? Infinity) - Number(b.if_index ?? Infinity) || 0
  || a.label.localeCompare(b.label, 'en', { numeric: true }) || a.id.localeCompare(b.id);

/**
 * l2 as switch faceplates: a host with links (most links first: the switches) is drawn
 * as a faceplate, its ports in two rows in port order (the 1st, 3rd, 5th… on the top row, the 2nd,
 * 4th… below them, as switches number them), each host hanging off a port (linked to nothing else)
 * above its top-row port or below its bottom-row port, with its linked interface straight over
 * (under) the port. A column is wider than half of any host in it, so no host covers another
 * column's link; neighbouring hosts that would touch go to a tier further out. Links are then
 * vertical, one per column and side: they neither cross nor pass through a box. Faceplates are
 * stacked; a link between two of them (switch to switch, or to a host linked to both) goes across
 * and may cross others. Hosts without links go in rows below. Deterministic and linear: no elk, no
 * previous positions. A 36-port switch with its hosts is ~2.5 times wider than tall (bench/README).
 */
export function layoutL2(nodes: GraphNode[], edges: GraphEdge[]): Record<string, Box> {
  const PORT_GAP = 8;
  /** Between a faceplate and its first tier of hosts: room for the links to be seen. */
  const LINK_GAP = 48;
  /** How far a host's box stays from another column's link, and hosts of one tier from each other. */
  const MARGIN = 16;
  const tops = nodes.filter((n) => !n.parent_id || !nodes.some((p) => p.id === n.parent_id));
  const topIds = new Set(tops.map((n) => n.id));
  const portsOf = new Map<string, GraphNode[]>(tops.map((n) => [n.id, []]));
  const hostOf = new Map<string, string>();
  for (const n of nodes) {
    if (topIds.has(n.id)) hostOf.set(n.id, n.id);
    else if (portsOf.has(n.parent_id!)) { portsOf.get(n.parent_id!)!.push(n); hostOf.set(n.id, n.parent_id!); }
  }
  for (const ports of portsOf.values()) ports.sort(portOrder);
  const nodeById = new Map(nodes.map((n) => [n.id, n]));
  // The other end of each link, by end: port (or host) id → [far end id, far host id].
  const far = new Map<string, Array<[string, string]>>();
  const neighbours = new Map<string, Set<string>>(tops.map((n) => [n.id, new Set()]));
  for (const e of edges) {
    const [a, b] = [hostOf.get(e.source), hostOf.get(e.target)];
    if (!a || !b || a === b) continue;
    (far.get(e.source) ?? far.set(e.source, []).get(e.source)!).push([e.target, b]);
    (far.get(e.target) ?? far.set(e.target, []).get(e.target)!).push([e.source, a]);
    neighbours.get(a)!.add(b);
    neighbours.get(b)!.add(a);
  }
  const byLinks = [...tops].sort((x, y) => neighbours.get(y.id)!.size - neighbours.get(x.id)!.size || x.label.localeCompare(y.label, 'en', { numeric: true }) || x.id.localeCompare(y.id));
  // Ports as small as their names ("Gi1/0/12"): a faceplate of 36 is then as wide as a screen. Even
  // widths on whole centres: a link is exactly vertical.
  const portSize = (p: GraphNode) => ({ width: 2 * Math.ceil(Math.max(56, Math.min(160, 16 + 7 * p.label.length)) / 2), height: 36 });
  // (Not sized for Fit as elk's containers are: l2 is as wide as its faceplates, so wider hosts
  // only spread the columns and lower the zoom at Fit; measured on the realistic network.)
  const titleWidth = (id: string) => Math.max(80, Math.min(320, 16 + 7 * nodeById.get(id)!.label.length));
  /** A host with its interfaces in one row (hanging off a port, or without links). */
  const rowSize = (id: string) => {
    const ports = portsOf.get(id)!;
    if (!ports.length) return sizeOf(nodeById.get(id)!);
    const inner = ports.reduce((w, p) => w + portSize(p).width + PORT_GAP, -PORT_GAP);
    return { width: Math.max(titleWidth(id), inner) + PAD.left + PAD.right, height: PAD.top + portSize(ports[0]!).height + PAD.bottom };
  };
  /** Where an interface's (or the host's own) centre lies right of its host's left edge, in a row. */
  const offsetIn = (id: string, end: string) => {
    let x = PAD.left;
    for (const p of portsOf.get(id)!) {
      if (p.id === end) return x + portSize(p).width / 2;
      x += portSize(p).width + PORT_GAP;
    }
    return rowSize(id).width / 2;
  };
  const positions: Record<string, Box> = {};
  const placeRow = (id: string, x: number, y: number) => {
    let left = x + PAD.left;
    for (const p of portsOf.get(id)!) {
      const ps = portSize(p);
      positions[p.id] = { x: Math.round(left), y: Math.round(y + PAD.top), ...ps };
      left += ps.width + PORT_GAP;
    }
    positions[id] = { x: Math.round(x), y: Math.round(y), ...rowSize(id) };
  };
  /** Hosts hanging off one port: side by side, centred on it (one host: its linked interface over the port). */
  interface Hanging { ids: string[]; width: number; height: number; left: number; right: number }
  const hangingOff = (port: string): Hanging | undefined => {
    const hosts = (far.get(port) ?? []).filter(([, h]) => !placed.has(h) && neighbours.get(h)!.size === 1);
    if (!hosts.length) return undefined;
    for (const [, h] of hosts) placed.add(h);
    const ids = hosts.map(([, h]) => h);
    const width = ids.reduce((w, h) => w + rowSize(h).width + MARGIN, -MARGIN);
    const height = Math.max(...ids.map((h) => rowSize(h).height));
    const left = ids.length === 1 ? offsetIn(ids[0]!, hosts[0]![0]) : width / 2;
    return { ids, width, height, left, right: width - left };
  };
  /** Hangings of one side in tiers outwards (the nearest free one); the tiers' heights. */
  const tiersOf = (hangings: Array<Hanging | undefined>, centres: number[]) => {
    const tierRight: number[] = [];
    const tierOf = hangings.map((g, j) => {
      if (!g) return -1;
      let t = 0;
      while (tierRight[t] !== undefined && tierRight[t]! + MARGIN > centres[j]! - g.left) t++;
      tierRight[t] = centres[j]! + g.right;
      return t;
    });
    const heights = tierRight.map((_, t) => Math.max(...hangings.filter((g, j) => g && tierOf[j] === t).map((g) => g!.height)));
    return { tierOf, heights };
  };
  const placed = new Set<string>();
  let bandTop = 0;
  let widest = 0;
  for (const head of byLinks) {
    if (placed.has(head.id) || !neighbours.get(head.id)!.size) continue;
    placed.add(head.id);
    const ports = portsOf.get(head.id)!;
    const columns = Math.ceil(ports.length / 2);
    const top = [...Array(columns).keys()].map((j) => ports[2 * j]!);
    const bottom = [...Array(columns).keys()].map((j) => ports[2 * j + 1]);
    const above = top.map((p) => hangingOff(p.id));
    const below = bottom.map((p) => (p ? hangingOff(p.id) : undefined));
    // Column centres: ports apart, and no host reaching the next column's link (nor the previous one's).
    const portHalf = (j: number) => Math.max(portSize(top[j]!).width, bottom[j] ? portSize(bottom[j]!).width : 0) / 2;
    const reach = (j: number, side: 'left' | 'right') => Math.max(0, ...[above[j], below[j]].map((g) => (g ? g[side] : 0)));
    const centres: number[] = [];
    for (let j = 0; j < columns; j++) {
      centres.push(Math.ceil(j === 0
        ? Math.max(PAD.left + portHalf(0), reach(0, 'left'))
        : centres[j - 1]! + Math.max(portHalf(j - 1) + PORT_GAP + portHalf(j), reach(j - 1, 'right') + MARGIN, reach(j, 'left') + MARGIN)));
    }
    const up = tiersOf(above, centres);
    const down = tiersOf(below, centres);
    const rowHeight = 36;
    const plateTop = bandTop + (up.heights.length ? up.heights.reduce((a, b) => a + b + GAP, 0) - GAP + LINK_GAP : 0);
    const plateHeight = PAD.top + rowHeight + (columns && bottom[0] ? PORT_GAP + rowHeight : 0) + PAD.bottom;
    const plateLeft = columns ? centres[0]! - portHalf(0) - PAD.left : 0;
    const plateRight = columns ? centres[columns - 1]! + portHalf(columns - 1) + PAD.right : 0;
    positions[head.id] = { x: Math.round(plateLeft), y: Math.round(plateTop), width: Math.round(Math.max(plateRight - plateLeft, titleWidth(head.id) + PAD.left + PAD.right)), height: plateHeight };
    const hang = (g: Hanging | undefined, j: number, y: (height: number) => number) => {
      if (!g) return;
      let x = centres[j]! - g.left;
      for (const id of g.ids) {
        const size = rowSize(id);
        placeRow(id, x, y(size.height));
        x += size.width + MARGIN;
      }
    };
    const tierEdge = (heights: number[], t: number) => heights.slice(0, t).reduce((a, b) => a + b + GAP, 0);
    for (let j = 0; j < columns; j++) {
      // Both ports of a column as wide as the wider: the faceplate's rows line up.
      const port = { width: 2 * portHalf(j), height: rowHeight };
      positions[top[j]!.id] = { x: centres[j]! - portHalf(j), y: plateTop + PAD.top, ...port };
      if (bottom[j]) positions[bottom[j]!.id] = { x: centres[j]! - portHalf(j), y: plateTop + PAD.top + rowHeight + PORT_GAP, ...port };
      // Above: each tier's hosts stand on its lower edge; below: they hang from its upper edge.
      hang(above[j], j, (height) => plateTop - LINK_GAP - tierEdge(up.heights, up.tierOf[j]!) - height);
      hang(below[j], j, () => plateTop + plateHeight + LINK_GAP + tierEdge(down.heights, down.tierOf[j]!));
    }
    const band = Object.values(positions);
    widest = Math.max(widest, ...band.map((b) => b.x + b.width));
    bandTop = Math.max(...band.map((b) => b.y + b.height)) + 2 * GAP;
  }
  // Hosts without links (or linked to a switch itself, not to one of its ports): in rows below, as wide as the faceplates.
  let x = 0;
  let rowHeight = 0;
  for (const n of byLinks.filter((h) => !placed.has(h.id))) {
    const size = rowSize(n.id);
    if (x > 0 && x + size.width > Math.max(1200, widest)) { x = 0; bandTop += rowHeight + GAP; rowHeight = 0; }
    placeRow(n.id, x, bandTop);
    x += size.width + GAP;
    rowHeight = Math.max(rowHeight, size.height);
  }
  return positions;
}

/** Straight segments between node centres (as the map and the exports draw links) that cross, counted pair by pair. */
export function edgeCrossings(edges: GraphEdge[], positions: Record<string, Box>): number {
  const centre = (id: string) => { const b = positions[id]!; return { x: b.x + b.width / 2, y: b.y + b.height / 2 }; };
  const segs = edges.filter((e) => positions[e.source] && positions[e.target]).map((e) => [centre(e.source), centre(e.target)] as const);
  const side = (a: { x: number; y: number }, b: { x: number; y: number }, c: { x: number; y: number }) => Math.sign((b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x));
  let n = 0;
  for (let i = 0; i < segs.length; i++) {
    for (let j = i + 1; j < segs.length; j++) {
      const [p, q] = segs[i]!;
      const [r, t] = segs[j]!;
      // Proper crossings only: segments sharing an end (two links of one port) do not cross.
      if (side(p, q, r) * side(p, q, t) < 0 && side(r, t, p) * side(r, t, q) < 0) n += 1;
    }
  }
  return n;
}

/** Spacing and container padding of placeIncrementally: elk's (ELK_OPTIONS, containerOptions). */
const GAP = 24;
const PAD = { top: 40, left: 16, bottom: 16, right: 16 };

/** Boxes closer than GAP count as overlapping. */
const overlaps = (a: Box, b: Box) => a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;

/** The first place at or below `start` (same x, stepping down) where `size` overlaps none of `taken`. */
function freePlace(start: { x: number; y: number }, size: { width: number; height: number }, taken: Box[]): Box {
  const box = { x: start.x, y: start.y, ...size };
  for (let blocked = taken.find((t) => overlaps(box, t)); blocked; blocked = taken.find((t) => overlaps(box, t))) box.y = blocked.y + blocked.height + GAP;
  return box;
}

/** Whether a container of `nodes` held (by its previous box) more than twice as many nodes as are still there. */
function lostMostOfWhatItHeld(nodes: GraphNode[], previous: Record<string, Box>, isContainer: Set<string>): boolean {
  const present = new Set(nodes.map((n) => n.id));
  const inside = (b: Box, c: Box) => b !== c && b.x + b.width / 2 > c.x && b.x + b.width / 2 < c.x + c.width && b.y + b.height / 2 > c.y && b.y + b.height / 2 < c.y + c.height;
  const gone = Object.entries(previous).filter(([id]) => !present.has(id)).map(([, b]) => b);
  if (!gone.length) return false;
  const before = Object.values(previous);
  return [...isContainer].some((id) => {
    const box = previous[id];
    if (!box) return false;
    const lost = gone.filter((b) => inside(b, box)).length;
    return lost > 0 && lost > before.filter((b) => inside(b, box)).length / 2;
  });
}

/**
 * A layout that keeps every node where it was (a later layout places new nodes near
 * their neighbours instead of reshuffling the map). `previous`: the network view's last positions.
 * A new element goes below a node it shares a container with (the other end of
 * one of its edges, else its container's last element), in the first free place; a new container
 * goes right of the map, its elements in a column; a container grows to hold its elements and what
 * lay below it moves down as much. Undefined when less than `keep` of the nodes were placed before
 * (a first layout, a container expanded), when a container lost more than half of what it held
 * (quiet hosts folded into a summary node): a container never shrinks here, so it would stay a
 * large, mostly empty box; or when more than a fifth of the elements changed size. elk then lays
 * the graph out afresh.
 */
export function placeIncrementally(nodes: GraphNode[], edges: GraphEdge[], previous: Record<string, Box>, keep = 0.8): Record<string, Box> | undefined {
  const isContainer = new Set(nodes.filter((n) => n.parent_id).map((n) => n.parent_id!));
  const kept = (n: GraphNode) => previous[n.id] && (isContainer.has(n.id) || !n.parent_id || previous[n.parent_id]);
  // l2 is laid out afresh every time: its layout is cheap, and stable by itself (port order).
  if (!nodes.length || isL2(nodes) || nodes.filter(kept).length < keep * nodes.length) return undefined;
  if (lostMostOfWhatItHeld(nodes, previous, isContainer)) return undefined;
  const positions: Record<string, Box> = {};
  let resized = 0;
  for (const n of nodes) {
    const p = previous[n.id];
    if (!kept(n)) continue;
    // Elements take their size anew (a label or a service list may have changed); containers grow below.
    positions[n.id] = isContainer.has(n.id) ? { ...p! } : { x: p!.x, y: p!.y, ...sizeOf(n) };
    if (!isContainer.has(n.id) && (positions[n.id]!.width !== p!.width || positions[n.id]!.height !== p!.height)) resized += 1;
  }
  // Most elements changed size (sizes are computed anew by a new version, or a scan changed much):
  // pushing each down below its grown neighbours would leave a staircase; elk lays it out afresh.
  if (resized > Math.max(4, 0.2 * Object.keys(positions).length)) return undefined;
  const neighbours = new Map<string, string[]>();
  for (const e of edges) {
    (neighbours.get(e.source) ?? neighbours.set(e.source, []).get(e.source)!).push(e.target);
    (neighbours.get(e.target) ?? neighbours.set(e.target, []).get(e.target)!).push(e.source);
  }
  const parentOf = new Map(nodes.map((n) => [n.id, n.parent_id]));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const childrenOf = new Map<string | null, string[]>();
  for (const n of nodes) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n.id);
  const inside = (parent: string | null) => (childrenOf.get(parent) ?? []).filter((id) => positions[id]).map((id) => positions[id]!);
  const right = () => Math.max(0, ...Object.values(positions).map((b) => b.x + b.width));
  const top = () => Math.min(...Object.values(positions).map((b) => b.y));

  // New containers first (right of the map), with their elements in a column.
  for (const c of nodes.filter((n) => isContainer.has(n.id) && !positions[n.id])) {
    const kids = (childrenOf.get(c.id) ?? []).map((id) => byId.get(id)!);
    const x = right() + 2 * GAP;
    let y = top() + PAD.top;
    let width = 0;
    for (const k of kids) {
      const size = sizeOf(k);
      positions[k.id] = { x: x + PAD.left, y, ...size };
      y += size.height + GAP;
      width = Math.max(width, size.width);
    }
    positions[c.id] = { x, y: top(), width: width + PAD.left + PAD.right, height: y - GAP - top() + PAD.bottom };
  }
  // New elements: below a placed neighbour in the same container, else below the container's last element.
  for (const n of nodes.filter((x) => !positions[x.id] && !isContainer.has(x.id))) {
    const siblings = inside(n.parent_id);
    const neighbour = (neighbours.get(n.id) ?? []).find((id) => positions[id] && parentOf.get(id) === n.parent_id);
    const container = n.parent_id ? positions[n.parent_id] : undefined;
    const last = siblings.reduce<Box | undefined>((a, b) => (!a || b.y + b.height > a.y + a.height ? b : a), undefined);
    const anchor = neighbour ? positions[neighbour] : last;
    const start = anchor ? { x: anchor.x, y: anchor.y + anchor.height + GAP }
      : container ? { x: container.x + PAD.left, y: container.y + PAD.top }
      : { x: right() + 2 * GAP, y: top() };
    positions[n.id] = freePlace(start, sizeOf(n), siblings);
  }
  // Containers grow to hold their elements (an element grew: a rescan found two more services on
  // it; one was added); what a grown box now reaches moves down, nothing else (keepApart).
  return keepApart(nodes, positions);
}

/** Boxes nearer each other than this overlap (l2's ports are 8 apart). */
const MIN_GAP = 8;
const tooClose = (a: Box, b: Box) => a.x < b.x + b.width + MIN_GAP && b.x < a.x + a.width + MIN_GAP && a.y < b.y + b.height + MIN_GAP && b.y < a.y + a.height + MIN_GAP;

/**
 * Every box apart from its siblings (after a rescan gave a host two more services its
 * box lay over its neighbour's, also after a reload). Group by group, containers' elements first:
 * in reading order (top to bottom, left to right), a box that reaches one already settled moves
 * down below it (GAP apart), with what it holds; a container then grows to hold its elements
 * (never shrinks). So what overlaps nothing keeps its place, and a box that grew pushes down only
 * what it now reaches. Any depth; in place, and returned.
 */
export function keepApart(nodes: GraphNode[], positions: Record<string, Box>): Record<string, Box> {
  const childrenOf = new Map<string | null, string[]>();
  for (const n of nodes) {
    if (!positions[n.id]) continue;
    const parent = n.parent_id && positions[n.parent_id] ? n.parent_id : null;
    (childrenOf.get(parent) ?? childrenOf.set(parent, []).get(parent)!).push(n.id);
  }
  const shift = (id: string, dy: number) => {
    positions[id]!.y += dy;
    for (const k of childrenOf.get(id) ?? []) shift(k, dy);
  };
  const parentOf = new Map(nodes.map((n) => [n.id, n.parent_id]));
  const depth = (id: string | null): number => {
    let d = 0;
    for (let p = id; p; p = parentOf.get(p) ?? null) d++;
    return d;
  };
  // Deepest groups first: a container's size is settled before its siblings are.
  const depths = new Map([...childrenOf.keys()].map((id) => [id, depth(id)]));
  const groups = [...childrenOf.keys()].sort((a, b) => depths.get(b)! - depths.get(a)!);
  for (const parent of groups) {
    const ids = [...childrenOf.get(parent)!].sort((a, b) => positions[a]!.y - positions[b]!.y || positions[a]!.x - positions[b]!.x || a.localeCompare(b));
    const settled: Box[] = [];
    for (const id of ids) {
      const box = positions[id]!;
      for (let blocker = settled.find((t) => tooClose(box, t)); blocker; blocker = settled.find((t) => tooClose(box, t))) shift(id, blocker.y + blocker.height + GAP - box.y);
      settled.push(box);
    }
    if (parent === null) continue;
    const box = positions[parent]!;
    const kids = childrenOf.get(parent)!.map((id) => positions[id]!);
    box.width = Math.max(box.width, ...kids.map((k) => k.x + k.width + PAD.right - box.x));
    box.height = Math.max(box.height, ...kids.map((k) => k.y + k.height + PAD.bottom - box.y));
  }
  return positions;
}

export const layoutJobId = (view: string, digest: string) => `layout-${view}-${digest}`;

/**
 * Fairness between organizations in the layout queue: an organization's first outstanding layout
 * job goes to BullMQ's wait list (taken before any prioritized job), its nth gets priority n (a
 * lower number is taken first), so a flood of one organization's jobs never delays another's first. The count is one Redis counter per organization, raised at enqueue
 * and lowered when the worker is done with the job (layoutFinished), each in one atomic script;
 * it expires an hour after its last rise, so a count a lost job left behind does not stay.
 */
const outstandingKey = (queue: Queue, organizationId: string) => `${queue.opts.prefix}:${queue.name}:outstanding:${organizationId}`;
const RAISE = `local n = redis.call('INCR', KEYS[1]) redis.call('EXPIRE', KEYS[1], 3600) return n`;
const LOWER = `local n = redis.call('DECR', KEYS[1]) if n <= 0 then redis.call('DEL', KEYS[1]) end return n`;
/** BullMQ's lowest priority. */
const PRIORITY_MAX = 2 ** 21;
/** The queue's own connection (an ioredis client under BullMQ's interface). */
const redisOf = async (queue: Queue) => (await queue.getBackend().client) as unknown as RedisClient;

export async function enqueueLayout(queue: Queue, job: LayoutJob): Promise<void> {
  const n = Number(await (await redisOf(queue)).eval(RAISE, 1, outstandingKey(queue, job.organization_id)));
  try {
    await queue.add('layout', job, {
      jobId: layoutJobId(job.view, job.digest), priority: n > 1 ? Math.min(n, PRIORITY_MAX) : undefined, removeOnComplete: { age: 3600, count: 1000 }, removeOnFail: { age: 24 * 3600 },
    });
  } catch (err) {
    await layoutFinished(queue, job.organization_id).catch(() => undefined);
    throw err;
  }
}

/** The worker is done with one of the organization's layout jobs (laid out or failed). */
export async function layoutFinished(queue: Queue, organizationId: string): Promise<void> {
  await (await redisOf(queue)).eval(LOWER, 1, outstandingKey(queue, organizationId));
}

/**
 * The layout of a graph for an answer: the stored one, else `pending` (and the job enqueued once:
 * the pending row is the claim). Pins of the network's view are laid over it.
 */
export async function layoutFor(db: Db, queue: Queue, job: LayoutJob, nodeIds: Set<string>): Promise<Layout> {
  // Positions as text: a large map's thousands of boxes are spliced into the answer as PostgreSQL
  // wrote them, not parsed into objects and stringified again on the event loop (other
  // organizations' requests waited behind that and its collection).
  let row = await db.one<{ status: Layout['status']; positions: string | null; routes: string | null; error: string | null }>(
    `select status, positions::text as positions, routes::text as routes, error from topology_layouts where view = ? and digest = ?`, [job.view, job.digest],
  );
  if (!row) {
    const claimed = await db.query(
      `insert into topology_layouts (view, digest, network_id, status) values (?, ?, ?, 'pending') on conflict do nothing returning 1`,
      [job.view, job.digest, job.network_id],
    );
    if (claimed.length) {
      try {
        await enqueueLayout(queue, job);
      } catch (err) {
        // Not queued (Redis down): no claim either, so the next answer tries again.
        await db.query(`delete from topology_layouts where view = ? and digest = ? and status = 'pending'`, [job.view, job.digest]);
        return { status: 'pending', positions: {}, routes: {}, pinned: [], error: `not queued: ${(err as Error).message}` };
      }
    }
    row = { status: 'pending', positions: null, routes: null, error: null };
  }
  const pins = (await readPins(db, job.organization_id, job.network_id, job.view)).filter((p) => nodeIds.has(p.node_id));
  const error = row.error ? { error: row.error } : {};
  const routes = new JsonText(row.routes ?? '{}');
  if (!pins.length) return { status: row.status, positions: new JsonText(row.positions ?? '{}'), routes, pinned: [], ...error };
  const { positions, pinned } = overlayPins(row.positions ? JSON.parse(row.positions) as Record<string, Box> : {}, pins, nodeIds);
  return { status: row.status, positions, routes, pinned, ...error };
}

export interface Pin { node_id: string; x: number; y: number }

/** The network view's pins. */
export function readPins(db: Db, organizationId: string, networkId: string, view: View): Promise<Pin[]> {
  return db.query<Pin>(`select node_id, x, y from topology_pins where organization_id = ? and network_id = ? and view = ? order by node_id`, [organizationId, networkId, view]);
}

/** Positions with pins laid over them (pins of nodes not drawn are left out). */
export function overlayPins(laid: Record<string, Box>, pins: Pin[], nodeIds: Set<string>) {
  const positions: Record<string, Box> = { ...laid };
  const pinned: string[] = [];
  for (const p of pins) {
    if (!nodeIds.has(p.node_id)) continue;
    const box = positions[p.node_id];
    positions[p.node_id] = { x: p.x, y: p.y, width: box?.width ?? 0, height: box?.height ?? 0 };
    pinned.push(p.node_id);
  }
  return { positions, pinned };
}

/**
 * The positions a new layout of the network's view starts from: its last ready layout. Pins are
 * not part of it (a node dragged out of its container must not stretch the container); they are
 * laid over every answer.
 */
export async function previousPositions(db: Db, networkId: string, view: View, exceptDigest: string): Promise<Record<string, Box>> {
  const last = await db.one<{ positions: Record<string, Box> }>(
    `select positions from topology_layouts where network_id = ? and view = ? and status = 'ready' and digest <> ? order by updated_at desc limit 1`,
    [networkId, view, exceptDigest],
  );
  return last?.positions ?? {};
}

/** The worker's end of it: the positions, or the failure, stored for every later answer. */
export async function storeLayout(db: Db, job: Pick<LayoutJob, 'view' | 'digest' | 'network_id'>, result: { positions: Record<string, Box>; routes: Record<string, Array<{ x: number; y: number }>>; durationMs: number } | { error: string }): Promise<void> {
  const ok = 'positions' in result;
  await db.query(
    `insert into topology_layouts (view, digest, network_id, status, positions, routes, error, node_count, duration_ms, updated_at)
     values (?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, now())
     on conflict (view, digest) do update set status = excluded.status, positions = excluded.positions, routes = excluded.routes, error = excluded.error,
       node_count = excluded.node_count, duration_ms = excluded.duration_ms, updated_at = now()`,
    [job.view, job.digest, job.network_id, ok ? 'ready' : 'failed', ok ? JSON.stringify(result.positions) : null, ok ? JSON.stringify(result.routes) : null, ok ? null : result.error,
      ok ? Object.keys(result.positions).length : null, ok ? Math.round(result.durationMs) : null],
  );
}
