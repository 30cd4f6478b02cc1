// The map as a standalone SVG: what the renderer draws (MapRenderer.exportDrawing: containers,
// edges and elements with their colours, marks and icons), at the map's 100 % scale, with every
// label whole (wrapped inside its box, never cut with "…"), a title, and the legend beside the
// drawing. Icons are the bundled data: URLs (icons.ts), so the file refers to nothing outside
// itself. The PNG export is this SVG rasterized at the size chosen (exportMenu.ts), so both show
// the same. Pure (no DOM): text measurement comes from the caller (a canvas in the browser).

export interface Point { x: number; y: number }

/** What a legend explains, in order (legend.ts legendModel): edge kinds drawn, dependencies by name, host kinds with their icon (a data: URL). */
export interface LegendModel {
  edges: Array<{ key: string; name: string; color: string; width: number; dash?: string; ends?: 'arrow' | 'hub' }>;
  dependencies: Array<{ key: string; name: string; color: string; ends: 'arrow' | 'hub' }>;
  kinds: Array<{ key: string; name: string; icon: string }>;
}

/** A container's box as drawn (the map's HTML boxes): whole title, colours after marks. */
export interface ExportContainer {
  id: string; x: number; y: number; width: number; height: number;
  title: string; icon?: string;
  fill: string; stroke: string; strokeWidth: number; dashed?: boolean; opacity: number;
}

/** An element as drawn (a Cytoscape node): box, whole label (lines split by \n), colours after marks, icon. */
export interface ExportNode {
  id: string; x: number; y: number; width: number; height: number;
  text: string; fontPx: number; bold: boolean; italic: boolean; textColor: string;
  fill: string; stroke: string; strokeWidth: number; borderStyle: string; opacity: number;
  icon?: string; iconPx: number;
}

/** An edge as drawn: its ends (at the boxes' borders), bends or control points, colour, dash and arrowheads. */
export interface ExportEdge {
  id: string; source: string; target: string;
  start: Point; end: Point; via: Point[]; curve: 'straight' | 'bezier' | 'segments';
  color: string; width: number; dash?: 'dashed' | 'dotted'; opacity: number;
  sourceArrow?: 'triangle' | 'circle'; targetArrow?: 'triangle' | 'circle'; arrowColor?: string;
}

export interface ExportDrawing { containers: ExportContainer[]; nodes: ExportNode[]; edges: ExportEdge[] }

export interface SvgOptions {
  /** Written above the drawing (network, view, instant), and as the file's <title>. */
  title?: string;
  legend?: LegendModel;
  /** A text's width in px at this size (a canvas's measureText); by default an estimate. */
  measure?: (text: string, px: number, bold: boolean) => number;
  /** The SVG's width and height attributes are its size times this (the viewBox stays): the PNG's pixels. */
  pixelScale?: number;
}

export interface SvgExport {
  svg: string;
  /** The drawing's size at 100 % (px): a PNG at scale s is s times this. */
  width: number; height: number;
  /** Each element's label as written, line by line (wrapped, whole): for tests and tools. */
  labels: Record<string, string[]>;
}

export const FONT_FAMILY = '"Helvetica Neue", Helvetica, Arial, sans-serif';
const LINE_HEIGHT = 1.15; // as the map's stylesheet
const TITLE_PX = 12.5; // the containers' titles (styles.css .box-title)
const MARGIN = 24;

const esc = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const n = (v: number) => String(Math.round(v * 100) / 100);
const estimate = (text: string, px: number, bold: boolean) => text.length * px * (bold ? 0.62 : 0.56);

/**
 * A CSS colour as SVG 1.1 paints take it (viewers older than SVG 2 ignore rgba()): `#rrggbb` or a
 * name, with its alpha apart.
 */
export function paint(color: string): { color: string; alpha: number } {
  const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+%?))?\s*\)$/i.exec(color.trim());
  if (!m) return { color: color.trim() || 'none', alpha: 1 };
  const hex = [m[1], m[2], m[3]].map((v) => Math.max(0, Math.min(255, Math.round(Number(v)))).toString(16).padStart(2, '0')).join('');
  const a = m[4] === undefined ? 1 : m[4].endsWith('%') ? Number(m[4].slice(0, -1)) / 100 : Number(m[4]);
  return { color: `#${hex}`, alpha: Math.max(0, Math.min(1, a)) };
}
const fillAttrs = (color: string) => { const p = paint(color); return p.alpha === 0 ? 'fill="none"' : `fill="${esc(p.color)}"${p.alpha < 1 ? ` fill-opacity="${n(p.alpha)}"` : ''}`; };
const strokeAttrs = (color: string, width: number) => { const p = paint(color); return p.alpha === 0 || width <= 0 ? 'stroke="none"' : `stroke="${esc(p.color)}"${p.alpha < 1 ? ` stroke-opacity="${n(p.alpha)}"` : ''} stroke-width="${n(width)}"`; };

/** Greedy word wrap of one line at `max` px (a word longer than that stays whole on its own line, as the map's labels do). */
export function wrapLine(line: string, max: number, width: (s: string) => number): string[] {
  const words = line.split(' ');
  const out: string[] = [];
  let current = '';
  for (const w of words) {
    const next = current ? `${current} ${w}` : w;
    if (current && width(next) > max) {
      out.push(current);
      current = w;
    } else current = next;
  }
  out.push(current);
  return out;
}

/** The round rectangle the map draws (Cytoscape's: corner radius a quarter of the shorter side, at most 8). */
const radius = (w: number, h: number) => Math.min(w / 4, h / 4, 8);

function edgePath(e: ExportEdge): string {
  const pts = [e.start, ...e.via, e.end];
  if (e.curve === 'bezier' && e.via.length) {
    // Cytoscape's bezier: quadratic curves through each control point, joined at the midpoints between them.
    let d = `M${n(e.start.x)},${n(e.start.y)}`;
    e.via.forEach((c, i) => {
      const next = e.via[i + 1];
      const to = next ? { x: (c.x + next.x) / 2, y: (c.y + next.y) / 2 } : e.end;
      d += ` Q${n(c.x)},${n(c.y)} ${n(to.x)},${n(to.y)}`;
    });
    return d;
  }
  return pts.map((p, i) => `${i ? 'L' : 'M'}${n(p.x)},${n(p.y)}`).join(' ');
}

/** An arrowhead at `tip`, pointing away from `from` (Cytoscape's sizes: its arrow-scale 0.8 of max((width × 13.37)^0.9, 29)). */
function arrow(shape: 'triangle' | 'circle', tip: Point, from: Point, width: number, color: string): string {
  const size = Math.max((width * 13.37) ** 0.9, 29) * 0.8;
  const len = Math.hypot(tip.x - from.x, tip.y - from.y) || 1;
  const [ux, uy] = [(tip.x - from.x) / len, (tip.y - from.y) / len];
  if (shape === 'circle') {
    const r = 0.15 * size;
    return `<circle cx="${n(tip.x - ux * r)}" cy="${n(tip.y - uy * r)}" r="${n(r)}" ${fillAttrs(color)}/>`;
  }
  const [bx, by] = [tip.x - ux * 0.3 * size, tip.y - uy * 0.3 * size];
  const [px, py] = [-uy * 0.15 * size, ux * 0.15 * size];
  return `<path d="M${n(tip.x)},${n(tip.y)} L${n(bx + px)},${n(by + py)} L${n(bx - px)},${n(by - py)} Z" ${fillAttrs(color)}/>`;
}

/** A short line as the map draws an edge kind (the legend's samples, as legend.ts draws them). */
function sample(x: number, y: number, s: { color: string; width: number; dash?: string; ends?: 'arrow' | 'hub' }): string {
  const parts = [`<line x1="${n(x + (s.ends === 'hub' ? 5 : 1))}" y1="${n(y)}" x2="${n(x + (s.ends ? 29 : 35))}" y2="${n(y)}" ${strokeAttrs(s.color, s.width)}${s.dash ? ` stroke-dasharray="${esc(s.dash)}"` : ''}/>`];
  if (s.ends) parts.push(`<path d="M${n(x + 28)},${n(y - 4)} L${n(x + 35)},${n(y)} L${n(x + 28)},${n(y + 4)} Z" ${fillAttrs(s.color)}/>`);
  if (s.ends === 'hub') parts.push(`<circle cx="${n(x + 4)}" cy="${n(y)}" r="3.5" ${fillAttrs(s.color)}/>`);
  return parts.join('');
}

export function toSvg(d: ExportDrawing, o: SvgOptions = {}): SvgExport {
  const measure = o.measure ?? estimate;
  const labels: Record<string, string[]> = {};
  // The extent: every box, every edge's points, and labels wider than their box.
  let [x1, y1, x2, y2] = [Infinity, Infinity, -Infinity, -Infinity];
  const extend = (x: number, y: number, w = 0, h = 0) => { x1 = Math.min(x1, x); y1 = Math.min(y1, y); x2 = Math.max(x2, x + w); y2 = Math.max(y2, y + h); };

  const containers = [...d.containers].sort((a, b) => b.width * b.height - a.width * a.height); // outer boxes under inner ones
  const boxes: string[] = [];
  const titles: string[] = [];
  const titleBand = TITLE_PX * 1.35;
  for (const c of containers) {
    extend(c.x, c.y, c.width, c.height);
    const r = Math.min(8, c.width / 2, c.height / 2);
    const op = c.opacity < 1 ? ` opacity="${n(c.opacity)}"` : '';
    boxes.push(`<rect class="container" data-id="${esc(c.id)}" x="${n(c.x)}" y="${n(c.y)}" width="${n(c.width)}" height="${n(c.height)}" rx="${n(r)}" ${fillAttrs(c.fill)} ${strokeAttrs(c.stroke, c.strokeWidth)}${c.dashed ? ' stroke-dasharray="6 3"' : ''}${op}/>`);
    // The title whole, on its band at the top (the map shortens it to its box on screen; here it is at 100 %).
    const iconPx = c.icon ? TITLE_PX * 1.2 : 0;
    const textX = c.x + 6 + (c.icon ? iconPx + TITLE_PX * 0.3 : 0);
    extend(c.x, c.y, textX - c.x + measure(c.title, TITLE_PX, true) + 6, titleBand);
    titles.push(`<g class="title" data-id="${esc(c.id)}"${op}><path d="M${n(c.x)},${n(c.y + titleBand)} V${n(c.y + r)} Q${n(c.x)},${n(c.y)} ${n(c.x + r)},${n(c.y)} H${n(c.x + c.width - r)} Q${n(c.x + c.width)},${n(c.y)} ${n(c.x + c.width)},${n(c.y + r)} V${n(c.y + titleBand)} Z" fill="#f8fafc" fill-opacity="0.88"/>`
      + (c.icon ? `<image x="${n(c.x + 6)}" y="${n(c.y + (titleBand - iconPx) / 2)}" width="${n(iconPx)}" height="${n(iconPx)}" xlink:href="${esc(c.icon)}"/>` : '')
      + `<text x="${n(textX)}" y="${n(c.y + titleBand / 2)}" dominant-baseline="central" font-size="${TITLE_PX}" font-weight="600" fill="#1e293b">${esc(c.title)}</text></g>`);
  }

  const edges: string[] = [];
  for (const e of d.edges) {
    for (const p of [e.start, ...e.via, e.end]) extend(p.x, p.y);
    const dash = e.dash === 'dashed' ? ' stroke-dasharray="6 3"' : e.dash === 'dotted' ? ' stroke-dasharray="1.5 3" stroke-linecap="round"' : '';
    const heads = [
      e.targetArrow ? arrow(e.targetArrow, e.end, e.via[e.via.length - 1] ?? e.start, e.width, e.arrowColor ?? e.color) : '',
      e.sourceArrow ? arrow(e.sourceArrow, e.start, e.via[0] ?? e.end, e.width, e.arrowColor ?? e.color) : '',
    ].join('');
    edges.push(`<g class="edge" data-id="${esc(e.id)}" data-source="${esc(e.source)}" data-target="${esc(e.target)}"${e.opacity < 1 ? ` opacity="${n(e.opacity)}"` : ''}>`
      + `<path d="${edgePath(e)}" fill="none" ${strokeAttrs(e.color, e.width)}${dash}/>${heads}</g>`);
  }

  const nodes: string[] = [];
  for (const v of d.nodes) {
    extend(v.x, v.y, v.width, v.height);
    const r = radius(v.width, v.height);
    const parts: string[] = [];
    const rect = (inset: number, width: number) => `<rect x="${n(v.x + inset)}" y="${n(v.y + inset)}" width="${n(v.width - 2 * inset)}" height="${n(v.height - 2 * inset)}" rx="${n(Math.max(0, r - inset))}"`
      + ` ${inset ? 'fill="none"' : fillAttrs(v.fill)} ${strokeAttrs(v.stroke, width)}${v.borderStyle === 'dashed' ? ' stroke-dasharray="6 3"' : v.borderStyle === 'dotted' ? ' stroke-dasharray="1 2"' : ''}/>`;
    // A double border (a collapsed container): two lines, each a third of its width.
    if (v.borderStyle === 'double') parts.push(rect(0, v.strokeWidth / 3), rect((2 * v.strokeWidth) / 3, v.strokeWidth / 3));
    else parts.push(rect(0, v.strokeWidth));
    const icon = v.icon ? v.iconPx : 0;
    if (v.icon) parts.push(`<image x="${n(v.x + 4)}" y="${n(v.y + (v.height - icon) / 2)}" width="${n(icon)}" height="${n(icon)}" xlink:href="${esc(v.icon)}"/>`);
    // The label whole: its lines, each wrapped at the box's text width as the map wraps it (never cut).
    const maxWidth = v.icon ? Math.max(20, v.width - icon - 12) : Math.max(40, v.width - 12);
    const width = (s: string) => measure(s, v.fontPx, v.bold);
    const lines = v.text ? v.text.split('\n').flatMap((l) => wrapLine(l, maxWidth, width)) : [];
    labels[v.id] = lines;
    if (lines.length) {
      const cx = v.x + v.width / 2 + icon / 2;
      const lh = v.fontPx * LINE_HEIGHT;
      const widest = Math.max(...lines.map(width));
      extend(cx - widest / 2, v.y + v.height / 2 - (lines.length * lh) / 2, widest, lines.length * lh);
      const style = `${v.bold ? ' font-weight="bold"' : ''}${v.italic ? ' font-style="italic"' : ''}`;
      parts.push(`<text x="${n(cx)}" text-anchor="middle" font-size="${n(v.fontPx)}"${style} ${fillAttrs(v.textColor)}>`
        + lines.map((l, i) => `<tspan x="${n(cx)}" y="${n(v.y + v.height / 2 + (i - (lines.length - 1) / 2) * lh)}" dominant-baseline="central">${esc(l)}</tspan>`).join('')
        + '</text>');
    }
    nodes.push(`<g class="node" data-id="${esc(v.id)}"${v.opacity < 1 ? ` opacity="${n(v.opacity)}"` : ''}>${parts.join('')}</g>`);
  }
  if (x1 === Infinity) [x1, y1, x2, y2] = [0, 0, 200, 100];

  // The title above the drawing, the legend to its right.
  const header = o.title ? 34 : 0;
  const left = x1 - MARGIN;
  const top = y1 - MARGIN - header;
  const legend = o.legend ? legendSvg(o.legend, x2 + MARGIN, y1, measure) : undefined;
  const width = Math.ceil(Math.max(x2 + MARGIN, legend ? legend.right + MARGIN : 0, o.title ? x1 + measure(o.title, 16, true) + MARGIN : 0) - left);
  const height = Math.ceil(Math.max(y2, legend?.bottom ?? y2) + MARGIN - top);
  const scale = o.pixelScale ?? 1;
  const svg = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="${n(width * scale)}" height="${n(height * scale)}" viewBox="${n(left)} ${n(top)} ${width} ${height}" font-family='${FONT_FAMILY}' font-size="12">
${o.title ? `<title>${esc(o.title)}</title>` : ''}
<rect x="${n(left)}" y="${n(top)}" width="${width}" height="${height}" fill="#ffffff"/>
${o.title ? `<text class="heading" x="${n(x1)}" y="${n(y1 - header + 6)}" dominant-baseline="central" font-size="16" font-weight="bold" fill="#0f172a">${esc(o.title)}</text>` : ''}
<g class="containers">${boxes.join('\n')}</g>
<g class="edges">${edges.join('\n')}</g>
<g class="nodes">${nodes.join('\n')}</g>
<g class="titles">${titles.join('\n')}</g>
${legend?.svg ?? ''}
</svg>
`;
  return { svg, width, height, labels };
}

/** The legend as the map's box shows it: edge kinds, dependencies and host kinds (two columns), in a box at (x, y). */
function legendSvg(m: LegendModel, x: number, y: number, measure: (text: string, px: number, bold: boolean) => number) {
  const px = 12;
  const row = 18;
  const pad = 10;
  const out: string[] = [];
  let cy = y + pad + 8;
  out.push(`<text x="${n(x + pad)}" y="${n(cy)}" dominant-baseline="central" font-size="${px}" font-weight="bold" fill="#334155">Legend</text>`);
  cy += row;
  let widest = measure('Legend', px, true);
  const text = (tx: number, ty: number, s: string) => `<text x="${n(tx)}" y="${n(ty)}" dominant-baseline="central" font-size="${px}" fill="#0f172a">${esc(s)}</text>`;
  const sectionGap = () => { cy += 6; };
  // One column: edge kinds. Two columns: dependencies and host kinds (as the map's box lays them out).
  if (m.edges.length) {
    for (const s of m.edges) {
      out.push(`<g class="legend-item" data-legend="${esc(s.key)}">${sample(x + pad, cy, s)}${text(x + pad + 42, cy, s.name)}</g>`);
      widest = Math.max(widest, 42 + measure(s.name, px, false));
      cy += row;
    }
    sectionGap();
  }
  const twoColumns = (items: Array<{ key: string; name: string }>, lead: number, draw: (item: any, ix: number, iy: number) => string) => {
    const col = lead + Math.max(0, ...items.map((i) => measure(i.name, px, false))) + 16;
    items.forEach((item, i) => {
      const ix = x + pad + (i % 2) * col;
      const iy = cy + Math.floor(i / 2) * row;
      out.push(`<g class="legend-item" data-legend="${esc(item.key)}">${draw(item, ix, iy)}${text(ix + lead, iy, item.name)}</g>`);
    });
    widest = Math.max(widest, 2 * col - 16);
    cy += Math.ceil(items.length / 2) * row;
    sectionGap();
  };
  if (m.dependencies.length) twoColumns(m.dependencies, 42, (dep, ix, iy) => sample(ix, iy, { color: dep.color, width: 3, ends: dep.ends }));
  if (m.kinds.length) twoColumns(m.kinds, 22, (kind, ix, iy) => `<image x="${n(ix)}" y="${n(iy - 8)}" width="16" height="16" xlink:href="${esc(kind.icon)}"/>`);
  if (!m.edges.length && !m.dependencies.length && !m.kinds.length) {
    out.push(text(x + pad, cy, 'Nothing to explain in this view.'));
    widest = Math.max(widest, measure('Nothing to explain in this view.', px, false));
    cy += row;
  }
  const w = widest + 2 * pad;
  const h = cy - y - row / 2 + pad - 6;
  return {
    svg: `<g class="legend" aria-label="Legend"><rect x="${n(x)}" y="${n(y)}" width="${n(w)}" height="${n(h)}" rx="8" fill="#ffffff" stroke="#cbd5e1"/>${out.join('')}</g>`,
    right: x + w, bottom: y + h,
  };
}
