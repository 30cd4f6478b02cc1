// Edge routing against elk, at the web bench's sizes (bench/web.ts: 1,000 and 2,000 element nodes,
// hosts with two addresses each in subnets of 250 hosts): the layout job's two parts timed apart,
// elk's layout (layoutGraph, the baseline, same graph, same run) and the routing of its edges
// around the boxes (routeEdges), medians of 3 rounds after a warm-up. Edges: each host's two
// addresses (same_host; its second address in the next subnet, so the edge leaves its subnet) and a
// dependency per 7 addresses between addresses of different subnets (drawn at right angles: always
// routed). Checked, as the browser test does from the drawn lines: no route crosses a box but its
// ends and their containers; counted: edges whose straight line would, edges left unrouted (the
// routing's work budget spent: WORK_PER_NODE in src/modules/topology/edgeRoutes.ts), the searches'
// work (grid points, points expanded: the same on any machine, unlike the times).
// Pure: no database. `node --import tsx bench/edgeRoutes.ts`; BENCH_SMALL=1: 200 elements, one round.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import type { GraphEdge, GraphNode } from '../src/modules/topology/graph.js';
import { layoutGraph, type Box } from '../src/modules/topology/layout.js';
import { routeEdges, routeStats, segmentCrossesBox, type Point } from '../src/modules/topology/edgeRoutes.js';
import { mustAgree, resultsFile, sized, sizedText, SMALL } from './small.js';

const SIZES = sizedText('ROUTE_SIZES', '1000,2000', '200').split(',').map(Number);
const ROUNDS = sized('ROUTE_ROUNDS', 3, 1);

/** A seeded generator (mulberry32): the same graph every run. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function graphOf(elements: number): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const hosts = elements / 2;
  const subnets = Math.max(2, Math.ceil(hosts / 250));
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  for (let k = 0; k < subnets; k++) nodes.push({ id: `subnet:${k}`, kind: 'subnet', entity_id: String(k), parent_id: null, label: `subnet-${k}`, cidr: `10.${k}.0.0/16` });
  const addresses: Array<{ id: string; subnet: number }> = [];
  for (let h = 0; h < hosts; h++) {
    const name = `host-${String(h).padStart(4, '0')}`;
    const [a, b] = [h % subnets, (h + 1) % subnets];
    for (const [i, k] of [[0, a], [1, b]] as const) {
      const id = `ip_address:${h}-${i}`;
      nodes.push({ id, kind: 'ip_address', entity_id: id, parent_id: `subnet:${k}`, label: `${name} 10.${k}.${h >> 8}.${h & 255}`, host_id: `h${h}`, host_name: name });
      addresses.push({ id, subnet: k });
    }
    edges.push({ id: `same_host:${h}`, kind: 'same_host', source: `ip_address:${h}-0`, target: `ip_address:${h}-1` });
  }
  const next = random(elements);
  for (let d = 0; d < addresses.length / 7; d++) {
    const from = addresses[Math.floor(next() * addresses.length)]!;
    let to = addresses[Math.floor(next() * addresses.length)]!;
    while (to.subnet === from.subnet) to = addresses[Math.floor(next() * addresses.length)]!;
    edges.push({ id: `dependency:${d}`, kind: 'request_path', source: from.id, target: to.id, edge_style: 'SmoothStep' });
  }
  return { nodes, edges };
}

const centre = (b: Box): Point => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });
/** For each edge, whether its path (straight, or through its bends) crosses a box but its ends and their containers. */
function throughBoxes(nodes: GraphNode[], edges: GraphEdge[], positions: Record<string, Box>, routes: Record<string, Point[]>) {
  const parent = new Map(nodes.map((n) => [n.id, n.parent_id]));
  let straight = 0;
  let routed = 0;
  for (const e of edges) {
    const own = new Set<string>();
    for (const end of [e.source, e.target]) for (let p: string | null | undefined = end; p; p = parent.get(p)) own.add(p);
    const others = nodes.filter((n) => !own.has(n.id)).map((n) => positions[n.id]!);
    const line = [centre(positions[e.source]!), centre(positions[e.target]!)];
    const path = [line[0]!, ...(routes[e.id] ?? []), line[1]!];
    const crosses = (pts: Point[]) => others.some((b) => pts.some((p, k) => k > 0 && segmentCrossesBox(pts[k - 1]!, p, b)));
    if (crosses(line)) straight += 1;
    if (routes[e.id] && crosses(path)) routed += 1;
  }
  return { straight, routed };
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const result: Record<string, unknown> = { at: new Date().toISOString(), cpus: os.cpus().length, load: os.loadavg()[0], rounds: ROUNDS, sizes: {} };
for (const size of SIZES) {
  const { nodes, edges } = graphOf(size);
  await layoutGraph(nodes, edges); // warm-up (elk's load, the JIT)
  const elkMs: number[] = [];
  const routeMs: number[] = [];
  let positions: Record<string, Box> = {};
  let routes: Record<string, Point[]> = {};
  let work = {};
  for (let r = 0; r < ROUNDS; r++) {
    let t = performance.now();
    positions = await layoutGraph(nodes, edges);
    elkMs.push(performance.now() - t);
    const before = { ...routeStats };
    t = performance.now();
    routes = routeEdges(nodes, edges, positions);
    routeMs.push(performance.now() - t);
    work = { searches: routeStats.searches - before.searches, grid_points: routeStats.gridPoints - before.gridPoints, expanded: routeStats.expanded - before.expanded };
  }
  const through = throughBoxes(nodes, edges, positions, routes);
  const unrouted = edges.filter((e) => !routes[e.id]).length;
  const row = {
    elements: size, edges: edges.length, elk_ms: Math.round(median(elkMs)), route_ms: Math.round(median(routeMs)),
    route_share: Math.round((median(routeMs) / (median(elkMs) + median(routeMs))) * 100) / 100,
    straight_through_boxes: through.straight, routed_through_boxes: through.routed, unrouted,
    bends: Object.values(routes).reduce((n, r) => n + r.length, 0), ...work,
  };
  (result.sizes as Record<number, unknown>)[size] = row;
  console.log(JSON.stringify(row));
  // The routes cross no box (as test/web/edgeRoutes.spec.ts counts the drawn lines); an edge left
  // unrouted (the routing's work budget spent) is drawn as before.
  mustAgree(`edges through boxes at ${size} elements`, through.routed === 0, `${through.routed} of ${edges.length} (straight: ${through.straight})`);
}
const file = resultsFile(`edge-routes-${String(result.at).replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
console.log(`results: ${file.pathname}${SMALL ? ' (small run)' : ''}`);
