// The map screen's state and every transition it makes, as a pure reducer (no DOM, no I/O):
// reduceMap(state, action) → the next state. The screen (screens/map.ts) dispatches what the user
// did and what the API answered (mapEffects.ts turns actions into requests and answers into
// actions), and renders the next state through the views (mapViews/) and the renderer
// (mapRenderer.ts). The selectors below (what is shown, listed, marked, the address) are pure too.
import type { HostDependency } from './hostDependencies.js';
import { diffMarks, hostsOnMap, matchHosts, presentAt, type Box, type GraphNode, type HostEntry, type Topology, type TopologyDiff } from './mapState.js';

export const VIEW_NAMES: Record<string, string> = { l3: 'L3 (subnets)', workloads: 'Workloads', application: 'Applications', l2: 'L2 (physical)' };

/** A timeline's union; tick_changes: how many changes each tick stands for (grouped past the API's budget). */
export type Timeline = Topology & { ticks: string[]; tick_changes?: number[] };

/** What stands above the map when something went wrong or needs saying (undefined: nothing). */
export type MapProblem =
  | { kind: 'error'; message: string; code?: string }
  /** The history could not be read; `lastDay`: it was read from before the last 24 hours (offer those). */
  | { kind: 'history'; message: string; lastDay?: string }
  /** A comparison drawn at its end only: its union could not be drawn (why). */
  | { kind: 'partial'; to: string; reason: string };

/**
 * The line under the title: what is drawn (the instant, or live with its counts; computed from the
 * graph), the history's tick as the time bar names it, or a message of its own (a pin, an export).
 */
export type MapStatus = { kind: 'drawn' } | { kind: 'tick' } | { kind: 'text'; text: string };

export interface MapState {
  mode: 'map' | 'diff';
  networkId: string;
  view: string;
  /** The views the API offers for this network. */
  views: string[];
  at?: string;
  tagId?: string;
  includeHidden: boolean;
  expand: string[];
  /** Containers folded here (their elements hidden), not by the API. */
  folded: ReadonlySet<string>;
  graph?: Topology;
  /** The history slider: the union graph over the interval and the tick shown. */
  timeline?: Timeline;
  tick?: number;
  /** Where the open history starts (read again from there when a container is opened). */
  timelineFrom?: string;
  diff?: TopologyDiff;
  /** A comparison's interval as the address asked for it (undefined `from`: the last changes). */
  diffRequest?: { from?: string; to?: string };
  search: string;
  selectedHost?: string;
  /** Tags on this network's services, with the services carrying each: such a tag filters services, here (the API's tag_ids filters hosts). */
  serviceTags?: ReadonlyMap<string, ReadonlySet<string>>;
  /** The services of this network by id, with their host (for the service tag filter). */
  serviceHosts?: ReadonlyMap<string, string>;
  /** Each host's dependencies with its role, for the host list. */
  dependencies?: ReadonlyMap<string, HostDependency[]>;
  /** The organization's tags (the tag filter's options). */
  tags?: ReadonlyArray<{ id: string; name: string }>;
  /** The organization's tags by id (names for the changes list). */
  tagNames?: ReadonlyMap<string, string>;
  /** Bumped each time the drawing is to be fitted to the canvas after it is drawn (the history opened or closed). */
  fits: number;
  /** The history was opened: its drawing is fitted once its layout is ready. */
  fitWhenReady: boolean;
  /** The change stream said something changed: the live graph is to be read again (once per burst). */
  refreshWanted: boolean;
  /** How often the live graph was read, because the change stream said so or by the poll. */
  liveReads: { change: number; poll: number };
  /** The line under the title (statusText renders it). */
  status: MapStatus;
  problem?: MapProblem;
  /** The phone toolbar's More row is open. */
  moreOpen: boolean;
}

export type MapAction =
  | { type: 'viewChosen'; view: string }
  | { type: 'tagChosen'; tagId?: string }
  | { type: 'hiddenChosen'; includeHidden: boolean }
  | { type: 'searched'; search: string }
  | { type: 'hostSelected'; hostId?: string }
  /** A container opened or closed (double-click, Enter): collapsed and summary nodes by the API (expand), the others here (folded). */
  | { type: 'containerToggled'; nodeId: string }
  | { type: 'graphLoaded'; graph: Topology }
  /** The live graph read again (change stream or poll). */
  | { type: 'liveReadStarted'; cause: 'change' | 'poll' }
  | { type: 'graphRefreshed'; graph: Topology }
  | { type: 'streamChanged' }
  /** The burst of changes the stream announced has settled: the read it wanted is made now. */
  | { type: 'streamSettled' }
  | { type: 'timelineLoaded'; timeline: Timeline; from: string }
  /** The timeline read again while its layout was pending (its ticks stay). */
  | { type: 'timelineLayoutArrived'; timeline: Timeline }
  | { type: 'timelineClosed' }
  | { type: 'tickSeeked'; tick: number }
  | { type: 'tickStepped'; by: number }
  | { type: 'diffLoaded'; diff: TopologyDiff; union?: Timeline; unionError?: string; tagNames: ReadonlyMap<string, string> }
  | { type: 'servicesLoaded'; tags: ReadonlyArray<{ id: string; name: string }>; serviceTags: ReadonlyMap<string, ReadonlySet<string>>; serviceHosts: ReadonlyMap<string, string>; dependencies: ReadonlyMap<string, HostDependency[]> }
  | { type: 'pinned'; positions: Record<string, { x: number; y: number }>; pinned: string[] }
  | { type: 'failed'; message: string; code?: string }
  | { type: 'historyFailed'; message: string; lastDay?: string }
  | { type: 'status'; text: string }
  | { type: 'moreToggled'; open: boolean };

/** The map's state as its address gives it (a deep link). */
export function initialMapState(networkId: string, q: URLSearchParams, mode: 'map' | 'diff' = 'map'): MapState {
  return {
    mode, networkId, view: q.get('view') ?? 'l3', views: [q.get('view') ?? 'l3'], at: q.get('at') ?? undefined, tagId: q.get('tag') ?? undefined,
    includeHidden: q.get('hidden') === 'true', expand: (q.get('expand') ?? '').split(',').filter(Boolean), folded: new Set(), search: '',
    diffRequest: mode === 'diff' ? { from: q.get('from') ?? undefined, to: q.get('to') ?? undefined } : undefined,
    fits: 0, fitWhenReady: false, refreshWanted: false, liveReads: { change: 0, poll: 0 }, status: DRAWN, moreOpen: false,
  };
}

// ---- selectors ---------------------------------------------------------------------------------

/** What is drawn: the history's union while it is open, else the graph. */
export const shownGraph = (s: MapState): Topology | undefined => s.timeline ?? s.graph;
export const hostsOf = (s: MapState): HostEntry[] => hostsOnMap(shownGraph(s)?.nodes ?? []);
/** The instant the history slider shows (undefined: no slider). */
export const tickInstant = (s: MapState): string | undefined => (s.timeline && s.tick !== undefined ? s.timeline.ticks[s.tick] : undefined);
/** The fixed instant drawn: the slider's, a comparison's end, or the map's `at` (undefined: live). */
export const fixedInstant = (s: MapState): string | undefined => tickInstant(s) ?? s.diff?.to ?? s.at;
/** The map follows the inventory live: no instant fixed, a map (not a comparison), drawn. */
export const isLive = (s: MapState) => !s.at && !s.timeline && s.mode === 'map' && s.graph?.layout.status === 'ready';

/** The tag filter as the API's tag_ids (which keeps the hosts carrying it): not a tag of services, filtered here instead. */
export const hostTag = (s: MapState) => (s.tagId && !s.serviceTags?.has(s.tagId) ? [s.tagId] : undefined);

/** Ids that exist at the slider's instant (undefined: everything shown exists). */
export function presentIds(s: MapState): Set<string> | undefined {
  const t = s.timeline;
  if (!t || s.tick === undefined) return undefined;
  return presentAt([...t.nodes, ...t.edges], t.ticks[s.tick]!);
}

/** With a tag of services filtered on: the hosts running such a service (undefined: no such filter). */
export function taggedHosts(s: MapState): Set<string> | undefined {
  const services = s.tagId ? s.serviceTags?.get(s.tagId) : undefined;
  if (!services) return undefined;
  return new Set([...services].map((id) => s.serviceHosts?.get(id)).filter((x): x is string => !!x));
}

/** The hosts listed: matching the search, existing at the slider's instant, carrying a service with the tag filtered on. */
export function listedHosts(s: MapState): HostEntry[] {
  const present = presentIds(s);
  const tagged = taggedHosts(s);
  return matchHosts(hostsOf(s), s.search).filter((x) => (!present || x.nodeIds.some((id) => present.has(id))) && (!tagged || tagged.has(x.hostId)));
}

/** Element nodes that stand for no service with the tag filtered on (dimmed almost away). */
export function filteredOut(s: MapState, g: Topology): string[] {
  const services = s.tagId ? s.serviceTags?.get(s.tagId) : undefined;
  if (!services) return [];
  const hostsWith = taggedHosts(s)!;
  const hostOfNode = new Map(hostsOf(s).flatMap((x) => x.nodeIds.map((id) => [id, x.hostId] as const)));
  const parents = new Set(g.nodes.map((n) => n.parent_id).filter(Boolean));
  return g.nodes.filter((n) => {
    if (parents.has(n.id)) return false; // containers stay: their boxes say where things are
    if (n.kind === 'service') return !services.has(n.entity_id ?? '');
    if (n.services) return !n.services.some((x) => services.has(x.id));
    const host = hostOfNode.get(n.id);
    return !host || !hostsWith.has(host);
  }).map((n) => n.id);
}

/**
 * The classes each drawn element carries (pinned, absent at the instant, the diff's marks, folded
 * away, filtered out, matching the search), without the selection (which needs the drawing's
 * neighbourhood: the renderer's).
 */
export function marksOf(s: MapState): Map<string, string[]> {
  const classes = new Map<string, string[]>();
  const g = shownGraph(s);
  if (!g) return classes;
  const add = (id: string, c: string) => (classes.get(id) ?? classes.set(id, []).get(id)!).push(c);
  for (const id of g.layout.pinned ?? []) add(id, 'pinned');
  const present = presentIds(s);
  if (present) for (const x of [...g.nodes, ...g.edges]) if (!present.has(x.id)) add(x.id, 'absent');
  if (s.diff) for (const [id, mark] of diffMarks(s.diff)) add(id, mark);
  for (const container of s.folded) for (const n of g.nodes) if (n.parent_id === container) add(n.id, 'absent');
  for (const id of filteredOut(s, g)) add(id, 'filtered');
  // Search: the hosts it matches are outlined on the map.
  if (s.search.trim()) for (const x of listedHosts(s)) for (const id of x.nodeIds) add(id, 'match');
  return classes;
}

/** The nodes drawn: a summary's count is the live one (or the interval's end): in History it is a bound, not what existed then. */
export const drawnNodes = (s: MapState, g: Topology): GraphNode[] => (s.timeline ? g.nodes.map((n) => (n.kind === 'summary' ? { ...n, label: `up to ${n.label}` } : n)) : g.nodes);

/** The address that shows this state again (path and query, `when` unused). */
export function addressOf(s: MapState, diffPath: string, query: (p: Record<string, string | number | boolean | string[] | undefined | null>) => string): string {
  if (s.mode === 'diff') {
    return diffPath + query({ view: s.view, from: s.diff?.from ?? s.diffRequest?.from, to: s.diff?.to ?? s.diffRequest?.to, tag: s.tagId, hidden: s.includeHidden || undefined });
  }
  return `/networks/${s.networkId}/topology` + query({ view: s.view, at: tickInstant(s) ?? s.at, tag: s.tagId, hidden: s.includeHidden || undefined, expand: s.expand });
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** The line under the title; `when` formats an instant (undefined: nothing shown yet, the line stays as it is). */
export function statusText(s: MapState, when: (iso: string | undefined) => string): string | undefined {
  if (s.status.kind === 'text') return s.status.text;
  if (s.status.kind === 'tick' && s.timeline && s.tick !== undefined) return `As of ${tickText(s.timeline, s.tick, when)}`;
  return drawnStatus(s, when);
}

/** The line under the title once the shown graph is drawn (or why it is not yet). */
function drawnStatus(s: MapState, when: (iso: string | undefined) => string): string | undefined {
  const g = shownGraph(s);
  if (!g) return undefined;
  if (g.layout.status !== 'ready') {
    if (g.layout.status === 'failed') return `Layout failed: ${g.layout.error ?? 'unknown error'}`;
    return s.timeline ? 'Laying out the history…' : 'Laying out the map…';
  }
  const instant = tickInstant(s);
  if (instant) return `As of ${when(instant)}`;
  if (s.diff) return `From ${when(s.diff.from)} to ${when(s.diff.to)}`;
  if (s.at) return `As of ${when(s.at)}`;
  const nodes = drawnNodes(s, g);
  const f = s.graph?.filtered_out as { collapsed_containers?: number; hidden_hosts?: number; hosts_without_tag?: number } | undefined;
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
  return `Live — ${g.nodes.length} nodes${parts.length ? ` — ${parts.join(', ')}` : ''}`;
}

/** A tick as the time bar names it: its instant, and how many changes it stands for when several. */
export const tickText = (t: Timeline, k: number, when: (iso: string | undefined) => string) =>
  `${when(t.ticks[k])}${(t.tick_changes?.[k] ?? 0) > 1 ? ` (after ${t.tick_changes![k]!.toLocaleString()} changes)` : ''}`;

// ---- the reducer -------------------------------------------------------------------------------

const DRAWN: MapStatus = { kind: 'drawn' };
/** The status says what is drawn again (a message of its own is over). */
const withStatus = (s: MapState): MapState => ({ ...s, status: DRAWN });

/** A tick within the timeline's range. */
const clampTick = (t: Timeline, tick: number) => Math.min(t.ticks.length - 1, Math.max(0, tick));

export function reduceMap(s: MapState, a: MapAction): MapState {
  switch (a.type) {
    case 'viewChosen':
      // Another drawing: read afresh and fitted; what was opened belongs to the other view.
      return { ...s, view: a.view, expand: [], graph: undefined, timeline: undefined, tick: undefined, timelineFrom: undefined, fitWhenReady: false };
    case 'tagChosen':
      return { ...s, tagId: a.tagId || undefined };
    case 'hiddenChosen':
      return { ...s, includeHidden: a.includeHidden };
    case 'searched':
      return { ...s, search: a.search };
    case 'hostSelected':
      return s.selectedHost === a.hostId ? s : { ...s, selectedHost: a.hostId };
    case 'containerToggled': {
      const node = shownGraph(s)?.nodes.find((n) => n.id === a.nodeId);
      if (node?.kind === 'collapsed' || node?.kind === 'summary') return { ...s, expand: [...new Set([...s.expand, a.nodeId])] };
      if (s.expand.includes(a.nodeId)) return { ...s, expand: s.expand.filter((x) => x !== a.nodeId) };
      const folded = new Set(s.folded);
      if (folded.has(a.nodeId)) folded.delete(a.nodeId);
      else folded.add(a.nodeId);
      return { ...s, folded };
    }
    case 'graphLoaded': {
      // A comparison drawn at its end keeps saying why: that end is the graph loaded here.
      const problem = s.mode === 'diff' && s.problem?.kind === 'partial' ? s.problem : undefined;
      const next: MapState = { ...s, graph: a.graph, views: a.graph.available_views ?? ['l3'], problem };
      // While the history is open the slider's drawing stays.
      return next.timeline ? next : withStatus(next);
    }
    case 'liveReadStarted':
      return { ...s, liveReads: { ...s.liveReads, [a.cause]: s.liveReads[a.cause] + 1 } };
    case 'graphRefreshed':
      // Until the new layout is ready, what was drawn stays where it was; an unchanged graph is not drawn again.
      if (s.timeline || s.at || s.mode !== 'map' || a.graph.layout.status !== 'ready' || a.graph.digest === s.graph?.digest) return s;
      return withStatus({ ...s, graph: a.graph });
    case 'streamChanged':
      return isLive(s) && !s.refreshWanted ? { ...s, refreshWanted: true } : s;
    case 'streamSettled':
      return { ...s, refreshWanted: false };
    case 'timelineLoaded': {
      // Opened again (a container expanded): at the same instant if it is still a tick.
      const instant = tickInstant(s);
      const tick = instant && a.timeline.ticks.includes(instant) ? a.timeline.ticks.indexOf(instant) : a.timeline.ticks.length - 1;
      const opening = !s.timeline;
      const ready = a.timeline.layout.status === 'ready';
      return withStatus({
        ...s, timeline: a.timeline, tick, timelineFrom: a.from, problem: undefined,
        fits: opening && ready ? s.fits + 1 : s.fits, fitWhenReady: opening && !ready ? true : s.fitWhenReady && !ready,
      });
    }
    case 'timelineLayoutArrived': {
      if (!s.timeline) return s;
      const timeline = { ...a.timeline, ticks: s.timeline.ticks, tick_changes: s.timeline.tick_changes };
      const ready = timeline.layout.status === 'ready';
      return withStatus({ ...s, timeline, fits: ready && s.fitWhenReady ? s.fits + 1 : s.fits, fitWhenReady: s.fitWhenReady && !ready });
    }
    case 'timelineClosed':
      return withStatus({ ...s, timeline: undefined, tick: undefined, timelineFrom: undefined, fitWhenReady: false, fits: s.fits + 1 });
    case 'tickSeeked':
    case 'tickStepped': {
      if (!s.timeline) return s;
      const tick = clampTick(s.timeline, a.type === 'tickSeeked' ? a.tick : (s.tick ?? s.timeline.ticks.length - 1) + a.by);
      // The status names the tick as the time bar does (with the changes it stands for).
      return tick === s.tick ? s : { ...s, tick, status: { kind: 'tick' } };
    }
    case 'diffLoaded': {
      // Drawn on the union of the interval (one layout holding what was removed and what was added);
      // without it, the network at the interval's end, marked, and why.
      if (a.union) return withStatus({ ...s, diff: a.diff, tagNames: a.tagNames, timeline: a.union, tick: undefined, problem: undefined });
      return {
        ...s, diff: a.diff, tagNames: a.tagNames, at: s.diffRequest?.to,
        problem: { kind: 'partial', to: a.diff.to, reason: a.unionError ?? 'it could not be drawn' },
      };
    }
    case 'servicesLoaded':
      return { ...s, tags: a.tags, serviceTags: a.serviceTags, serviceHosts: a.serviceHosts, dependencies: a.dependencies };
    case 'pinned': {
      const g = shownGraph(s);
      if (!g) return s;
      const positions: Record<string, Box> = { ...g.layout.positions };
      for (const [id, p] of Object.entries(a.positions)) positions[id] = { x: p.x, y: p.y, width: positions[id]?.width ?? 0, height: positions[id]?.height ?? 0 };
      const moved = { ...g, layout: { ...g.layout, positions, pinned: a.pinned } };
      const n = Object.keys(a.positions).length;
      const status: MapStatus = { kind: 'text', text: `Pinned ${n === 1 ? 'a node' : `${n} nodes`}: it stays where you put it.` };
      return s.timeline ? { ...s, timeline: moved as Timeline, status } : { ...s, graph: moved, status };
    }
    case 'failed':
      return { ...s, problem: { kind: 'error', message: a.message, code: a.code } };
    case 'historyFailed':
      return { ...s, problem: { kind: 'history', message: a.message, lastDay: a.lastDay } };
    case 'status':
      return { ...s, status: { kind: 'text', text: a.text } };
    case 'moreToggled':
      return { ...s, moreOpen: a.open };
  }
}
