// placeIncrementally after the l3 fold (issue 23), pure: a map laid out with a subnet's quiet hosts
// one by one, then drawn with them folded into one summary node, is laid out afresh (a container
// never shrinks in place: the subnet would stay a large, mostly empty box); losing a host or two
// still keeps every position.
import { expect } from 'chai';
import { buildGraph, FOLD_MIN, type Snapshot } from '../../src/modules/topology/graph.js';
import { keepApart, layoutGraph, placeIncrementally, type Box } from '../../src/modules/topology/layout.js';

const OFFICE = '00000000-0000-4000-8000-000000000001';
const SERVERS = '00000000-0000-4000-8000-000000000002';

/** `quiet` hosts in "office" (one address, no service: folded from FOLD_MIN on), `busy` ones in "servers" (a service each). */
function snapshot(quiet: number, busy: number): Snapshot {
  const subnets = [{ id: OFFICE, cidr: '10.1.0.0/24', name: 'office' }, { id: SERVERS, cidr: '10.2.0.0/24', name: 'servers' }];
  const hosts = [
    ...Array.from({ length: quiet }, (_, i) => ({ id: `ws${i}`, name: `ws-${i}`, tags: [] })),
    ...Array.from({ length: busy }, (_, i) => ({ id: `srv${i}`, name: `srv-${i}`, tags: [] })),
  ];
  const ipAddresses = hosts.map((h, i) => ({ id: `ip-${h.id}`, host_id: h.id, subnet_id: i < quiet ? OFFICE : SERVERS, ip_address: i < quiet ? `10.1.0.${i + 1}` : `10.2.0.${i - quiet + 1}`, position: 0 }));
  const services = hosts.slice(quiet).map((h) => ({ id: `svc-${h.id}`, host_id: h.id, name: `svc-${h.id}`, position: 0 }));
  return { subnets, hosts, ipAddresses, ports: [], services, bindings: [], interfaces: [], dependencies: [], tags: [] };
}

describe('topology: placeIncrementally after a container lost most of its elements (pure)', () => {
  // Few enough quiet hosts that, folded, more than 80 % of the nodes were placed before: only the new rule refuses.
  const quiet = FOLD_MIN + 4;
  const busy = 60;

  it('a subnet whose quiet hosts folded into a summary node is laid out afresh', async () => {
    const opened = buildGraph(snapshot(quiet, busy), 'l3', { maxNodes: 1000, expand: [`summary:${OFFICE}`] });
    const laid = await layoutGraph(opened.nodes, opened.edges);
    const folded = buildGraph(snapshot(quiet, busy), 'l3', { maxNodes: 1000 });
    expect(folded.nodes.map((n) => n.id)).to.include(`summary:${OFFICE}`);
    const keptBefore = folded.nodes.filter((n) => laid[n.id]).length;
    expect(keptBefore, 'placed before').to.be.at.least(0.8 * folded.nodes.length);
    expect(placeIncrementally(folded.nodes, folded.edges, laid)).to.equal(undefined);
  });

  it('a subnet that lost less than half of its hosts keeps every position', async () => {
    const before = buildGraph(snapshot(quiet, busy), 'l3', { maxNodes: 1000, expand: [`summary:${OFFICE}`] });
    const laid = await layoutGraph(before.nodes, before.edges);
    // Two servers gone, the office still open.
    const after = buildGraph(snapshot(quiet, busy - 2), 'l3', { maxNodes: 1000, expand: [`summary:${OFFICE}`] });
    const placed = placeIncrementally(after.nodes, after.edges, laid);
    expect(placed).not.to.equal(undefined);
    for (const n of after.nodes.filter((x) => x.parent_id)) expect(placed![n.id], n.id).to.deep.equal(laid[n.id]);
  });
});

/** Pairs of boxes closer than `gap` (a container with what it holds excepted). */
function tooClose(nodes: Array<{ id: string; parent_id: string | null }>, positions: Record<string, Box>, gap = 8): string[] {
  const out: string[] = [];
  for (const [i, a] of nodes.entries()) {
    for (const b of nodes.slice(i + 1)) {
      if (a.parent_id === b.id || b.parent_id === a.id) continue;
      const [p, q] = [positions[a.id]!, positions[b.id]!];
      if (p.x < q.x + q.width + gap && q.x < p.x + p.width + gap && p.y < q.y + q.height + gap && q.y < p.y + p.height + gap) out.push(`${a.id} × ${b.id}`);
    }
  }
  return out;
}

describe('topology: every box apart after a node grew or a host was added under a stored layout (issue 40.2, pure)', () => {
  const busy = 30;
  /** The servers' first host with `extra` more services (its address lists them: its box is taller). */
  function grown(extra: number, added = 0): Snapshot {
    const s = snapshot(FOLD_MIN + 4, busy + added);
    const more = Array.from({ length: extra }, (_, i) => ({ id: `svc-more-${i}`, host_id: 'srv0', name: `more-${i}`, position: i + 1 }));
    const bindings = [...s.services, ...more].map((x) => ({ id: `b-${x.id}`, service_id: x.id, type: 'IPAddress', ip_address_id: `ip-${x.host_id}` }));
    return { ...s, services: [...s.services, ...more], bindings };
  }

  it('a host whose address grew by two services pushes down what it reaches, and only that; nothing overlaps', async () => {
    const before = buildGraph(grown(0), 'l3', { maxNodes: 1000 });
    const laid = await layoutGraph(before.nodes, before.edges);
    expect(tooClose(before.nodes, laid), 'a fresh layout').to.deep.equal([]);
    const after = buildGraph(grown(2), 'l3', { maxNodes: 1000 });
    const placed = placeIncrementally(after.nodes, after.edges, laid)!;
    expect(placed, 'kept incrementally').to.not.equal(undefined);
    const address = 'ip_address:ip-srv0';
    expect(placed[address]!.height).to.be.greaterThan(laid[address]!.height);
    expect(placed[address]).to.include({ x: laid[address]!.x, y: laid[address]!.y });
    expect(tooClose(after.nodes, placed)).to.deep.equal([]);
    // What did not lie under it kept its place.
    const grownBox = placed[address]!;
    const under = (b: Box) => b.y >= laid[address]!.y && b.x < grownBox.x + grownBox.width && grownBox.x < b.x + b.width;
    const stayed = after.nodes.filter((n) => n.parent_id && n.id !== address && !under(laid[n.id]!));
    expect(stayed.length).to.be.greaterThan(0);
    for (const n of stayed) expect(placed[n.id], n.id).to.deep.equal(laid[n.id]);
  });

  it('hosts added to a laid-out subnet are placed apart from every box, the subnet grown to hold them', async () => {
    const before = buildGraph(grown(0), 'l3', { maxNodes: 1000 });
    const laid = await layoutGraph(before.nodes, before.edges);
    const after = buildGraph(grown(3, 4), 'l3', { maxNodes: 1000 });
    const placed = placeIncrementally(after.nodes, after.edges, laid)!;
    expect(placed).to.not.equal(undefined);
    expect(tooClose(after.nodes, placed)).to.deep.equal([]);
    for (const n of after.nodes.filter((x) => x.parent_id)) {
      const [b, c] = [placed[n.id]!, placed[n.parent_id!]!];
      expect(b.x >= c.x && b.y >= c.y && b.x + b.width <= c.x + c.width && b.y + b.height <= c.y + c.height, `${n.id} inside ${n.parent_id}`).to.equal(true);
    }
  });

  it('keepApart leaves boxes already apart where they are, and moves down (with what it holds) a box laid over another', () => {
    const nodes = [
      { id: 'a', kind: 'subnet', entity_id: null, parent_id: null, label: 'a' }, { id: 'a1', kind: 'ip_address', entity_id: null, parent_id: 'a', label: 'a1' },
      { id: 'b', kind: 'subnet', entity_id: null, parent_id: null, label: 'b' }, { id: 'b1', kind: 'ip_address', entity_id: null, parent_id: 'b', label: 'b1' },
      { id: 'c', kind: 'ip_address', entity_id: null, parent_id: null, label: 'c' },
    ];
    const positions: Record<string, Box> = {
      a: { x: 0, y: 0, width: 200, height: 100 }, a1: { x: 16, y: 40, width: 120, height: 200 }, // a1 grew out of a
      b: { x: 0, y: 150, width: 200, height: 100 }, b1: { x: 16, y: 190, width: 120, height: 36 },
      c: { x: 300, y: 0, width: 120, height: 36 },
    };
    const out = keepApart(nodes, structuredClone(positions));
    expect(out.c).to.deep.equal(positions.c);
    expect(out.a).to.deep.equal({ x: 0, y: 0, width: 200, height: 256 });
    expect(out.b!.y).to.equal(256 + 24);
    expect(out.b1!.y - out.b!.y).to.equal(positions.b1!.y - positions.b!.y);
    expect(tooClose(nodes, out)).to.deep.equal([]);
  });
});
