// The map's legend: what each kind of edge means, drawn as the renderer draws it (colour, dash,
// ends), each dependency with its colour and name, and the host kinds' icons; only what the view
// shows. Built from the graph, so it is never out of step with the drawing; legendModel is what it
// says, which the SVG and PNG exports draw too.
import { h } from './dom.js';
import './legend.css';
import { HOST_KINDS, kindIcon } from './icons.js';
import { COLORS, type Topology } from './mapState.js';
import type { LegendModel } from './exportSvg.js';

export type { LegendModel };

const EDGE_KINDS: Record<string, { name: string; color: string; dash?: string; width: number; ends?: 'arrow' | 'hub' }> = {
  same_host: { name: 'Addresses of one host', color: '#cbd5e1', dash: '5 3', width: 1.5 },
  physical_link: { name: 'Physical link (LLDP/CDP)', color: '#0f172a', width: 3 },
  'physical_link.forwarding_table': { name: 'On this port (switch forwarding table)', color: '#475569', dash: '6 3', width: 2 },
  hypervisor: { name: 'VM on its hypervisor', color: '#a855f7', dash: '1.5 3', width: 2 },
  container_runtime: { name: 'Container on its runtime', color: '#0ea5e9', dash: '1.5 3', width: 2 },
  request_path: { name: 'Dependency: request path', color: '#475569', width: 2.5, ends: 'arrow' },
  hub_and_spoke: { name: 'Dependency: hub (dot) and spokes', color: '#475569', width: 2.5, ends: 'hub' },
};

/** A short line as the map draws an edge. */
function sample(color: string, width: number, dash?: string, ends?: 'arrow' | 'hub') {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 36 10');
  svg.setAttribute('width', '36');
  svg.setAttribute('height', '10');
  svg.setAttribute('aria-hidden', 'true');
  const line = document.createElementNS(ns, 'line');
  Object.entries({ x1: ends === 'hub' ? 5 : 1, y1: 5, x2: ends ? 29 : 35, y2: 5, stroke: color, 'stroke-width': width, ...(dash ? { 'stroke-dasharray': dash } : {}) })
    .forEach(([k, v]) => line.setAttribute(k, String(v)));
  svg.appendChild(line);
  if (ends) {
    const head = document.createElementNS(ns, 'path');
    head.setAttribute('d', 'M28 1 L35 5 L28 9 Z');
    head.setAttribute('fill', color);
    svg.appendChild(head);
  }
  if (ends === 'hub') {
    const dot = document.createElementNS(ns, 'circle');
    Object.entries({ cx: 4, cy: 5, r: 3.5, fill: color }).forEach(([k, v]) => dot.setAttribute(k, String(v)));
    svg.appendChild(dot);
  }
  return svg;
}

/** The legend of a graph: only what it shows (the map's box and the SVG and PNG exports draw it). */
export function legendModel(g: Pick<Topology, 'nodes' | 'edges'>): LegendModel {
  // An edge's evidence makes a kind of its own (drawn apart: physical_link.forwarding_table).
  const kinds = new Set(g.edges.map((e) => (e.evidence ? `${e.kind}.${e.evidence}` : e.kind)));
  const dependencies = new Map<string, { name: string; color: string; kind: string }>();
  for (const e of g.edges) {
    if (e.dependency_id && !dependencies.has(e.dependency_id)) dependencies.set(e.dependency_id, { name: e.label ?? 'dependency', color: COLORS[e.color ?? ''] ?? '#3b82f6', kind: e.kind });
  }
  const hostKinds = new Set(g.nodes.map((n) => n.host_kind).filter((k): k is string => !!k && k in HOST_KINDS));
  return {
    edges: Object.entries(EDGE_KINDS).filter(([k]) => kinds.has(k)).map(([key, s]) => ({ key, ...s })),
    dependencies: [...dependencies].sort((a, b) => a[1].name.localeCompare(b[1].name))
      .map(([id, d]) => ({ key: `dependency:${id}`, name: d.name, color: d.color, ends: d.kind === 'hub_and_spoke' ? 'hub' as const : 'arrow' as const })),
    kinds: Object.entries(HOST_KINDS).filter(([k]) => hostKinds.has(k)).map(([k, s]) => ({ key: `kind:${k}`, name: s.name, icon: kindIcon(k)! })),
  };
}

export function legendOf(g: Topology): HTMLElement {
  const m = legendModel(g);
  const item = (key: string, ...children: Array<Node | string>) => h('li', { 'data-legend': key }, ...children);
  return h('div', { class: 'legend-body' },
    m.edges.length ? h('ul', { 'aria-label': 'Edges' }, m.edges.map((s) => item(s.key, sample(s.color, s.width, s.dash, s.ends), ` ${s.name}`))) : null,
    m.dependencies.length ? h('ul', { 'aria-label': 'Dependencies', class: 'dependencies' },
      m.dependencies.map((d) => item(d.key, sample(d.color, 3, undefined, d.ends), ` ${d.name}`))) : null,
    m.kinds.length ? h('ul', { 'aria-label': 'Host kinds', class: 'kinds' },
      m.kinds.map((k) => item(k.key, h('img', { src: k.icon, alt: '', width: 16, height: 16 }), ` ${k.name}`))) : null,
    !m.edges.length && !m.kinds.length ? h('p', { class: 'muted' }, 'Nothing to explain in this view.') : null);
}
