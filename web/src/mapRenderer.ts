// Draws a topology with Cytoscape.js (canvas): every node at the API's position and size (never
// laid out here), edges per kind, dependency edges in their colour and curve. Containers (subnets,
// hosts, tags) are boxes the API sized, drawn as HTML under the canvas and moved with the viewport:
// as Cytoscape compounds, or even as large canvas nodes, they made the first frame 1.5-2× slower
// (bench/README.md, web section). In the graph they stay as invisible nodes, so that edges can end
// at them.
// It holds no state of its own beyond the drawing: the map screen tells it what to show, and it
// reports what the user does (select, drag, open a container).
// Level of detail: labels and icons keep a constant size on screen (levelOfDetail), and say more
// as one zooms in (a name, then its address, then its services); container titles are HTML over
// the canvas, counter-scaled the same way.
// Exports (exportDrawing) take what is drawn at the map's 100 % instead, labels whole: the SVG,
// PNG and draw.io writers (exportSvg.ts, exportDrawio.ts) are given that.
import cytoscape, { type Core, type ElementDefinition } from 'cytoscape';
import { COLORS, containerTitle, curveOf, exportLabelOf, labelsOf, levelOfDetail, titleThatFits, type Box, type GraphEdge, type GraphNode } from './mapState.js';
import { kindIcon, serviceLogo } from './icons.js';
import type { ExportContainer, ExportDrawing, ExportEdge, ExportNode } from './exportSvg.js';

export interface RendererEvents {
  select(nodeId: string | null): void;
  dragged(nodeId: string, topLeft: { x: number; y: number }): void;
  toggle(containerId: string): void;
}

type Lod = ReturnType<typeof levelOfDetail>;
type Area = { x: number; y: number; w: number; h: number };
/** Narrower than this (CSS px), the canvas is a phone's: a map opens where names read rather than whole. */
const NARROW_CANVAS = 600;
/** A zoom where host names are drawn (levelOfDetail's level 1) and mostly fit their boxes. */
const READABLE_ZOOM = 0.65;
const LABEL_OF_LEVEL = ['', 'data(name)', 'data(mid)', 'data(full)'];

/** The stylesheet at a level of detail (sizes in the graph's units, constant on screen). */
function stylesheet(lod: Lod): any[] {
  const text = { 'font-size': lod.font, 'text-max-width': 'data(textWidth)', 'text-wrap': lod.level <= 1 ? 'ellipsis' : 'wrap' };
  return [
    { selector: 'node', style: { 'z-index': 10, label: LABEL_OF_LEVEL[lod.level], ...text, 'text-valign': 'center', 'text-halign': 'center', width: 'data(w)', height: 'data(h)', shape: 'round-rectangle', 'background-color': '#eef2ff', 'border-width': 1, 'border-color': '#6366f1', color: '#1e1b4b', 'line-height': 1.15 } },
    { selector: 'node.has-icon', style: {
      'background-image': 'data(icon)', 'background-fit': 'none', 'background-clip': 'none', 'background-width': lod.icon, 'background-height': lod.icon,
      'background-position-x': 4, 'background-position-y': '50%', 'background-image-containment': 'over',
      'text-margin-x': lod.level ? lod.icon / 2 : 0, 'text-max-width': (n: any) => Math.max(20, n.data('w') - lod.icon - 12),
    } },
    { selector: 'node.container', style: { 'z-index': 0, opacity: 0, label: '' } },
    { selector: 'node.collapsed', style: { 'background-color': '#e2e8f0', 'border-style': 'double', 'border-width': 4, 'border-color': '#64748b', 'font-weight': 'bold' } },
    // A dependency member not drawn here (hidden, filtered out, outside the view): a ghost, so no edge is redrawn to another member.
    { selector: 'node.offline', style: { opacity: 0.45, 'border-style': 'dashed' } },
    { selector: 'node.new', style: { 'border-width': 3, 'border-color': '#2563eb' } },
    { selector: 'node.ghost', style: { 'background-color': '#f8fafc', 'border-style': 'dashed', 'border-width': 2, 'border-color': '#94a3b8', color: '#64748b', 'font-style': 'italic' } },
    { selector: 'edge.to-ghost', style: { 'line-style': 'dashed' } },
    { selector: 'node.host-node', style: { 'background-color': '#fefce8', 'border-color': '#ca8a04' } },
    { selector: 'node.tag', style: { 'border-color': 'data(color)', 'border-width': 2 } },
    { selector: 'node.pinned', style: { 'border-width': 2, 'border-style': 'dashed' } },
    { selector: 'node.match', style: { 'border-width': 3, 'border-color': '#0ea5e9', 'background-color': '#e0f2fe' } },
    { selector: 'node.highlighted', style: { 'border-width': 4, 'border-color': '#f97316', 'background-color': '#ffedd5', 'z-index': 20 } },
    { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#2563eb' } },
    { selector: 'edge', style: { width: lod.edge, 'line-color': '#94a3b8', 'curve-style': 'straight', 'target-arrow-shape': 'none', 'arrow-scale': 0.8 } },
    { selector: 'edge.same_host', style: { 'line-style': 'dashed', 'line-color': '#cbd5e1' } },
    { selector: 'edge.dependency', style: { width: lod.edge * 1.7, 'line-color': 'data(color)', 'target-arrow-color': 'data(color)', 'source-arrow-color': 'data(color)', 'target-arrow-shape': 'triangle', 'curve-style': 'data(curve)', 'taxi-direction': 'horizontal' } },
    // The hub's end of a hub-and-spoke dependency is a dot; a request path is arrows all along.
    { selector: 'edge.hub_and_spoke', style: { 'source-arrow-shape': 'circle' } },
    { selector: 'edge.hypervisor, edge.container_runtime', style: { 'line-style': 'dotted', width: lod.edge * 1.3, 'line-color': '#a855f7' } },
    { selector: 'edge.container_runtime', style: { 'line-color': '#0ea5e9' } },
    { selector: 'edge.physical_link', style: { width: lod.edge * 2, 'line-color': '#0f172a' } },
    { selector: 'edge.physical_link.forwarding_table', style: { width: lod.edge * 1.4, 'line-color': '#475569', 'line-style': 'dashed' } },
    // A dependency's name: on hover, when it is selected, and around a selected host.
    { selector: 'edge.dependency.named, edge.dependency.hovered', style: { label: 'data(name)', 'font-size': lod.font, color: '#0f172a', 'text-background-color': '#ffffff', 'text-background-opacity': 0.9, 'text-background-padding': 2, 'text-rotation': 'none', width: lod.edge * 2.6, 'z-index': 30 } },
    // Around a selected host: the name at the host's end, moved along the edge by half its width (and a bit) so it clears the host's box.
    ...(['source', 'target'] as const).map((end) => ({ selector: `edge.dependency.named-${end}`, style: {
      [`${end}-label`]: 'data(name)', [`${end}-text-offset`]: (e: any) => String(e.data('name')).length * lod.font * 0.33 + lod.font,
      'font-size': lod.font, color: '#0f172a', 'text-background-color': '#ffffff', 'text-background-opacity': 0.9, 'text-background-padding': 2, 'text-rotation': 'none', width: lod.edge * 2.6, 'z-index': 30,
    } })),
    { selector: '.absent', style: { opacity: 0, events: 'no' } },
    { selector: '.filtered', style: { opacity: 0.08, events: 'no', label: '' } },
    { selector: '.added', style: { 'border-color': '#16a34a', 'background-color': '#dcfce7', 'line-color': '#16a34a', 'border-width': 3 } },
    { selector: '.removed', style: { 'border-color': '#dc2626', 'background-color': '#fee2e2', 'line-color': '#dc2626', 'line-style': 'dashed', 'border-width': 3, 'border-style': 'dashed' } },
    { selector: '.changed', style: { 'border-color': '#d97706', 'background-color': '#fef3c7', 'line-color': '#d97706', 'border-width': 3 } },
    { selector: '.dimmed', style: { opacity: 0.18 } },
  ];
}

/**
 * What only the screen shows, left out of an export: the selection and what it dims, the search's
 * matches, a dependency's name on hover or around a selected host.
 */
const ON_SCREEN_ONLY = /:selected|\.dimmed|\.highlighted|\.match|\.named|\.hovered/;
/** The map's stylesheet at 100 % (names, addresses and services) without what only the screen shows: what an export draws. */
const exportStylesheet = () => stylesheet(levelOfDetail(1)).filter((rule) => !ON_SCREEN_ONLY.test(rule.selector));
/** Classes of the containers' HTML boxes that only the screen shows (their look is read without them). */
const BOX_ON_SCREEN_ONLY = ['dimmed', 'highlighted', 'match'];

/** An element's icon: its host's kind, or a service's logo. */
function iconOf(n: GraphNode): string | undefined {
  if (n.kind === 'service') return serviceLogo(n.service_definition as string | undefined);
  return kindIcon(n.host_kind);
}

export interface DrawnNode { x: number; y: number; screenX: number; screenY: number; screenWidth?: number; screenHeight?: number; classes: string[]; kind?: string; label?: string; fontPx?: number }

/** Classes the screen sets (mark) that a redrawing keeps. */
const MARKS = ['pinned', 'added', 'removed', 'changed', 'absent', 'highlighted', 'dimmed', 'match', 'filtered'];

export class MapRenderer {
  readonly cy: Core;
  private containers = new Set<string>();
  private marked = new Set<string>();
  /** The HTML boxes of the containers, under the canvas, and their titles, over it, by node id. */
  private boxes = new Map<string, HTMLElement>();
  private titles = new Map<string, HTMLElement>();
  /** What each title is made of, to shorten it to its box's width on screen at every zoom. */
  private titled = new Map<string, { node: GraphNode; children: GraphNode[]; width: number; icon: boolean }>();
  private readonly layer: HTMLElement;
  private readonly titleLayer: HTMLElement;
  private positions: Record<string, Box> = {};
  private lod: Lod = levelOfDetail(1);
  private restyle = 0;
  private clear?: HTMLElement;

  constructor(host: HTMLElement, private events: RendererEvents) {
    this.layer = document.createElement('div');
    this.layer.className = 'container-layer';
    const under = document.createElement('div');
    under.className = 'container-viewport';
    under.appendChild(this.layer);
    const surface = document.createElement('div');
    surface.className = 'graph-surface';
    this.titleLayer = document.createElement('div');
    this.titleLayer.className = 'container-layer title-layer';
    const over = document.createElement('div');
    over.className = 'container-viewport';
    over.appendChild(this.titleLayer);
    host.append(under, surface, over);
    this.cy = cytoscape({
      container: surface, style: stylesheet(this.lod), layout: { name: 'preset' }, minZoom: 0.02, maxZoom: 4, boxSelectionEnabled: false, autoungrabify: false,
      // Large maps stay fluid while panning and zooming: a snapshot of the view moves, edges hide.
      hideEdgesOnViewport: true, motionBlur: false,
      // Cytoscape's WebGL renderer, for machines with a GPU; measured 3-7× slower than the canvas in
      // headless Chromium's software GL (bench/README.md), so only when asked for.
      ...(localStorage.getItem('netinventory.renderer') === 'webgl' ? { webgl: true } : {}),
    });
    this.cy.on('viewport', () => this.followViewport());
    this.cy.on('tap', 'node.element', (e) => this.events.select(e.target.id()));
    // A summary of quiet hosts opens in place with one click (it is nothing to select).
    this.cy.on('tap', 'node.summary', (e) => this.events.toggle(e.target.id()));
    this.cy.on('tap', (e) => { if (e.target === this.cy) this.events.select(null); });
    // A dependency: its name on hover; a tap names every edge of it until something else is tapped.
    this.cy.on('mouseover', 'edge.dependency', (e) => e.target.addClass('hovered'));
    this.cy.on('mouseout', 'edge.dependency', (e) => e.target.removeClass('hovered'));
    this.cy.on('tap', 'edge.dependency', (e) => this.nameDependency(e.target.data('dependencyId')));
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
   * `fit`: the viewport fits the whole drawing (a first drawing always does).
   */
  setGraph(nodes: GraphNode[], edges: GraphEdge[], positions: Record<string, Box>, fit = false) {
    this.positions = positions;
    const childrenOf = new Map<string, GraphNode[]>();
    for (const n of nodes) if (n.parent_id) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n);
    const parents = new Set(childrenOf.keys());
    this.containers = parents;
    const known = new Set(nodes.map((n) => n.id));
    const defs: ElementDefinition[] = [];
    for (const n of nodes) {
      const box = positions[n.id];
      const isParent = parents.has(n.id);
      const labels = isParent ? { name: '', mid: '', full: '', whole: '' } : { ...labelsOf(n), whole: exportLabelOf(n) };
      const icon = isParent ? undefined : iconOf(n);
      const w = box?.width || 140;
      const data: Record<string, unknown> = {
        id: n.id, ...labels, icon, kind: n.kind, hostKind: n.host_kind, parentId: n.parent_id && known.has(n.parent_id) ? n.parent_id : '',
        w, h: box?.height || 40, textWidth: Math.max(40, w - 12),
        color: n.color ? COLORS[n.color] ?? '#64748b' : '#64748b',
      };
      const classes = [isParent ? 'container' : 'element', n.kind === 'collapsed' ? 'collapsed' : '', n.kind === 'summary' ? 'collapsed summary' : '', n.kind === 'ghost' ? 'ghost' : '', n.offline ? 'offline' : '', n.new ? 'new' : '', n.kind === 'host' && !isParent ? 'host-node' : '', n.kind === 'tag' ? 'tag' : '', n.services?.length ? 'has-services' : '', icon ? 'has-icon' : ''].filter(Boolean).join(' ');
      defs.push({ group: 'nodes', data, classes, position: box ? { x: box.x + box.width / 2, y: box.y + box.height / 2 } : undefined });
    }
    for (const e of edges) {
      if (!known.has(e.source) || !known.has(e.target)) continue;
      const dependency = e.kind === 'request_path' || e.kind === 'hub_and_spoke';
      defs.push({
        group: 'edges',
        data: { id: e.id, source: e.source, target: e.target, color: COLORS[e.color ?? ''] ?? '#3b82f6', curve: curveOf(e.edge_style), name: e.label ?? '', dependencyId: e.dependency_id ?? '' },
        classes: [dependency ? 'dependency' : '', e.kind, e.evidence ?? '', e.source.startsWith('ghost:') || e.target.startsWith('ghost:') ? 'to-ghost' : ''].filter(Boolean).join(' '),
      });
    }
    const containers = nodes.filter((n) => parents.has(n.id));
    // Another drawing altogether (another view): it is fitted, like a first one.
    const drawn = this.cy.nodes();
    const kept = drawn.empty() ? 0 : nodes.reduce((k, n) => k + (drawn.getElementById(n.id).empty() ? 0 : 1), 0);
    if (drawn.empty() || fit || kept < nodes.length / 2) this.fitTo(Object.values(positions), true);
    if (this.cy.elements().empty()) {
      // A first drawing: the viewport that fits it and the style of that zoom set before anything is
      // drawn (the first frame is the last), then every element in one call (added one by one, each
      // is styled on its own).
      this.applyLevelOfDetail(true);
      this.drawBoxes(containers, childrenOf, positions);
      this.cy.add(defs);
      return;
    }
    this.drawBoxes(containers, childrenOf, positions);
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
        el.classes([d.classes ?? '', ...MARKS.filter((c) => el.hasClass(c))].join(' '));
        if (d.position) {
          const p = el.position();
          if (p.x !== d.position.x || p.y !== d.position.y) el.position(d.position);
        }
      }
    });
  }

  /** The containers' boxes (under the canvas) and titles (over it), in the graph's coordinates (followViewport scales them). */
  private drawBoxes(containers: GraphNode[], childrenOf: Map<string, GraphNode[]>, positions: Record<string, Box>) {
    const keep = new Set(containers.map((c) => c.id));
    for (const [id, el] of this.boxes) if (!keep.has(id)) { el.remove(); this.boxes.delete(id); this.titles.get(id)?.remove(); this.titles.delete(id); }
    for (const c of containers) {
      const box = positions[c.id];
      let el = this.boxes.get(c.id);
      let title = this.titles.get(c.id);
      if (!el || !title) {
        el = document.createElement('div');
        el.dataset.nodeId = c.id;
        el.dataset.kind = c.kind;
        el.className = `box box-${c.kind}`;
        this.layer.appendChild(el);
        this.boxes.set(c.id, el);
        title = document.createElement('div');
        title.dataset.nodeId = c.id;
        title.className = 'box-title';
        this.titleLayer.appendChild(title);
        this.titles.set(c.id, title);
      }
      const text = containerTitle(c, childrenOf.get(c.id) ?? []);
      const icon = kindIcon(c.host_kind);
      title.replaceChildren();
      if (icon) title.appendChild(Object.assign(document.createElement('img'), { src: icon, alt: '' }));
      title.appendChild(document.createTextNode(text));
      // The whole title stays a tooltip when a shorter one is drawn (fitTitles).
      title.title = text;
      this.titled.set(c.id, { node: c, children: childrenOf.get(c.id) ?? [], width: box?.width ?? 0, icon: !!icon });
      if (c.color) el.style.borderColor = COLORS[c.color] ?? '';
      el.hidden = title.hidden = !box;
      if (box) {
        Object.assign(el.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px`, height: `${box.height}px` });
        Object.assign(title.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px` });
      }
    }
    for (const id of this.titled.keys()) if (!keep.has(id)) this.titled.delete(id);
    this.followViewport();
    this.fitTitles();
  }

  /** Each title as long as reads whole in its box at this zoom (titleThatFits). */
  private fitTitles() {
    const zoom = this.cy.zoom();
    for (const [id, t] of this.titled) {
      const text = this.titles.get(id)?.lastChild;
      if (text) text.textContent = titleThatFits(t.node, t.children, t.width * zoom, t.icon ? 20 : 0);
    }
  }

  private followViewport() {
    const pan = this.cy.pan();
    const zoom = this.cy.zoom();
    for (const layer of [this.layer, this.titleLayer]) {
      layer.style.transform = `translate(${pan.x}px, ${pan.y}px) scale(${zoom})`;
      // Titles and borders keep their size on screen (styles.css divides by it).
      layer.style.setProperty('--zoom', String(zoom));
    }
    this.applyLevelOfDetail();
  }

  /** Restyles the drawing when the zoom crosses a step of levelOfDetail (once the zoom settles; at once on a first drawing). */
  private applyLevelOfDetail(now = false) {
    const lod = levelOfDetail(this.cy.zoom());
    if (lod.step === this.lod.step) return;
    const apply = () => {
      const latest = levelOfDetail(this.cy.zoom());
      if (latest.step === this.lod.step) return;
      this.lod = latest;
      this.cy.style().fromJson(stylesheet(latest)).update();
      this.fitTitles();
    };
    window.clearTimeout(this.restyle);
    if (now) apply();
    else this.restyle = window.setTimeout(apply, 60);
  }

  private containerAt(p: { x: number; y: number }): string | undefined {
    for (const [id, el] of this.boxes) {
      const [x, y, w, h] = [el.style.left, el.style.top, el.style.width, el.style.height].map((v) => parseFloat(v));
      if (!el.hidden && p.x >= x! && p.x <= x! + w! && p.y >= y! && p.y <= y! + h!) return id;
    }
    return undefined;
  }

  /** Extra classes per element id (pinned, marks of a diff, absent at an instant, highlighted, filtered…), replacing the previous ones. */
  mark(classes: Map<string, string[]>) {
    for (const [id, el] of this.boxes) {
      const cls = classes.get(id) ?? [];
      el.className = ['box', `box-${el.dataset.kind}`, ...cls].join(' ');
      this.titles.get(id)!.className = ['box-title', ...cls].join(' ');
    }
    this.cy.batch(() => {
      // Only what changes: a class set anew on every element restyles the whole map.
      for (const id of this.marked) if (!classes.has(id)) this.cy.getElementById(id).removeClass(MARKS.join(' '));
      for (const [id, cls] of classes) {
        const el = this.cy.getElementById(id);
        const stale = MARKS.filter((c) => !cls.includes(c) && el.hasClass(c));
        if (stale.length) el.removeClass(stale.join(' '));
        const fresh = cls.filter((c) => !el.hasClass(c));
        if (fresh.length) el.addClass(fresh.join(' '));
      }
    });
    this.marked = new Set(classes.keys());
  }

  /**
   * The elements around these nodes: themselves, their edges and the nodes at the other ends (the
   * containers they are in too), to emphasise while the rest is dimmed.
   */
  neighbourhood(nodeIds: string[]): Set<string> {
    let els = this.cy.collection();
    for (const id of nodeIds) els = els.union(this.cy.getElementById(id));
    const around = els.closedNeighborhood();
    const out = new Set(around.map((el) => el.id()));
    around.nodes().forEach((n) => { if (n.data('parentId')) out.add(n.data('parentId')); });
    return out;
  }

  /** Every edge of this dependency shows its name (null: none does); `also`: the ones named stay named. */
  nameDependency(dependencyId: string | null, also = false) {
    this.cy.batch(() => {
      if (!also) this.cy.edges('.named').removeClass('named');
      if (dependencyId) this.cy.edges('.dependency').filter((e) => e.data('dependencyId') === dependencyId).addClass('named');
    });
  }

  /** These edges show their dependency's name at one end (dependencyNamesAt); the others at none. */
  nameEnds(ends: Array<{ edgeId: string; end: 'source' | 'target' }>) {
    this.cy.batch(() => {
      this.cy.edges('.named-source, .named-target').removeClass('named-source named-target');
      for (const x of ends) this.cy.getElementById(x.edgeId).addClass(`named-${x.end}`);
    });
  }

  focus(nodeIds: string[]) {
    let els = this.cy.collection();
    for (const id of nodeIds) els = els.union(this.cy.getElementById(id));
    if (els.empty()) return;
    // Centred, at a zoom where its label reads (not the whole canvas for one small node), in the
    // canvas as it is now (a panel opened beside or below it).
    this.cy.stop();
    this.cy.resize();
    this.cy.animate({ center: { eles: els }, zoom: Math.min(1.6, Math.max(this.cy.zoom(), 1.1)), duration: 300 });
  }

  /** An element's box corner as the API keeps it (the renderer positions by centre). */
  topLeft(id: string): { x: number; y: number } {
    const n = this.cy.getElementById(id);
    const p = n.position();
    return { x: p.x - Number(n.data('w')) / 2, y: p.y - Number(n.data('h')) / 2 };
  }

  /**
   * What is drawn, by element id: model and on-screen positions, classes, and for nodes the label
   * drawn ('' when none) and its size on screen in CSS px (for tests and tools).
   */
  snapshot(): Record<string, DrawnNode> {
    const out: Record<string, DrawnNode> = {};
    const box = (this.cy.container() as HTMLElement).getBoundingClientRect();
    const zoom = this.cy.zoom();
    this.cy.nodes().forEach((n) => {
      const p = n.position();
      const r = n.renderedPosition();
      const label = String(n.style('label') ?? '');
      out[n.id()] = {
        x: p.x, y: p.y, screenX: box.left + r.x, screenY: box.top + r.y, screenWidth: Number(n.data('w')) * zoom, screenHeight: Number(n.data('h')) * zoom, classes: n.classes() as unknown as string[],
        kind: n.data('kind'), label, fontPx: label ? parseFloat(n.style('font-size')) * zoom : 0,
      };
    });
    this.cy.edges().forEach((e) => { out[e.id()] = { x: 0, y: 0, screenX: 0, screenY: 0, classes: e.classes() as unknown as string[], label: String(e.style('label') || e.style('source-label') || e.style('target-label') || '') }; });
    return out;
  }

  /** The containers' titles as drawn: text and size on screen in CSS px (for tests and tools). */
  titleSnapshot(): Array<{ id: string; text: string; fontPx: number; hidden: boolean }> {
    const zoom = this.cy.zoom();
    return [...this.titles].map(([id, el]) => ({ id, text: el.textContent ?? '', fontPx: parseFloat(getComputedStyle(el).fontSize) * zoom, hidden: el.hidden === true }));
  }

  /** The canvas's centre on screen (for tests: is a node centred?). */
  centre(): { x: number; y: number } {
    const box = (this.cy.container() as HTMLElement).getBoundingClientRect();
    return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
  }

  /**
   * The viewport that shows these boxes whole, in the canvas minus what covers it (the legend in a
   * corner: the canvas left of it or above it, whichever draws larger). `readable`: on a narrow
   * canvas (a phone) where that zoom draws no name, the drawing's top-left at a zoom where names
   * read instead (Fit shows it all).
   */
  private fitTo(boxes: Box[], readable = false, padding = 30) {
    if (!boxes.length) return;
    const x1 = Math.min(...boxes.map((b) => b.x)), y1 = Math.min(...boxes.map((b) => b.y));
    const x2 = Math.max(...boxes.map((b) => b.x + b.width)), y2 = Math.max(...boxes.map((b) => b.y + b.height));
    const zoomIn = (a: Area) => Math.min(2, Math.max(0.02, Math.min(Math.max(1, a.w - 2 * padding) / Math.max(1, x2 - x1), Math.max(1, a.h - 2 * padding) / Math.max(1, y2 - y1))));
    const area = this.freeAreas().reduce((best, a) => (zoomIn(a) > zoomIn(best) ? a : best));
    const zoom = zoomIn(area);
    if (readable && this.cy.width() < NARROW_CANVAS && levelOfDetail(zoom).level < 1) {
      this.cy.viewport({ zoom: READABLE_ZOOM, pan: { x: padding - x1 * READABLE_ZOOM, y: padding - y1 * READABLE_ZOOM } });
      return;
    }
    this.cy.viewport({ zoom, pan: { x: area.x + (area.w - (x2 - x1) * zoom) / 2 - x1 * zoom, y: area.y + (area.h - (y2 - y1) * zoom) / 2 - y1 * zoom } });
  }

  /** The parts of the canvas a fit may use (canvas px): all of it, or beside and above what keeps clear (the open legend). */
  private freeAreas(): Area[] {
    const all = { x: 0, y: 0, w: this.cy.width(), h: this.cy.height() };
    const r = this.clear?.getBoundingClientRect();
    if (!r || !r.width || !r.height) return [all];
    const c = (this.cy.container() as HTMLElement).getBoundingClientRect();
    return [{ ...all, w: Math.max(1, r.left - c.left) }, { ...all, h: Math.max(1, r.top - c.top) }];
  }

  /** An element over the canvas (the legend, in its bottom-right corner) that a fit leaves uncovered. */
  keepClear(el: HTMLElement) {
    this.clear = el;
  }

  /** The middle of the part of the canvas a fit uses, on screen (for tests: is the drawing centred there?). */
  fitCentre(): { x: number; y: number } {
    const boxes = Object.values(this.positions);
    const c = (this.cy.container() as HTMLElement).getBoundingClientRect();
    if (!boxes.length) return this.centre();
    const x1 = Math.min(...boxes.map((b) => b.x)), y1 = Math.min(...boxes.map((b) => b.y));
    const x2 = Math.max(...boxes.map((b) => b.x + b.width)), y2 = Math.max(...boxes.map((b) => b.y + b.height));
    const zoomIn = (a: Area) => Math.min((a.w - 60) / Math.max(1, x2 - x1), (a.h - 60) / Math.max(1, y2 - y1));
    const a = this.freeAreas().reduce((best, x) => (zoomIn(x) > zoomIn(best) ? x : best));
    return { x: c.left + a.x + a.w / 2, y: c.top + a.y + a.h / 2 };
  }

  /** The whole drawing in the canvas, at the zoom that shows all of it (every view: boxes as the API placed them). */
  fit() {
    this.cy.stop();
    this.cy.resize(); // the canvas may have changed size (a panel opened, a phone turned)
    this.fitTo(Object.values(this.positions));
  }

  zoomBy(factor: number) {
    this.cy.zoom({ level: this.cy.zoom() * factor, renderedPosition: { x: this.cy.width() / 2, y: this.cy.height() / 2 } });
  }

  /**
   * What is drawn, for an export: every container box, edge and element shown (not those absent at
   * the history's instant or folded away), as the map draws them at 100 % (levelOfDetail(1)) and
   * without what only the screen shows (selection, search, hover); labels and titles whole. The
   * stylesheet is swapped for the reading and back before the next frame, so nothing flickers.
   */
  exportDrawing(): ExportDrawing {
    const lod = levelOfDetail(1);
    const cy = this.cy;
    cy.style().fromJson(exportStylesheet()).update();
    try {
      const containers: ExportContainer[] = [];
      const shown = new Set<string>();
      for (const [id, el] of this.boxes) {
        if (el.hidden || el.classList.contains('absent')) continue;
        const titled = this.titled.get(id);
        const onScreen = BOX_ON_SCREEN_ONLY.filter((c) => el.classList.contains(c));
        el.classList.remove(...onScreen);
        const css = getComputedStyle(el);
        const look = { fill: css.backgroundColor, stroke: css.borderTopColor, dashed: css.borderTopStyle === 'dashed' };
        el.classList.add(...onScreen);
        const [x, y, w, h] = [el.style.left, el.style.top, el.style.width, el.style.height].map((v) => parseFloat(v));
        containers.push({
          id, x: x!, y: y!, width: w!, height: h!, title: titled ? containerTitle(titled.node, titled.children) : '', icon: titled ? kindIcon(titled.node.host_kind) : undefined,
          ...look, strokeWidth: ['added', 'removed', 'changed'].some((c) => el.classList.contains(c)) ? 3 : 1, opacity: 1,
        });
        shown.add(id);
      }
      const nodes: ExportNode[] = [];
      cy.nodes().forEach((n) => {
        const opacity = Number(n.style('opacity'));
        if (n.hasClass('container') || !opacity || n.style('display') === 'none' || n.style('visibility') === 'hidden') return;
        const p = n.position();
        const [w, h] = [Number(n.data('w')), Number(n.data('h'))];
        nodes.push({
          id: n.id(), x: p.x - w / 2, y: p.y - h / 2, width: w, height: h,
          // Whole, whatever the zoom on screen; none where the map draws none (dimmed out by a tag filter).
          text: n.hasClass('filtered') ? '' : String(n.data('whole') ?? ''), fontPx: lod.font,
          bold: /bold|[6-9]00/.test(String(n.style('font-weight'))), italic: n.style('font-style') === 'italic', textColor: String(n.style('color')),
          fill: String(n.style('background-color')), stroke: String(n.style('border-color')), strokeWidth: parseFloat(String(n.style('border-width'))) || 0,
          borderStyle: String(n.style('border-style')), opacity, icon: n.hasClass('has-icon') ? String(n.data('icon')) : undefined, iconPx: lod.icon,
        });
        shown.add(n.id());
      });
      const edges: ExportEdge[] = [];
      cy.edges().forEach((e) => {
        const opacity = Number(e.style('opacity'));
        const [source, target] = [e.data('source') as string, e.data('target') as string];
        // An edge to something not shown (an element of a folded container) is left out with it.
        if (!opacity || e.style('display') === 'none' || !shown.has(source) || !shown.has(target)) return;
        const segments = e.segmentPoints();
        const controls = e.controlPoints();
        const arrow = (end: 'source' | 'target') => {
          const shape = String(e.style(`${end}-arrow-shape`));
          return shape === 'triangle' || shape === 'circle' ? shape : undefined;
        };
        const line = String(e.style('line-style'));
        edges.push({
          id: e.id(), source, target, start: e.sourceEndpoint(), end: e.targetEndpoint(), via: segments ?? controls ?? [],
          curve: segments ? 'segments' : controls ? 'bezier' : 'straight',
          color: String(e.style('line-color')), width: parseFloat(String(e.style('width'))) || 1, dash: line === 'dashed' || line === 'dotted' ? line : undefined, opacity,
          sourceArrow: arrow('source'), targetArrow: arrow('target'), arrowColor: String(e.style('target-arrow-color')),
        });
      });
      return { containers, nodes, edges };
    } finally {
      cy.style().fromJson(stylesheet(this.lod)).update();
    }
  }

  destroy() {
    window.clearTimeout(this.restyle);
    this.cy.destroy();
  }
}
