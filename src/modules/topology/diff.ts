// Differences between two drawings of one view and the union of a view over an
// interval (11.3): pure functions over graphs drawn from history by service.ts.
import type { Graph, GraphEdge, GraphNode, Interval } from './graph.js';

type Item = GraphNode | GraphEdge;

export interface ItemChange {
  id: string;
  kind: string;
  changes: Record<string, [unknown, unknown]>;
}

export interface ItemDiff<T> {
  added: T[];
  removed: T[];
  changed: ItemChange[];
}

/**
 * Equal plain data (node fields are JSON values): walked, stopping at the first difference. Two
 * JSON.stringify calls per field cost 4× more on a diff where every address changed (bench).
 */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  // A field set to undefined is absent, as in JSON.
  for (const k of Object.keys(x)) if (!same(x[k], y[k])) return false;
  for (const k of Object.keys(y)) if (!(k in x) && y[k] !== undefined) return false;
  return true;
}

function diffItems<T extends Item>(before: T[], after: T[]): ItemDiff<T> {
  const old = new Map(before.map((x) => [x.id, x]));
  const now = new Map(after.map((x) => [x.id, x]));
  const out: ItemDiff<T> = { added: [], removed: [], changed: [] };
  for (const [id, item] of now) {
    const prev = old.get(id);
    if (!prev) {
      out.added.push(item);
      continue;
    }
    const changes: Record<string, [unknown, unknown]> = {};
    for (const field of new Set([...Object.keys(prev), ...Object.keys(item)])) {
      if (!same(prev[field], item[field])) changes[field] = [prev[field] ?? null, item[field] ?? null];
    }
    if (Object.keys(changes).length) out.changed.push({ id, kind: item.kind, changes });
  }
  for (const [id, item] of old) if (!now.has(id)) out.removed.push(item);
  return out;
}

export function diffGraphs(before: Pick<Graph, 'nodes' | 'edges'>, after: Pick<Graph, 'nodes' | 'edges'>) {
  return { nodes: diffItems(before.nodes, after.nodes), edges: diffItems(before.edges, after.edges) };
}

/**
 * The union of the drawings at each instant of `ticks` (ascending; the state is constant between
 * two ticks): every node and edge once (as last drawn), with the intervals in which it existed.
 * `end` closes the last interval (null: still there now).
 */
export function unionOverTime(drawings: Array<{ at: string; graph: Pick<Graph, 'nodes' | 'edges'> }>, end: string | null) {
  const nodes = new Map<string, GraphNode & { intervals: Interval[] }>();
  const edges = new Map<string, GraphEdge & { intervals: Interval[] }>();
  const track = <T extends Item>(into: Map<string, T & { intervals: Interval[] }>, items: T[], at: string, next: string | null) => {
    for (const item of items) {
      const known = into.get(item.id);
      const intervals = known?.intervals ?? [];
      const last = intervals[intervals.length - 1];
      if (last && last.to === at) last.to = next; // continues
      else intervals.push({ from: at, to: next });
      into.set(item.id, { ...item, intervals });
    }
  };
  drawings.forEach(({ at, graph }, i) => {
    const next = drawings[i + 1]?.at ?? end;
    track(nodes, graph.nodes, at, next);
    track(edges, graph.edges, at, next);
  });
  return { nodes: [...nodes.values()], edges: [...edges.values()] };
}
