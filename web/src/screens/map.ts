// The map (/networks/<id>/topology?view=&at=&tags=&hidden=) and the diff between two instants
// (/networks/<id>/topology/diff?from=&to=&view=): the wiring of the map screen. Its state and every
// transition are the pure reducer in mapScreenState.ts; the API reads, the live change stream and
// the polls are mapEffects.ts (actions in, requests out, answers back as actions); the toolbar, the
// host list, the time bar, the changes panel, the details panel and the Share dialog are views in
// mapViews/; the exports are mapExports.ts; the drawing is MapRenderer's. Here: the screen's layout,
// dispatch (reduce, then render what changed and let the effects react), and the keyboard.
import { prefetch, query } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { addMenu, type EditContext } from '../editors.js';
import { focusedHost } from '../mapFocus.js';
import { legendOf } from '../legend.js';
import { MapRenderer } from '../mapRenderer.js';
import { dependencyNamesAt, type HostEntry } from '../mapState.js';
import {
  addressOf, drawnNodes, fixedInstant, hostsOf, initialMapState, listedHosts, marksOf, reduceMap, shownGraph, statusText,
  type MapAction, type MapState,
} from '../mapScreenState.js';
import { graphPath, LAYOUT_POLL_MS, mapEffects } from '../mapEffects.js';
import { mapToolbar } from '../mapViews/toolbar.js';
import { hostListView } from '../mapViews/hostList.js';
import { timeBarView } from '../mapViews/timeBar.js';
import { renderChanges } from '../mapViews/changes.js';
import { detailsPanel } from '../mapViews/details.js';
import { mapExports } from '../mapExports.js';
import { openShareDialog } from '../mapViews/shareDialog.js';
import { isAdmin, navigate, type Route, type Session } from '../main.js';
import { agentSteps } from '../agentHelp.js';

const LEGEND_CLOSED = 'netinventory.legend-closed';

/** At boot, on a map's address: its graph requested while the session loads. */
export function prefetchMap(networkId: string, q: URLSearchParams): void {
  prefetch(graphPath(initialMapState(networkId, q)));
}

/** What, changed between two states, is drawn by marks (renderMarks) and by the host list. */
const MARK_INPUTS = ['selectedHost', 'search', 'tick', 'folded', 'tagId', 'serviceTags', 'serviceHosts', 'diff'] as const;
const LIST_INPUTS = ['search', 'tick', 'tagId', 'serviceTags', 'serviceHosts', 'dependencies'] as const;
const changed = (prev: MapState, next: MapState, keys: ReadonlyArray<keyof MapState>) => keys.some((k) => prev[k] !== next[k]);

export function mapScreen(outlet: HTMLElement, route: Route, session: Session, mode: 'map' | 'diff') {
  const q = route.query;
  let state = initialMapState(route.params.network!, q, mode);
  let disposed = false;
  const effects = mapEffects({ get: () => state, dispatch });
  const firstGraph = mode === 'map' ? effects.firstGraph() : undefined;
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
  const timeBar = h('div', { class: 'timebar', hidden: true });
  const changes = h('section', { class: 'changes', 'aria-label': 'Changes', hidden: mode !== 'diff' });
  const networkName = session.networks.find((n) => n.id === state.networkId)?.name ?? 'Network';

  const renderer = new MapRenderer(canvas, {
    select: (nodeId) => {
      const host = nodeId ? hostsOf(state).find((x) => x.nodeIds.includes(nodeId)) : undefined;
      if (host) canvas.focus({ preventScroll: true });
      void selectHost(host?.hostId);
    },
    dragged: (nodeId, topLeft) => pin(nodeId, topLeft),
    toggle: (id) => void toggle(id),
  });

  const button = (label: string, onclick: () => void, attrs: Record<string, string> = {}) => h('button', { type: 'button', onclick, ...attrs }, label);
  const exports = mapExports({ state: () => state, renderer, canvas, networkName, status: (text) => dispatch({ type: 'status', text }), failed: (err) => showError(err) });
  // After an edit (editors.ts) the graph is read again, and the panel shows the host as saved.
  const edits: EditContext = { networkId: state.networkId, changed: (kind, saved) => { void effects.refresh('change'); if (kind === 'host') void selectHost(saved?.id); } };
  const details = detailsPanel(panel, { state: () => state, dispatch, edits, hostList, canvas, sheetToggle, setSheet, focus: (ids) => renderer.focus(ids) });
  const selectHost = details.select;
  const tools = mapToolbar(state, dispatch, {
    fit: () => renderer.fit(),
    zoomBy: (factor) => renderer.zoomBy(factor),
    history: mode === 'map' ? () => void effects.openTimeline() : undefined,
    compare: mode === 'map' ? () => navigate(`/networks/${state.networkId}/topology/diff${query({ view: state.view })}`) : undefined,
    unpinAll: () => void effects.unpinAll(),
    add: mode === 'map' ? addMenu(edits) : null,
    exportButton: exports.button,
    // Creating a share link is for Admins and Owners (the route's role); nobody else sees Share.
    share: isAdmin(session) ? () => openShareDialog({ networkId: state.networkId, networkName, view: state.view, instant: fixedInstant(state) }) : undefined,
  });
  const list = hostListView(hostList, containerList, sheetToggle, {
    choose: (x) => void chooseHost(x),
    focus: (ids) => renderer.focus(ids),
    toggle: (id) => void toggle(id),
    empty: () => h('div', { class: 'empty-map' }, h('p', {}, 'No hosts yet. Start a discovery agent:'),
      agentSteps(state.networkId, { onDaemonsLink: (e) => { e.preventDefault(); navigate('/daemons'); } }), h('p', {}, 'Or add hosts by hand (Add, or POST /api/v1/hosts).')),
    openSheet: () => setSheet(true),
  });
  const time = timeBarView(timeBar, dispatch);

  const diffForm = mode === 'diff' ? diffControls() : null;
  fill(outlet, h('div', { class: 'map-screen' },
    h('div', { class: 'map-head' }, h('h1', {}, mode === 'diff' ? `${networkName}: what changed` : networkName), status),
    tools.toolbar, tools.more, diffForm, timeBar, errors,
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

  // ---- dispatch: the next state, then the screen and the outside world follow it ----------------
  function dispatch(action: MapAction) {
    if (disposed) return;
    const prev = state;
    state = reduceMap(prev, action);
    if (state === prev) return;
    render(prev, state);
    effects.react(prev, state);
  }

  /** The last view drawn: another one is fitted (as a first drawing is). */
  let drawnView: string | undefined;
  function render(prev: MapState, next: MapState) {
    tools.render(next);
    // The time bar first: it takes its height from the canvas before the drawing is fitted to it.
    time.render(next);
    if (prev.problem !== next.problem) renderProblem();
    const shown = shownGraph(next);
    if (shown && shown !== shownGraph(prev)) renderGraph();
    else {
      if (changed(prev, next, MARK_INPUTS)) renderMarks();
      if (shown && changed(prev, next, LIST_INPUTS)) list.render(next);
      else if (prev.selectedHost !== next.selectedHost) list.renderPressed(next);
      if (prev.tick !== next.tick) list.renderContainers(next);
    }
    // The history opened (the bar took height from the canvas) or closed: fitted to what is left.
    if (prev.fits !== next.fits) renderer.fit();
    if (prev.diff !== next.diff) {
      renderChanges(changes, next, focusChange);
      // Without `from`: the window the API chose, in the form.
      const fromInput = document.getElementById('diff-from') as HTMLInputElement | null;
      if (fromInput && next.diff && !next.diffRequest?.from) fromInput.value = toLocal(next.diff.from);
    }
    const line = statusText(next, when);
    if (line !== undefined && status.textContent !== line) status.textContent = line;
    const address = addressOf(next, location.pathname, query);
    if (address !== addressOf(prev, location.pathname, query)) history.replaceState(null, '', address);
  }

  function renderProblem() {
    const p = state.problem;
    if (!p) return fill(errors);
    if (p.kind === 'error') return fill(errors, notice('error', p.message, p.code));
    // Never a blank map: the network at the interval's end, marked, and why.
    if (p.kind === 'partial') return fill(errors, notice('info', `The map shows the network as of ${when(p.to)}, not the whole interval (${p.reason}): removed elements are only in the list. Narrow the window or filter by a tag to draw them.`));
    // Never a silent no-op: why, and what to try.
    const lastDay = p.lastDay;
    fill(errors, h('div', { class: 'notice error', role: 'alert', id: 'history-problem' },
      `The history cannot be shown: ${p.message}. Filter by a tag, choose another view`,
      lastDay ? [', or ', button('Show the last 24 hours', () => void effects.openTimeline(lastDay))] : null, '.'));
  }

  function renderMarks() {
    const g = shownGraph(state);
    if (!g) return;
    const classes = marksOf(state);
    // A selected host: it and what it is linked to stand out, the rest is dimmed.
    const selected = hostsOf(state).find((x) => x.hostId === state.selectedHost);
    if (selected) {
      const add = (id: string, c: string) => (classes.get(id) ?? classes.set(id, []).get(id)!).push(c);
      const around = renderer.neighbourhood(selected.nodeIds);
      for (const x of [...g.nodes, ...g.edges]) if (!around.has(x.id)) add(x.id, 'dimmed');
      for (const id of selected.nodeIds) add(id, 'highlighted');
    }
    renderer.mark(classes);
    renderer.nameDependency(null);
    renderer.nameEnds(selected ? dependencyNamesAt(g.edges, selected.nodeIds) : []);
  }

  function renderGraph() {
    const g = shownGraph(state);
    // What is drawn stays as it is until the positions of the new graph are known.
    if (!g || g.layout.status !== 'ready') return;
    performance.mark('map-draw-start');
    // The legend first: a fit leaves its box clear.
    fill(legend, h('summary', {}, 'Legend'), legendOf(g));
    renderer.setGraph(drawnNodes(state, g), g.edges, g.layout.positions, drawnView !== undefined && drawnView !== state.view, g.layout.routes);
    drawnView = state.view;
    performance.mark('map-graph-set');
    renderMarks();
    performance.mark('map-marks-set');
    list.render(state);
    list.renderContainers(state);
    performance.mark('map-lists-rendered');
    if (!canvas.hasAttribute('data-ready')) {
      canvas.setAttribute('data-ready', 'true');
      // The first frame with the map on it: what the browser benchmark (bench/web.ts) times.
      requestAnimationFrame(() => performance.mark('map-interactive'));
    }
  }

  /** A host chosen in the list: one folded into a summary node opens it in place first (it is then drawn), then it is selected. */
  async function chooseHost(x: HostEntry) {
    const summary = x.nodeIds.find((id) => shownGraph(state)?.nodes.some((n) => n.id === id && n.kind === 'summary'));
    if (summary) {
      await toggle(summary);
      while (!disposed && effects.pending()) await effects.sleep(LAYOUT_POLL_MS);
      // The list was drawn again: focus on the host's new entry, where Escape brings it back.
      hostList.querySelector<HTMLElement>(`[data-host-id="${CSS.escape(x.hostId)}"]`)?.focus({ preventScroll: true });
    }
    await selectHost(x.hostId, true);
  }

  /** A diff entry: its host selected, centred and its details open (a removed one as it was); any other element centred. */
  function focusChange(line: { id: string; mark: string }) {
    const edge = shownGraph(state)?.edges.find((e) => e.id === line.id);
    const ids = edge ? [edge.source, edge.target] : [line.id];
    const host = hostsOf(state).find((x) => ids.some((id) => x.nodeIds.includes(id)));
    if (host) void selectHost(host.hostId, true, line.mark === 'removed' ? state.diff?.from : state.diff?.to);
    else renderer.focus(ids);
  }

  // ---- what the user does on the drawing ----------------------------------------------------------
  function pin(nodeId: string, topLeft: { x: number; y: number }) {
    const g = shownGraph(state);
    if (!g) return;
    // A container moved: its elements are what keep a position.
    const positions: Record<string, { x: number; y: number }> = { [nodeId]: topLeft };
    for (const k of g.nodes.filter((n) => n.parent_id === nodeId)) positions[k.id] = renderer.topLeft(k.id);
    void effects.pin(positions);
  }

  /** Opened by the API (expand: read again) or folded here (nothing to read). */
  async function toggle(id: string) {
    const prev = state;
    dispatch({ type: 'containerToggled', nodeId: id });
    if (state.expand !== prev.expand) await effects.reload();
  }

  search.addEventListener('input', () => {
    dispatch({ type: 'searched', search: search.value });
    // One host left: the map brings it into view.
    const matches = state.search.trim() ? listedHosts(state) : [];
    if (matches.length === 1) renderer.focus(matches[0]!.nodeIds);
  });
  search.addEventListener('keydown', (e: KeyboardEvent) => {
    if (e.key !== 'Enter') return;
    const first = listedHosts(state)[0];
    if (first) void chooseHost(first);
  });
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && details.isOpen()) {
      e.preventDefault();
      void selectHost(undefined);
    }
  };
  document.addEventListener('keydown', onKey);

  function toLocal(iso: string | null | undefined) {
    return iso ? new Date(new Date(iso).getTime() - new Date().getTimezoneOffset() * 60e3).toISOString().slice(0, 19) : '';
  }
  function diffControls() {
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

  const showError = (err: unknown) => {
    const e = err as { message?: string; code?: string };
    dispatch({ type: 'failed', message: e.message ?? String(err), code: e.code });
  };

  // For tests and tools: what the map draws (positions, classes, labels and their size on screen), read-only.
  // liveReads: how often the live graph was read, because the change stream said so or by the poll.
  (window as unknown as { netinventoryMap?: unknown }).netinventoryMap = {
    snapshot: () => renderer.snapshot(), titles: () => renderer.titleSnapshot(), centre: () => renderer.centre(), fitCentre: () => renderer.fitCentre(), liveReads: () => ({ ...state.liveReads }),
    lastExport: () => exports.lastExport(),
  };
  tools.render(state);
  if (mode === 'diff') {
    void effects.loadDiff();
    void effects.readServices();
  } else void effects.loadGraph(firstGraph).then(() => {
    void effects.readServices();
    if (q.get('history') === 'true') void effects.openTimeline();
    // Opened from a host's page or a search: that host selected and brought into view; another
    // element (a subnet) brought into view.
    const focus = focusedHost(q.get('focus'), hostsOf(state));
    if (focus && state.graph) void selectHost(focus, true);
    else if (q.get('focus')) {
      const ids = (shownGraph(state)?.nodes ?? []).filter((n) => n.id === q.get('focus')).map((n) => n.id);
      if (ids.length) renderer.focus(ids);
    }
    effects.follow();
  });

  return () => {
    disposed = true;
    document.removeEventListener('keydown', onKey);
    tools.dispose();
    effects.dispose();
    exports.dispose();
    renderer.destroy();
  };
}
