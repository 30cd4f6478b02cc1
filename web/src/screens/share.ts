// A share link's page (/share/<token>): the read-only map of one network, as the link fixes it
// (view, live or as of an instant), for people who do not sign in and for pages that embed it in a
// frame. It reads only /api/share/<token>/… (never the session, never another page), draws with the
// map's renderer without its tools (nothing is dragged, pinned or edited), and, for a live link,
// reads the map again when its stream says it changed.
import { api, ApiError, apiPath, query } from '../api.js';
import { fill, h, when } from '../dom.js';
import { legendOf } from '../legend.js';
import { MapRenderer } from '../mapRenderer.js';
import type { Topology } from '../mapState.js';

type Shared = Topology & { share: { network_name: string; label: string | null; view: string; at: string | null; expires_at: string } };

const LAYOUT_POLL_MS = 1500;
/** A burst of changes (a scan) is read once, this long after its first event. */
const CHANGE_SETTLE_MS = 3000;

export function shareScreen(root: HTMLElement, token: string): () => void {
  const expand = new Set<string>();
  const timers = new Set<number>();
  let disposed = false;
  let stream: EventSource | undefined;
  let refreshQueued = false;
  let refit = true;
  const later = (ms: number, fn: () => void) => { const t = window.setTimeout(() => { timers.delete(t); if (!disposed) fn(); }, ms); timers.add(t); };

  const title = h('h1', {}, 'Shared map');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const canvas = h('div', { class: 'canvas', id: 'map-canvas', role: 'img', tabindex: 0, 'aria-label': 'Network map (read only)' });
  const legend = h('details', { class: 'legend', id: 'map-legend', open: window.matchMedia('(min-width: 721px)').matches }, h('summary', {}, 'Legend'));
  const renderer = new MapRenderer(canvas, {
    select: () => undefined,
    dragged: () => undefined,
    toggle: (id) => {
      if (expand.has(id)) expand.delete(id);
      else expand.add(id);
      void load();
    },
  });
  renderer.cy.autoungrabify(true); // read only: nothing to drag or pin
  const button = (label: string, onclick: () => void, attrs: Record<string, string> = {}) => h('button', { type: 'button', onclick, ...attrs }, label);
  fill(root, h('div', { class: 'frame share-frame' }, h('main', { id: 'outlet' }, h('div', { class: 'map-screen' },
    h('div', { class: 'map-head' }, title, status),
    h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Map tools' },
      button('Fit', () => renderer.fit(), { id: 'fit' }), button('+', () => renderer.zoomBy(1.25), { 'aria-label': 'Zoom in' }), button('−', () => renderer.zoomBy(0.8), { 'aria-label': 'Zoom out' })),
    // The legend beside the drawing, never over it (under it on a phone).
    h('div', { class: 'map-body' }, canvas, h('div', { class: 'sidebar share-legend' }, legend))))));

  const path = () => `${apiPath`/api/share/${token}/topology`}${query({ expand: [...expand] })}`;

  function draw(g: Shared) {
    const s = g.share;
    title.textContent = s.label ? `${s.network_name}: ${s.label}` : s.network_name;
    document.title = `${s.network_name} (shared map)`;
    fill(legend, h('summary', {}, 'Legend'), legendOf(g));
    renderer.setGraph(g.nodes, g.edges, g.layout.positions, refit, g.layout.routes);
    refit = false;
    // What tests wait for: drawn, and how much.
    canvas.dataset.ready = 'true';
    canvas.dataset.nodes = String(g.nodes.length);
    status.textContent = `${s.at ? `As of ${when(s.at)}` : `Live, as of ${when(g.as_of)}`} · ${s.view} view · link valid until ${when(s.expires_at)}`;
    if (!s.at && !stream) follow();
  }

  async function load(): Promise<void> {
    try {
      const g = await api.get<Shared>(path());
      if (disposed) return;
      if (g.layout.status === 'pending') {
        status.textContent = 'Laying out the map…';
        later(LAYOUT_POLL_MS, () => void load());
        return;
      }
      if (g.layout.status === 'failed') {
        status.textContent = `Layout failed: ${g.layout.error ?? 'unknown error'}`;
        return;
      }
      draw(g);
    } catch (err) {
      if (disposed) return;
      if (err instanceof ApiError && err.status === 404) {
        stream?.close();
        fill(root, h('main', { id: 'outlet' }, h('h1', {}, 'This link does not open a map'),
          h('p', {}, 'It may have expired or been revoked. Ask whoever shared it for a new one.')));
        return;
      }
      status.textContent = err instanceof Error ? err.message : String(err);
      later(10_000, () => void load());
    }
  }

  /** A live link: its stream says when the map may have changed (no data: the map is read again). */
  function follow() {
    stream = new EventSource(apiPath`/api/share/${token}/stream`);
    stream.addEventListener('changed', () => {
      if (refreshQueued) return;
      refreshQueued = true;
      later(CHANGE_SETTLE_MS, () => { refreshQueued = false; void load(); });
    });
    stream.addEventListener('ended', () => { stream?.close(); void load(); });
  }

  void load();
  return () => {
    disposed = true;
    for (const t of timers) clearTimeout(t);
    stream?.close();
    renderer.destroy();
  };
}
