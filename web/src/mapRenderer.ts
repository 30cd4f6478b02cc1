// Draws a topology with Cytoscape.js (canvas): every node at the API's position and size (never
// laid out here), edges per kind, dependency edges in their colour and curve. Containers (subnets,
// hosts, tags) are boxes the API sized, drawn as HTML under the canvas and moved with the viewport:
// as Cytoscape compounds, or even as large canvas nodes, they made the first frame 1.5-2× slower
// (bench/README.md, web section). In the graph they stay as invisible nodes, so that edges can end
// at them.
// It holds no state of its own beyond the drawing: the map screen tells it what to show, and it
// reports what the user does (select, drag, open a container).
import cytoscape, { type Core, type ElementDefinition } from 'cytoscape';
import { COLORS, curveOf, type Box, type GraphEdge, type GraphNode } from './mapState.js';

export interface RendererEvents {
  select(nodeId: string | null): void;
  dragged(nodeId: string, topLeft: { x: number; y: number }): void;
  toggle(containerId: string): void;
}

const STYLE: any[] = [
  { selector: 'node', style: { 'z-index': 10, label: 'data(label)', 'font-size': 11, 'text-valign': 'center', 'text-halign': 'center', 'text-wrap': 'wrap', 'text-max-width': 'data(textWidth)', width: 'data(w)', height: 'data(h)', shape: 'round-rectangle', 'background-color': '#eef2ff', 'border-width': 1, 'border-color': '#6366f1', color: '#1e1b4b', 'min-zoomed-font-size': 7 } },
  { selector: 'node.container', style: { 'z-index': 0, opacity: 0, label: '' } },
  { selector: 'node.collapsed', style: { 'background-color': '#e2e8f0', 'border-style': 'double', 'border-width': 4, 'border-color': '#64748b', 'font-weight': 'bold' } },
  { selector: 'node.host-node', style: { 'background-color': '#fefce8', 'border-color': '#ca8a04' } },
  { selector: 'node.tag', style: { 'border-color': 'data(color)', 'border-width': 2 } },
  { selector: 'node.pinned', style: { 'border-width': 2, 'border-style': 'dashed' } },
  { selector: 'node.highlighted', style: { 'border-width': 4, 'border-color': '#f97316', 'background-color': '#ffedd5' } },
  { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#2563eb' } },
  { selector: 'edge', style: { width: 1.5, 'line-color': '#94a3b8', 'curve-style': 'straight', 'target-arrow-shape': 'none' } },
  { selector: 'edge.same_host', style: { 'line-style': 'dashed', 'line-color': '#cbd5e1' } },
  { selector: 'edge.dependency', style: { width: 2.5, 'line-color': 'data(color)', 'target-arrow-color': 'data(color)', 'target-arrow-shape': 'triangle', 'curve-style': 'data(curve)', 'taxi-direction': 'horizontal' } },
  { selector: 'edge.hypervisor, edge.container_runtime', style: { 'line-style': 'dotted', width: 2, 'line-color': '#a855f7' } },
  { selector: 'edge.physical_link', style: { width: 3, 'line-color': '#0f172a' } },
  { selector: '.absent', style: { opacity: 0, events: 'no' } },
  { selector: '.added', style: { 'border-color': '#16a34a', 'background-color': '#dcfce7', 'line-color': '#16a34a', 'border-width': 3 } },
  { selector: '.removed', style: { 'border-color': '#dc2626', 'background-color': '#fee2e2', 'line-color': '#dc2626', 'line-style': 'dashed', 'border-width': 3, 'border-style': 'dashed' } },
  { selector: '.changed', style: { 'border-color': '#d97706', 'background-color': '#fef3c7', 'line-color': '#d97706', 'border-width': 3 } },
  { selector: '.dimmed', style: { opacity: 0.25 } },
];

/** An element's label: its name, then one line per service listed on it (with ports). */
function labelOf(n: GraphNode): string {
  if (n.kind === 'collapsed') {
    const counts = Object.entries(n.counts ?? {}).map(([k, v]) => `${v} ${k.replace('_', ' ')}${v === 1 ? '' : 'es'}`.replace(/sses$/, 'sses'));
    return `${n.label}\n(${counts.join(', ')}: double-click to open)`;
  }
  const services = (n.services ?? []).map((s) => `${s.name}${s.ports?.length ? ` :${s.ports.map((p) => p.number).join(',')}` : ''}`);
  return [n.label, ...services].join('\n');
}

export class MapRenderer {
  readonly cy: Core;
  private containers = new Set<string>();
  private marked = new Set<string>();
  /** The HTML boxes of the containers, under the canvas, by node id. */
  private boxes = new Map<string, HTMLElement>();
  private readonly layer: HTMLElement;

  constructor(host: HTMLElement, private events: RendererEvents) {
    this.layer = document.createElement('div');
    this.layer.className = 'container-layer';
    const under = document.createElement('div');
    under.className = 'container-viewport';
    under.appendChild(this.layer);
    const surface = document.createElement('div');
    surface.className = 'graph-surface';
    host.append(under, surface);
    this.cy = cytoscape({
      container: surface, style: STYLE, layout: { name: 'preset' }, minZoom: 0.02, maxZoom: 4, boxSelectionEnabled: false, autoungrabify: false,
      // Large maps stay fluid while panning and zooming: a snapshot of the view moves, edges hide.
      hideEdgesOnViewport: true, motionBlur: false,
      // Cytoscape's WebGL renderer, for machines with a GPU; measured 3-7× slower than the canvas in
      // headless Chromium's software GL (bench/README.md), so only when asked for.
      ...(localStorage.getItem('netinventory.renderer') === 'webgl' ? { webgl: true } : {}),
    });
    this.cy.on('viewport', () => this.followViewport());
    this.cy.on('tap', 'node.element', (e) => this.events.select(e.target.id()));
    this.cy.on('tap', (e) => { if (e.target === this.cy) this.events.select(null); });
    // On the background: the container under the pointer (its box is HTML under the canvas).
    this.cy.on('dbltap', (e) => {
      const target = e.target === this.cy ? this.containerAt(e.position) : e.target.hasClass('collapsed') ? e.target.id() : undefined;
      if (target) this.events.toggle(target);
    });
    this.cy.on('dragfree', 'node', (e) => this.events.dragged(e.target.id(), this.topLeft(e.target.id())));
  }

  /**
   * Shows these nodes and edges at these positions (top-left boxes, as the API gives them). Elements
   * already drawn are updated in place, so nothing the user sees moves unless its position changed.
   */
  setGraph(nodes: GraphNode[], edges: GraphEdge[], positions: Record<string, Box>) {
    const parents = new Set(nodes.filter((n) => n.parent_id).map((n) => n.parent_id!));
    this.containers = parents;
    const known = new Set(nodes.map((n) => n.id));
    const defs: ElementDefinition[] = [];
    for (const n of nodes) {
      const box = positions[n.id];
      const isParent = parents.has(n.id);
      const data: Record<string, unknown> = {
        id: n.id, label: isParent ? n.label : labelOf(n), kind: n.kind, parentId: n.parent_id && known.has(n.parent_id) ? n.parent_id : '',
        w: box?.width || 140, h: box?.height || 40, textWidth: Math.max(60, (box?.width || 140) - 8),
        color: n.color ? COLORS[n.color] ?? '#64748b' : '#64748b',
      };
      const classes = [isParent ? 'container' : 'element', n.kind === 'collapsed' ? 'collapsed' : '', n.kind === 'host' && !isParent ? 'host-node' : '', n.kind === 'tag' ? 'tag' : '', n.services?.length ? 'has-services' : ''].filter(Boolean).join(' ');
      defs.push({ group: 'nodes', data, classes, position: box ? { x: box.x + box.width / 2, y: box.y + box.height / 2 } : undefined });
    }
    for (const e of edges) {
      if (!known.has(e.source) || !known.has(e.target)) continue;
      const dependency = e.kind === 'request_path' || e.kind === 'hub_and_spoke';
      defs.push({
        group: 'edges',
        data: { id: e.id, source: e.source, target: e.target, color: COLORS[e.color ?? ''] ?? '#3b82f6', curve: curveOf(e.edge_style) },
        classes: [dependency ? 'dependency' : '', e.kind].filter(Boolean).join(' '),
      });
    }
    if (this.cy.elements().empty()) {
      // The viewport that fits the map, set before anything is drawn: the first frame is the last.
      this.fitTo(Object.values(positions));
      this.drawBoxes(nodes.filter((n) => parents.has(n.id)), positions);
      // A first drawing: every element in one call (added one by one, each is styled on its own).
      this.cy.add(defs);
      return;
    }
    this.drawBoxes(nodes.filter((n) => parents.has(n.id)), positions);
    this.cy.batch(() => {
      const wanted = new Set(defs.map((d) => d.data.id!));
      this.cy.elements().filter((el) => !wanted.has(el.id())).remove();
      for (const d of defs) {
        const el = this.cy.getElementById(d.data.id!);
        if (el.empty()) {
          this.cy.add(d);
          continue;
        }
        el.data(d.data);
        el.classes(d.classes ?? '');
        if (d.position) {
          const p = el.position();
          if (p.x !== d.position.x || p.y !== d.position.y) el.position(d.position);
        }
      }
    });
  }

  /** The containers' boxes, under the canvas, in the graph's coordinates (followViewport scales them). */
  private drawBoxes(containers: GraphNode[], positions: Record<string, Box>) {
    const keep = new Set(containers.map((c) => c.id));
    for (const [id, el] of this.boxes) if (!keep.has(id)) { el.remove(); this.boxes.delete(id); }
    for (const c of containers) {
      const box = positions[c.id];
      let el = this.boxes.get(c.id);
      if (!el) {
        el = document.createElement('div');
        el.dataset.nodeId = c.id;
        el.dataset.kind = c.kind;
        el.className = `box box-${c.kind}`;
        el.appendChild(document.createElement('span'));
        this.layer.appendChild(el);
        this.boxes.set(c.id, el);
      }
      el.firstElementChild!.textContent = c.label;
      if (c.color) el.style.borderColor = COLORS[c.color] ?? '';
      el.hidden = !box;
      if (box) Object.assign(el.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px`, height: `${box.height}px` });
    }
    this.followViewport();
  }

  private followViewport() {
    const pan = this.cy.pan();
    this.layer.style.transform = `translate(${pan.x}px, ${pan.y}px) scale(${this.cy.zoom()})`;
  }

  private containerAt(p: { x: number; y: number }): string | undefined {
    for (const [id, el] of this.boxes) {
      const [x, y, w, h] = [el.style.left, el.style.top, el.style.width, el.style.height].map((v) => parseFloat(v));
      if (!el.hidden && p.x >= x! && p.x <= x! + w! && p.y >= y! && p.y <= y! + h!) return id;
    }
    return undefined;
  }

  /** Extra classes per element id (pinned, marks of a diff, absent at an instant, highlighted), replacing the previous ones. */
  mark(classes: Map<string, string[]>) {
    for (const [id, el] of this.boxes) el.className = ['box', `box-${el.dataset.kind}`, ...(classes.get(id) ?? [])].join(' ');
    const all = ['pinned', 'added', 'removed', 'changed', 'absent', 'highlighted', 'dimmed'];
    this.cy.batch(() => {
      // Only what changes: a class set anew on every element restyles the whole map.
      for (const id of this.marked) if (!classes.has(id)) this.cy.getElementById(id).removeClass(all.join(' '));
      for (const [id, cls] of classes) {
        const el = this.cy.getElementById(id);
        const stale = all.filter((c) => !cls.includes(c) && el.hasClass(c));
        if (stale.length) el.removeClass(stale.join(' '));
        const fresh = cls.filter((c) => !el.hasClass(c));
        if (fresh.length) el.addClass(fresh.join(' '));
      }
    });
    this.marked = new Set(classes.keys());
  }

  focus(nodeIds: string[]) {
    let els = this.cy.collection();
    for (const id of nodeIds) els = els.union(this.cy.getElementById(id));
    if (els.empty()) return;
    // Centred, at a zoom where its label reads (not the whole canvas for one small node).
    this.cy.animate({ center: { eles: els }, zoom: Math.min(1.6, Math.max(this.cy.zoom(), 1.1)), duration: 300 });
  }

  /** An element's box corner as the API keeps it (the renderer positions by centre). */
  topLeft(id: string): { x: number; y: number } {
    const n = this.cy.getElementById(id);
    const p = n.position();
    return { x: p.x - Number(n.data('w')) / 2, y: p.y - Number(n.data('h')) / 2 };
  }

  /** What is drawn, by element id: model and on-screen positions, classes (for tests and tools). */
  snapshot(): Record<string, { x: number; y: number; screenX: number; screenY: number; classes: string[] }> {
    const out: Record<string, { x: number; y: number; screenX: number; screenY: number; classes: string[] }> = {};
    const box = (this.cy.container() as HTMLElement).getBoundingClientRect();
    this.cy.nodes().forEach((n) => {
      const p = n.position();
      const r = n.renderedPosition();
      out[n.id()] = { x: p.x, y: p.y, screenX: box.left + r.x, screenY: box.top + r.y, classes: n.classes() as unknown as string[] };
    });
    this.cy.edges().forEach((e) => { out[e.id()] = { x: 0, y: 0, screenX: 0, screenY: 0, classes: e.classes() as unknown as string[] }; });
    return out;
  }

  private fitTo(boxes: Box[], padding = 30) {
    if (!boxes.length) return;
    const x1 = Math.min(...boxes.map((b) => b.x)), y1 = Math.min(...boxes.map((b) => b.y));
    const x2 = Math.max(...boxes.map((b) => b.x + b.width)), y2 = Math.max(...boxes.map((b) => b.y + b.height));
    const [w, h] = [this.cy.width() - 2 * padding, this.cy.height() - 2 * padding];
    const zoom = Math.min(4, Math.max(0.02, Math.min(w / Math.max(1, x2 - x1), h / Math.max(1, y2 - y1))));
    this.cy.viewport({ zoom, pan: { x: padding + (w - (x2 - x1) * zoom) / 2 - x1 * zoom, y: padding + (h - (y2 - y1) * zoom) / 2 - y1 * zoom } });
  }

  fit() {
    this.cy.fit(undefined, 30);
  }

  zoomBy(factor: number) {
    this.cy.zoom({ level: this.cy.zoom() * factor, renderedPosition: { x: this.cy.width() / 2, y: this.cy.height() / 2 } });
  }

  /** The whole map as a PNG: the containers' boxes painted first, the canvas drawing over them. */
  async png(): Promise<Blob> {
    const scale = 1;
    const bb = this.cy.elements().boundingBox({});
    const drawing = this.cy.png({ full: true, output: 'blob', bg: 'rgba(0,0,0,0)', scale, maxWidth: 8000, maxHeight: 8000 }) as unknown as Blob;
    const image = await createImageBitmap(drawing);
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const ctx = canvas.getContext('2d')!;
    const k = image.width / Math.max(1, bb.w);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    for (const el of this.boxes.values()) {
      if (el.hidden || el.classList.contains('absent')) continue;
      const [x, y, w, h] = [el.style.left, el.style.top, el.style.width, el.style.height].map((v) => parseFloat(v));
      ctx.fillStyle = '#f1f5f9';
      ctx.strokeStyle = '#94a3b8';
      ctx.fillRect((x! - bb.x1) * k, (y! - bb.y1) * k, w! * k, h! * k);
      ctx.strokeRect((x! - bb.x1) * k, (y! - bb.y1) * k, w! * k, h! * k);
      ctx.fillStyle = '#334155';
      ctx.font = `bold ${Math.max(8, 13 * k)}px system-ui, sans-serif`;
      ctx.textAlign = 'center';
      ctx.fillText(el.textContent ?? '', (x! - bb.x1 + w! / 2) * k, (y! - bb.y1 + 20) * k);
    }
    ctx.drawImage(image, 0, 0);
    return new Promise((resolve) => canvas.toBlob((b) => resolve(b!), 'image/png'));
  }

  destroy() {
    this.cy.destroy();
  }
}
