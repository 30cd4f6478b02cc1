// L2 layout crossings (issue 23.2): the L2 view of scripts/realisticNetwork.ts (core-sw-01's 36
// ports and the hosts hanging off them, LLDP seen from either side as the fixture records it;
// hidden dns-01 left out as the map leaves it), drawn by graph.ts, laid out by elk as before
// (layoutWithElk) and by the faceplate layout (layoutGraph → layoutL2), then the crossings of
// the links as drawn (straight, centre to centre) counted pair by pair, the links passing
// through a box they do not join, and the drawing's size (the map fits it to a wide screen).
// Pure: no database. `node --import tsx bench/l2Layout.ts`.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { buildGraph, type GraphEdge, type GraphNode, type Snapshot } from '../src/modules/topology/graph.js';
import { edgeCrossings, layoutGraph, layoutWithElk, type Box } from '../src/modules/topology/layout.js';
import { mainHosts } from '../scripts/realisticNetwork.js';

/** The fixture's hosts and interfaces, as buildRealisticNetwork creates them through the API. */
export function fixtureL2Snapshot(): Snapshot {
  const specs = mainHosts();
  const hosts = specs.map((h) => ({ id: randomUUID(), name: h.name, hostname: h.hostname ?? null, hidden: h.hidden ?? false, tags: [] }));
  const id = new Map(specs.map((h, i) => [h.name, hosts[i]!.id]));
  const interfaces: Array<Record<string, unknown>> = [];
  const linked = new Map(specs.filter((h) => h.switchPort).map((h) => [h.switchPort!, h]));
  for (let port = 1; port <= 36; port++) {
    const h = linked.get(port);
    const fromSwitch = h?.lldpFromSwitch ? { lldp_sys_name: h.name, lldp_port_id: 'eth0' } : {};
    interfaces.push({ id: randomUUID(), host_id: id.get('core-sw-01'), if_index: port, if_name: `Gi1/0/${port}`, if_descr: `GigabitEthernet1/0/${port}`, ...fromSwitch });
  }
  for (const h of specs.filter((x) => x.switchPort)) {
    const fromHost = h.lldpFromSwitch ? {} : { lldp_sys_name: 'core-sw-01', lldp_port_id: `Gi1/0/${h.switchPort}` };
    interfaces.push({ id: randomUUID(), host_id: id.get(h.name), if_index: 2, if_name: 'eth0', ...fromHost });
  }
  return { subnets: [], hosts, ipAddresses: [], ports: [], services: [], bindings: [], interfaces, dependencies: [], tags: [] };
}

/** Links (straight, centre to centre) passing through the box of a node they do not join (nor its host). */
function throughUnrelated(nodes: GraphNode[], edges: GraphEdge[], positions: Record<string, Box>): number {
  const parent = new Map(nodes.map((n) => [n.id, n.parent_id]));
  const c = (b: Box) => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });
  const hits = (p: { x: number; y: number }, q: { x: number; y: number }, b: Box) => {
    let [t0, t1] = [0, 1];
    const [dx, dy] = [q.x - p.x, q.y - p.y];
    for (const [pk, qk] of [[-dx, p.x - b.x - 1], [dx, b.x + b.width - 1 - p.x], [-dy, p.y - b.y - 1], [dy, b.y + b.height - 1 - p.y]] as Array<[number, number]>) {
      if (pk === 0) { if (qk < 0) return false; continue; }
      const r = qk / pk;
      if (pk < 0) t0 = Math.max(t0, r); else t1 = Math.min(t1, r);
      if (t0 > t1) return false;
    }
    return true;
  };
  let n = 0;
  for (const e of edges) {
    const joined = new Set([e.source, e.target, parent.get(e.source), parent.get(e.target)]);
    if (nodes.some((x) => !joined.has(x.id) && positions[x.id] && hits(c(positions[e.source]!), c(positions[e.target]!), positions[x.id]!))) n += 1;
  }
  return n;
}

async function main() {
  const graph = buildGraph(fixtureL2Snapshot(), 'l2', { maxNodes: 5000 });
  const links = graph.edges.filter((e) => e.kind === 'physical_link');
  const measure = async (layout: typeof layoutGraph) => {
    const started = performance.now();
    const positions = await layout(graph.nodes, graph.edges);
    const ms = performance.now() - started;
    const boxes = Object.values(positions);
    const width = Math.max(...boxes.map((b) => b.x + b.width)) - Math.min(...boxes.map((b) => b.x));
    const height = Math.max(...boxes.map((b) => b.y + b.height)) - Math.min(...boxes.map((b) => b.y));
    return {
      crossings: edgeCrossings(links, positions), through_unrelated_boxes: throughUnrelated(graph.nodes, links, positions), layout_ms: Math.round(ms),
      width, height, aspect: Number((width / height).toFixed(2)),
    };
  };
  await layoutWithElk(graph.nodes, graph.edges); // warm-up: elk's first run loads and compiles it
  const before = await measure(layoutWithElk);
  const after = await measure(layoutGraph);
  const result = {
    at: new Date().toISOString(), nodes: graph.nodes.length, links: links.length, before, after,
    fewer_crossings: before.crossings ? Number((1 - after.crossings / before.crossings).toFixed(3)) : null,
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL(`./results/l2-layout-${result.at.replace(/[:.]/g, '-')}.json`, import.meta.url), JSON.stringify(result, null, 2) + '\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
