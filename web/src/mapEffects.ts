// The map screen's reads and writes of the API, and its live following of the inventory: each turns
// the state (mapScreenState.ts) into a request and the answer into an action it dispatches; nothing
// here touches the DOM. The graph and its layout (polled while `pending`), the timeline (the history
// slider), the diff, the services and dependencies (the tag filter, the host list), the pins, and
// live: the network's change stream (/api/v1/events/stream) says when something changed and the
// graph is read again (a burst of changes once); its digest is also polled, every 5 s while the
// stream is not open and every 30 s while it is (a safety net: a stream can break without telling).
import { api, query, takePrefetched, type ApiError } from './api.js';
import { tagsById } from './hostDetails.js';
import { dependenciesByHost, type DependencyRow } from './hostDependencies.js';
import { hostTag, isLive, shownGraph, type MapAction, type MapState, type Timeline } from './mapScreenState.js';
import type { Topology, TopologyDiff } from './mapState.js';

export const LIVE_POLL_MS = 5000;
const LIVE_POLL_STREAMING_MS = 30_000;
/** Changes come in bursts (a discovery batch): the graph is read once the burst has settled a little. */
const CHANGE_SETTLE_MS = 300;
export const LAYOUT_POLL_MS = 700;
/** Compare's default window: the network's last changes (a window in time may hold thousands, or none). */
export const COMPARE_LAST_CHANGES = 50;

/** The topology read that draws this state. */
export const graphPath = (s: MapState) => `/api/v1/topology${query({
  network_id: s.networkId, view: s.view, at: s.at, tag_ids: hostTag(s),
  include_hidden: s.includeHidden || undefined, expand: s.expand,
})}`;

/**
 * A diff or timeline read of this state over [from, to] (to: now when absent); the timeline is shaped by `expand` as the map is.
 * A diff without `from` compares the last COMPARE_LAST_CHANGES changes.
 */
export const intervalPath = (kind: 'diff' | 'timeline', s: MapState, from: string | undefined, to?: string) => `/api/v1/topology/${kind}${query({
  network_id: s.networkId, view: s.view, from, to, last_changes: from ? undefined : COMPARE_LAST_CHANGES, tag_ids: hostTag(s),
  include_hidden: s.includeHidden || undefined, expand: kind === 'timeline' ? s.expand : undefined,
})}`;

/** The export the API makes of this state (PNG/SVG/draw.io made on the server). */
export const apiExportPath = (s: MapState, format: string) => `/api/v1/topology/export${query({ network_id: s.networkId, view: s.view, format, at: s.at, tag_ids: hostTag(s), include_hidden: s.includeHidden || undefined })}`;

export interface MapStore { get(): MapState; dispatch(action: MapAction): void }

const failed = (err: unknown): MapAction => {
  const e = err as ApiError;
  return { type: 'failed', message: e.message ?? String(err), code: e.code };
};

export function mapEffects(store: MapStore) {
  const { get, dispatch } = store;
  const timers = new Set<number>();
  let disposed = false;
  const later = (ms: number, fn: () => void) => { const t = window.setTimeout(() => { timers.delete(t); if (!disposed) fn(); }, ms); timers.add(t); };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const fetchGraph = () => api.get<Topology>(graphPath(get()));
  let changeStream: EventSource | undefined;

  async function loadGraph(prefetched?: Promise<Topology>) {
    try {
      const g = await (prefetched ?? fetchGraph());
      if (disposed) return;
      performance.mark('map-topology-received');
      dispatch({ type: 'graphLoaded', graph: g });
      // (The first drawing fits the map itself.)
      if (g.layout.status === 'pending') later(LAYOUT_POLL_MS, () => void loadGraph());
    } catch (err) {
      if (!disposed) dispatch(failed(err));
    }
  }

  async function refresh(cause: 'change' | 'poll') {
    const s = get();
    if (!isLive(s)) return;
    try {
      dispatch({ type: 'liveReadStarted', cause });
      const g = await api.get<Topology>(graphPath({ ...s, at: undefined }));
      if (disposed || get().timeline || g.digest === get().graph?.digest) return;
      // Until the new layout is ready, what was drawn stays where it was; new nodes wait for it.
      if (g.layout.status === 'ready') dispatch({ type: 'graphRefreshed', graph: g });
      else later(LAYOUT_POLL_MS, () => void refresh(cause));
    } catch { /* the next change or poll tries again */ }
  }

  function listen() {
    changeStream = new EventSource(`/api/v1/events/stream${query({ network_id: get().networkId })}`);
    // Ended by the server (the session is over): not reopened; the next poll finds the session gone.
    changeStream.addEventListener('ended', () => changeStream?.close());
    changeStream.onmessage = () => dispatch({ type: 'streamChanged' });
  }
  function poll() {
    void refresh('poll').finally(() => later(changeStream?.readyState === EventSource.OPEN ? LIVE_POLL_STREAMING_MS : LIVE_POLL_MS, poll));
  }

  /** The timeline read again while its layout is pending (the history's positions are the map's). */
  async function waitForLayout(from: string, to: string) {
    while (!disposed && get().timeline?.layout.status === 'pending') {
      await sleep(LAYOUT_POLL_MS);
      const t = await api.get<Timeline>(intervalPath('timeline', get(), from, to));
      if (!disposed) dispatch({ type: 'timelineLayoutArrived', timeline: t });
    }
  }

  /** The history from `from` (by default the network's creation: the API groups a busy history into at most 200 ticks). */
  async function openTimeline(start = get().timelineFrom) {
    const now = new Date().toISOString();
    const network = start ? undefined : await api.get<{ created_at: string }>(`/api/v1/networks/${get().networkId}`).catch(() => undefined);
    const from = start ?? network?.created_at ?? new Date(Date.now() - 24 * 3600e3).toISOString();
    try {
      const t = await api.get<Timeline>(intervalPath('timeline', get(), from, now));
      if (disposed) return;
      dispatch({ type: 'timelineLoaded', timeline: t, from });
      await waitForLayout(from, now);
    } catch (err) {
      // Never a silent no-op: why, and what to try.
      const e = err as ApiError;
      const lastDay = new Date(Date.now() - 24 * 3600e3).toISOString();
      if (!disposed) dispatch({ type: 'historyFailed', message: e.message ?? String(err), lastDay: from < lastDay ? lastDay : undefined });
    }
  }

  async function loadDiff() {
    const { from, to } = get().diffRequest ?? {};
    try {
      // Without `from`: the last changes, whenever they were (a fixed day may hold thousands, or none).
      const diff = await api.get<TopologyDiff>(intervalPath('diff', get(), from, to));
      let unionError: string | undefined;
      const union = await api.get<Timeline>(intervalPath('timeline', get(), diff.from, diff.to)).catch((err: ApiError) => { unionError = err.message; return undefined; });
      const tags = await tagsById();
      if (disposed) return;
      dispatch({ type: 'diffLoaded', diff, union, unionError, tagNames: new Map([...tags].map(([id, t]) => [id, t.name])) });
      if (union) return await waitForLayout(diff.from, diff.to);
      await loadGraph();
    } catch (err) {
      if (!disposed) dispatch(failed(err));
    }
  }

  /** Read again what the state now asks for (a container opened, a filter changed). */
  function reload(): Promise<void> {
    const s = get();
    // The history slider's union is shaped by the same expand: read again with it.
    if (s.timeline && s.mode === 'map') return openTimeline();
    if (s.mode === 'diff') return loadDiff();
    return loadGraph();
  }

  /** Positions (top-left) of nodes the user put somewhere: kept there from now on. */
  async function pin(positions: Record<string, { x: number; y: number }>) {
    const s = get();
    try {
      const res = await api.put<{ pinned: string[] }>('/api/v1/topology/positions', { network_id: s.networkId, view: s.view, positions });
      if (!disposed) dispatch({ type: 'pinned', positions, pinned: res.pinned });
    } catch (err) {
      if (!disposed) dispatch(failed(err));
    }
  }

  async function unpinAll() {
    const s = get();
    try {
      await api.delete(`/api/v1/topology/positions${query({ network_id: s.networkId, view: s.view })}`);
      await loadGraph();
    } catch (err) {
      dispatch(failed(err));
    }
  }

  // The tag filter: tags found on this network's services filter services; the others, hosts (by the API).
  // The same read gives the host list each host's dependencies. Read once the map is drawn: on a
  // loaded server these reads delayed the graph's (bench/web.ts, 1,000 elements).
  async function readServices(): Promise<void> {
    const networkId = get().networkId;
    const [tags, services, dependencies] = await Promise.all([tagsById(), api.get<Array<{ id: string; host_id: string; tags?: string[]; bindings?: Array<{ id: string }> }>>(`/api/v1/services${query({ network_id: networkId, limit: 1000 })}`).catch(() => []),
      api.get<DependencyRow[]>(`/api/v1/dependencies${query({ network_id: networkId, limit: 1000 })}`).catch(() => [])]);
    if (disposed) return;
    const serviceTags = new Map<string, Set<string>>();
    for (const x of services) for (const t of x.tags ?? []) (serviceTags.get(t) ?? serviceTags.set(t, new Set()).get(t)!).add(x.id);
    const wasHostFilter = hostTag(get());
    dispatch({ type: 'servicesLoaded', tags: [...tags.values()].map((t) => ({ id: t.id, name: t.name })), serviceTags, serviceHosts: new Map(services.map((x) => [x.id, x.host_id])), dependencies: dependenciesByHost(dependencies, services) });
    // Read with the tag as a host filter before its services were known: read again, filtered here.
    if (wasHostFilter && !hostTag(get()) && get().mode === 'map') void loadGraph();
  }

  /** What a transition asks of the outside world, once it is made. */
  function react(prev: MapState, next: MapState) {
    // The stream said something changed: read the graph once the burst has settled.
    if (!prev.refreshWanted && next.refreshWanted) later(CHANGE_SETTLE_MS, () => { dispatch({ type: 'streamSettled' }); void refresh('change'); });
    // Another view, tag or hidden hosts: the graph (or, for another view, the comparison) that draws it is read again.
    if (prev.view !== next.view) void (next.mode === 'diff' ? loadDiff() : loadGraph());
    else if (prev.tagId !== next.tagId || prev.includeHidden !== next.includeHidden) void loadGraph();
  }

  return {
    loadGraph, refresh, openTimeline, loadDiff, reload, pin, unpinAll, readServices, react,
    /** Live: the change stream, and the poll from LIVE_POLL_MS on. */
    follow() { listen(); later(LIVE_POLL_MS, poll); },
    /** The layout of what is shown is still pending. */
    pending: () => shownGraph(get())?.layout.status === 'pending',
    sleep,
    /** The graph read at boot (prefetchMap), or else now: the answer travels while the renderer starts. */
    firstGraph: () => takePrefetched<Topology>(graphPath(get())) ?? fetchGraph(),
    dispose() {
      disposed = true;
      changeStream?.close();
      for (const t of timers) clearTimeout(t);
    },
  };
}

export type MapEffects = ReturnType<typeof mapEffects>;
