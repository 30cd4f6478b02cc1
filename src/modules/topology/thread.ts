// The CPU-heavy halves of topology requests and layout jobs, as tasks over plain data (what the
// SQL reads gave): drawing a view, a diff's two drawings, a timeline's per-instant drawings with
// their union, elk layouts and export text. pool.ts runs them on worker threads (this file is the
// threads' entry: its own bundle, dist/topologyThread.mjs) or inline when they are small, so the
// API's and the worker's event loops keep answering while a large view is computed.
import { applyCollapse, buildGraph, collapse, type CountedElements, emptyFilteredOut, graphDigest, type FilteredOut, type GraphEdge, type GraphNode, type GraphOptions, type Snapshot, type View } from './graph.js';
import { diffGraphs, unionOverTime } from './diff.js';
import { layoutGraph, overlayPins, placeIncrementally, type Box, type Pin } from './layout.js';
import { routeEdges } from './edgeRoutes.js';
import { EXPORTERS, type ExportFormat } from './export.js';
import { lowerThisThreadsPriority } from '../../core/threadPriority.js';
import { readSnapshotHere, type RowsText, type SnapshotRead } from './threadReads.js';
import { elementRowsOf, SNAPSHOT_TABLES, TABLES, type HostLink } from './declaration.js';

// On a pool thread: below the event loops in the kernel's eyes (a no-op where this runs inline, on the main thread).
lowerThisThreadsPriority();

type Rows = Array<Record<string, unknown>>;

/**
 * Each table's rows as PostgreSQL's JSON text of them (json_agg) and their count: one
 * string per table instead of a parsed object per row.
 */
export type SnapshotText = Record<keyof Snapshot, RowsText>;

/**
 * The rows a task draws: read already (a task run inline, on the event loop that read them), or
 * where the thread reads them itself, in the request's snapshot (threadReads.ts says why).
 */
export type SnapshotRows = SnapshotText | SnapshotRead;
const isRead = (rows: SnapshotRows): rows is SnapshotRead => typeof (rows as SnapshotRead).snapshot === 'string';

export const parseSnapshot = (text: SnapshotText) =>
  Object.fromEntries(Object.entries(text).map(([k, t]) => [k, JSON.parse(t.rows) as Rows])) as unknown as Snapshot;

/** The rows of a task as objects, read first when the task was given where to read them. */
const snapshotOf = async (rows: SnapshotRows) => parseSnapshot(isRead(rows) ? await readSnapshotHere(rows) as SnapshotText : rows);

/**
 * JSON as UTF-8 bytes: they come back from a thread as a copy outside the JavaScript heap (a
 * string would be copied into it, then encoded again to be sent), and the answer sends them as
 * they are.
 */
const jsonBytes = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));
const fromJsonBytes = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/**
 * A graph's nodes and edges as JSON, and what the event loop still needs of them (the node ids,
 * for pins; the size, for the cache): answers splice the JSON in (envelope.ts JsonText).
 */
export interface GraphJson { nodes: Uint8Array; edges: Uint8Array; nodeIds: string[]; size: number }
const graphJson = (g: { nodes: Array<{ id: string }>; edges: unknown[] }): GraphJson =>
  ({ nodes: jsonBytes(g.nodes), edges: jsonBytes(g.edges), nodeIds: g.nodes.map((n) => n.id), size: g.nodes.length + g.edges.length });

type DrawInput = { rows: SnapshotRows; view: View; options: GraphOptions; forced?: CountedElements };
/**
 * `untouched`: the network as of the first tick and the hosts `all` holds (drawn at every tick);
 * the other hosts are the same at every tick and drawn once from it.
 */
type TimelineInput = {
  all: SnapshotRows; instants: string[]; ticks: string[]; view: View; options: GraphOptions; maxNodes: number; expand?: string[]; maxDrawn: number;
  untouched?: { rows: SnapshotRows; hostIds: string[] };
  /**
   * With `untouched` (l3 over its budget): per tick, what the drawn map at that instant collapses
   * and filters out (service.ts timelineBudget); `untouched.rows` then hold only the hosts drawn
   * once that some tick leaves open.
   */
  frames?: Array<{ collapsed: Map<string, Record<string, number>>; filteredOut: FilteredOut }>;
};

/** The rows that become element nodes (what a drawing's work grows with). */
export const elementRows = (s: Snapshot) => elementRowsOf(s);

/** One instant of a read of two (service.ts sourceOf): the rows flagged valid at it. */
export const sideOf = (both: Snapshot, flag: 'at_first' | 'at_second') =>
  Object.fromEntries(Object.entries(both).map(([k, rows]) => [k, (rows as Rows).filter((r) => r[flag])])) as unknown as Snapshot;

/** Each tick's rows (ascending ticks, in the format of the rows' v_from / v_to) out of one read of the span. */
export const splitByTick = (all: Snapshot, ticks: string[]) => ticks.map((tick) => Object.fromEntries(Object.entries(all).map(([k, rows]) => [
  k, (rows as Array<{ v_from: string; v_to: string | null }>).filter((r) => r.v_from <= tick && (r.v_to === null || r.v_to > tick)),
])) as unknown as Snapshot);

/** Formats whose file places nodes where the layout put them (Mermaid is laid out by its reader). */
export const POSITIONED: Record<ExportFormat, boolean> = { svg: true, graphml: true, drawio: true, mermaid: false };

async function draw(i: DrawInput) {
  const graph = buildGraph(await snapshotOf(i.rows), i.view, i.options, i.forced);
  return { graph, digest: graphDigest(graph) };
}

/** A snapshot without `hostIds` and their children (declaration.ts hostLink; subnets, dependencies and tags kept whole). */
export function withoutHosts(s: Snapshot, hostIds: Set<string>): Snapshot {
  const kept = new Set(s.services.filter((r) => !hostIds.has(r.host_id)).map((r) => r.id as string));
  const keeps: Record<NonNullable<HostLink>, (r: Rows[number]) => boolean> = {
    self: (r) => !hostIds.has(r.id as string), host_id: (r) => !hostIds.has(r.host_id as string), service: (r) => kept.has(r.service_id as string),
  };
  return Object.fromEntries(SNAPSHOT_TABLES.map((t) => {
    const link = TABLES[t].hostLink;
    return [t, link ? s[t].filter(keeps[link]) : s[t]];
  })) as Snapshot;
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The union of a view over its ticks, shaped as the view is. `instants`: the ticks in the rows'
 * format (`ticks` are the answer's). Refused (the number of element rows it would draw) when
 * the drawings would hold more than `maxDrawn` element rows in all. With `untouched`, the hosts
 * `all` leaves out are drawn once and their items exist over the whole timeline: every subnet is
 * drawn at every tick from `all`, and every other item lies wholly on one side (service.ts
 * closeOverSpan), except an application tag, which exists throughout when an untouched service
 * carries it. Nodes and edges are in id order, whichever way they were drawn.
 */
async function timeline(i: TimelineInput) {
  const snapshots = splitByTick(await snapshotOf(i.all), i.instants);
  const rest = i.untouched && withoutHosts(await snapshotOf(i.untouched.rows), new Set(i.untouched.hostIds));
  const drawn = snapshots.reduce((sum, s) => sum + elementRows(s), rest ? elementRows(rest) : 0);
  if (drawn > i.maxDrawn) return { refused: drawn } as const;
  if (rest && i.frames) return budgetedUnion(i, snapshots, rest, i.frames);
  const drawings = i.ticks.map((at, k) => ({ at, graph: buildGraph(snapshots[k]!, i.view, i.options) }));
  const union = unionOverTime(drawings, null);
  const last = { ...drawings.at(-1)!.graph.filtered_out };
  if (rest) {
    const once = buildGraph(rest, i.view, i.options);
    const throughout = () => [{ from: i.ticks[0]!, to: null }];
    const nodes = new Map(union.nodes.map((n) => [n.id, n]));
    for (const n of once.nodes) if (n.kind !== 'subnet') nodes.set(n.id, { ...n, intervals: throughout() });
    const edges = new Map(union.edges.map((e) => [e.id, e]));
    for (const e of once.edges) edges.set(e.id, { ...e, intervals: throughout() });
    union.nodes = [...nodes.values()];
    union.edges = [...edges.values()];
    last.hidden_hosts += once.filtered_out.hidden_hosts;
    last.hosts_without_tag += once.filtered_out.hosts_without_tag;
  }
  union.nodes.sort(byId);
  union.edges.sort(byId);
  // Shaped as the view is: the union's biggest containers collapsed until it fits max_nodes.
  const filtered_out = { ...emptyFilteredOut(), hidden_hosts: last.hidden_hosts, hosts_without_tag: last.hosts_without_tag };
  const shaped = collapse(union.nodes, union.edges, { maxNodes: i.maxNodes, expand: i.expand }, filtered_out);
  const digest = graphDigest({ nodes: shaped.nodes.map(({ intervals: _i, ...n }) => n), edges: shaped.edges.map(({ intervals: _i, ...e }) => e) });
  return { ...shaped, filtered_out, digest };
}

/**
 * A budgeted timeline's union: each tick's frame is the drawn map at that instant (service.ts
 * budgetedL3): the touched hosts drawn at the tick and the hosts drawn once, the tick's subnets
 * collapsed into cards with the tick's counts; the union of those frames is not shaped again.
 */
function budgetedUnion(i: TimelineInput, snapshots: Snapshot[], rest: Snapshot, frames: NonNullable<TimelineInput['frames']>) {
  const once = buildGraph(rest, i.view, i.options);
  const onceNodes = once.nodes.filter((n) => n.kind !== 'subnet'); // subnets: from each tick's rows
  const drawings = i.ticks.map((at, k) => {
    const tick = buildGraph(snapshots[k]!, i.view, i.options);
    return { at, graph: applyCollapse([...tick.nodes, ...onceNodes], [...tick.edges, ...once.edges], frames[k]!.collapsed) };
  });
  const union = unionOverTime(drawings, null);
  union.nodes.sort(byId);
  union.edges.sort(byId);
  const digest = graphDigest({ nodes: union.nodes.map(({ intervals: _i, ...n }) => n), edges: union.edges.map(({ intervals: _i, ...e }) => e) });
  return { ...union, filtered_out: { ...frames.at(-1)!.filteredOut }, digest };
}

/** A diff part's first `max` changes, added then removed then changed, and how many are left out. */
export function firstChanges<T extends { added: unknown[]; removed: unknown[]; changed: unknown[] }>(part: T, max: number): { kept: T; left: number } {
  let room = max;
  const take = <X>(list: X[]) => { const kept = list.slice(0, Math.max(0, room)); room -= kept.length; return kept; };
  const kept = { ...part, added: take(part.added), removed: take(part.removed), changed: take(part.changed) };
  return { kept, left: part.added.length + part.removed.length + part.changed.length - (max - room) };
}

export const TASKS = {
  draw,

  /** draw, answered as JSON (an API answer). */
  async drawJson(i: DrawInput) {
    const { graph, digest } = await draw(i);
    return { graph: { ...graphJson(graph), filtered_out: graph.filtered_out }, digest };
  },

  /** The diff's nodes and edges parts, each as JSON. */
  async diff(i: { both: SnapshotRows; view: View; options: GraphOptions; maxChanges: number }) {
    const both = await snapshotOf(i.both);
    const diff = diffGraphs(buildGraph(sideOf(both, 'at_first'), i.view, i.options), buildGraph(sideOf(both, 'at_second'), i.view, i.options));
    const nodes = firstChanges(diff.nodes, i.maxChanges);
    const edges = firstChanges(diff.edges, i.maxChanges);
    return { nodes: jsonBytes(nodes.kept), edges: jsonBytes(edges.kept), truncated: { nodes: nodes.left, edges: edges.left } };
  },

  timeline,

  /** timeline, its nodes and edges answered as JSON. */
  async timelineJson(i: TimelineInput) {
    const union = await timeline(i);
    if (union.refused !== undefined) return { refused: union.refused };
    return { ...graphJson(union), filtered_out: union.filtered_out, digest: union.digest };
  },

  /** Around the view's previous positions when most nodes keep theirs, else afresh with elk; then the edges routed around the boxes. */
  async layout(i: { nodes: GraphNode[]; edges: GraphEdge[]; previous: Record<string, Box> }) {
    const started = performance.now();
    const positions = placeIncrementally(i.nodes, i.edges, i.previous) ?? await layoutGraph(i.nodes, i.edges);
    const placed = performance.now();
    const routes = routeEdges(i.nodes, i.edges, positions);
    const done = performance.now();
    return { positions, routes, durationMs: done - started, routeMs: done - placed };
  },

  /**
   * The file; laid out first when no layout is stored (`made`: the new layout, to store). `stored`:
   * the stored layout's positions as PostgreSQL's JSON text (parsed here, not on the event loop).
   */
  async export(i: { format: ExportFormat; graph: Pick<GraphJson, 'nodes' | 'edges'>; stored?: string; storedRoutes?: string; pins: Pin[]; title: string }) {
    const started = performance.now();
    const nodes = fromJsonBytes(i.graph.nodes) as GraphNode[];
    const edges = fromJsonBytes(i.graph.edges) as GraphEdge[];
    const stored = i.stored === undefined ? undefined : JSON.parse(i.stored) as Record<string, Box>;
    const made = !stored && POSITIONED[i.format] ? await layoutGraph(nodes, edges) : undefined;
    const routes = made ? routeEdges(nodes, edges, made) : JSON.parse(i.storedRoutes ?? '{}') as Record<string, Array<{ x: number; y: number }>>;
    const { positions } = overlayPins(stored ?? made ?? {}, i.pins, new Set(nodes.map((n) => n.id)));
    const text: Uint8Array = Buffer.from(EXPORTERS[i.format]({ nodes, edges, positions, routes, title: i.title }));
    return { text, made: made && { positions: made, routes, durationMs: performance.now() - started } };
  },
};

export type TaskName = keyof typeof TASKS;
export type TaskInput<K extends TaskName> = Parameters<(typeof TASKS)[K]>[0];
export type TaskOutput<K extends TaskName> = Awaited<ReturnType<(typeof TASKS)[K]>>;

/** A task's answer with the CPU time this thread spent on it (charged to the organization's heavy-read budget). */
export interface Metered<T> { out: T; cpuMs: number }

/**
 * This thread's CPU usage (since `start`). Node.js before 22.17 has no process.threadCpuUsage (the
 * machine's Node.js is 20): there the process's usage stands in, which also counts other threads.
 */
export const threadCpuUsage = (start?: NodeJS.CpuUsage): NodeJS.CpuUsage =>
  (typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage(start) : process.cpuUsage(start));

/** This thread's CPU time (ms) since `start`: unlike wall time, no wait for a core or for another task counts. */
export const threadCpuMsSince = (start: NodeJS.CpuUsage) => {
  const d = threadCpuUsage(start);
  return (d.user + d.system) / 1000;
};

/**
 * A thread's error as the event loop rethrows it: an Error crossing threads keeps only its message
 * and stack, and PostgreSQL's code (a standby's recovery conflict, a lost connection) must reach
 * the pipeline, which runs such a read again on the primary (core/readReplica.ts).
 */
export interface ThreadFailure { failed: { message: string; stack?: string; code?: string } }

/** The threads' entry (piscina calls the default export with each task; a thread runs one at a time). */
export default async function run<K extends TaskName>(message: { task: K; input: TaskInput<K> }): Promise<Metered<TaskOutput<K>> | ThreadFailure> {
  const start = threadCpuUsage();
  try {
    const out = await (TASKS[message.task] as (input: TaskInput<K>) => TaskOutput<K> | Promise<TaskOutput<K>>)(message.input);
    return { out, cpuMs: threadCpuMsSince(start) };
  } catch (err) {
    const e = err as { message?: string; stack?: string; code?: unknown };
    return { failed: { message: String(e?.message ?? err), stack: e?.stack, code: typeof e?.code === 'string' ? e.code : undefined } };
  }
}
