// The API's own exports (GET /api/v1/topology/export) follow the layout's edge routes as the map
// does: an SVG edge routed around a box is a polyline through its bends, a draw.io edge has them as
// waypoints. Pure on a small drawing, then through HTTP on a network whose layout the export stores.
import { expect } from 'chai';
import { XMLParser } from 'fast-xml-parser';
import { toDrawio, toSvg } from '../../src/modules/topology/export.js';
import { routeEdges, type Point } from '../../src/modules/topology/edgeRoutes.js';
import type { GraphEdge, GraphNode } from '../../src/modules/topology/graph.js';
import type { Box } from '../../src/modules/topology/layout.js';
import { Db } from '../../src/core/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { buildNetwork } from '../support/network.js';

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' });
const list = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

/** The SVG's edges by id: the points a polyline passes through, or its path's `d`. */
function svgEdges(text: string): Map<string, { points?: Point[]; d?: string }> {
  const svg = parser.parse(text).svg;
  const out = new Map<string, { points?: Point[]; d?: string }>();
  for (const p of list<any>(svg.polyline)) out.set(p['data-id'], { points: String(p.points).split(' ').map((xy) => { const [x, y] = xy.split(',').map(Number); return { x: x!, y: y! }; }) });
  for (const p of list<any>(svg.path)) if (p['data-id']) out.set(p['data-id'], { d: p.d });
  return out;
}

/** The draw.io file's edges by id: their style and waypoints. */
function drawioEdges(text: string): Map<string, { style: string; points: Point[] }> {
  const cells = list<any>(parser.parse(text).mxfile.diagram.mxGraphModel.root.mxCell);
  return new Map(cells.filter((c) => c.edge === '1').map((c) => [c.id, { style: c.style, points: list<any>(c.mxGeometry?.Array?.mxPoint).map((p) => ({ x: Number(p.x), y: Number(p.y) })) }]));
}

const near = (a: Point[], b: Point[]) => a.length === b.length && a.every((p, i) => Math.abs(p.x - b[i]!.x) < 0.01 && Math.abs(p.y - b[i]!.y) < 0.01);

describe('topology export: edges follow the layout\'s routes', () => {
  // a and b level, c between them: the straight line a→b crosses c, so the router bends round it.
  const nodes: GraphNode[] = ['a', 'b', 'c', 'd'].map((id) => ({ id, kind: 'host', entity_id: null, parent_id: null, label: id }));
  const positions: Record<string, Box> = {
    a: { x: 0, y: 0, width: 100, height: 40 }, b: { x: 400, y: 0, width: 100, height: 40 }, c: { x: 200, y: -20, width: 100, height: 80 }, d: { x: 0, y: 200, width: 100, height: 40 },
  };
  const edges: GraphEdge[] = [{ id: 'ab', kind: 'physical_link', source: 'a', target: 'b' }, { id: 'ad', kind: 'physical_link', source: 'a', target: 'd' }];
  const routes = routeEdges(nodes, edges, positions);

  it('pure: a routed edge is an SVG polyline from border to border through its bends and a draw.io edge with them as waypoints; a straight one is as before', () => {
    expect(routes.ab!.length, JSON.stringify(routes)).to.be.greaterThan(1);
    expect(routes.ad).to.deep.equal([]);
    const svg = svgEdges(toSvg({ nodes, edges, positions, routes, title: 't' }));
    const ab = svg.get('ab')!.points!;
    expect(ab.slice(1, -1)).to.deep.equal(routes.ab);
    // Its ends on the borders of a and b (the first bend is level with a's centre, so the line leaves a's side).
    expect(ab[0]!.y === 0 || ab[0]!.y === 40 || ab[0]!.x === 0 || ab[0]!.x === 100, JSON.stringify(ab[0])).to.equal(true);
    expect(ab.at(-1)!.y === 0 || ab.at(-1)!.y === 40 || ab.at(-1)!.x === 400 || ab.at(-1)!.x === 500, JSON.stringify(ab.at(-1))).to.equal(true);
    // No segment of it crosses c.
    const c = positions.c!;
    for (let i = 1; i < ab.length; i++) {
      const [p, q] = [ab[i - 1]!, ab[i]!];
      const inside = (v: Point) => v.x > c.x && v.x < c.x + c.width && v.y > c.y && v.y < c.y + c.height;
      expect(inside({ x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 }), `segment ${i}`).to.equal(false);
    }
    expect(svg.get('ad')!.d).to.be.a('string');
    const drawio = drawioEdges(toDrawio({ nodes, edges, positions, routes, title: 't' }));
    expect(drawio.get('ab')!.points).to.deep.equal(routes.ab);
    expect(drawio.get('ab')!.style).to.contain('edgeStyle=none;');
    expect(drawio.get('ad')!.points).to.deep.equal([]);
    // A node pinned elsewhere since: the route no longer meets it, and is not followed.
    const moved = { ...positions, b: { ...positions.b!, x: 420, y: 300 } };
    expect(svgEdges(toSvg({ nodes, edges, positions: moved, routes, title: 't' })).get('ab')!.points).to.equal(undefined);
    expect(drawioEdges(toDrawio({ nodes, edges, positions: moved, routes, title: 't' })).get('ab')!.points).to.deep.equal([]);
  });

  describe('through HTTP', () => {
    let app: TestApp;
    let t: Tenant;
    beforeEach(async () => {
      app = await startTestApp();
      t = await registerTenant(app.url, 'exportroutes');
      await buildNetwork(app, t.owner, t.defaultNetworkId);
    });
    afterEach(() => app.close());

    it('SVG and draw.io exports draw each routed edge through the bends the layout stored', async () => {
      const file = async (format: string) => {
        const res = await fetch(`${app.url}/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=${format}`, { headers: { Cookie: t.owner.cookie! } });
        expect(res.status, format).to.equal(200);
        return res.text();
      };
      // The first export lays the view out and stores the layout (no worker runs here); the next ones read it.
      await file('svg');
      const topo = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}`, { auth: t.owner }));
      expect(topo.layout.status).to.equal('ready');
      // This small network's edges are all straight: one is given a route over the drawing, as the
      // router would store one that bends round a box (level with its ends' centres).
      const edge = topo.edges.find((e: any) => e.kind === 'request_path' || e.kind === 'hub_and_spoke');
      const [s, d] = [topo.layout.positions[edge.source] as Box, topo.layout.positions[edge.target] as Box];
      const top = Math.min(...Object.values(topo.layout.positions as Record<string, Box>).map((b) => b.y)) - 40;
      const over = [{ x: s.x + s.width / 2, y: top }, { x: d.x + d.width / 2, y: top }];
      const db = new Db(app.services.orm.em.fork());
      await db.query(`update topology_layouts set routes = jsonb_set(routes, array[?], ?::jsonb) where view = 'l3' and digest = ?`, [edge.id, JSON.stringify(over), topo.digest]);
      const routed = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}`, { auth: t.owner }));
      const stored = Object.entries(routed.layout.routes as Record<string, Point[]>).filter(([, r]) => r.length);
      expect(stored.map(([id]) => id)).to.deep.equal([edge.id]);
      const svg = svgEdges(await file('svg'));
      const drawio = drawioEdges(await file('drawio'));
      for (const [id, bends] of stored) {
        expect(near(svg.get(id)?.points?.slice(1, -1) ?? [], bends), `svg ${id}: ${JSON.stringify(svg.get(id))} vs ${JSON.stringify(bends)}`).to.equal(true);
        expect(near(drawio.get(id)?.points ?? [], bends), `drawio ${id}: ${JSON.stringify(drawio.get(id))} vs ${JSON.stringify(bends)}`).to.equal(true);
      }
    });
  });
});
