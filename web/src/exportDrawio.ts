// The map as a draw.io (diagrams.net) file: an uncompressed mxfile whose mxGraphModel holds every
// element drawn as an editable mxCell. Each node is a vertex with its whole label (exportLabelOf:
// name, address, services) at the position drawn; a container (subnet, host, tag) is a group
// vertex (container=1) whose elements are its children (parent=, geometry relative to it, so they
// move with it); each edge links its source and target cells, through the bends the map draws it
// with (its route around the boxes: waypoints, <Array as="points">). Pure (no DOM): elements and
// positions in, XML text out; the map screen passes what it draws, test/web/exportDrawio.spec.ts
// reads the text back.
import { COLORS, containerTitle, curveOf, exportLabelOf, type Box, type GraphEdge, type GraphNode } from './mapState.js';

/** How an element is drawn on the map (its colours after marks: a diff's, a tag filter's); unset: the defaults of its kind. */
export interface DrawioLook {
  fill?: string; stroke?: string; strokeWidth?: number; dashed?: boolean; fontColor?: string; bold?: boolean; italic?: boolean;
  /** 0-1. */
  opacity?: number;
}

export interface DrawioInput {
  /** The diagram's name (network, view, instant). */
  title: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** Top-left boxes in the map's coordinates, as drawn (a node without one is left out, with its edges). */
  positions: Record<string, Box>;
  /** Elements not drawn (absent at the history's instant, inside a folded container): left out, with their edges. */
  omit?: ReadonlySet<string>;
  look?: (id: string) => DrawioLook | undefined;
  /** An element's icon as a data: URL (web/src/icons.ts); drawn at the left of its box. */
  icon?: (n: GraphNode) => string | undefined;
  /**
   * Edges' bends as the map draws them (absolute, in the map's coordinates): such an edge is a
   * polyline through them as waypoints, not draw.io's own path (which would cross boxes).
   */
  bends?: Record<string, Array<{ x: number; y: number }>>;
}

const xml = (s: unknown) => String(s ?? '').replace(/[&<>"'\n\r\t]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\n': '&#10;', '\r': '', '\t': ' ' })[c]!);
/** A style value: draw.io's styles are `key=value;` pairs, so neither may hold `;` or `=`. */
const styleValue = (v: string | number) => String(v).replace(/[;=]/g, '');
const style = (pairs: Record<string, string | number | undefined | false>) => Object.entries(pairs)
  .filter(([, v]) => v !== undefined && v !== false && v !== '')
  .map(([k, v]) => `${k}=${styleValue(v as string | number)};`).join('');
const round = (v: number) => Math.round(v * 100) / 100;

/**
 * An icon as draw.io reads an image in a style: `data:image/svg+xml,` and the SVG URL-encoded (no
 * `;charset=…`, whose `;` would end the style value; draw.io takes `%3C…` as it is).
 */
export function drawioImage(dataUrl: string): string | undefined {
  const m = /^data:image\/svg\+xml(?:;[^,]*)?,(.*)$/s.exec(dataUrl);
  if (!m) return undefined;
  let svg: string;
  try { svg = decodeURIComponent(m[1]!); } catch { return undefined; }
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}

/** The defaults of a kind, as the map's stylesheet draws it (mapRenderer.ts, styles.css). */
function nodeDefaults(n: GraphNode, container: boolean): DrawioLook {
  if (container) return n.kind === 'host' ? { fill: '#fefce8', stroke: '#ca8a04' } : { fill: '#f1f5f9', stroke: n.kind === 'tag' && n.color ? COLORS[n.color] ?? '#94a3b8' : '#94a3b8' };
  if (n.kind === 'ghost') return { fill: '#f8fafc', stroke: '#94a3b8', dashed: true, fontColor: '#64748b', italic: true };
  if (n.kind === 'collapsed' || n.kind === 'summary') return { fill: '#e2e8f0', stroke: '#64748b', strokeWidth: 2, bold: true, fontColor: '#1e1b4b' };
  if (n.kind === 'host') return { fill: '#fefce8', stroke: '#ca8a04', fontColor: '#1e1b4b' };
  return { fill: '#eef2ff', stroke: '#6366f1', fontColor: '#1e1b4b', dashed: n.offline === true || undefined, opacity: n.offline ? 0.45 : undefined };
}

function edgeDefaults(e: GraphEdge): { color: string; width: number; dashed?: boolean; dotted?: boolean } {
  if (e.kind === 'request_path' || e.kind === 'hub_and_spoke') return { color: COLORS[e.color ?? ''] ?? '#3b82f6', width: 2.5 };
  if (e.kind === 'physical_link') return e.evidence === 'forwarding_table' ? { color: '#475569', width: 2, dashed: true } : { color: '#0f172a', width: 3 };
  if (e.kind === 'hypervisor') return { color: '#a855f7', width: 2, dotted: true };
  if (e.kind === 'container_runtime') return { color: '#0ea5e9', width: 2, dotted: true };
  if (e.kind === 'same_host') return { color: '#cbd5e1', width: 1.5, dashed: true };
  return { color: '#94a3b8', width: 1.5 };
}

export function toDrawio(d: DrawioInput): string {
  const drawn = d.nodes.filter((n) => !d.omit?.has(n.id) && d.positions[n.id]);
  const byId = new Map(drawn.map((n) => [n.id, n]));
  const childrenOf = new Map<string, GraphNode[]>();
  for (const n of drawn) if (n.parent_id && byId.has(n.parent_id)) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n);
  // Every node's children of the whole graph make a container (as the map draws it), even with some left out.
  const containers = new Set(d.nodes.filter((n) => n.parent_id && !d.omit?.has(n.id)).map((n) => n.parent_id!));
  const cells: string[] = ['<mxCell id="0"/>', '<mxCell id="1" parent="0"/>'];

  const vertex = (n: GraphNode) => {
    const b = d.positions[n.id]!;
    const parent = n.parent_id && byId.has(n.parent_id) ? n.parent_id : undefined;
    const origin = parent ? d.positions[parent]! : { x: 0, y: 0 };
    const isContainer = containers.has(n.id);
    const look = { ...nodeDefaults(n, isContainer), ...d.look?.(n.id) };
    const image = !isContainer && d.icon ? (() => { const url = d.icon!(n); return url ? drawioImage(url) : undefined; })() : undefined;
    const fontStyle = (look.bold || isContainer ? 1 : 0) + (look.italic ? 2 : 0);
    const common = {
      fillColor: look.fill, strokeColor: look.stroke, strokeWidth: look.strokeWidth, dashed: look.dashed ? 1 : undefined,
      fontColor: look.fontColor ?? '#1e293b', fontStyle: fontStyle || undefined, opacity: look.opacity !== undefined && look.opacity < 1 ? Math.round(look.opacity * 100) : undefined,
    };
    const s = isContainer
      // A group: its title at the top left, its elements inside (container=1: they move with it).
      ? style({ rounded: 1, arcSize: 3, absoluteArcSize: 0, whiteSpace: 'wrap', html: 0, container: 1, recursiveResize: 0, verticalAlign: 'top', align: 'left', spacingLeft: 8, spacingTop: 2, fontSize: 12, ...common })
      : style({
        ...(image ? { shape: 'label', image, imageWidth: 16, imageHeight: 16, imageAlign: 'left', imageVerticalAlign: 'middle', spacingLeft: 22 } : {}),
        rounded: 1, arcSize: 12, whiteSpace: 'wrap', html: 0, align: 'center', verticalAlign: 'middle', fontSize: 12, ...common,
      });
    const label = isContainer ? containerTitle(n, childrenOf.get(n.id) ?? []) : exportLabelOf(n);
    cells.push(`<mxCell id="${xml(n.id)}" value="${xml(label)}" style="${xml(s)}" vertex="1" parent="${xml(parent ?? '1')}">`
      + `<mxGeometry x="${round(b.x - origin.x)}" y="${round(b.y - origin.y)}" width="${round(b.width)}" height="${round(b.height)}" as="geometry"/></mxCell>`);
    for (const c of childrenOf.get(n.id) ?? []) vertex(c);
  };
  // Groups before what they hold (draw.io resolves a parent by id, but reads top-down best).
  for (const n of drawn) if (!n.parent_id || !byId.has(n.parent_id)) vertex(n);

  const named = new Set<string>();
  for (const e of d.edges) {
    if (d.omit?.has(e.id) || !byId.has(e.source) || !byId.has(e.target)) continue;
    const base = edgeDefaults(e);
    const look = d.look?.(e.id);
    const dependency = e.kind === 'request_path' || e.kind === 'hub_and_spoke';
    const curve = dependency ? curveOf(e.edge_style) : 'straight';
    // A dependency's name once, on its first edge (the map names it on hover; its legend by colour).
    const dashed = look?.dashed ?? (base.dashed || base.dotted);
    const label = dependency && e.dependency_id && !named.has(e.dependency_id) && e.label ? (named.add(e.dependency_id), e.label) : '';
    const bends = d.bends?.[e.id];
    const s = style({
      edgeStyle: curve === 'straight' || bends?.length ? 'none' : 'orthogonalEdgeStyle', curved: curve === 'bezier' && !bends?.length ? 1 : undefined, rounded: 0, html: 0,
      strokeColor: look?.stroke ?? base.color, strokeWidth: look?.strokeWidth ?? base.width,
      dashed: dashed ? 1 : undefined, dashPattern: dashed && base.dotted ? '1 3' : undefined,
      opacity: look?.opacity !== undefined && look.opacity < 1 ? Math.round(look.opacity * 100) : undefined,
      // Arrows as the map draws them: a dependency's direction (a hub's end a dot), no other edge has one.
      endArrow: dependency ? 'classic' : 'none', endFill: 1,
      startArrow: e.kind === 'hub_and_spoke' ? 'oval' : 'none', startFill: 1,
      fontSize: 11, labelBackgroundColor: label ? '#ffffff' : undefined,
    });
    cells.push(`<mxCell id="${xml(e.id)}" value="${xml(label)}" style="${xml(s)}" edge="1" parent="1" source="${xml(e.source)}" target="${xml(e.target)}">`
      + (bends?.length
        ? `<mxGeometry relative="1" as="geometry"><Array as="points">${bends.map((p) => `<mxPoint x="${round(p.x)}" y="${round(p.y)}"/>`).join('')}</Array></mxGeometry></mxCell>`
        : '<mxGeometry relative="1" as="geometry"/></mxCell>'));
  }
  return `<?xml version="1.0" encoding="UTF-8"?>
<mxfile host="netinventory" type="device"><diagram id="topology" name="${xml(d.title)}"><mxGraphModel grid="1" gridSize="10" guides="1" tooltips="1" connect="1" arrows="1" fold="1" page="0" math="0" shadow="0"><root>
${cells.join('\n')}
</root></mxGraphModel></diagram></mxfile>
`;
}
