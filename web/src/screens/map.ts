// The map (/networks/<id>/topology?view=&at=&tags=&hidden=) and the diff between two instants
// (/networks/<id>/topology/diff?from=&to=&view=). Owns the map's state; draws through
// MapRenderer; reads the topology API: the graph and its layout (polled while `pending`), the
// change stream and the digest (to follow the inventory live), the timeline (the history slider: one layout for
// every instant, so nothing moves while scrubbing), the diff, the exports and the pins. The Export
// menu (exportMenu.ts) writes what is drawn: PNG and SVG (exportSvg.ts), draw.io (exportDrawio.ts).
import { api, ApiError, prefetch, query, takePrefetched } from '../api.js';
import { download, fill, h, notice, when } from '../dom.js';
import { hostDetails, tagsById } from '../hostDetails.js';
import { dependenciesByHost, type DependencyRow, type HostDependency } from '../hostDependencies.js';
import { addMenu, hostActions, type EditContext } from '../editors.js';
import { focusedHost } from '../mapFocus.js';
import { legendModel, legendOf } from '../legend.js';
import { exportMenu, measureText, pngOf } from '../exportMenu.js';
import { paint, toSvg, type ExportDrawing } from '../exportSvg.js';
import { toDrawio, type DrawioLook } from '../exportDrawio.js';
import { exportFileName } from '../../../src/modules/topology/exportName.js';
import { MapRenderer } from '../mapRenderer.js';
import { changeLines, dependencyNamesAt, diffMarks, hostsOnMap, matchHosts, presentAt, type HostEntry, type Topology, type TopologyDiff } from '../mapState.js';
import { navigate, type Route, type Session } from '../main.js';
import { agentSteps } from '../agentHelp.js';
import type { GraphNode } from '../apiTypes.js';

const VIEW_NAMES: Record<string, string> = { l3: 'L3 (subnets)', workloads: 'Workloads', application: 'Applications', l2: 'L2 (physical)' };
const LIVE_POLL_MS = 5000;
const LIVE_POLL_STREAMING_MS = 30_000;
/** Changes come in bursts (a discovery batch): the graph is read once the burst has settled a little. */
const CHANGE_SETTLE_MS = 300;
const LAYOUT_POLL_MS = 700;
const LEGEND_CLOSED = 'netinventory.legend-closed';
/** Compare's default window: the network's last changes (a window in time may hold thousands, or none). */
const COMPARE_LAST_CHANGES = 50;
/** The diff list shows at most this many lines (the map marks every change). */
const CHANGE_LIST_MAX = 200;

interface MapState {
  networkId: string;
  view: string;
  at?: string;
  tagId?: string;
  includeHidden: boolean;
  expand: string[];
  folded: Set<string>;
  graph?: Topology;
  /** The history slider: the union graph over the interval and the tick shown. */
  timeline?: Timeline;
  tick?: number;
  diff?: TopologyDiff;
  search: string;
  selectedHost?: string;
  /** Tags on this network's services, with the services carrying each: such a tag filters services, here (the API's tag_ids filters hosts). */
  serviceTags?: Map<string, Set<string>>;
  /** The services of this network by id, with their host (for the service tag filter). */
  serviceHosts?: Map<string, string>;
  /** Each host's dependencies with its role, for the host list. */
  dependencies?: Map<string, HostDependency[]>;
  /** The next drawing fits the view (another view was chosen). */
  refit?: boolean;
}

/** A timeline's union; tick_changes: how many changes each tick stands for (grouped past the API's budget). */
type Timeline = Topology & { ticks: string[]; tick_changes?: number[] };

/** The map's state as its address gives it (a deep link). */
function stateOf(networkId: string, q: URLSearchParams): MapState {
  return {
    networkId, view: q.get('view') ?? 'l3', at: q.get('at') ?? undefined, tagId: q.get('tag') ?? undefined,
    includeHidden: q.get('hidden') === 'true', expand: (q.get('expand') ?? '').split(',').filter(Boolean), folded: new Set(), search: '',
  };
}

/** The topology read that draws this state. */
const graphPath = (state: MapState) => `/api/v1/topology${query({
  network_id: state.networkId, view: state.view, at: state.at, tag_ids: hostTag(state),
  include_hidden: state.includeHidden || undefined, expand: state.expand,
})}`;

/** The tag filter as the API's tag_ids (which keeps the hosts carrying it): not a tag of services, filtered here instead. */
const hostTag = (state: MapState) => (state.tagId && !state.serviceTags?.has(state.tagId) ? [state.tagId] : undefined);

/**
 * A diff or timeline read of this state over [from, to] (to: now when absent); the timeline is shaped by `expand` as the map is.
 * A diff without `from` compares the last COMPARE_LAST_CHANGES changes.
 */
const intervalPath = (kind: 'diff' | 'timeline', state: MapState, from: string | undefined, to?: string) => `/api/v1/topology/${kind}${query({
  network_id: state.networkId, view: state.view, from, to, last_changes: from ? undefined : COMPARE_LAST_CHANGES, tag_ids: hostTag(state),
  include_hidden: state.includeHidden || undefined, expand: kind === 'timeline' ? state.expand : undefined,
})}`;

/** At boot, on a map's address: its graph requested while the session loads. */
export function prefetchMap(networkId: string, q: URLSearchParams): void {
  prefetch(graphPath(stateOf(networkId, q)));
}

export function mapScreen(outlet: HTMLElement, route: Route, session: Session, mode: 'map' | 'diff') {
  const q = route.query;
  const state = stateOf(route.params.network!, q);
  const timers = new Set<number>();
  let disposed = false;
  const later = (ms: number, fn: () => void) => { const t = window.setTimeout(() => { timers.delete(t); if (!disposed) fn(); }, ms); timers.add(t); };

  const fetchGraph = () => api.get<Topology & { filtered_out: unknown }>(graphPath(state));
  // Asked for at boot (prefetchMap), or else before the screen is built: the answer travels while the renderer starts.
  const firstGraph = mode === 'map' ? (takePrefetched<Topology & { filtered_out: unknown }>(graphPath(state)) ?? fetchGraph()) : undefined;
  firstGraph?.catch(() => undefined); // reported by loadGraph

  // ---- layout of the screen --------------------------------------------------------------------
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const errors = h('div', { 'aria-live': 'assertive' });
  // Focusable, so that focus can come back to it when the panel a tap on it opened is closed.
  const canvas = h('div', { class: 'canvas', id: 'map-canvas', role: 'img', tabindex: 0, 'aria-label': 'Network map (the list of hosts beside it is the accessible version)' });
  // Open on a wide screen until the user closes it (remembered); closed on a phone.
  const legend = h('details', { class: 'legend', id: 'map-legend', open: window.matchMedia('(min-width: 721px)').matches && localStorage.getItem(LEGEND_CLOSED) !== '1' }, h('summary', {}, 'Legend'));
  legend.addEventListener('toggle', () => { if (window.matchMedia('(min-width: 721px)').matches) localStorage.setItem(LEGEND_CLOSED, legend.open ? '0' : '1'); });
  const sheetToggle = h('button', { type: 'button', class: 'sheet-toggle', 'aria-controls': 'map-sidebar', 'aria-expanded': 'false' }, 'Hosts');
  const search = h('input', { type: 'search', id: 'host-search', placeholder: 'Host name, hostname or IP', 'aria-controls': 'host-list', autocomplete: 'off' });
  const hostList = h('ul', { id: 'host-list', class: 'host-list', 'aria-label': 'Hosts on the map' });
  const containerList = h('ul', { id: 'container-list', class: 'container-list', 'aria-label': 'Containers on the map' });
  const panel = h('aside', { class: 'panel', id: 'details', 'aria-label': 'Details', hidden: true });
  /** What had the focus when the panel opened: it gets it back when the panel closes. */
  let opener: { element: Element | null; hostId?: string } | undefined;
  const viewSelect = h('select', { id: 'view', 'aria-label': 'View' });
  const tagSelect = h('select', { id: 'tag-filter', 'aria-label': 'Filter by tag' }, h('option', { value: '' }, 'All tags'));
  const hidden = h('input', { type: 'checkbox', id: 'show-hidden', checked: state.includeHidden });
  const timeBar = h('div', { class: 'timebar', hidden: true });
  const changes = h('section', { class: 'changes', 'aria-label': 'Changes', hidden: mode !== 'diff' });
  const networkName = session.networks.find((n) => n.id === state.networkId)?.name ?? 'Network';
  /** The instant drawn: the history slider's, a comparison's end, the map's `at`, or now (live). */
  const instantDrawn = () => (state.timeline && state.tick !== undefined ? state.timeline.ticks[state.tick]! : state.diff?.to ?? state.at ?? new Date().toISOString());
  /** Named as the API names its exports (exportFileName: network, view, day of the instant drawn). */
  const exportName = (extension: string) => exportFileName(networkName, state.view, instantDrawn(), extension);

  const renderer = new MapRenderer(canvas, {
    select: (nodeId) => {
      const host = nodeId ? hosts().find((x) => x.nodeIds.includes(nodeId)) : undefined;
      if (host) canvas.focus({ preventScroll: true });
      void selectHost(host?.hostId);
    },
    dragged: (nodeId, topLeft) => void pin(nodeId, topLeft),
    toggle: (id) => void toggle(id),
  });

  const button = (label: string, onclick: () => void, attrs: Record<string, string> = {}) => h('button', { type: 'button', onclick, ...attrs }, label);
  const exports = exportMenu({
    drawing: () => exportSource(),
    png: (size) => exportPng(size),
    svg: () => exportSvg(),
    drawio: () => exportDrawio(),
    failed: (err) => showError(err),
    apiExport: (format) => (shown() ? `/api/v1/topology/export${query({ network_id: state.networkId, view: state.view, format, at: state.at, tag_ids: hostTag(state), include_hidden: state.includeHidden || undefined })}` : undefined),
  });
  // After an edit (editors.ts) the graph is read again, and the panel shows the host as saved.
  const edits: EditContext = { networkId: state.networkId, changed: (kind, saved) => { void refresh('change'); if (kind === 'host') void selectHost(saved?.id); } };
  const viewLabel = h('label', { for: 'view' }, 'View');
  const tagLabel = h('label', { for: 'tag-filter' }, 'Tag');
  const hiddenCheck = h('label', { class: 'check' }, hidden, ' Show hidden hosts');
  const fitButton = button('Fit', () => renderer.fit(), { id: 'fit' });
  const zoomIn = button('+', () => renderer.zoomBy(1.25), { 'aria-label': 'Zoom in' });
  const zoomOut = button('−', () => renderer.zoomBy(0.8), { 'aria-label': 'Zoom out' });
  const historyButton = mode === 'map' ? button('History', () => void openTimeline(), { id: 'history-button' }) : null;
  const compareButton = mode === 'map' ? button('Compare…', () => navigate(`/networks/${state.networkId}/topology/diff${query({ view: state.view })}`), { id: 'compare-button' }) : null;
  const unpinButton = button('Unpin all', () => void unpinAll(), { id: 'unpin-all' });
  const add = mode === 'map' ? addMenu(edits) : null;
  const toolbar = h('div', { class: 'toolbar map-tools', role: 'toolbar', 'aria-label': 'Map tools' });
  // On a phone the less-used tools fold behind More, into a row under the toolbar that it opens:
  // the toolbar then fits the screen's width with View, Fit, zoom and History always in it. The
  // controls are moved between the two, never copied (one control, one state).
  const phone = window.matchMedia('(max-width: 720px)');
  const more = h('div', { class: 'toolbar map-more', id: 'map-more', role: 'group', 'aria-label': 'More map tools', hidden: true });
  const moreButton = button('More', () => setMore(moreButton.getAttribute('aria-expanded') !== 'true'), { id: 'map-more-button', class: 'more-toggle', 'aria-controls': 'map-more', 'aria-expanded': 'false' });
  function setMore(open: boolean) {
    more.hidden = !open;
    moreButton.setAttribute('aria-expanded', String(open));
  }
  const present = (...xs: Array<HTMLElement | null>) => xs.filter((x): x is HTMLElement => !!x);
  function foldToolbar() {
    if (phone.matches) {
      toolbar.replaceChildren(...present(viewLabel, viewSelect, fitButton, zoomIn, zoomOut, historyButton, moreButton));
      more.replaceChildren(...present(tagLabel, tagSelect, hiddenCheck, compareButton, unpinButton, add, exports.button));
    } else {
      toolbar.replaceChildren(...present(viewLabel, viewSelect, tagLabel, tagSelect, hiddenCheck, fitButton, zoomIn, zoomOut, historyButton, compareButton, unpinButton, add, exports.button));
      setMore(false);
    }
  }
  foldToolbar();
  phone.addEventListener('change', foldToolbar);

  const diffForm = mode === 'diff' ? diffControls() : null;
  fill(outlet, h('div', { class: 'map-screen' },
    h('div', { class: 'map-head' }, h('h1', {}, mode === 'diff' ? `${networkName}: what changed` : networkName), status),
    toolbar, more, diffForm, timeBar, errors,
    h('div', { class: 'map-body' },
      h('nav', { class: 'sidebar', id: 'map-sidebar', 'aria-label': 'Hosts' }, h('label', { for: 'host-search' }, 'Search hosts'), search, hostList,
        h('details', { class: 'containers' }, h('summary', {}, 'Subnets and other containers'), containerList), changes),
      canvas, panel, sheetToggle)));
  // Beside the drawing, never over it (zoomed in, it covered nodes): under the host
  // list (on a phone, in the host list's sheet).
  hostList.after(legend);
  // On a phone the host list is a bottom sheet over the map, opened by this button.
  function setSheet(open: boolean) {
    sheetToggle.setAttribute('aria-expanded', String(open));
    outlet.querySelector('.map-body')?.classList.toggle('sheet-open', open);
  }
  sheetToggle.addEventListener('click', () => setSheet(sheetToggle.getAttribute('aria-expanded') !== 'true'));
  let emptySheetShown = false;

  // ---- state → screen --------------------------------------------------------------------------
  const shown = (): Topology | undefined => (state.timeline ?? state.graph);
  const hosts = (): HostEntry[] => hostsOnMap(shown()?.nodes ?? []);

  function syncUrl() {
    const path = mode === 'diff' ? location.pathname : `/networks/${state.networkId}/topology`;
    const params = mode === 'diff'
      ? query({ view: state.view, from: state.diff?.from ?? q.get('from'), to: state.diff?.to ?? q.get('to') ?? undefined, tag: state.tagId, hidden: state.includeHidden || undefined })
      : query({ view: state.view, at: state.timeline && state.tick !== undefined ? state.timeline.ticks[state.tick] : state.at, tag: state.tagId, hidden: state.includeHidden || undefined, expand: state.expand });
    history.replaceState(null, '', path + params);
  }

  /** The hosts listed: matching the search, existing at the slider's instant, carrying a service with the tag filtered on. */
  function listedHosts(): HostEntry[] {
    const present = presentIds();
    const tagged = taggedHosts();
    return matchHosts(hosts(), state.search).filter((x) => (!present || x.nodeIds.some((id) => present.has(id))) && (!tagged || tagged.has(x.hostId)));
  }

  function renderList() {
    const matches = listedHosts();
    fill(hostList, matches.length
      ? matches.map((x) => h('li', {}, h('button', {
        type: 'button', class: 'host-entry', 'aria-pressed': x.hostId === state.selectedHost ? 'true' : 'false', 'data-host-id': x.hostId,
        onclick: () => void chooseHost(x),
      }, x.name, x.ips.length ? h('small', {}, ` ${x.ips.join(', ')}`) : null), dependencyLine(x.hostId)))
      : h('li', { class: 'muted' }, shown()?.nodes.length ? 'No host matches.' : emptyText()));
    sheetToggle.textContent = `Hosts (${matches.length})`;
    // An empty network: on a phone the instructions live in the closed sheet, so open it once (the canvas is blank).
    const graph = shown();
    if (graph && !graph.nodes.length && !emptySheetShown) {
      emptySheetShown = true;
      setSheet(true);
    }
  }

  /** A host's dependencies and its role in each, as the details panel lists them ("Internal DNS: spoke"). */
  function dependencyLine(hostId: string) {
    const deps = state.dependencies?.get(hostId);
    return deps?.length ? h('small', { class: 'host-dependencies' }, deps.map((d) => `${d.name}: ${d.role}`).join(' · ')) : null;
  }

  /** A host chosen in the list: one folded into a summary node opens it in place first (it is then drawn), then it is selected. */
  async function chooseHost(x: HostEntry) {
    const summary = x.nodeIds.find((id) => shown()?.nodes.some((n) => n.id === id && n.kind === 'summary'));
    if (summary) {
      await toggle(summary);
      while (!disposed && shown()?.layout.status === 'pending') await new Promise((r) => setTimeout(r, LAYOUT_POLL_MS));
      // The list was drawn again: focus on the host's new entry, where Escape brings it back.
      hostList.querySelector<HTMLElement>(`[data-host-id="${CSS.escape(x.hostId)}"]`)?.focus({ preventScroll: true });
    }
    await selectHost(x.hostId, true);
  }

  /** The selection shown in the list without rebuilding it (the button that has the focus keeps it). */
  function renderPressed() {
    for (const b of hostList.querySelectorAll<HTMLElement>('.host-entry')) b.setAttribute('aria-pressed', String(b.dataset.hostId === state.selectedHost));
  }

  /** With a tag of services filtered on: the hosts running such a service (undefined: no such filter). */
  function taggedHosts(): Set<string> | undefined {
    const services = state.tagId ? state.serviceTags?.get(state.tagId) : undefined;
    if (!services) return undefined;
    return new Set([...services].map((id) => state.serviceHosts?.get(id)).filter((x): x is string => !!x));
  }

  /** Element nodes that stand for no service with the tag filtered on (dimmed almost away). */
  function filteredOut(g: Topology): string[] {
    const services = state.tagId ? state.serviceTags?.get(state.tagId) : undefined;
    if (!services) return [];
    const hostsWith = taggedHosts()!;
    const hostOfNode = new Map(hosts().flatMap((x) => x.nodeIds.map((id) => [id, x.hostId] as const)));
    const parents = new Set(g.nodes.map((n) => n.parent_id).filter(Boolean));
    return g.nodes.filter((n) => {
      if (parents.has(n.id)) return false; // containers stay: their boxes say where things are
      if (n.kind === 'service') return !services.has(n.entity_id ?? '');
      if (n.services) return !n.services.some((s) => services.has(s.id));
      const host = hostOfNode.get(n.id);
      return !host || !hostsWith.has(host);
    }).map((n) => n.id);
  }

  function renderContainers() {
    const g = shown();
    const parents = new Set((g?.nodes ?? []).filter((n) => n.parent_id).map((n) => n.parent_id));
    const present = presentIds();
    const containers = (g?.nodes ?? []).filter((n) => (parents.has(n.id) || n.kind === 'collapsed' || n.kind === 'summary') && (!present || present.has(n.id)));
    // A click brings it into view; Enter on a folded one (collapsed, summary) opens it, as a double-click on the map does.
    const opens = (n: { id: string; kind: string }) => (n.kind === 'collapsed' || n.kind === 'summary' ? (e: KeyboardEvent) => {
      if (e.key !== 'Enter') return;
      e.preventDefault();
      void toggle(n.id);
    } : undefined);
    fill(containerList, containers.map((n) => h('li', { 'data-node-id': n.id }, h('button', { type: 'button', class: 'host-entry', onclick: () => renderer.focus([n.id]), onkeydown: opens(n) },
      n.label, n.kind === 'collapsed' ? h('small', {}, ` collapsed (${Object.values(n.counts ?? {}).reduce((a, b) => a + b, 0)})`) : null))));
  }

  const emptyText = () => h('div', { class: 'empty-map' }, h('p', {}, 'No hosts yet. Start a discovery agent:'),
    agentSteps(state.networkId, { onDaemonsLink: (e) => { e.preventDefault(); navigate('/daemons'); } }), h('p', {}, 'Or add hosts by hand (Add, or POST /api/v1/hosts).'));

  /** Ids that exist at the slider's instant (undefined: everything shown exists). */
  function presentIds(): Set<string> | undefined {
    const t = state.timeline;
    if (!t || state.tick === undefined) return undefined;
    return presentAt([...t.nodes, ...t.edges], t.ticks[state.tick]!);
  }

  function renderMarks() {
    const g = shown();
    if (!g) return;
    const classes = new Map<string, string[]>();
    const add = (id: string, c: string) => (classes.get(id) ?? classes.set(id, []).get(id)!).push(c);
    for (const id of g.layout.pinned ?? []) add(id, 'pinned');
    const present = presentIds();
    if (present) for (const x of [...g.nodes, ...g.edges]) if (!present.has(x.id)) add(x.id, 'absent');
    if (state.diff) for (const [id, mark] of diffMarks(state.diff)) add(id, mark);
    for (const container of state.folded) for (const n of g.nodes) if (n.parent_id === container) add(n.id, 'absent');
    for (const id of filteredOut(g)) add(id, 'filtered');
    // Search: the hosts it matches are outlined on the map.
    if (state.search.trim()) for (const x of listedHosts()) for (const id of x.nodeIds) add(id, 'match');
    // A selected host: it and what it is linked to stand out, the rest is dimmed.
    const selected = hosts().find((x) => x.hostId === state.selectedHost);
    if (selected) {
      const around = renderer.neighbourhood(selected.nodeIds);
      for (const x of [...g.nodes, ...g.edges]) if (!around.has(x.id)) add(x.id, 'dimmed');
      for (const id of selected.nodeIds) add(id, 'highlighted');
    }
    renderer.mark(classes);
    renderer.nameDependency(null);
    renderer.nameEnds(selected ? dependencyNamesAt(g.edges, selected.nodeIds) : []);
  }

  function renderGraph() {
    const g = shown();
    if (!g) return;
    if (g.layout.status !== 'ready') {
      // What is drawn stays as it is until the positions of the new graph are known.
      status.textContent = g.layout.status === 'failed' ? `Layout failed: ${g.layout.error ?? 'unknown error'}` : 'Laying out the map…';
      return;
    }
    performance.mark('map-draw-start');
    // The legend first: a fit leaves its box clear.
    fill(legend, h('summary', {}, 'Legend'), legendOf(g));
    const nodes = drawnNodes(g);
    renderer.setGraph(nodes, g.edges, g.layout.positions, state.refit);
    state.refit = false;
    performance.mark('map-graph-set');
    renderMarks();
    performance.mark('map-marks-set');
    renderList();
    renderContainers();
    performance.mark('map-lists-rendered');
    const f = (state.graph as any)?.filtered_out;
    const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
    // Hosts completed scans no longer see (greyed on the map).
    const hostsWhere = (mark: (n: GraphNode) => unknown) => new Set(nodes.filter(mark).map((n) => n.host_id ?? n.entity_id)).size;
    const offline = hostsWhere((n) => n.offline);
    const fresh = hostsWhere((n) => n.new); // found new by the last scan (outlined)
    const parts = [
      fresh ? plural(fresh, 'new host', 'new hosts') : '',
      offline ? plural(offline, 'host offline', 'hosts offline') : '',
      f?.collapsed_containers ? `${plural(f.collapsed_containers, 'container', 'containers')} collapsed (double-click to open)` : '',
      f?.hidden_hosts ? plural(f.hidden_hosts, 'hidden host', 'hidden hosts') : '',
      f?.hosts_without_tag ? plural(f.hosts_without_tag, 'host without the tag', 'hosts without the tag') : '',
    ].filter(Boolean);
    const extra = parts.length ? ` — ${parts.join(', ')}` : '';
    {
      status.textContent = state.timeline && state.tick !== undefined ? `As of ${when(state.timeline.ticks[state.tick])}` : state.diff ? `From ${when(state.diff.from)} to ${when(state.diff.to)}` : state.at ? `As of ${when(state.at)}` : `Live — ${g.nodes.length} nodes${extra}`;
      if (!canvas.hasAttribute('data-ready')) {
        canvas.setAttribute('data-ready', 'true');
        // The first frame with the map on it: what the browser benchmark (bench/web.ts) times.
        requestAnimationFrame(() => performance.mark('map-interactive'));
      }
    }
  }

  /** The nodes drawn: a summary's count is the live one (or the interval's end): in History it is a bound, not what existed then. */
  const drawnNodes = (g: Topology): GraphNode[] => (state.timeline ? g.nodes.map((n) => (n.kind === 'summary' ? { ...n, label: `up to ${n.label}` } : n)) : g.nodes);

  // ---- exports (the Export menu) ---------------------------------------------------------------
  /** The last file exported, for tests and tools: its name, size and each element's label as written. */
  let lastExport: { format: string; file: string; width?: number; height?: number; limited?: boolean; labels?: Record<string, string[]>; nodes?: number } | undefined;
  /** The title written above an exported drawing: network, view, instant (or a comparison's interval). */
  const exportTitle = () => `${networkName} — ${VIEW_NAMES[state.view] ?? state.view} — ${state.diff && mode === 'diff' ? `changes from ${when(state.diff.from)} to ${when(state.diff.to)}` : when(instantDrawn())}`;
  /** What is drawn, with its legend and title (undefined: nothing is drawn yet). */
  function exportSource(): { drawing: ExportDrawing; legend: ReturnType<typeof legendModel>; title: string } | undefined {
    const g = shown();
    if (!g || !canvas.hasAttribute('data-ready')) return undefined;
    return { drawing: renderer.exportDrawing(), legend: legendModel(g), title: exportTitle() };
  }
  async function exportPng(size: Parameters<typeof pngOf>[2]) {
    const source = exportSource();
    if (!source) return;
    status.textContent = 'Making the PNG…';
    try {
      const png = await pngOf(source.drawing, { legend: source.legend, title: source.title, measure: measureText }, size);
      const file = exportName('png');
      download(png.blob, file);
      lastExport = { format: 'png', file, width: png.width, height: png.height, limited: png.limited, labels: png.svg.labels };
      status.textContent = `Downloaded ${file} (${png.width.toLocaleString()} × ${png.height.toLocaleString()} px${png.limited ? ', the largest image this browser makes' : ''}).`;
    } catch (err) {
      status.textContent = '';
      showError(err);
    }
  }
  function exportSvg() {
    const source = exportSource();
    if (!source) return;
    const svg = toSvg(source.drawing, { legend: source.legend, title: source.title, measure: measureText });
    const file = exportName('svg');
    download(new Blob([svg.svg], { type: 'image/svg+xml' }), file);
    lastExport = { format: 'svg', file, width: svg.width, height: svg.height, labels: svg.labels };
  }
  function exportDrawio() {
    const g = shown();
    const source = exportSource();
    if (!g || !source) return;
    const { containers, nodes, edges } = source.drawing;
    const hex = (color: string) => paint(color).color;
    const looks = new Map<string, DrawioLook>();
    const positions: Record<string, { x: number; y: number; width: number; height: number }> = {};
    for (const c of containers) {
      positions[c.id] = { x: c.x, y: c.y, width: c.width, height: c.height };
      looks.set(c.id, { fill: hex(c.fill), stroke: hex(c.stroke), strokeWidth: c.strokeWidth, dashed: c.dashed });
    }
    for (const n of nodes) {
      positions[n.id] = { x: n.x, y: n.y, width: n.width, height: n.height };
      looks.set(n.id, { fill: hex(n.fill), stroke: hex(n.stroke), strokeWidth: n.strokeWidth, dashed: n.borderStyle === 'dashed', fontColor: hex(n.textColor), bold: n.bold, italic: n.italic, opacity: n.opacity });
    }
    for (const e of edges) looks.set(e.id, { stroke: hex(e.color), strokeWidth: e.width, dashed: e.dash !== undefined, opacity: e.opacity });
    const icons = new Map(nodes.map((n) => [n.id, n.icon]));
    const drawnEdges = new Set(edges.map((e) => e.id));
    const xml = toDrawio({
      title: source.title, nodes: drawnNodes(g), edges: g.edges, positions,
      omit: new Set(g.edges.filter((e) => !drawnEdges.has(e.id)).map((e) => e.id)), look: (id) => looks.get(id), icon: (n) => icons.get(n.id),
    });
    const file = exportName('drawio');
    download(new Blob([xml], { type: 'application/vnd.jgraph.mxfile' }), file);
    lastExport = { format: 'drawio', file, nodes: containers.length + nodes.length };
  }

  function renderViews(available: string[]) {
    fill(viewSelect, available.map((v) => h('option', { value: v, selected: v === state.view }, VIEW_NAMES[v] ?? v)));
  }

  /** `at`: the details as of that instant (a diff's entry), else the slider's or the map's. */
  async function selectHost(hostId: string | undefined, focus = false, at?: string) {
    const wasOpen = !panel.hidden;
    state.selectedHost = hostId;
    renderMarks();
    renderPressed();
    const entry = hosts().find((x) => x.hostId === hostId);
    if (!hostId) {
      panel.hidden = true;
      if (wasOpen) restoreFocus();
      return;
    }
    // Focus stays where it is; it comes back here when the panel closes.
    if (!panel.contains(document.activeElement)) opener = { element: document.activeElement, hostId: (document.activeElement as HTMLElement | null)?.dataset?.hostId };
    panel.hidden = false;
    setSheet(false); // on a phone, the host list's sheet gives way to the details
    fill(panel, h('p', { class: 'muted' }, 'Loading…'));
    // Centred in the canvas as the open panel leaves it.
    if (focus && entry) renderer.focus(entry.nodeIds);
    const details = await hostDetails(hostId, { at: at ?? (state.timeline && state.tick !== undefined ? state.timeline.ticks[state.tick] : state.at) });
    if (state.selectedHost === hostId) fill(panel, button('Close', () => void selectHost(undefined), { class: 'close', 'aria-label': 'Close details' }), details,
      state.at || state.timeline ? null : hostActions({ id: hostId, name: hosts().find((x) => x.hostId === hostId)?.name ?? 'this host' }, edits),
      h('p', {}, h('a', { href: `/hosts/${hostId}` }, 'Open the host page')));
  }

  /** Focus back on what opened the panel (the list's button for that host if the list was redrawn since). */
  function restoreFocus() {
    const o = opener;
    opener = undefined;
    if (!o) return;
    const target = (o.element?.isConnected ? o.element : o.hostId ? hostList.querySelector(`[data-host-id="${CSS.escape(o.hostId)}"]`) : canvas) as HTMLElement | null;
    // (In the host list's sheet, closed since on a phone: the button that opens the sheet.)
    (target?.offsetParent ? target : hostList.contains(target) ? sheetToggle : canvas).focus({ preventScroll: true });
  }

  // ---- reading the API -------------------------------------------------------------------------
  const showError = (err: unknown) => {
    const e = err as ApiError;
    fill(errors, notice('error', e.message ?? String(err), e.code));
  };

  async function loadGraph(prefetched?: Promise<Topology>) {
    try {
      const g = await (prefetched ?? fetchGraph());
      if (disposed) return;
      performance.mark('map-topology-received');
      fill(errors);
      const first = !state.graph;
      state.graph = g;
      renderViews(g.available_views ?? ['l3']);
      if (!state.timeline) renderGraph();
      // (The first drawing fits the map itself.)
      if (g.layout.status === 'pending') later(LAYOUT_POLL_MS, () => void loadGraph());
    } catch (err) {
      showError(err);
    }
  }

  /**
   * Live: the map follows the inventory without moving what did not change. The network's change
   * stream (/api/v1/events/stream) says when something changed, and the graph is read again (a
   * burst of changes once); its digest is also polled, every 5 s while the stream is not open and
   * every 30 s while it is (a safety net: a stream can break without telling).
   */
  const liveReads = { change: 0, poll: 0 };
  async function refresh(cause: keyof typeof liveReads) {
    if (state.at || state.timeline || mode !== 'map' || state.graph?.layout.status !== 'ready') return;
    try {
      liveReads[cause] += 1;
      const g = await api.get<Topology>(graphPath({ ...state, at: undefined }));
      if (disposed || state.timeline || g.digest === state.graph?.digest) return;
      // Until the new layout is ready, what was drawn stays where it was; new nodes wait for it.
      if (g.layout.status === 'ready') {
        state.graph = g;
        renderGraph();
      } else later(LAYOUT_POLL_MS, () => void refresh(cause));
    } catch { /* the next change or poll tries again */ }
  }
  let changeStream: EventSource | undefined;
  let refreshQueued = false;
  function listen() {
    changeStream = new EventSource(`/api/v1/events/stream${query({ network_id: state.networkId })}`);
    // Ended by the server (the session is over): not reopened; the next poll finds the session gone.
    changeStream.addEventListener('ended', () => changeStream?.close());
    changeStream.onmessage = () => {
      if (refreshQueued) return;
      refreshQueued = true;
      later(CHANGE_SETTLE_MS, () => { refreshQueued = false; void refresh('change'); });
    };
  }
  function poll() {
    void refresh('poll').finally(() => later(changeStream?.readyState === EventSource.OPEN ? LIVE_POLL_STREAMING_MS : LIVE_POLL_MS, poll));
  }

  /** The history from `from` (by default the network's creation: the API groups a busy history into at most 200 ticks). */
  let timelineFrom: string | undefined;
  async function openTimeline(start = timelineFrom) {
    const now = new Date().toISOString();
    const network = start ? undefined : await api.get<{ created_at: string }>(`/api/v1/networks/${state.networkId}`).catch(() => undefined);
    const from = start ?? network?.created_at ?? new Date(Date.now() - 24 * 3600e3).toISOString();
    try {
      const t = await api.get<Timeline>(intervalPath('timeline', state, from, now));
      const tick = state.timeline && state.tick !== undefined ? state.timeline.ticks[state.tick] : undefined;
      state.timeline = t;
      timelineFrom = from;
      // Opened again (a container expanded): at the same instant if it is still a tick.
      state.tick = tick && t.ticks.includes(tick) ? t.ticks.indexOf(tick) : t.ticks.length - 1;
      fill(errors);
      const opening = timeBar.hidden;
      renderTimeBar();
      await waitForLayout('timeline', from, now);
      // The bar took height from the canvas: the history's drawing is fitted to what is left.
      if (opening) renderer.fit();
    } catch (err) {
      // Never a silent no-op: why, and what to try.
      const e = err as ApiError;
      const lastDay = new Date(Date.now() - 24 * 3600e3).toISOString();
      fill(errors, h('div', { class: 'notice error', role: 'alert', id: 'history-problem' },
        `The history cannot be shown: ${e.message ?? String(err)}. Filter by a tag, choose another view`,
        from < lastDay ? [', or ', button('Show the last 24 hours', () => void openTimeline(lastDay))] : null, '.'));
    }
  }

  async function waitForLayout(kind: 'timeline', from: string, to: string) {
    while (!disposed && state.timeline && state.timeline.layout.status === 'pending') {
      status.textContent = 'Laying out the history…';
      await new Promise((r) => setTimeout(r, LAYOUT_POLL_MS));
      const t = await api.get<Timeline>(intervalPath(kind, state, from, to));
      if (state.timeline) state.timeline = { ...t, ticks: state.timeline.ticks, tick_changes: state.timeline.tick_changes };
    }
    renderGraph(); // the history's positions are the map's: the view stays where it is
  }

  function renderTimeBar() {
    const t = state.timeline!;
    const slider = h('input', { type: 'range', id: 'time-slider', min: 0, max: t.ticks.length - 1, step: 1, value: state.tick ?? t.ticks.length - 1, 'aria-label': 'Instant of the history' });
    // A tick standing for several changes says so (the state after all of them).
    const tickText = (k: number) => `${when(t.ticks[k])}${(t.tick_changes?.[k] ?? 0) > 1 ? ` (after ${t.tick_changes![k]!.toLocaleString()} changes)` : ''}`;
    const label = h('output', { for: 'time-slider', id: 'time-label' }, tickText(state.tick!));
    // One step back or on: the slider is hard to move by one of its ~200 steps with a finger.
    const previous = button('‹', () => step(-1), { id: 'time-previous', 'aria-label': 'Previous change', title: 'Previous change' });
    const next = button('›', () => step(1), { id: 'time-next', 'aria-label': 'Next change', title: 'Next change' });
    const show = () => {
      state.tick = Number(slider.value);
      label.textContent = tickText(state.tick);
      slider.setAttribute('aria-valuetext', label.textContent);
      previous.toggleAttribute('disabled', state.tick <= 0);
      next.toggleAttribute('disabled', state.tick >= t.ticks.length - 1);
      renderMarks();
      renderList();
      renderContainers();
      status.textContent = `As of ${label.textContent}`;
      syncUrl();
    };
    function step(by: number) {
      slider.value = String(Math.min(t.ticks.length - 1, Math.max(0, Number(slider.value) + by)));
      show();
    }
    slider.addEventListener('input', show);
    previous.toggleAttribute('disabled', state.tick! <= 0);
    next.toggleAttribute('disabled', state.tick! >= t.ticks.length - 1);
    timeBar.hidden = false;
    const total = (t.tick_changes ?? []).reduce((a, b) => a + b, 0);
    const grouped = (t.tick_changes ?? []).some((n) => n > 1);
    fill(timeBar, h('label', { for: 'time-slider' }, 'History'), h('div', { class: 'time-steps' }, previous, slider, next), label,
      h('span', { class: 'muted', id: 'history-summary' }, grouped
        ? ` ${total.toLocaleString()} changes since ${when(t.ticks[0])}, in ${t.ticks.length - 1} steps (each the state after its changes; Compare shows them one by one)`
        : ` ${t.ticks.length} instants`),
      button('Back to live', () => { state.timeline = undefined; state.tick = undefined; timelineFrom = undefined; timeBar.hidden = true; renderGraph(); renderer.fit(); syncUrl(); }, { id: 'history-live' }));
  }

  function diffControls() {
    const toLocal = (iso: string | null) => (iso ? new Date(new Date(iso).getTime() - new Date().getTimezoneOffset() * 60e3).toISOString().slice(0, 19) : '');
    const from = h('input', { type: 'datetime-local', id: 'diff-from', step: 1, value: toLocal(q.get('from')) });
    const to = h('input', { type: 'datetime-local', id: 'diff-to', step: 1, value: toLocal(q.get('to')) });
    return h('form', {
      class: 'toolbar diff-form', onsubmit: (e: SubmitEvent) => {
        e.preventDefault();
        const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
        navigate(`${location.pathname}${query({ view: state.view, from: iso(from.value), to: iso(to.value) })}`);
      },
    }, h('label', { for: 'diff-from' }, 'From'), from, h('label', { for: 'diff-to' }, 'To'), to, h('small', { class: 'muted', id: 'diff-to-hint' }, 'empty: now'), h('button', { type: 'submit' }, 'Compare'),
    h('a', { href: `/networks/${state.networkId}/topology`, class: 'button' }, 'Back to the map'));
  }

  async function loadDiff() {
    const from = q.get('from') ?? undefined;
    const to = q.get('to') ?? undefined;
    try {
      // Without `from`: the last changes, whenever they were (a fixed day may hold thousands, or none).
      const diff = await api.get<TopologyDiff>(intervalPath('diff', state, from, to));
      state.diff = diff;
      const fromInput = document.getElementById('diff-from') as HTMLInputElement | null;
      if (fromInput && !from) fromInput.value = new Date(new Date(diff.from).getTime() - new Date().getTimezoneOffset() * 60e3).toISOString().slice(0, 19);
      // Drawn on the union of the interval (one layout holding what was removed and what was added).
      let unionError: ApiError | undefined;
      const union = await api.get<Timeline>(intervalPath('timeline', state, diff.from, diff.to)).catch((err: ApiError) => { unionError = err; return undefined; });
      if (union) {
        state.timeline = union;
        state.tick = undefined;
      }
      const tags = await tagsById();
      const labels = new Map([...(union?.nodes ?? []), ...diff.nodes.removed, ...diff.nodes.added].map((n) => [n.id, n.label]));
      const lines = changeLines(diff, (id) => labels.get(id), (id) => tags.get(id)?.name);
      const listed = lines.slice(0, CHANGE_LIST_MAX);
      changes.hidden = false;
      fill(changes, h('h2', {}, `${lines.length.toLocaleString()} changes`),
        from ? null : h('p', { class: 'muted', id: 'compare-window' }, `The last ${COMPARE_LAST_CHANGES} changes to the network, since ${when(diff.from)}: choose From and To to compare other instants.`),
        lines.length > listed.length ? h('p', { class: 'notice info', id: 'change-list-cut' }, `Showing ${listed.length} of ${lines.length.toLocaleString()} changes: narrow the window (From, To) or filter by a tag to see the others.`) : null,
        (diff.truncated?.nodes ?? 0) + (diff.truncated?.edges ?? 0) > 0
          ? h('p', { class: 'notice info', id: 'change-list-truncated' }, `${((diff.truncated?.nodes ?? 0) + (diff.truncated?.edges ?? 0)).toLocaleString()} more changes are not marked on the map (a comparison lists at most 5,000 nodes and 5,000 links): narrow the window.`)
          : null,
        lines.length
          ? h('ul', { id: 'change-list' }, listed.map((l) => h('li', { class: `change ${l.mark}`, 'data-node-id': l.id }, h('span', { class: 'mark' }, l.mark), ' ',
            h('button', { type: 'button', class: 'change-entry', onclick: () => focusChange(l) }, l.text))))
          : h('p', { class: 'muted' }, 'Nothing changed between these instants.'));
      syncUrl();
      if (union) return await waitForLayout('timeline', diff.from, diff.to);
      // Never a blank map: the network at the interval's end, marked, and why.
      fill(errors, notice('info', `The map shows the network as of ${when(diff.to)}, not the whole interval (${unionError?.message ?? 'it could not be drawn'}): removed elements are only in the list. Narrow the window or filter by a tag to draw them.`));
      state.at = to;
      await loadGraph();
    } catch (err) {
      showError(err);
    }
  }

  /** A diff entry: its host selected, centred and its details open (a removed one as it was); any other element centred. */
  function focusChange(line: { id: string; mark: string }) {
    const edge = shown()?.edges.find((e) => e.id === line.id);
    const ids = edge ? [edge.source, edge.target] : [line.id];
    const host = hosts().find((x) => ids.some((id) => x.nodeIds.includes(id)));
    if (host) void selectHost(host.hostId, true, line.mark === 'removed' ? state.diff?.from : state.diff?.to);
    else renderer.focus(ids);
  }

  // ---- what the user does ----------------------------------------------------------------------
  async function pin(nodeId: string, topLeft: { x: number; y: number }) {
    const g = shown();
    if (!g) return;
    // A container moved: its elements are what keep a position.
    const kids = g.nodes.filter((n) => n.parent_id === nodeId);
    const positions: Record<string, { x: number; y: number }> = { [nodeId]: topLeft };
    for (const k of kids) positions[k.id] = renderer.topLeft(k.id);
    try {
      const res = await api.put<{ pinned: string[] }>('/api/v1/topology/positions', { network_id: state.networkId, view: state.view, positions });
      for (const [id, p] of Object.entries(positions)) {
        const box = g.layout.positions[id];
        g.layout.positions[id] = { x: p.x, y: p.y, width: box?.width ?? 0, height: box?.height ?? 0 };
      }
      g.layout.pinned = res.pinned;
      renderMarks();
      status.textContent = `Pinned ${Object.keys(positions).length === 1 ? 'a node' : `${Object.keys(positions).length} nodes`}: it stays where you put it.`;
    } catch (err) {
      showError(err);
    }
  }

  async function unpinAll() {
    try {
      await api.delete(`/api/v1/topology/positions${query({ network_id: state.networkId, view: state.view })}`);
      await loadGraph();
    } catch (err) {
      showError(err);
    }
  }

  async function toggle(id: string) {
    const node = shown()?.nodes.find((n) => n.id === id);
    if (node?.kind === 'collapsed' || node?.kind === 'summary') state.expand = [...new Set([...state.expand, id])];
    else if (state.expand.includes(id)) state.expand = state.expand.filter((x) => x !== id);
    else {
      // Folded here, not by the API: its elements are hidden, the container stays where it is.
      if (state.folded.has(id)) state.folded.delete(id);
      else state.folded.add(id);
      return renderMarks();
    }
    syncUrl();
    // The history slider's union is shaped by the same expand: read again with it.
    if (state.timeline && mode === 'map') await openTimeline();
    else if (mode === 'diff') await loadDiff();
    else await loadGraph();
  }

  viewSelect.addEventListener('change', () => { state.view = viewSelect.value; state.refit = true; state.expand = []; state.graph = undefined; state.timeline = undefined; timeBar.hidden = true; syncUrl(); void (mode === 'diff' ? loadDiff() : loadGraph()); });
  tagSelect.addEventListener('change', () => { state.tagId = tagSelect.value || undefined; syncUrl(); void loadGraph(); });
  hidden.addEventListener('change', () => { state.includeHidden = hidden.checked; syncUrl(); void loadGraph(); });
  search.addEventListener('input', () => {
    state.search = search.value;
    renderList();
    renderMarks();
    // One host left: the map brings it into view.
    const matches = state.search.trim() ? listedHosts() : [];
    if (matches.length === 1) renderer.focus(matches[0]!.nodeIds);
  });
  search.addEventListener('keydown', (e: KeyboardEvent) => {
    if (e.key !== 'Enter') return;
    const first = listedHosts()[0];
    if (first) void chooseHost(first);
  });
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && !panel.hidden) {
      e.preventDefault();
      void selectHost(undefined);
    }
  };
  document.addEventListener('keydown', onKey);

  // The tag filter: tags found on this network's services filter services; the others, hosts (by the API).
  // The same read gives the host list each host's dependencies. Read once the map is drawn: on a
  // loaded server these reads delayed the graph's (bench/web.ts, 1,000 elements).
  const readServices = () => void Promise.all([tagsById(), api.get<Array<{ id: string; host_id: string; tags?: string[]; bindings?: Array<{ id: string }> }>>(`/api/v1/services${query({ network_id: state.networkId, limit: 1000 })}`).catch(() => []),
    api.get<DependencyRow[]>(`/api/v1/dependencies${query({ network_id: state.networkId, limit: 1000 })}`).catch(() => [])]).then(([tags, services, dependencies]) => {
    if (disposed) return;
    state.dependencies = dependenciesByHost(dependencies, services);
    if (shown()) renderList();
    const serviceTags = new Map<string, Set<string>>();
    for (const s of services) for (const t of s.tags ?? []) (serviceTags.get(t) ?? serviceTags.set(t, new Set()).get(t)!).add(s.id);
    const wasHostFilter = hostTag(state);
    state.serviceTags = serviceTags;
    state.serviceHosts = new Map(services.map((s) => [s.id, s.host_id]));
    const option = (t: { id: string; name: string }) => h('option', { value: t.id, selected: t.id === state.tagId }, t.name);
    const all = [...tags.values()];
    tagSelect.append(
      h('optgroup', { label: 'Hosts tagged' }, all.filter((t) => !serviceTags.has(t.id)).map(option)),
      h('optgroup', { label: 'Services tagged' }, all.filter((t) => serviceTags.has(t.id)).map(option)));
    // Read with the tag as a host filter before its services were known: read again, filtered here.
    if (wasHostFilter && !hostTag(state) && mode === 'map') void loadGraph();
    else renderMarks();
  });

  // For tests and tools: what the map draws (positions, classes, labels and their size on screen), read-only.
  // liveReads: how often the live graph was read, because the change stream said so or by the poll.
  (window as unknown as { netinventoryMap?: unknown }).netinventoryMap = {
    snapshot: () => renderer.snapshot(), titles: () => renderer.titleSnapshot(), centre: () => renderer.centre(), fitCentre: () => renderer.fitCentre(), liveReads: () => ({ ...liveReads }),
    lastExport: () => lastExport,
  };
  renderViews([state.view]);
  if (mode === 'diff') {
    void loadDiff();
    readServices();
  } else void loadGraph(firstGraph).then(() => {
    readServices();
    if (q.get('history') === 'true') void openTimeline();
    // Opened from a host's page or a search: that host selected and brought into view; another
    // element (a subnet) brought into view.
    const focus = focusedHost(q.get('focus'), hosts());
    if (focus && state.graph) void selectHost(focus, true);
    else if (q.get('focus')) {
      const ids = (shown()?.nodes ?? []).filter((n) => n.entity_id === q.get('focus')).map((n) => n.id);
      if (ids.length) renderer.focus(ids);
    }
    listen();
    later(LIVE_POLL_MS, poll);
  });

  return () => {
    disposed = true;
    document.removeEventListener('keydown', onKey);
    phone.removeEventListener('change', foldToolbar);
    changeStream?.close();
    for (const t of timers) clearTimeout(t);
    exports.dispose();
    renderer.destroy();
  };
}
