// The map's state and the pure functions over it (no DOM, no I/O): which hosts the map shows and
// the search over them, what exists at an instant of a timeline, how a diff marks elements. The
// renderer (mapRenderer.ts) draws what these return; the screen (screens/map.ts) owns the state.

import type { Box, GraphEdge, GraphNode, Interval, TopologyDiff } from './apiTypes.js';
import { cardLines, counted } from '../../src/modules/topology/card.js';
import { containerTitle, containerTitles } from '../../src/modules/topology/names.js';
export { cardLines, containerTitle };
export type { Box, GraphEdge, GraphNode, Interval, ItemChange, Layout, Topology, TopologyDiff } from './apiTypes.js';

export interface HostEntry { hostId: string; name: string; hostname?: string; ips: string[]; nodeIds: string[] }

/** The hosts drawn on the map, by name, with the nodes that stand for each (an address, a container, a service…). */
export function hostsOnMap(nodes: GraphNode[]): HostEntry[] {
  const hosts = new Map<string, HostEntry>();
  const entry = (hostId: string, name: string) => {
    let e = hosts.get(hostId);
    if (!e) hosts.set(hostId, (e = { hostId, name, ips: [], nodeIds: [] }));
    return e;
  };
  const hostNodes = new Map(nodes.filter((n) => n.kind === 'host').map((n) => [n.id, n]));
  for (const n of nodes) {
    if (n.kind === 'host' && n.entity_id) {
      const e = entry(n.entity_id, n.label);
      e.hostname ??= n.hostname ?? undefined;
      e.nodeIds.unshift(n.id);
    } else if (n.kind === 'summary') {
      // Folded into one node, still listed and searchable one by one.
      for (const x of n.hosts ?? []) {
        const e = entry(x.id, x.name);
        e.hostname ??= x.hostname ?? undefined;
        e.ips.push(x.ip_address);
        e.nodeIds.push(n.id);
      }
    } else if (n.host_id) {
      const e = entry(n.host_id, n.host_name ?? hostNodes.get(`host:${n.host_id}`)?.label ?? n.label);
      if (n.ip_address) e.ips.push(n.ip_address);
      e.nodeIds.push(n.id);
    } else if (n.parent_id && hostNodes.has(n.parent_id)) {
      const host = hostNodes.get(n.parent_id)!;
      entry(host.entity_id!, host.label).nodeIds.push(n.id);
    }
  }
  return [...hosts.values()].sort((a, b) => a.name.localeCompare(b.name) || a.hostId.localeCompare(b.hostId));
}

/** Hosts whose name, hostname or an address contains the query (case-insensitive). */
export function matchHosts(hosts: HostEntry[], query: string): HostEntry[] {
  const q = query.trim().toLowerCase();
  if (!q) return hosts;
  return hosts.filter((h) => h.name.toLowerCase().includes(q) || (h.hostname ?? '').toLowerCase().includes(q) || h.ips.some((ip) => ip.includes(q)));
}

/** The ids of the items (of a timeline) that existed at `instant`. */
export function presentAt(items: Array<{ id: string; intervals?: Interval[] }>, instant: string): Set<string> {
  const t = Date.parse(instant);
  const present = new Set<string>();
  for (const item of items) {
    if (!item.intervals || item.intervals.some((i) => Date.parse(i.from) <= t && (i.to === null || t < Date.parse(i.to)))) present.add(item.id);
  }
  return present;
}

export type Mark = 'added' | 'removed' | 'changed';

/** How a diff marks each node and edge id. */
export function diffMarks(diff: TopologyDiff): Map<string, Mark> {
  const marks = new Map<string, Mark>();
  for (const part of [diff.nodes, diff.edges]) {
    for (const x of part.added) marks.set(x.id, 'added');
    for (const x of part.removed) marks.set(x.id, 'removed');
    for (const x of part.changed) marks.set(x.id, 'changed');
  }
  return marks;
}

/**
 * The diff as lines a person reads: what happened to which element, fields with before → after.
 * Tags by name (`tagName`: the organization's tags): a tag node's recolour or rename, and each tag
 * id added to or removed from an element's `tags` as its own line.
 */
export function changeLines(diff: TopologyDiff, labelOf: (id: string) => string | undefined, tagName: (id: string) => string | undefined = () => undefined): Array<{ id: string; mark: Mark; text: string }> {
  const show = (v: unknown) => (Array.isArray(v) ? v.map((x) => (x && typeof x === 'object' && 'name' in x ? (x as { name: string }).name : String(x))).join(', ') || '(none)' : v === null || v === undefined ? '(none)' : String(v));
  const named = (n: { kind: string; label: string }) => (n.kind === 'tag' ? `tag ${n.label}` : n.label);
  const ids = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const lines: Array<{ id: string; mark: Mark; text: string }> = [];
  for (const n of diff.nodes.added) lines.push({ id: n.id, mark: 'added', text: `${named(n)} added` });
  for (const n of diff.nodes.removed) lines.push({ id: n.id, mark: 'removed', text: `${named(n)} removed` });
  for (const c of diff.nodes.changed) {
    const label = labelOf(c.id) ?? c.id;
    const { label: renamed, color, tags, ...rest } = c.changes;
    if (c.kind === 'tag') {
      const before = renamed ? String(renamed[0]) : label;
      if (renamed) lines.push({ id: c.id, mark: 'changed', text: `tag ${before} renamed to ${String(renamed[1])}` });
      if (color) lines.push({ id: c.id, mark: 'changed', text: `tag ${renamed ? String(renamed[1]) : label} recoloured ${show(color[0])} → ${show(color[1])}` });
    } else if (color) rest.color = color;
    if (tags) {
      const [was, now] = [ids(tags[0]), ids(tags[1])];
      for (const t of now.filter((x) => !was.includes(x))) lines.push({ id: c.id, mark: 'changed', text: `tag ${tagName(t) ?? t} added to ${label}` });
      for (const t of was.filter((x) => !now.includes(x))) lines.push({ id: c.id, mark: 'changed', text: `tag ${tagName(t) ?? t} removed from ${label}` });
    }
    const fields = Object.entries(rest).map(([f, [a, b]]) => `${f}: ${show(a)} → ${show(b)}`);
    if (fields.length || (renamed && c.kind !== 'tag') || !Object.keys(c.changes).length) lines.push({ id: c.id, mark: 'changed', text: `${label} changed (${fields.join('; ') || 'label'})` });
  }
  for (const e of diff.edges.added) if (e.kind !== 'same_host') lines.push({ id: e.id, mark: 'added', text: `${e.label ?? e.kind} link added` });
  for (const e of diff.edges.removed) if (e.kind !== 'same_host') lines.push({ id: e.id, mark: 'removed', text: `${e.label ?? e.kind} link removed` });
  for (const c of diff.edges.changed) lines.push({ id: c.id, mark: 'changed', text: `link ${labelOf(c.id) ?? c.kind} changed (${Object.entries(c.changes).map(([f, [a, b]]) => `${f}: ${show(a)} → ${show(b)}`).join('; ')})` });
  return lines;
}

/**
 * Around a selected host, each of its dependencies is named once: on one of its edges that ends at
 * the host, at that end (`end`), so the name sits by the host rather than over the far nodes.
 */
export function dependencyNamesAt(edges: GraphEdge[], hostNodeIds: string[]): Array<{ edgeId: string; end: 'source' | 'target' }> {
  const ids = new Set(hostNodeIds);
  const named = new Map<string, { edgeId: string; end: 'source' | 'target' }>();
  for (const e of edges) {
    if (!e.dependency_id || named.has(e.dependency_id)) continue;
    if (ids.has(e.source)) named.set(e.dependency_id, { edgeId: e.id, end: 'source' });
    else if (ids.has(e.target)) named.set(e.dependency_id, { edgeId: e.id, end: 'target' });
  }
  return [...named.values()];
}

/** The API's colour names (tags, dependencies) as CSS colours. */
export const COLORS: Record<string, string> = {
  Pink: '#ec4899', Rose: '#f43f5e', Red: '#ef4444', Amber: '#f59e0b', Orange: '#f97316', Green: '#22c55e', Emerald: '#10b981',
  Teal: '#14b8a6', Cyan: '#06b6d4', Blue: '#3b82f6', Indigo: '#6366f1', Purple: '#a855f7', Fuchsia: '#d946ef', Violet: '#8b5cf6',
  Sky: '#0ea5e9', Gray: '#6b7280', Lime: '#84cc16', Yellow: '#eab308',
};

/** A dependency's `edge_style` as the renderer's curve (Scanopy's Step and SimpleBezier are aliases). */
export function curveOf(edgeStyle: string | undefined): 'straight' | 'bezier' | 'taxi' {
  if (edgeStyle === 'Straight') return 'straight';
  if (edgeStyle === 'Bezier' || edgeStyle === 'SimpleBezier') return 'bezier';
  return 'taxi'; // SmoothStep, Step: right angles
}

/**
 * What an element's label says at each level of detail: its name alone (the overview), then its
 * address, then everything (services with their ports). A service of the application view names
 * its host too: six "nginx" say nothing.
 */
export function labelsOf(n: GraphNode): { name: string; mid: string; full: string } {
  if (n.kind === 'collapsed') {
    const counts = Object.entries(n.counts ?? {}).map(([k, v]) => `${v} ${k.replace('_', ' ')}${v === 1 ? '' : k.endsWith('s') ? 'es' : 's'}`);
    return { name: n.label, mid: n.label, full: `${n.label}\n(${counts.join(', ')}: double-click to open)` };
  }
  if (n.kind === 'service' && n.host_name) {
    const name = `${n.label} · ${n.host_name}`;
    return { name, mid: name, full: name };
  }
  const host = n.host_name ?? n.label;
  const name = n.kind !== 'ip_address' ? n.label : n.workload ? `${n.workload} · ${host}` : host;
  // (A host named by its address says it once.)
  const mid = n.ip_address && n.ip_address !== name ? `${name}\n${n.ip_address}` : name;
  const services = (n.services ?? []).map((s) => `${s.name}${s.ports?.length ? ` :${s.ports.map((p) => p.number).join(',')}` : ''}${s.offline ? ' (offline)' : ''}`);
  return { name, mid, full: [mid, ...services].join('\n') };
}

/**
 * An element's label as an export writes it: whole (labelsOf's `full`: name, address, services),
 * whatever the zoom the map is drawn at; a summary card's or a collapsed container's lines.
 */
export function exportLabelOf(n: GraphNode): string {
  return cardLines(n)?.join('\n') ?? labelsOf(n).full;
}

/**
 * What an element's label may say at a level of detail, most first (the map draws the
 * first that fits its box whole, else none: never "traefik · do…"): at 3 everything, then name and
 * address, then the name; at 2 from name and address; below, the name. A card's lines: all of
 * them, then fewer (its count first).
 */
export function labelVariants(n: GraphNode, level: number): string[] {
  const card = cardLines(n);
  if (card) return card.map((_, i) => card.slice(0, card.length - i).join('\n'));
  const { name, mid, full } = labelsOf(n);
  const all = level >= 3 ? [full, mid, name] : level === 2 ? [mid, name] : [name];
  return [...new Set(all)].filter(Boolean);
}

/**
 * What a container drawn as a card says under its title (at Fit a group whose elements
 * cannot be named on screen is one card): how many, of which kinds, how many offline or new.
 */
export function containerCardLines(n: GraphNode, children: GraphNode[]): string[] {
  const status = (offline: number, fresh: number) => [offline ? `${offline} offline` : '', fresh ? `${fresh} new` : ''].filter(Boolean).join(' · ');
  if (children.some((c) => c.kind === 'ip_address' || c.kind === 'summary') || n.kind === 'subnet') {
    // Hosts by kind, counted once (a host with two addresses here is one host).
    const kinds = new Map<string, number>();
    const seen = new Set<string>();
    let offline = 0;
    let fresh = 0;
    for (const c of children) {
      if (c.kind === 'summary') {
        for (const [k, v] of Object.entries((c.host_kinds ?? {}) as Record<string, number>)) kinds.set(k, (kinds.get(k) ?? 0) + v);
        for (const x of c.hosts ?? []) seen.add(x.id);
        offline += Number(c.offline_count ?? 0);
        fresh += Number(c.new_count ?? 0);
        continue;
      }
      const host = String(c.host_id ?? c.id);
      if (seen.has(host)) continue;
      seen.add(host);
      kinds.set(String(c.host_kind ?? 'host'), (kinds.get(String(c.host_kind ?? 'host')) ?? 0) + 1);
      if (c.offline) offline += 1;
      else if (c.new) fresh += 1;
    }
    const byCount = [...kinds].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const named = byCount.slice(0, byCount.length > 3 ? 2 : 3).map(([k, v]) => counted(v, k));
    const rest = byCount.slice(named.length).reduce((a, [, v]) => a + v, 0);
    return [counted(seen.size, 'host'), ...named, rest ? `${rest} more` : '', status(offline, fresh)].filter(Boolean);
  }
  if (children.every((c) => c.kind === 'interface')) {
    const up = children.filter((c) => String(c.oper_status ?? '').toLowerCase() === 'up').length;
    return [counted(children.length, 'interface'), up ? `${up} up` : ''].filter(Boolean);
  }
  const services = children.filter((c) => c.kind === 'service');
  const names = [...new Set(services.map((c) => c.label))];
  const hosts = new Set(services.map((c) => String(c.host_id ?? ''))).size;
  return [
    services.length === children.length ? counted(children.length, 'service') : counted(children.length, 'element'),
    n.kind === 'tag' && hosts > 1 ? `on ${counted(hosts, 'host')}` : '',
    ...names.slice(0, names.length > 3 ? 2 : 3), names.length > 3 ? `${names.length - 2} more` : '',
    status(children.filter((c) => c.offline).length, children.filter((c) => c.new).length),
  ].filter(Boolean);
}

/**
 * l2: a switch and the hosts hanging off its ports drawn as one card (where the hosts cannot be
 * named): the hosts by kind, offline and new (as a subnet's), then its own ports.
 */
export function groupCardLines(head: GraphNode, hosts: GraphNode[], ports: GraphNode[]): string[] {
  // (Hosts counted as a subnet counts its elements: each its own host.)
  const hostLines = containerCardLines({ ...head, kind: 'subnet' }, hosts.map((h) => ({ ...h, host_id: h.entity_id ?? h.id })));
  return [...hostLines, ...(ports.length ? containerCardLines(head, ports) : [])];
}

/**
 * Boxes too small on screen for even their names (a phone at Fit), gathered into blocks each drawn
 * as one card over them: a box joins the first block whose bounds, grown to hold it, cover no other
 * box (`others`: what stays drawn, the other blocks too); otherwise it starts one. In reading order,
 * so neighbours in a row, then the rows under them, join. Only blocks of two or more are returned.
 */
export function blocksOf(ids: string[], positions: Record<string, Box>, others: Box[]): Array<{ ids: string[]; bounds: Box }> {
  const union = (a: Box, b: Box): Box => {
    const x = Math.min(a.x, b.x), y = Math.min(a.y, b.y);
    return { x, y, width: Math.max(a.x + a.width, b.x + b.width) - x, height: Math.max(a.y + a.height, b.y + b.height) - y };
  };
  const meets = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  const blocks: Array<{ ids: string[]; bounds: Box }> = [];
  const sorted = ids.filter((id) => positions[id]).sort((a, b) => positions[a]!.y - positions[b]!.y || positions[a]!.x - positions[b]!.x);
  for (const id of sorted) {
    const box = positions[id]!;
    const block = blocks.find((b) => {
      const grown = union(b.bounds, box);
      return !others.some((o) => meets(grown, o)) && !blocks.some((x) => x !== b && meets(grown, x.bounds));
    });
    if (block) {
      block.ids.push(id);
      block.bounds = union(block.bounds, box);
    } else blocks.push({ ids: [id], bounds: { ...box } });
  }
  return blocks.filter((b) => b.ids.length > 1);
}

/** What a block of boxes drawn as one card says: hosts by kind (as a subnet's card), else how many of each kind of container. */
export function blockCardLines(members: GraphNode[]): string[] {
  if (members.every((m) => m.kind === 'host')) return containerCardLines({ id: 'block', kind: 'subnet' } as GraphNode, members.map((m) => ({ ...m, host_id: m.entity_id ?? m.id })));
  const kinds = new Map<string, number>();
  for (const m of members) kinds.set(m.kind, (kinds.get(m.kind) ?? 0) + 1);
  return [...kinds].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k, v]) => counted(v, k));
}

/** A switch with at least this many hosts hanging off it may be drawn with them as one card. */
export const GROUP_MIN = 4;

/**
 * l2: the hosts hanging off a switch, by the switch's id: containers (a host holding its ports)
 * whose physical links all go to one other container, itself linked to more than one; only
 * switches with at least GROUP_MIN of them (the map draws such a switch with them as one card
 * where one of them cannot be named).
 */
export function hangingHosts(nodes: GraphNode[], edges: GraphEdge[], containers: Set<string>): Map<string, string[]> {
  const parentOf = new Map(nodes.filter((n) => n.parent_id && containers.has(n.parent_id)).map((n) => [n.id, n.parent_id!]));
  const linked = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.kind !== 'physical_link') continue;
    const [a, b] = [parentOf.get(e.source), parentOf.get(e.target)];
    if (!a || !b || a === b) continue;
    (linked.get(a) ?? linked.set(a, new Set()).get(a)!).add(b);
    (linked.get(b) ?? linked.set(b, new Set()).get(b)!).add(a);
  }
  const groups = new Map<string, string[]>();
  for (const [host, others] of linked) {
    const head = others.size === 1 ? [...others][0]! : undefined;
    if (head && linked.get(head)!.size > 1) (groups.get(head) ?? groups.set(head, []).get(head)!).push(host);
  }
  for (const [head, hosts] of groups) if (hosts.length < GROUP_MIN) groups.delete(head);
  return groups;
}

/** A title's bold 12.5 px characters on screen, generously (digits and capitals are the widest), and its padding. */
const TITLE_CHAR_PX = 7.6;
const TITLE_PADDING_PX = 14;

/**
 * The longest title that reads whole in a box `widthPx` wide on screen (the title keeps its size on
 * screen while the box shrinks with the zoom: at Fit "dmz · 10.10.3.0/24 · 5 hosts" was cut to
 * "dmz · 10.10.3.0/2…"); '' when not even the name does (whole or not at all).
 * `iconPx`: room an icon takes; `measure`: a text's width on screen (by default, generously, per character).
 */
export function titleThatFits(n: GraphNode, children: GraphNode[], widthPx: number, iconPx = 0, measure: (text: string) => number = (t) => t.length * TITLE_CHAR_PX): string {
  return containerTitles(n, children).find((t) => measure(t) + TITLE_PADDING_PX + iconPx <= widthPx) ?? '';
}

/** Labels are drawn at a constant size on screen (CSS px), whatever the zoom. */
export const LABEL_PX = 12;

/**
 * The level of detail at a zoom: 0 icons only (a name would not fit in its box on screen), 1 names,
 * 2 names and addresses, 3 everything. `zoom` is quantized to steps of 10 % (`step`), so the
 * drawing is restyled only when it crosses one; `font` is the labels' size in the graph's units
 * (LABEL_PX on screen within 5 %, whatever the zoom inside the step), as are `icon` and `edge`.
 */
export function levelOfDetail(zoom: number): { step: number; level: 0 | 1 | 2 | 3; font: number; icon: number; edge: number } {
  const step = Math.round(Math.log(zoom) / Math.log(1.1));
  const z = 1.1 ** step;
  const level = z >= 0.95 ? 3 : z >= 0.7 ? 2 : z >= 0.3 ? 1 : 0;
  return { step, level, font: Math.max(11, LABEL_PX / z), icon: Math.min(30, Math.max(16, 14 / z)), edge: Math.max(1.5, 1.2 / z) };
}
