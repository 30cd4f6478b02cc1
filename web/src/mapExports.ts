// The map's exports (the Export menu, exportMenu.ts): what is drawn, whole, with its legend and a
// title (network, view, instant or a comparison's interval), as PNG and SVG (exportSvg.ts) or
// draw.io (exportDrawio.ts), named as the API names its exports (exportFileName: network, view,
// day of the instant drawn); the API's own exports (GraphML, Mermaid) of the state's filters.
import { download, when } from './dom.js';
import { legendModel } from './legend.js';
import { exportMenu, measureText, pngOf } from './exportMenu.js';
import { paint, toSvg, type ExportDrawing } from './exportSvg.js';
import { toDrawio, type DrawioLook } from './exportDrawio.js';
import { exportFileName } from '../../src/modules/topology/names.js';
import type { MapRenderer } from './mapRenderer.js';
import { drawnNodes, fixedInstant, shownGraph, VIEW_NAMES, type MapState } from './mapScreenState.js';
import { apiExportPath } from './mapEffects.js';

export interface MapExportContext {
  state(): MapState;
  renderer: MapRenderer;
  /** The canvas: nothing is exported before it is drawn (data-ready). */
  canvas: HTMLElement;
  networkName: string;
  /** The line under the title (Making the PNG…, Downloaded …). */
  status(text: string): void;
  failed(err: unknown): void;
}

export function mapExports({ state: s, renderer, canvas, networkName, status, failed }: MapExportContext) {
  /** The instant drawn: the history slider's, a comparison's end, the map's `at`, or now (live). */
  const instantDrawn = () => fixedInstant(s()) ?? new Date().toISOString();
  const exportName = (extension: string) => exportFileName(networkName, s().view, instantDrawn(), extension);
  /** The last file exported, for tests and tools: its name, size and each element's label as written. */
  let lastExport: { format: string; file: string; width?: number; height?: number; limited?: boolean; labels?: Record<string, string[]>; nodes?: number } | undefined;
  /** The title written above an exported drawing: network, view, instant (or a comparison's interval). */
  const exportTitle = () => {
    const { view, diff, mode } = s();
    return `${networkName} — ${VIEW_NAMES[view] ?? view} — ${diff && mode === 'diff' ? `changes from ${when(diff.from)} to ${when(diff.to)}` : when(instantDrawn())}`;
  };
  /** What is drawn, with its legend and title (undefined: nothing is drawn yet). */
  function exportSource(): { drawing: ExportDrawing; legend: ReturnType<typeof legendModel>; title: string } | undefined {
    const g = shownGraph(s());
    if (!g || !canvas.hasAttribute('data-ready')) return undefined;
    return { drawing: renderer.exportDrawing(), legend: legendModel(g), title: exportTitle() };
  }
  async function exportPng(size: Parameters<typeof pngOf>[2]) {
    const source = exportSource();
    if (!source) return;
    status('Making the PNG…');
    try {
      const png = await pngOf(source.drawing, { legend: source.legend, title: source.title, measure: measureText }, size);
      const file = exportName('png');
      download(png.blob, file);
      lastExport = { format: 'png', file, width: png.width, height: png.height, limited: png.limited, labels: png.svg.labels };
      status(`Downloaded ${file} (${png.width.toLocaleString()} × ${png.height.toLocaleString()} px${png.limited ? ', the largest image this browser makes' : ''}).`);
    } catch (err) {
      status('');
      failed(err);
    }
  }
  function exportSvg() {
    const source = exportSource();
    if (!source) return;
    const svg = toSvg(source.drawing, { legend: source.legend, title: source.title, measure: measureText });
    const file = exportName('svg');
    download(new Blob([svg.svg], { type: 'image/svg+xml' }), file);
    lastExport = { format: 'svg', file, width: svg.width, height: svg.height, labels: svg.labels };
  }
  function exportDrawio() {
    const g = shownGraph(s());
    const source = exportSource();
    if (!g || !source) return;
    const { containers, nodes, edges } = source.drawing;
    const hex = (color: string) => paint(color).color;
    const looks = new Map<string, DrawioLook>();
    const positions: Record<string, { x: number; y: number; width: number; height: number }> = {};
    for (const c of containers) {
      positions[c.id] = { x: c.x, y: c.y, width: c.width, height: c.height };
      looks.set(c.id, { fill: hex(c.fill), stroke: hex(c.stroke), strokeWidth: c.strokeWidth, dashed: c.dashed });
    }
    for (const n of nodes) {
      positions[n.id] = { x: n.x, y: n.y, width: n.width, height: n.height };
      looks.set(n.id, { fill: hex(n.fill), stroke: hex(n.stroke), strokeWidth: n.strokeWidth, dashed: n.borderStyle === 'dashed', fontColor: hex(n.textColor), bold: n.bold, italic: n.italic, opacity: n.opacity });
    }
    for (const e of edges) looks.set(e.id, { stroke: hex(e.color), strokeWidth: e.width, dashed: e.dash !== undefined, opacity: e.opacity });
    const icons = new Map(nodes.map((n) => [n.id, n.icon]));
    const drawnEdges = new Set(edges.map((e) => e.id));
    const xml = toDrawio({
      title: source.title, nodes: drawnNodes(s(), g), edges: g.edges, positions,
      omit: new Set(g.edges.filter((e) => !drawnEdges.has(e.id)).map((e) => e.id)), look: (id) => looks.get(id), icon: (n) => icons.get(n.id),
      bends: Object.fromEntries(edges.filter((e) => e.curve === 'segments').map((e) => [e.id, e.via])),
    });
    const file = exportName('drawio');
    download(new Blob([xml], { type: 'application/vnd.jgraph.mxfile' }), file);
    lastExport = { format: 'drawio', file, nodes: containers.length + nodes.length };
  }


  const menu = exportMenu({
    drawing: () => exportSource(),
    png: (size) => exportPng(size),
    svg: () => exportSvg(),
    drawio: () => exportDrawio(),
    failed,
    apiExport: (format) => (shownGraph(s()) ? apiExportPath(s(), format) : undefined),
  });
  return { button: menu.button, dispose: menu.dispose, lastExport: () => lastExport };
}
