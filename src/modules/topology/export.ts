// Exports of a laid-out view: standalone SVG, GraphML with positions (yEd, Gephi),
// draw.io XML (containers as groups) and a Mermaid flowchart with subgraphs. Pure text builders.
import type { GraphEdge, GraphNode } from './graph.js';
import type { Box } from './layout.js';
import { followsEnds, type Point } from './edgeRoutes.js';
import { containerTitle } from './names.js';

export const EXPORT_FORMATS = {
  svg: { type: 'image/svg+xml', extension: 'svg' },
  graphml: { type: 'application/graphml+xml', extension: 'graphml' },
  drawio: { type: 'application/vnd.jgraph.mxfile', extension: 'drawio' },
  mermaid: { type: 'text/vnd.mermaid; charset=utf-8', extension: 'mmd' },
} as const;
export type ExportFormat = keyof typeof EXPORT_FORMATS;

/** The palette of the API's colour names (Tailwind 500 shades, as Scanopy's UI draws them). */
const HEX: Record<string, string> = {
  Pink: '#ec4899', Rose: '#f43f5e', Red: '#ef4444', Amber: '#f59e0b', Orange: '#f97316', Green: '#22c55e', Emerald: '#10b981',
  Teal: '#14b8a6', Cyan: '#06b6d4', Blue: '#3b82f6', Indigo: '#6366f1', Purple: '#a855f7', Fuchsia: '#d946ef', Violet: '#8b5cf6',
  Sky: '#0ea5e9', Gray: '#6b7280', Lime: '#84cc16', Yellow: '#eab308',
};
const colorOf = (e: GraphEdge) => (typeof e.color === 'string' && HEX[e.color]) || '#94a3b8';

const xml = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

/**
 * `routes`: the layout's bend points per edge (edgeRoutes.ts, absolute), which the SVG and draw.io
 * files follow as the map does: an edge would otherwise be drawn straight (or in draw.io's own
 * steps) through the boxes the layout routed it around.
 */
interface Drawing { nodes: GraphNode[]; edges: GraphEdge[]; positions: Record<string, Box>; title: string; routes?: Record<string, Point[]> }

/** An edge's bends, when the layout routed it (not straight) for where its ends are drawn (a node pinned elsewhere since: none). */
function bendsOf(d: Drawing, e: GraphEdge): Point[] | undefined {
  const route = d.routes?.[e.id];
  const [a, b] = [d.positions[e.source], d.positions[e.target]];
  return route?.length && a && b && followsEnds(a, b, route) ? route : undefined;
}

/** Where the segment from a box's centre towards `p` leaves the box. */
function borderToward(b: Box, p: Point): Point {
  const c = { x: b.x + b.width / 2, y: b.y + b.height / 2 };
  const [dx, dy] = [p.x - c.x, p.y - c.y];
  const t = Math.min(dx ? b.width / 2 / Math.abs(dx) : Infinity, dy ? b.height / 2 / Math.abs(dy) : Infinity, 1);
  return { x: c.x + dx * t, y: c.y + dy * t };
}

const round = (v: number) => Math.round(v * 100) / 100;

const containers = (nodes: GraphNode[]) => new Set(nodes.filter((n) => n.parent_id).map((n) => n.parent_id!));

/** A node's text lines: its label, then the services listed on it. */
function lines(n: GraphNode): string[] {
  const services = Array.isArray(n.services) ? (n.services as Array<{ name: string }>).map((s) => `· ${s.name}`) : [];
  return [n.label, ...services];
}

function svgPath(e: GraphEdge, a: Box, b: Box): string {
  // Leave from the side facing the target, arrive on the side facing the source.
  const forward = a.x + a.width / 2 <= b.x + b.width / 2;
  const [x1, y1] = [forward ? a.x + a.width : a.x, a.y + a.height / 2];
  const [x2, y2] = [forward ? b.x : b.x + b.width, b.y + b.height / 2];
  const sign = forward ? 1 : -1;
  if (e.edge_style === 'Straight') return `M${x1},${y1} L${x2},${y2}`;
  if (e.edge_style === 'Bezier') {
    const dx = sign * Math.max(40, Math.abs(x2 - x1) / 2);
    return `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`;
  }
  const mx = (x1 + x2) / 2; // SmoothStep and the structural edges: orthogonal steps
  return `M${x1},${y1} L${mx},${y1} L${mx},${y2} L${x2},${y2}`;
}

export function toSvg(d: Drawing): string {
  const boxes = Object.values(d.positions);
  // The drawing's extent, with a margin for curves that swing outside the boxes.
  const margin = 48;
  const minX = Math.floor(Math.min(0, ...boxes.map((b) => b.x)) - margin);
  const minY = Math.floor(Math.min(0, ...boxes.map((b) => b.y)) - margin);
  const width = Math.ceil(Math.max(100, ...boxes.map((b) => b.x + b.width)) + margin - minX);
  const height = Math.ceil(Math.max(60, ...boxes.map((b) => b.y + b.height)) + margin - minY);
  const isContainer = containers(d.nodes);
  const parts: string[] = [];
  const childrenOf = new Map<string, GraphNode[]>();
  for (const n of d.nodes) if (n.parent_id) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n);
  // Containers first (below), then edges, then elements.
  for (const n of d.nodes.filter((x) => isContainer.has(x.id))) {
    const b = d.positions[n.id];
    if (!b) continue;
    parts.push(`<g class="container" data-id="${xml(n.id)}"><rect x="${b.x}" y="${b.y}" width="${b.width}" height="${b.height}" rx="8" fill="#f1f5f9" stroke="#94a3b8"/>`
      + `<text x="${b.x + 10}" y="${b.y + 20}" font-weight="bold">${xml(containerTitle(n, childrenOf.get(n.id) ?? []))}</text></g>`);
  }
  for (const e of d.edges) {
    const a = d.positions[e.source];
    const b = d.positions[e.target];
    if (!a || !b) continue;
    const dash = e.kind === 'same_host' || e.kind === 'hypervisor' || e.kind === 'container_runtime' ? ' stroke-dasharray="4 3"' : '';
    const bends = bendsOf(d, e);
    if (bends) {
      // Routed: from the source's border through the bends to the target's, as the map draws it.
      const points = [borderToward(a, bends[0]!), ...bends, borderToward(b, bends[bends.length - 1]!)].map((p) => `${round(p.x)},${round(p.y)}`).join(' ');
      parts.push(`<polyline class="edge ${xml(e.kind)}" data-id="${xml(e.id)}" points="${points}" fill="none" stroke="${colorOf(e)}" stroke-width="2"${dash}${undirected(e) ? '' : ' marker-end="url(#arrow)"'}><title>${xml(e.label ?? e.kind)}</title></polyline>`);
      continue;
    }
    parts.push(`<path class="edge ${xml(e.kind)}" data-id="${xml(e.id)}" d="${svgPath(e, a, b)}" fill="none" stroke="${colorOf(e)}" stroke-width="2"${dash}${undirected(e) ? '' : ' marker-end="url(#arrow)"'}><title>${xml(e.label ?? e.kind)}</title></path>`);
  }
  for (const n of d.nodes.filter((x) => !isContainer.has(x.id))) {
    const b = d.positions[n.id];
    if (!b) continue;
    const text = lines(n).map((l, i) => `<tspan x="${b.x + 8}" y="${b.y + 22 + 16 * i}">${xml(l)}</tspan>`).join('');
    parts.push(`<g class="node ${xml(n.kind)}" data-id="${xml(n.id)}"><rect x="${b.x}" y="${b.y}" width="${b.width}" height="${b.height}" rx="6" fill="#ffffff" stroke="#334155"/><text>${text}</text></g>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${minX} ${minY} ${width} ${height}" font-family="sans-serif" font-size="12">
<title>${xml(d.title)}</title>
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker></defs>
<rect x="${minX}" y="${minY}" width="${width}" height="${height}" fill="#ffffff"/>
${parts.join('\n')}
</svg>
`;
}

/** Edges with no direction (a cable, two addresses of one host): drawn without arrowheads. */
const undirected = (e: GraphEdge) => e.kind === 'physical_link' || e.kind === 'same_host';

export function toGraphml(d: Drawing): string {
  const byParent = new Map<string | null, GraphNode[]>();
  for (const n of d.nodes) (byParent.get(n.parent_id) ?? byParent.set(n.parent_id, []).get(n.parent_id)!).push(n); // a copy per node was quadratic
  const node = (n: GraphNode): string => {
    const b = d.positions[n.id];
    const data = `<data key="label">${xml(n.label)}</data><data key="kind">${xml(n.kind)}</data>`
      + (b ? `<data key="x">${b.x}</data><data key="y">${b.y}</data><data key="width">${b.width}</data><data key="height">${b.height}</data>` : '');
    const kids = byParent.get(n.id);
    return `<node id="${xml(n.id)}">${data}${kids ? `<graph id="${xml(n.id)}:" edgedefault="directed">${kids.map(node).join('')}</graph>` : ''}</node>`;
  };
  const edges = d.edges.map((e) => `<edge id="${xml(e.id)}" source="${xml(e.source)}" target="${xml(e.target)}"${undirected(e) ? ' directed="false"' : ''}><data key="kind">${xml(e.kind)}</data><data key="color">${colorOf(e)}</data></edge>`);
  const keys = [['label', 'node', 'string'], ['kind', 'all', 'string'], ['x', 'node', 'double'], ['y', 'node', 'double'], ['width', 'node', 'double'], ['height', 'node', 'double'], ['color', 'edge', 'string']]
    .map(([id, on, type]) => `<key id="${id}" for="${on}" attr.name="${id}" attr.type="${type}"/>`);
  return `<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">
${keys.join('\n')}
<graph id="${xml(d.title)}" edgedefault="directed">
${(byParent.get(null) ?? []).map(node).join('\n')}
${edges.join('\n')}
</graph>
</graphml>
`;
}

export function toDrawio(d: Drawing): string {
  const isContainer = containers(d.nodes);
  const cells: string[] = ['<mxCell id="0"/>', '<mxCell id="1" parent="0"/>'];
  for (const n of d.nodes) {
    const b = d.positions[n.id] ?? { x: 0, y: 0, width: 120, height: 40 };
    const parent = n.parent_id ? d.positions[n.parent_id] : undefined;
    // Children are placed relative to their group.
    const [x, y] = parent ? [b.x - parent.x, b.y - parent.y] : [b.x, b.y];
    const style = isContainer.has(n.id) ? 'swimlane;rounded=1;fillColor=#f1f5f9;strokeColor=#94a3b8;container=1;' : 'rounded=1;whiteSpace=wrap;html=0;fillColor=#ffffff;strokeColor=#334155;';
    cells.push(`<mxCell id="${xml(n.id)}" value="${xml(lines(n).join('\n'))}" style="${style}" vertex="1" parent="${xml(n.parent_id ?? '1')}"><mxGeometry x="${x}" y="${y}" width="${b.width}" height="${b.height}" as="geometry"/></mxCell>`);
  }
  for (const e of d.edges) {
    // Routed: a polyline through the layout's bends as waypoints (edges are cells of the root, so
    // absolute), not draw.io's own path, which would cross the boxes.
    const bends = bendsOf(d, e);
    const curve = bends ? 'edgeStyle=none;' : e.edge_style === 'Bezier' ? 'curved=1;' : e.edge_style === 'Straight' ? '' : 'edgeStyle=orthogonalEdgeStyle;';
    const geometry = bends
      ? `<mxGeometry relative="1" as="geometry"><Array as="points">${bends.map((p) => `<mxPoint x="${round(p.x)}" y="${round(p.y)}"/>`).join('')}</Array></mxGeometry>`
      : '<mxGeometry relative="1" as="geometry"/>';
    cells.push(`<mxCell id="${xml(e.id)}" value="${xml(e.label ?? '')}" style="${curve}strokeColor=${colorOf(e)};endArrow=${undirected(e) ? 'none' : 'classic'};" edge="1" parent="1" source="${xml(e.source)}" target="${xml(e.target)}">${geometry}</mxCell>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?>
<mxfile host="netinventory"><diagram name="${xml(d.title)}"><mxGraphModel><root>
${cells.join('\n')}
</root></mxGraphModel></diagram></mxfile>
`;
}

/**
 * Names (which daemons report) as inert Mermaid label text, for inside quotes: a line break would
 * start a statement (`click n0 call …`), `%%` a comment or `%%{init}%%` directive, `<` HTML and a
 * leading backtick Markdown, `|` may end an edge's label; `#` and `&` too, so a name's own `#…;` or
 * `&…;` shows as typed. Mermaid decodes its entity codes (#quot;, #35;) when it renders the label.
 */
const MERMAID_CODES: Record<string, string> = { '"': '#quot;', '<': '#lt;', '>': '#gt;', '&': '#amp;', '#': '#35;', '%': '#37;', '`': '#96;', '|': '#124;' };
export const mermaidText = (s: unknown) => String(s ?? '')
  .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
  .replace(/["<>&#%`|]/g, (c) => MERMAID_CODES[c]!);

export function toMermaid(d: Drawing): string {
  const ids = new Map<string, string>();
  const short = (id: string) => {
    if (!ids.has(id)) ids.set(id, `n${ids.size}`);
    return ids.get(id)!;
  };
  const text = (label: string | string[]) => `"${[label].flat().map(mermaidText).join('<br/>')}"`;
  const isContainer = containers(d.nodes);
  const out = ['flowchart LR'];
  const childrenOf = new Map<string, GraphNode[]>(); // grouped once: a scan of every node per container was quadratic
  for (const n of d.nodes) if (n.parent_id) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n);
  for (const c of d.nodes.filter((n) => isContainer.has(n.id))) {
    out.push(`  subgraph ${short(c.id)}[${text(c.label)}]`);
    for (const n of childrenOf.get(c.id) ?? []) out.push(`    ${short(n.id)}[${text(lines(n))}]`);
    out.push('  end');
  }
  for (const n of d.nodes.filter((x) => !x.parent_id && !isContainer.has(x.id))) out.push(`  ${short(n.id)}[${text(lines(n))}]`);
  d.edges.forEach((e) => {
    const arrow = e.kind === 'same_host' || e.kind === 'hypervisor' || e.kind === 'container_runtime' ? '-.->' : '-->';
    out.push(`  ${short(e.source)} ${arrow}${e.label ? `|${text(String(e.label))}|` : ''} ${short(e.target)}`);
  });
  d.edges.forEach((e, i) => {
    if (typeof e.color === 'string' && HEX[e.color]) out.push(`  linkStyle ${i} stroke:${HEX[e.color]}`);
  });
  return `${out.join('\n')}\n`;
}

export const EXPORTERS: Record<ExportFormat, (d: Drawing) => string> = { svg: toSvg, graphml: toGraphml, drawio: toDrawio, mermaid: toMermaid };
