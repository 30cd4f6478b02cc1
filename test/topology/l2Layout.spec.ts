// L2 that reads like a wiring diagram (issue 23.2), pure: a switch with 36 ports and 30 hosts on
// them (LLDP seen from either side, as in scripts/realisticNetwork.ts), drawn and laid out.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { buildGraph, type Snapshot } from '../../src/modules/topology/graph.js';
import { edgeCrossings, layoutGraph, type Box } from '../../src/modules/topology/layout.js';
import { EXPORTERS } from '../../src/modules/topology/export.js';

/** The switch sw-01 with `ports` ports (Gi1/0/1…), hosts h-01… on the ports `on` names (LLDP from the host's side for odd ones). */
function switchSnapshot(ports: number, on: number[], opts: { ifIndex?: boolean } = {}): Snapshot {
  const sw = { id: randomUUID(), name: 'sw-01', hostname: 'sw-01', hidden: false, tags: [] };
  const hosts = on.map((_, i) => ({ id: randomUUID(), name: `h-${String(i + 1).padStart(2, '0')}`, hostname: null, hidden: false, tags: [] }));
  const interfaces: Array<Record<string, unknown>> = [];
  // Created in shuffled order: the drawing must not depend on it.
  for (const port of [...Array(ports).keys()].map((k) => k + 1).sort((a, b) => ((a * 7) % ports) - ((b * 7) % ports))) {
    const i = on.indexOf(port);
    const fromSwitch = i >= 0 && i % 2 === 0 ? { lldp_sys_name: hosts[i]!.name, lldp_port_id: 'eth0' } : {};
    interfaces.push({ id: randomUUID(), host_id: sw.id, if_index: opts.ifIndex === false ? null : port, if_name: `Gi1/0/${port}`, ...fromSwitch });
  }
  hosts.forEach((h, i) => {
    const fromHost = i % 2 === 1 ? { lldp_sys_name: 'sw-01', lldp_port_id: `Gi1/0/${on[i]}` } : {};
    interfaces.push({ id: randomUUID(), host_id: h.id, if_index: 2, if_name: 'eth0', ...fromHost });
  });
  return { subnets: [], hosts: [sw, ...hosts], ipAddresses: [], ports: [], services: [], bindings: [], interfaces, dependencies: [], tags: [] };
}

const centre = (b: Box) => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });

/** Whether the segment p→q passes through the inside of box b (Liang–Barsky clipping). */
function throughBox(p: { x: number; y: number }, q: { x: number; y: number }, b: Box): boolean {
  const [x1, y1, x2, y2] = [b.x + 1, b.y + 1, b.x + b.width - 1, b.y + b.height - 1];
  let [t0, t1] = [0, 1];
  const [dx, dy] = [q.x - p.x, q.y - p.y];
  for (const [pk, qk] of [[-dx, p.x - x1], [dx, x2 - p.x], [-dy, p.y - y1], [dy, y2 - p.y]] as Array<[number, number]>) {
    if (pk === 0) { if (qk < 0) return false; continue; }
    const r = qk / pk;
    if (pk < 0) t0 = Math.max(t0, r);
    else t1 = Math.min(t1, r);
    if (t0 > t1) return false;
  }
  return true;
}

describe('topology: the l2 layout (pure)', () => {
  // 30 hosts on 36 ports, a few ports left free.
  const on = [...Array(36).keys()].map((k) => k + 1).filter((p) => ![5, 12, 19, 27, 33, 36].includes(p));

  it('links neither cross nor pass through a box they do not join', async () => {
    const graph = buildGraph(switchSnapshot(36, on), 'l2', { maxNodes: 5000 });
    const links = graph.edges.filter((e) => e.kind === 'physical_link');
    expect(links).to.have.length(30);
    const positions = await layoutGraph(graph.nodes, graph.edges);
    expect(edgeCrossings(links, positions)).to.equal(0);
    const parent = new Map(graph.nodes.map((n) => [n.id, n.parent_id]));
    for (const e of links) {
      const joined = new Set([e.source, e.target, parent.get(e.source), parent.get(e.target)]);
      for (const n of graph.nodes) {
        if (joined.has(n.id)) continue;
        expect(throughBox(centre(positions[e.source]!), centre(positions[e.target]!), positions[n.id]!), `${e.id} through ${n.label}`).to.equal(false);
      }
    }
  });

  it('a faceplate: odd ports on the top row, even ports under them, in port order; each host above or below its port', async () => {
    for (const ifIndex of [true, false]) {
      const snapshot = switchSnapshot(36, on, { ifIndex });
      const graph = buildGraph(snapshot, 'l2', { maxNodes: 5000 });
      const positions = await layoutGraph(graph.nodes, graph.edges);
      const sw = snapshot.hosts[0]!;
      const ports = graph.nodes.filter((n) => n.parent_id === `host:${sw.id}`);
      const byName = new Map(ports.map((p) => [p.label, p]));
      const port = (k: number) => positions[byName.get(`Gi1/0/${k}`)!.id]!;
      const odd = [...Array(18).keys()].map((k) => port(2 * k + 1));
      const even = [...Array(18).keys()].map((k) => port(2 * k + 2));
      // One row each, left to right in port order; port 2k under port 2k-1.
      expect(new Set(odd.map((b) => b.y)).size, `if_index ${ifIndex}`).to.equal(1);
      expect(new Set(even.map((b) => b.y)).size).to.equal(1);
      expect(even[0]!.y).to.be.greaterThan(odd[0]!.y + odd[0]!.height);
      const xs = odd.map((b) => b.x);
      expect(xs).to.deep.equal([...xs].sort((a, b) => a - b));
      expect(new Set(xs).size).to.equal(18);
      expect(even.map((b) => centre(b).x)).to.deep.equal(odd.map((b) => centre(b).x));
      const switchBox = positions[`host:${sw.id}`]!;
      for (const e of graph.edges) {
        const [p, farEnd] = ports.some((x) => x.id === e.source) ? [e.source, e.target] : [e.target, e.source];
        const farHost = positions[graph.nodes.find((n) => n.id === farEnd)!.parent_id!]!;
        const topRow = positions[p]!.y === odd[0]!.y;
        // Above a top-row port, below a bottom-row one; its interface straight over (under) the port.
        if (topRow) expect(farHost.y + farHost.height).to.be.lessThan(switchBox.y);
        else expect(farHost.y).to.be.greaterThan(switchBox.y + switchBox.height);
        expect(centre(positions[farEnd]!).x).to.equal(centre(positions[p]!).x);
      }
    }
  });

  it('the faceplate with its hosts is wider than tall', async () => {
    const graph = buildGraph(switchSnapshot(36, on), 'l2', { maxNodes: 5000 });
    const boxes = Object.values(await layoutGraph(graph.nodes, graph.edges));
    const width = Math.max(...boxes.map((b) => b.x + b.width)) - Math.min(...boxes.map((b) => b.x));
    const height = Math.max(...boxes.map((b) => b.y + b.height)) - Math.min(...boxes.map((b) => b.y));
    expect(width).to.be.greaterThan(height);
  });

  it('two switches: one faceplate each, stacked, their own links still neither crossing nor through a box', async () => {
    const a = switchSnapshot(12, [1, 2, 3, 4, 5, 6, 7]);
    const b = switchSnapshot(12, [2, 4, 6, 8, 10]);
    // Renamed so that LLDP names tell the two apart.
    const rename = (s: Snapshot, from: string, to: string) => {
      for (const h of s.hosts) { h.name = String(h.name).replace(from, to); if (h.hostname) h.hostname = String(h.hostname).replace(from, to); }
      for (const i of s.interfaces) if (typeof i.lldp_sys_name === 'string') i.lldp_sys_name = i.lldp_sys_name.replace(from, to);
    };
    rename(b, 'sw-01', 'sw-02');
    rename(b, 'h-', 'k-');
    const both: Snapshot = { ...a, hosts: [...a.hosts, ...b.hosts], interfaces: [...a.interfaces, ...b.interfaces] };
    const graph = buildGraph(both, 'l2', { maxNodes: 5000 });
    const links = graph.edges.filter((e) => e.kind === 'physical_link');
    expect(links).to.have.length(12);
    const positions = await layoutGraph(graph.nodes, graph.edges);
    expect(edgeCrossings(links, positions)).to.equal(0);
    const [one, two] = [positions[`host:${a.hosts[0]!.id}`]!, positions[`host:${b.hosts[0]!.id}`]!];
    expect(two.y).to.be.greaterThan(one.y + one.height);
    // Every box of the second band (sw-02 and its hosts) below every box of the first.
    const bandOf = (s: Snapshot) => s.hosts.map((h) => positions[`host:${h.id}`]!);
    expect(Math.min(...bandOf(b).map((x) => x.y))).to.be.greaterThan(Math.max(...bandOf(a).map((x) => x.y + x.height)));
  });

  it('links are undirected in the exports: no arrowheads in SVG and draw.io, undirected in GraphML', async () => {
    const graph = buildGraph(switchSnapshot(4, [1, 2, 3]), 'l2', { maxNodes: 5000 });
    const drawing = { nodes: graph.nodes, edges: graph.edges, positions: await layoutGraph(graph.nodes, graph.edges), title: 'l2' };
    const svgLinks = EXPORTERS.svg(drawing).split('\n').filter((l) => l.includes('class="edge physical_link"'));
    expect(svgLinks).to.have.length(3);
    for (const l of svgLinks) expect(l).not.to.contain('marker-end');
    const drawioLinks = EXPORTERS.drawio(drawing).split('\n').filter((l) => l.includes('id="physical_link:'));
    expect(drawioLinks).to.have.length(3);
    for (const l of drawioLinks) expect(l).to.contain('endArrow=none;');
    expect(EXPORTERS.graphml(drawing).match(/<edge [^>]*directed="false"/g)).to.have.length(3);
  });
});
