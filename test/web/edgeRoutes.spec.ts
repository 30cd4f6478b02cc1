// Edges drawn around boxes, on the realistic network (scripts/realisticNetwork.ts) in real headless
// Chromium at 1440x900, in every view, at Fit and zoomed in: from the lines as Cytoscape draws them
// (each edge's source endpoint, bends and target endpoint, on screen), no edge crosses the inside
// of a box that is neither one of its ends nor a container of one. And the draw.io export carries
// the same bends as waypoints.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { PASSWORD, uniqueEmail } from '../support/world.js';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, mapSnapshot, openPage, realisticWorld, signIn, type WatchedPage } from './browser.js';

const VIEWS = ['l3', 'workloads', 'application', 'l2'];
const KIND_OF_VIEW: Record<string, string> = { workloads: 'service:', application: 'tag:', l2: 'interface:', l3: 'subnet:' };

type Snapshot = Awaited<ReturnType<typeof mapSnapshot>>;
type Drawn = Snapshot[string] & { screenPoints?: Array<{ x: number; y: number }>; hidden?: boolean; source?: string; target?: string };
interface Rect { x1: number; y1: number; x2: number; y2: number }

/** Whether the segment a→b passes through the rectangle's inside shrunk by `inset` on every side. */
function crosses(a: { x: number; y: number }, b: { x: number; y: number }, r: Rect, inset: number): boolean {
  const [x1, y1, x2, y2] = [r.x1 + inset, r.y1 + inset, r.x2 - inset, r.y2 - inset];
  if (x1 >= x2 || y1 >= y2) return false;
  let [t0, t1] = [0, 1];
  const [dx, dy] = [b.x - a.x, b.y - a.y];
  for (const [p, q] of [[-dx, a.x - x1], [dx, x2 - a.x], [-dy, a.y - y1], [dy, y2 - a.y]] as const) {
    if (p === 0) { if (q <= 0) return false; continue; }
    const t = q / p;
    if (p < 0) { if (t > t1) return false; t0 = Math.max(t0, t); } else { if (t < t0) return false; t1 = Math.min(t1, t); }
  }
  return t1 > t0;
}

/**
 * Edges drawn through a box that is not theirs: "edge × box" for every edge shown and every box
 * shown (not absent, not under a card) that is neither an end of it nor a container of an end.
 * A box counts from 1 px inside its border on screen (a line drawn along a side, or the end of a
 * segment rounded to the pixel, is not through it).
 */
export function edgesThroughBoxes(snapshot: Snapshot): string[] {
  const nodes = Object.entries(snapshot) as Array<[string, Drawn]>;
  const boxes = nodes.filter(([, n]) => n.kind && !n.classes.includes('absent') && !n.classes.includes('in-card'))
    .map(([id, n]) => ({ id, x1: n.screenX - n.screenWidth! / 2, x2: n.screenX + n.screenWidth! / 2, y1: n.screenY - n.screenHeight! / 2, y2: n.screenY + n.screenHeight! / 2 }));
  const parent = new Map(nodes.map(([id, n]) => [id, n.parent]));
  const out: string[] = [];
  for (const [id, e] of nodes) {
    if (e.kind || !e.screenPoints || e.hidden) continue;
    const own = new Set<string>();
    for (const end of [e.source!, e.target!]) for (let p: string | undefined = end; p; p = parent.get(p)) own.add(p);
    const pts = e.screenPoints;
    // (Cytoscape gives NaN for an end it cannot find: a bend on the end's border. Nothing is drawn then.)
    if (pts.some((p) => !Number.isFinite(p.x) || !Number.isFinite(p.y))) out.push(`${id}: not drawn (${JSON.stringify(pts)})`);
    for (const b of boxes) {
      if (own.has(b.id)) continue;
      if (pts.some((p, k) => k > 0 && crosses(pts[k - 1]!, p, b, 1))) out.push(`${id} × ${b.id}`);
    }
  }
  return out;
}

describe('web map: edges around boxes (Chromium, realistic network)', function () {
  this.timeout(240_000);
  const world = realisticWorld();
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function openMap(view = 'l3'): Promise<Page> {
    const viewer = { email: uniqueEmail('viewer'), password: PASSWORD };
    await world.owner('POST', '/api/v1/users', { ...viewer, permissions: 'Admin' });
    w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    await signIn(w.page, world.app.url, viewer, `/networks/${world.user.networkId}/topology?view=${view}`);
    await w.page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 90_000 });
    await drawn(w.page, view);
    return w.page;
  }
  async function drawn(page: Page, view: string) {
    await waitFor(`the ${view} view drawn`, async () => Object.keys(await mapSnapshot(page)).some((id) => id.startsWith(KIND_OF_VIEW[view]!)) && !/Laying out/.test((await page.textContent('.status')) ?? ''));
    await settled(page);
  }
  async function settled(page: Page) {
    let last = '';
    for (let i = 0; i < 40; i++) {
      const now = JSON.stringify(Object.values(await mapSnapshot(page)).slice(0, 30).map((n) => [Math.round(n.screenX), Math.round(n.screenY), n.label]));
      if (now === last) return;
      last = now;
      await page.waitForTimeout(120);
    }
  }

  it('in every view, at Fit and zoomed in, no edge crosses a box but its ends and their containers; most edges that would are routed', async () => {
    const page = await openMap();
    const counts: string[] = [];
    for (const view of VIEWS) {
      if (view !== 'l3') {
        await page.selectOption('#view', view);
        await drawn(page, view);
      }
      for (const step of ['Fit', 'zoomed in']) {
        if (step === 'Fit') await page.click('#fit');
        else for (let i = 0; i < 4; i++) await page.click('button[aria-label="Zoom in"]');
        await settled(page);
        const snapshot = await mapSnapshot(page);
        const edges = Object.values(snapshot as Record<string, Drawn>).filter((n) => !n.kind && !n.hidden);
        const routed = edges.filter((e) => e.classes.includes('routed')).length;
        counts.push(`${view} at ${step}: ${edges.length} edges shown, ${routed} routed`);
        expect(edgesThroughBoxes(snapshot), `${view} at ${step}: edges through boxes`).to.deep.equal([]);
      }
    }
    // The realistic network's views have edges a straight line would draw through boxes: some are routed.
    expect(counts.some((c) => !/ 0 routed/.test(c)), counts.join('; ')).to.equal(true);
    console.log(`      ${counts.join('\n      ')}`);
    expectNoProblems(w!);
  });

  // (Changes the network's pins: last.)
  it('a node pinned elsewhere: its edges are drawn unrouted, from where it now is (the route was made for where it was); the other routes stay', async () => {
    const page = await openMap('l3');
    const before = await mapSnapshot(page) as Record<string, Drawn>;
    const routed = Object.entries(before).filter(([, e]) => !e.kind && !e.hidden && e.classes.includes('routed'));
    expect(routed.length).to.be.greaterThan(1);
    const [edgeId, edge] = routed[0]!;
    const moved = edge.source!;
    const untouched = routed.filter(([, e]) => e.source !== moved && e.target !== moved).map(([id]) => id);
    expect(untouched.length).to.be.greaterThan(0);
    await world.owner('PUT', '/api/v1/topology/positions', { network_id: world.user.networkId, view: 'l3', positions: { [moved]: { x: -700, y: -500 } } });
    await page.reload();
    await page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 90_000 });
    await drawn(page, 'l3');
    const after = await mapSnapshot(page) as Record<string, Drawn>;
    expect(after[moved]!.x, 'drawn where it was pinned (its box centre right of x -700)').to.be.within(-700, -700 + 400);
    const e = after[edgeId]!;
    expect(e.classes, 'its edge no longer follows the route').to.not.include('routed');
    expect(e.screenPoints!.every((p) => Number.isFinite(p.x) && Number.isFinite(p.y)), 'drawn').to.equal(true);
    for (const id of untouched) expect(after[id]!.classes, id).to.include('routed');
    expectNoProblems(w!);
  });
});
