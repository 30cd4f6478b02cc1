// The edge router (src/modules/topology/edgeRoutes.ts), a pure function: boxes and edges in, bend
// points out. Every path it gives, from the source's centre through its bends to the target's,
// crosses the interior of no box but its ends and their containers.
import { expect } from 'chai';
import { PASSAGE, routeEdges, segmentCrossesBox, SPREAD, type Point } from '../../src/modules/topology/edgeRoutes.js';
import type { Box } from '../../src/modules/topology/layout.js';

type N = { id: string; parent_id: string | null };
const centre = (b: Box): Point => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });

/**
 * The boxes a route crosses (its ends and their ancestors excepted; and an end's own elements, unless
 * it holds the other end: the map draws the edge from the end's border, so what lies inside is not drawn).
 */
function crossed(nodes: N[], positions: Record<string, Box>, source: string, target: string, bends: Point[]): string[] {
  const parent = new Map(nodes.map((n) => [n.id, n.parent_id]));
  const allowed = new Set<string>();
  const chains = [source, target].map((end) => { const c: string[] = []; for (let p: string | null | undefined = end; p; p = parent.get(p)) c.push(p); return c; });
  for (const c of chains) for (const id of c) allowed.add(id);
  for (const [end, other] of [[source, 1], [target, 0]] as const) {
    if (chains[other]!.includes(end)) continue;
    for (const n of nodes) { for (let p = n.parent_id; p; p = parent.get(p) ?? null) if (p === end) allowed.add(n.id); }
  }
  const path = [centre(positions[source]!), ...bends, centre(positions[target]!)];
  const out = new Set<string>();
  for (let k = 1; k < path.length; k++) for (const n of nodes) if (!allowed.has(n.id) && segmentCrossesBox(path[k - 1]!, path[k]!, positions[n.id]!)) out.add(n.id);
  return [...out];
}
/** No bend on or near an end's box (Cytoscape draws nothing for an edge whose bend is on its end's border). */
function clearOfEnds(positions: Record<string, Box>, s: string, t: string, bends: Point[]): boolean {
  const away = (p: Point, b: Box) => p.x <= b.x - 4 || p.x >= b.x + b.width + 4 || p.y <= b.y - 4 || p.y >= b.y + b.height + 4;
  return bends.every((p) => away(p, positions[s]!) && away(p, positions[t]!));
}
/** Each segment is horizontal or vertical. */
const orthogonal = (path: Point[]) => path.every((p, k) => !k || p.x === path[k - 1]!.x || p.y === path[k - 1]!.y);
const fullPath = (positions: Record<string, Box>, s: string, t: string, bends: Point[]) => [centre(positions[s]!), ...bends, centre(positions[t]!)];

describe('edge routes around boxes', () => {
  it('a clear straight line stays straight (no bends); a box in the way is gone round, at right angles', () => {
    const nodes: N[] = [{ id: 'a', parent_id: null }, { id: 'b', parent_id: null }, { id: 'c', parent_id: null }, { id: 'wall', parent_id: null }];
    const positions: Record<string, Box> = {
      a: { x: 0, y: 0, width: 100, height: 40 }, b: { x: 300, y: 0, width: 100, height: 40 },
      c: { x: 300, y: 200, width: 100, height: 40 }, wall: { x: 150, y: 150, width: 100, height: 140 },
    };
    // a–b: nothing between. a–c: the wall lies on the straight line (centres (50,20) and (350,220)).
    expect(segmentCrossesBox(centre(positions.a!), centre(positions.c!), positions.wall!)).to.equal(true);
    const routes = routeEdges(nodes, [{ id: 'ab', source: 'a', target: 'b' }, { id: 'ac', source: 'a', target: 'c' }], positions);
    expect(routes.ab).to.deep.equal([]);
    expect(routes.ac!.length).to.be.greaterThan(0);
    expect(crossed(nodes, positions, 'a', 'c', routes.ac!)).to.deep.equal([]);
    expect(orthogonal(fullPath(positions, 'a', 'c', routes.ac!))).to.equal(true);
    // Half a passage from the wall: no bend closer to it than that.
    for (const p of routes.ac!) {
      const w = positions.wall!;
      const dx = Math.max(w.x - p.x, 0, p.x - (w.x + w.width));
      const dy = Math.max(w.y - p.y, 0, p.y - (w.y + w.height));
      expect(Math.max(dx, dy), JSON.stringify(p)).to.be.at.least(PASSAGE / 2);
    }
  });

  it('an edge between elements of two subnets crosses both subnets (their containers) but no other element or subnet', () => {
    const nodes: N[] = [
      { id: 's1', parent_id: null }, { id: 's2', parent_id: null }, { id: 's3', parent_id: null },
      { id: 'a', parent_id: 's1' }, { id: 'a2', parent_id: 's1' }, { id: 'b', parent_id: 's2' }, { id: 'b2', parent_id: 's2' }, { id: 'x', parent_id: 's3' },
    ];
    const positions: Record<string, Box> = {
      s1: { x: 0, y: 0, width: 200, height: 200 }, a: { x: 16, y: 40, width: 120, height: 36 }, a2: { x: 16, y: 120, width: 168, height: 36 },
      s3: { x: 240, y: 0, width: 200, height: 400 }, x: { x: 256, y: 40, width: 120, height: 36 },
      s2: { x: 480, y: 200, width: 200, height: 200 }, b: { x: 496, y: 240, width: 120, height: 36 }, b2: { x: 496, y: 320, width: 120, height: 36 },
    };
    const edges = [{ id: 'e', source: 'a2', target: 'b2' }, { id: 'f', source: 'a', target: 'b' }];
    const routes = routeEdges(nodes, edges, positions);
    for (const e of edges) {
      expect(routes[e.id], e.id).to.be.an('array').that.is.not.empty;
      expect(crossed(nodes, positions, e.source, e.target, routes[e.id]!), e.id).to.deep.equal([]);
      expect(clearOfEnds(positions, e.source, e.target, routes[e.id]!), e.id).to.equal(true);
      expect(orthogonal(fullPath(positions, e.source, e.target, routes[e.id]!)), e.id).to.equal(true);
    }
  });

  it('at the limit: a gap exactly one passage wide is gone through (its middle); one narrower is gone round', () => {
    // Two posts between a and b, the gap between them at the height of both centres.
    const wall = (gap: number): Record<string, Box> => ({
      a: { x: 0, y: 200, width: 100, height: 40 }, b: { x: 500, y: 200, width: 100, height: 40 },
      top: { x: 250, y: 0, width: 100, height: 220 - gap / 2 }, bottom: { x: 250, y: 220 + gap / 2, width: 100, height: 400 },
    });
    const nodes: N[] = ['a', 'b', 'top', 'bottom'].map((id) => ({ id, parent_id: null }));
    const through = wall(PASSAGE);
    const r1 = routeEdges(nodes, [{ id: 'e', source: 'a', target: 'b' }], through).e!;
    // The centres' line runs down the gap's middle: half a passage from each post, so no bend needed.
    expect(r1, 'through a gap of exactly one passage').to.deep.equal([]);
    // Shifted so that the centres' line is not in the gap: the route bends into the gap's middle.
    const shifted = wall(PASSAGE);
    shifted.a!.y = 100;
    const r2 = routeEdges(nodes, [{ id: 'e', source: 'a', target: 'b', edge_style: 'Step' }], shifted).e!;
    expect(crossed(nodes, shifted, 'a', 'b', r2)).to.deep.equal([]);
    const inGap = fullPath(shifted, 'a', 'b', r2).some((p, k, path) => k > 0 && p.y === 220 && path[k - 1]!.y === 220);
    expect(inGap, JSON.stringify(r2)).to.equal(true);
    expect(Math.max(...r2.map((p) => p.y)), 'no detour below the posts').to.be.below(400);
    // A gap narrower than a passage (by one unit): a right-angled route goes round the posts, not through.
    const narrow = wall(PASSAGE - 1);
    narrow.a!.y = 100;
    const r3 = routeEdges(nodes, [{ id: 'e', source: 'a', target: 'b', edge_style: 'Step' }], narrow).e!;
    expect(crossed(nodes, narrow, 'a', 'b', r3)).to.deep.equal([]);
    expect(fullPath(narrow, 'a', 'b', r3).some((p) => p.y === 220 && p.x > 250 && p.x < 350), JSON.stringify(r3)).to.equal(false);
    expect(Math.min(...r3.map((p) => p.y)), 'over the top post, half a passage above it').to.equal(-PASSAGE / 2);
  });

  it('boxes enclosing the way completely: a gap narrower than a passage is still used (its middle) rather than none', () => {
    // b is inside a ring of four boxes 8 apart at the corners' gap: the only way in.
    const nodes: N[] = ['a', 'b', 'n', 's', 'w', 'e'].map((id) => ({ id, parent_id: null }));
    const positions: Record<string, Box> = {
      a: { x: -300, y: 80, width: 100, height: 40 }, b: { x: 100, y: 80, width: 100, height: 40 },
      n: { x: 0, y: 0, width: 300, height: 40 }, s: { x: 0, y: 160, width: 300, height: 40 },
      w: { x: 0, y: 48, width: 40, height: 104 }, e: { x: 260, y: 40, width: 40, height: 120 },
    };
    // The way in: between w and n (8 units, at x 0..40, y 40..48).
    const r = routeEdges(nodes, [{ id: 'ab', source: 'a', target: 'b' }], positions).ab!;
    expect(r, 'a route').to.be.an('array');
    expect(crossed(nodes, positions, 'a', 'b', r)).to.deep.equal([]);
  });

  it('an edge from a container to its own element crosses its container but not its other elements; an edge with no position is left out', () => {
    const nodes: N[] = [{ id: 'h', parent_id: null }, { id: 'svc1', parent_id: 'h' }, { id: 'svc2', parent_id: 'h' }, { id: 'other', parent_id: null }];
    const positions: Record<string, Box> = {
      // svc2 lies between other (straight above) and svc1.
      h: { x: 0, y: 0, width: 200, height: 200 }, svc1: { x: 16, y: 120, width: 168, height: 36 }, svc2: { x: 16, y: 40, width: 168, height: 36 },
      other: { x: 50, y: -200, width: 100, height: 40 },
    };
    const routes = routeEdges(nodes, [{ id: 'e', source: 'other', target: 'svc1' }, { id: 'gone', source: 'other', target: 'nowhere' }], positions);
    expect(routes.gone).to.equal(undefined);
    expect(routes.e).to.be.an('array').that.is.not.empty;
    expect(crossed(nodes, positions, 'other', 'svc1', routes.e!)).to.deep.equal([]);
  });

  it('an edge between two hosts drawn as containers (a VM on its hypervisor) leaves each by its side, its centre under one of its own services, around a third host', () => {
    const nodes: N[] = [
      { id: 'pve', parent_id: null }, { id: 'pve-ssh', parent_id: 'pve' }, { id: 'vm', parent_id: null }, { id: 'vm-web', parent_id: 'vm' },
      { id: 'other', parent_id: null }, { id: 'other-svc', parent_id: 'other' },
    ];
    const positions: Record<string, Box> = {
      // Each host's centre lies inside its one service.
      pve: { x: 0, y: 0, width: 200, height: 100 }, 'pve-ssh': { x: 16, y: 40, width: 168, height: 44 },
      other: { x: 250, y: 0, width: 200, height: 100 }, 'other-svc': { x: 266, y: 40, width: 168, height: 44 },
      vm: { x: 500, y: 0, width: 200, height: 100 }, 'vm-web': { x: 516, y: 40, width: 168, height: 44 },
    };
    const route = routeEdges(nodes, [{ id: 'e', source: 'pve', target: 'vm' }], positions).e;
    expect(route, 'a route').to.be.an('array').that.is.not.empty;
    expect(crossed(nodes, positions, 'pve', 'vm', route!)).to.deep.equal([]);
    expect(clearOfEnds(positions, 'pve', 'vm', route!)).to.equal(true);
  });

  it('edges that share a corridor are spread across it: no two run along one line, each still clear of every box and level with its ends', () => {
    // Three hosts left, three right, a wall between them: all three edges go round the wall's top.
    const nodes: N[] = ['a1', 'a2', 'a3', 'b1', 'b2', 'b3', 'wall'].map((id) => ({ id, parent_id: null }));
    const positions: Record<string, Box> = { wall: { x: 250, y: -60, width: 100, height: 400 } };
    for (let i = 1; i <= 3; i++) {
      positions[`a${i}`] = { x: 0, y: 100 * (i - 1), width: 100, height: 40 };
      positions[`b${i}`] = { x: 500, y: 100 * (i - 1) + 30, width: 100, height: 40 };
    }
    const edges = [1, 2, 3].map((i) => ({ id: `e${i}`, source: `a${i}`, target: `b${i}` }));
    const routes = routeEdges(nodes, edges, positions);
    /** Pairs of segments of different edges, between bends, on one line and overlapping. */
    const shared: string[] = [];
    const segments = Object.entries(routes).flatMap(([id, r]) => r.slice(1).map((b, k) => ({ id, a: r[k]!, b })));
    for (const s1 of segments) {
      for (const s2 of segments) {
        if (s1.id >= s2.id) continue;
        const vertical = s1.a.x === s1.b.x && s2.a.x === s2.b.x && s1.a.x === s2.a.x;
        const horizontal = s1.a.y === s1.b.y && s2.a.y === s2.b.y && s1.a.y === s2.a.y;
        const span = (s: typeof s1) => (vertical ? [Math.min(s.a.y, s.b.y), Math.max(s.a.y, s.b.y)] : [Math.min(s.a.x, s.b.x), Math.max(s.a.x, s.b.x)]);
        if ((vertical || horizontal) && Math.min(span(s1)[1]!, span(s2)[1]!) > Math.max(span(s1)[0]!, span(s2)[0]!)) shared.push(`${s1.id} ${s2.id} ${JSON.stringify([s1.a, s1.b])}`);
      }
    }
    expect(shared, JSON.stringify(routes)).to.deep.equal([]);
    for (const e of edges) {
      const r = routes[e.id]!;
      expect(r.length, e.id).to.be.greaterThan(1);
      expect(crossed(nodes, positions, e.source, e.target, r), e.id).to.deep.equal([]);
      expect(orthogonal(fullPath(positions, e.source, e.target, r)), e.id).to.equal(true);
      expect(clearOfEnds(positions, e.source, e.target, r), e.id).to.equal(true);
    }
    // Over the wall (the router's line one half passage above it), the edges that go that way are SPREAD apart, none on the wall.
    const over = edges.map((e) => routes[e.id]!.filter((p) => p.y < -60).map((p) => p.y)).filter((ys) => ys.length).map((ys) => ys[0]!).sort((a, b) => a - b);
    expect(over.length, JSON.stringify(routes)).to.be.at.least(2);
    for (let k = 1; k < over.length; k++) expect(over[k]! - over[k - 1]!).to.equal(SPREAD);
    expect(Math.max(...over)).to.be.lessThan(-60);
  });
});
