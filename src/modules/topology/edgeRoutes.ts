// Edges drawn around boxes: after the positions are known (in the layout worker, so every client
// draws the same and the browser does no routing), each edge whose straight line would cross a box
// gets a path of horizontal and vertical segments that crosses no box but its own ends and the
// containers (ancestors) of its ends. A* on a sparse grid made of the obstacles' sides (each moved
// out by half a passage) and the ends' centre lines, with a penalty per bend. The obstacles of an
// edge are, level by level, the siblings of its ends' ancestors: a box that blocks hides what it
// holds, so an edge between two subnets of 250 hosts sees the other subnets and the hosts of its own
// two, not every host. Pure: boxes and edges in, bend points out.
import type { Box } from './layout.js';

export interface Point { x: number; y: number }

/**
 * The narrowest gap between two boxes an edge goes through (graph units): a route keeps half of it
 * from every box it passes. Narrower gaps are passed through their middle when nothing else is
 * free (elk leaves 24 between elements; l2's faceplate ports and keepApart may leave 8).
 */
export const PASSAGE = 16;
/** What a bend costs, in graph units of length: a route takes a detour of up to this to save one. */
const BEND = 24;
/** Among paths of equal cost the search goes on with the one nearer its goal (far fewer points looked at on a grid's many equal paths). */
const TIE = 1e-6;
/** The least distance of a bend from an end's box (when gaps narrower than a passage are used). */
const END_CLEARANCE = 4;

interface RouteNode { id: string; parent_id: string | null }
interface RouteEdge { id: string; source: string; target: string; edge_style?: unknown }

/** Edge styles drawn with right angles (curveOf in web/src/mapState.ts): routed even when a straight line is clear. */
const rightAngled = (e: RouteEdge) => e.edge_style !== undefined && e.edge_style !== null && !['Straight', 'Bezier', 'SimpleBezier'].includes(String(e.edge_style));

/**
 * Each edge's bend points (absolute, in the positions' coordinates), from its source's centre to
 * its target's (neither centre included). An empty list: the straight line between the centres
 * crosses no box. An edge is left out when no path avoids every box (then drawn straight), or when
 * an end has no position.
 */
export function routeEdges(nodes: RouteNode[], edges: RouteEdge[], positions: Record<string, Box>, passage = PASSAGE, work = Math.max(WORK_LEAST, WORK_PER_NODE * nodes.length)): Record<string, Point[]> {
  budget = work;
  const parentOf = new Map<string, string | null>();
  const childrenOf = new Map<string | null, string[]>();
  for (const n of nodes) {
    if (!positions[n.id]) continue;
    const parent = n.parent_id && positions[n.parent_id] ? n.parent_id : null;
    parentOf.set(n.id, parent);
    (childrenOf.get(parent) ?? childrenOf.set(parent, []).get(parent)!).push(n.id);
  }
  const chain = (id: string) => {
    const out: Array<string | null> = [];
    for (let p: string | null | undefined = id; p; p = parentOf.get(p)) out.push(p);
    out.push(null);
    return out;
  };
  const routes: Record<string, Point[]> = {};
  const byPair = new Map<string, Point[] | undefined>();
  for (const e of edges) {
    const [s, t] = [positions[e.source], positions[e.target]];
    if (!s || !t || e.source === e.target || !parentOf.has(e.source) || !parentOf.has(e.target)) continue;
    const key = `${e.source}\u0000${e.target}\u0000${rightAngled(e)}`;
    if (!byPair.has(key)) {
      const [cs, ct] = [chain(e.source), chain(e.target)];
      const onChains = new Set<string | null>([...cs, ...ct]);
      // What may not be crossed: the children of every box on either chain that are not on a chain themselves.
      const ends = { s, t, sHolds: ct.includes(e.source), tHolds: cs.includes(e.target) };
      // An end's own elements are no obstacle (the map draws the edge from the end's border: what
      // lies inside it is not drawn), unless the end holds the other end (the path runs inside it).
      const inside = new Set<string | null>([...(ends.sHolds ? [] : [e.source]), ...(ends.tHolds ? [] : [e.target])]);
      const obstacles: Box[] = [];
      for (const a of onChains) if (!inside.has(a)) for (const k of childrenOf.get(a) ?? []) if (!onChains.has(k)) obstacles.push(positions[k]!);
      byPair.set(key, !rightAngled(e) && clear(centre(s), centre(t), obstacles) ? [] : budget > 0 ? route(ends, obstacles, passage) : undefined);
    }
    const r = byPair.get(key);
    if (r) routes[e.id] = r.map((p) => ({ ...p }));
  }
  const ends = new Map(edges.map((e) => [e.id, [positions[e.source], positions[e.target]] as const]));
  spreadParallel(routes, (id) => ends.get(id), Object.values(positions));
  return routes;
}

/** How far apart edges that share a corridor are drawn (graph units), at most: within half a passage of the line the router chose, as the router keeps from boxes. */
export const SPREAD = 6;

/**
 * Segments of different edges on one line and overlapping (edges that share a corridor: they read
 * as one line) spread across it, SPREAD apart or less (all within half a passage less one of the
 * router's line, which is a passage from any box: they cross none), centred on it, ordered by edge
 * id. Only segments between two bends move (an edge still leaves and reaches its ends along their
 * centre lines), and a moved segment that would cross a box (one holding neither end: a gap
 * narrower than a passage) is put back, with its neighbours. In place.
 */
export function spreadParallel(routes: Record<string, Point[]>, endsOf: (edgeId: string) => readonly [Box | undefined, Box | undefined] | undefined, boxes: Box[], passage = PASSAGE): void {
  interface Segment { id: string; k: number; vertical: boolean; at: number; from: number; to: number }
  const lines = new Map<string, Segment[]>();
  for (const [id, r] of Object.entries(routes)) {
    for (let k = 0; k + 1 < r.length; k++) {
      const [a, b] = [r[k]!, r[k + 1]!];
      const vertical = a.x === b.x;
      if (!vertical && a.y !== b.y) continue;
      const seg = { id, k, vertical, at: vertical ? a.x : a.y, from: Math.min(vertical ? a.y : a.x, vertical ? b.y : b.x), to: Math.max(vertical ? a.y : a.x, vertical ? b.y : b.x) };
      const key = `${vertical ? 'v' : 'h'}${seg.at}`;
      (lines.get(key) ?? lines.set(key, []).get(key)!).push(seg);
    }
  }
  const inside = (b: Box, p: Point) => p.x > b.x && p.x < b.x + b.width && p.y > b.y && p.y < b.y + b.height;
  for (const segments of lines.values()) {
    if (segments.length < 2) continue;
    // Runs of overlapping segments along the line, each spread on its own.
    segments.sort((a, b) => a.from - b.from || a.id.localeCompare(b.id));
    let run: Segment[] = [];
    let reach = -Infinity;
    const spread = () => {
      const edgesIn = [...new Set(run.map((x) => x.id))].sort();
      if (edgesIn.length < 2) return;
      const step = Math.min(SPREAD, (passage - 2) / (edgesIn.length - 1));
      for (const seg of run) {
        const r = routes[seg.id]!;
        const offset = (edgesIn.indexOf(seg.id) - (edgesIn.length - 1) / 2) * step;
        const before = [r[seg.k]!, r[seg.k + 1]!].map((p) => ({ ...p }));
        for (const p of [r[seg.k]!, r[seg.k + 1]!]) { if (seg.vertical) p.x = seg.at + offset; else p.y = seg.at + offset; }
        // What it crosses now: from the bend before to the bend after (or the ends' centres).
        const ends = endsOf(seg.id);
        const centres = [...(ends ?? [])].filter((b): b is Box => !!b).map((b) => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 }));
        const path = [seg.k > 0 ? r[seg.k - 1]! : centres[0], r[seg.k]!, r[seg.k + 1]!, seg.k + 2 < r.length ? r[seg.k + 2]! : centres[1]].filter((p): p is Point => !!p);
        const obstacles = boxes.filter((b) => !centres.some((c) => inside(b, c)));
        let crosses = false;
        for (let i = 0; i + 1 < path.length && !crosses; i++) crosses = obstacles.some((b) => segmentCrossesBox(path[i]!, path[i + 1]!, b));
        if (crosses) { Object.assign(r[seg.k]!, before[0]); Object.assign(r[seg.k + 1]!, before[1]); }
      }
    };
    for (const seg of segments) {
      if (seg.from >= reach && run.length) { spread(); run = []; }
      run.push(seg);
      reach = Math.max(reach, seg.to);
    }
    spread();
  }
}

const centre = (b: Box): Point => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });

/**
 * Whether a route was made for where its ends are: its first bend level with the source's centre
 * and its last with the target's (a node pinned elsewhere since breaks that; the route is then not
 * followed). The web map's routeStyle applies the same rule.
 */
export function followsEnds(source: Box, target: Box, route: Point[]): boolean {
  if (!route.length) return true;
  const level = (p: Point, c: Point) => Math.abs(p.x - c.x) < 0.5 || Math.abs(p.y - c.y) < 0.5;
  return level(route[0]!, centre(source)) && level(route[route.length - 1]!, centre(target));
}

/** Whether the segment a→b crosses the interior of none of the boxes. */
export function clear(a: Point, b: Point, boxes: Box[]): boolean {
  return !boxes.some((o) => segmentCrossesBox(a, b, o));
}

/** Whether the segment a→b passes through the box's interior (touching its sides does not count). */
export function segmentCrossesBox(a: Point, b: Point, o: Box, eps = 1e-6): boolean {
  // Liang–Barsky clipping against the open box shrunk by eps.
  const [x1, y1, x2, y2] = [o.x + eps, o.y + eps, o.x + o.width - eps, o.y + o.height - eps];
  if (x1 >= x2 || y1 >= y2) return false;
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  let t0 = 0;
  let t1 = 1;
  for (const [p, q] of [[-dx, a.x - x1], [dx, x2 - a.x], [-dy, a.y - y1], [dy, y2 - a.y]] as const) {
    if (p === 0) {
      if (q <= 0) return false;
    } else {
      const r = q / p;
      if (p < 0) { if (r > t1) return false; if (r > t0) t0 = r; } else { if (r < t0) return false; if (r < t1) t1 = r; }
    }
  }
  return t1 - t0 > 1e-9;
}

interface Ends { s: Box; t: Box; sHolds: boolean; tHolds: boolean }

/** The most grid points a search takes (its buffers: ~40 bytes a point). */
const MAX_GRID = 2_000_000;
/**
 * The searches' buffers, kept from one search to the next (allocating and clearing a grid's worth
 * per edge cost more than the searches). Blocked moves are cleared per search over the grid's part
 * only; costs are valid only where `seen` holds the search's number.
 */
let shared: { size: number; hBlocked: Uint8Array; vBlocked: Uint8Array; g: Float64Array; from: Int32Array; seen: Uint32Array } | undefined;
let searches = 0;
/**
 * Points a layout's searches may still look at (routeEdges sets it): the routing of a graph whose
 * every edge winds between hundreds of boxes stays within about elk's time for it (bench/README.md,
 * edge routes); the edges left then are drawn as before (straight, or at right angles). A count, not a
 * clock: the same graph is routed the same on any machine.
 */
let budget = 0;
const WORK_PER_NODE = 1000;
/** A small graph's budget all the same: its few edges may each wind round most of it (1,000 a node left workloads of the realistic network, 112 nodes, with 80 edge-box crossings). */
const WORK_LEAST = 1_000_000;
/** What the searches did since the process started (for bench/edgeRoutes.ts: work that does not depend on the machine's load). */
export const routeStats = { searches: 0, gridPoints: 0, expanded: 0 };
function buffersFor(points: number) {
  if (!shared || shared.size < points) {
    const size = Math.max(points, 2 * (shared?.size ?? 0), 65_536);
    shared = { size, hBlocked: new Uint8Array(size), vBlocked: new Uint8Array(size), g: new Float64Array(4 * size), from: new Int32Array(4 * size), seen: new Uint32Array(4 * size) };
    searches = 0;
  }
  shared.hBlocked.fill(0, 0, points);
  shared.vBlocked.fill(0, 0, points);
  return shared;
}

/** A path around the obstacles, tried near the ends first, then over the whole drawing, then through gaps narrower than a passage. */
function route(ends: Ends, obstacles: Box[], passage: number): Point[] | undefined {
  const near = 4 * passage + Math.max(ends.s.width, ends.s.height, ends.t.width, ends.t.height);
  return search(ends, obstacles, passage / 2, near, false) ?? search(ends, obstacles, passage / 2, Infinity, false) ?? search(ends, obstacles, 0, Infinity, true);
}

/**
 * A* over the grid of the obstacles' sides (moved out by `half`) within `pad` of the ends, states
 * (point, direction), cost length plus BEND a bend. `middles`: lines through the middle of every
 * gap between neighbouring grid lines as well (gaps narrower than a passage).
 */
function search(ends: Ends, all: Box[], half: number, pad: number, middles: boolean): Point[] | undefined {
  const { s, t } = ends;
  const [S, T] = [centre(s), centre(t)];
  const wx1 = Math.min(s.x, t.x) - pad;
  const wy1 = Math.min(s.y, t.y) - pad;
  const wx2 = Math.max(s.x + s.width, t.x + t.width) + pad;
  const wy2 = Math.max(s.y + s.height, t.y + t.height) + pad;
  const boxes = all.filter((o) => o.x < wx2 && o.x + o.width > wx1 && o.y < wy2 && o.y + o.height > wy1)
    .map((o) => ({ x1: o.x - half, y1: o.y - half, x2: o.x + o.width + half, y2: o.y + o.height + half }));
  // (Over the whole drawing: a frame one passage outside every box, so a route can go round all of them.)
  const frame = pad === Infinity ? boxes.reduce((f, o) => ({ x1: Math.min(f.x1, o.x1), y1: Math.min(f.y1, o.y1), x2: Math.max(f.x2, o.x2), y2: Math.max(f.y2, o.y2) }),
    { x1: Math.min(s.x, t.x), y1: Math.min(s.y, t.y), x2: Math.max(s.x + s.width, t.x + t.width), y2: Math.max(s.y + s.height, t.y + t.height) }) : { x1: wx1, y1: wy1, x2: wx2, y2: wy2 };
  const margin = pad === Infinity ? 2 * half + 16 : 0;
  // Round the ends too: no bend nearer an end than this (a bend on its border, Cytoscape finds no
  // point where the line leaves the box, and draws nothing).
  const endHalf = Math.max(half, END_CLEARANCE);
  const xsSet = new Set<number>([S.x, T.x, frame.x1 - margin, frame.x2 + margin, s.x - endHalf, s.x + s.width + endHalf, t.x - endHalf, t.x + t.width + endHalf]);
  const ysSet = new Set<number>([S.y, T.y, frame.y1 - margin, frame.y2 + margin, s.y - endHalf, s.y + s.height + endHalf, t.y - endHalf, t.y + t.height + endHalf]);
  for (const o of boxes) { xsSet.add(o.x1); xsSet.add(o.x2); ysSet.add(o.y1); ysSet.add(o.y2); }
  const lo = { x: frame.x1 - margin, y: frame.y1 - margin };
  const hi = { x: frame.x2 + margin, y: frame.y2 + margin };
  const sorted = (set: Set<number>, a: number, b: number) => {
    const v = [...set].filter((x) => x >= a && x <= b).sort((p, q) => p - q);
    if (!middles) return v;
    const out: number[] = [];
    v.forEach((x, i) => { if (i) out.push((v[i - 1]! + x) / 2); out.push(x); });
    return out;
  };
  const xs = sorted(xsSet, lo.x, hi.x);
  const ys = sorted(ysSet, lo.y, hi.y);
  const nx = xs.length;
  const ny = ys.length;
  if (nx * ny > MAX_GRID) return undefined;
  const index = (v: number[], x: number) => {
    let [a, b] = [0, v.length - 1];
    while (a < b) { const m = (a + b) >> 1; if (v[m]! < x) a = m + 1; else b = m; }
    return a;
  };
  // Blocked moves: h[j*nx+i] from (i,j) to (i+1,j); v[j*nx+i] from (i,j) to (i,j+1). A move is
  // blocked when its middle lies inside an obstacle (the grid holds every side, so a move is
  // wholly inside or wholly outside).
  const buffers = buffersFor(nx * ny);
  routeStats.searches += 1;
  routeStats.gridPoints += nx * ny;
  // (A grid point costs about a sixth of a point expanded to make: measured, bench/edgeRoutes.ts.)
  budget -= (nx * ny) / 6;
  if (budget < 0) return undefined;
  const { hBlocked, vBlocked } = buffers;
  const block = (b: { x1: number; y1: number; x2: number; y2: number }, except?: { x: number; y: number }) => {
    const [i1, i2] = [index(xs, b.x1), index(xs, b.x2)];
    const [j1, j2] = [index(ys, b.y1), index(ys, b.y2)];
    for (let j = j1; j <= j2 && j < ny; j++) {
      const yIn = ys[j]! > b.y1 && ys[j]! < b.y2;
      for (let i = i1; i <= i2 && i < nx; i++) {
        const xIn = xs[i]! > b.x1 && xs[i]! < b.x2;
        // Horizontal move (i→i+1) at row j: inside when row j is strictly inside and [xs[i], xs[i+1]] within.
        if (yIn && i < i2 && xs[i]! >= b.x1 && xs[i + 1]! <= b.x2 && ys[j] !== except?.y) hBlocked[j * nx + i] = 1;
        if (xIn && j < j2 && ys[j]! >= b.y1 && ys[j + 1]! <= b.y2 && xs[i] !== except?.x) vBlocked[j * nx + i] = 1;
      }
    }
  };
  for (const b of boxes) block(b);
  // An end is left and entered along its centre lines only: the path's first and last segments
  // then meet the box at its side, straight from its centre (where the map clips the edge). An end
  // that holds the other is crossed freely inside (the path has to reach its element).
  if (!ends.sHolds) block({ x1: s.x - endHalf, y1: s.y - endHalf, x2: s.x + s.width + endHalf, y2: s.y + s.height + endHalf }, S);
  if (!ends.tHolds) block({ x1: t.x - endHalf, y1: t.y - endHalf, x2: t.x + t.width + endHalf, y2: t.y + t.height + endHalf }, T);

  const start = index(ys, S.y) * nx + index(xs, S.x);
  const goal = index(ys, T.y) * nx + index(xs, T.x);
  if (start === goal) return [];
  // A* over (point, direction 0:+x 1:-x 2:+y 3:-y), a binary heap of [f, state]. A state's cost
  // and predecessor hold only when it was reached in this search (seen = this search's number).
  const { g, from, seen } = buffers;
  const search = ++searches;
  const reach = (st: number, c: number, prev: number) => { g[st] = c; from[st] = prev; seen[st] = search; };
  const heapF: number[] = [];
  const heapS: number[] = [];
  const push = (f: number, st: number) => {
    let i = heapF.length;
    heapF.push(f); heapS.push(st);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heapF[p]! <= f) break;
      heapF[i] = heapF[p]!; heapS[i] = heapS[p]!; i = p;
    }
    heapF[i] = f; heapS[i] = st;
  };
  const pop = () => {
    const st = heapS[0]!;
    const lastF = heapF.pop()!;
    const lastS = heapS.pop()!;
    if (heapF.length) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heapF.length) break;
        const r = l + 1;
        const c = r < heapF.length && heapF[r]! < heapF[l]! ? r : l;
        if (heapF[c]! >= lastF) break;
        heapF[i] = heapF[c]!; heapS[i] = heapS[c]!; i = c;
      }
      heapF[i] = lastF; heapS[i] = lastS;
    }
    return st;
  };
  const [gi, gj] = [goal % nx, Math.floor(goal / nx)];
  // What is left at least: the distance, and the bends it takes from the direction the point was
  // reached in (none straight on towards the goal, one to turn towards it, two to turn back).
  // (A turn back counts as one bend, as the search charges it.)
  const [gx, gy] = [xs[gi]!, ys[gj]!];
  const h = (i: number, j: number, d: number) => {
    const dx = gx - xs[i]!;
    const dy = gy - ys[j]!;
    const along = dx > 0 ? d === 0 : dx < 0 ? d === 1 : dy > 0 ? d === 2 : dy < 0 ? d === 3 : true;
    const alongY = dy > 0 ? d === 2 : dy < 0 ? d === 3 : false;
    const bends = dx !== 0 && dy !== 0 ? (along || alongY ? 1 : 2) : along ? 0 : 1;
    return (dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy) + BEND * bends;
  };
  for (let d = 0; d < 4; d++) { reach(start * 4 + d, 0, -1); push(0, start * 4 + d); }
  const endless = 1 + TIE;
  let found = -1;
  while (heapF.length) {
    const f0 = heapF[0]!;
    const st = pop();
    routeStats.expanded += 1;
    if (--budget < 0) return undefined;
    const p = st >> 2;
    const d = st & 3;
    if (p === goal) { found = st; break; }
    const base = g[st]!;
    const j = (p / nx) | 0;
    const i = p - j * nx;
    if (f0 > base + h(i, j, d) * endless + 1e-6) continue; // (a stale heap entry: reached more cheaply since)
    for (let nd = 0; nd < 4; nd++) {
      let q: number;
      let len: number;
      let qi = i;
      let qj = j;
      if (nd === 0) { if (i + 1 >= nx || hBlocked[p]) continue; q = p + 1; qi = i + 1; len = xs[qi]! - xs[i]!; }
      else if (nd === 1) { if (i === 0 || hBlocked[p - 1]) continue; q = p - 1; qi = i - 1; len = xs[i]! - xs[qi]!; }
      else if (nd === 2) { if (j + 1 >= ny || vBlocked[p]) continue; q = p + nx; qj = j + 1; len = ys[qj]! - ys[j]!; }
      else { if (j === 0 || vBlocked[p - nx]) continue; q = p - nx; qj = j - 1; len = ys[j]! - ys[qj]!; }
      const c = base + len + (nd === d ? 0 : BEND);
      const ns = q * 4 + nd;
      if (seen[ns] !== search || c < g[ns]!) { g[ns] = c; from[ns] = st; seen[ns] = search; push(c + h(qi, qj, nd) * endless, ns); }
    }
  }
  if (found < 0) return undefined;
  // The points, end to start; then only the bends.
  const points: Point[] = [];
  for (let st = found; st >= 0; st = from[st]!) {
    const p = st >> 2;
    points.push({ x: xs[p % nx]!, y: ys[Math.floor(p / nx)]! });
  }
  points.reverse();
  const bends: Point[] = [];
  for (let k = 1; k < points.length - 1; k++) {
    const [a, b, c] = [points[k - 1]!, points[k]!, points[k + 1]!];
    if ((a.x === b.x && b.x === c.x) || (a.y === b.y && b.y === c.y)) continue;
    bends.push({ x: Math.round(b.x * 10) / 10, y: Math.round(b.y * 10) / 10 });
  }
  return bends;
}
