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
// the canvas, counter-scaled the same way. Every label and title is drawn whole or not at all
// (at Fit names were cut: "traefik · do…"): the most it may say at the zoom that fits its box, measured
// as the canvas draws it (TextMeasure), else nothing. A container one of whose elements cannot be
// named at the zoom is drawn as a card instead: its title and what it holds (how many, of which
// kinds, offline, new) over its box, its elements hidden under it; a tap opens it in place (the zoom
// where they read, centred on it). However few its elements: a host narrower than its one service's
// name (workloads' pve-01 and its proxmox) is a card too. What a zoom shows is named or counted,
// never a box without a name. In l2, the hosts hanging off a switch's ports are each a small
// container of one port: when one of them cannot be named, the switch and those hosts are drawn as
// one card over them all (so such a host is not a card of its own).
// Exports (exportDrawing) take what is drawn at the map's 100 % instead, labels whole: the SVG,
// PNG and draw.io writers (exportSvg.ts, exportDrawio.ts) are given that.
import cytoscape, { type Core, type ElementDefinition } from 'cytoscape';
import { COLORS, blockCardLines, blocksOf, containerCardLines, containerTitle, curveOf, exportLabelOf, groupCardLines, hangingHosts, labelVariants, levelOfDetail, titleThatFits, type Box, type GraphEdge, type GraphNode } from './mapState.js';
import './mapRenderer.css';
import { drawnImage, kindIcon, serviceLogo } from './icons.js';
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
/** Cytoscape's font (its default), which labels are measured in. */
const NODE_FONT = 'Helvetica Neue, Helvetica, sans-serif';
/** Room left in a box for its label (CSS px of the graph at 100 %): its padding, and the icon's. */
const labelRoom = (w: number, lod: Lod, icon: boolean) => (icon ? w - lod.icon - 12 : w - 12);
/** Canvas text measurement and the font it is drawn in differ by a little: a label must fit with this to spare. */
const MEASURE_SLACK = 1.04;
/** The least height on screen (CSS px) of a card holding one line: 12 px at 1.2 and 1 px of padding at the top (mapRenderer.css: .slim). */
const SLIM_CARD_PX = 17;

/** Text widths as a canvas draws them (Cytoscape measures its labels so), per font, cached. */
class TextMeasure {
  private readonly ctx = document.createElement('canvas').getContext('2d')!;
  private readonly cache = new Map<string, number>();
  /** The width of `text` in a font of `px` (`style`: CSS font style and weight, e.g. "italic normal"). */
  width(text: string, px: number, style = 'normal normal', family = NODE_FONT): number {
    const key = `${style}|${family}|${text}`;
    let w = this.cache.get(key);
    if (w === undefined) {
      this.ctx.font = `${style} 100px ${family}`;
      w = this.ctx.measureText(text).width / 100;
      this.cache.set(key, w);
    }
    return w * px;
  }
}

/**
 * The stylesheet at a level of detail (sizes in the graph's units, constant on screen). `label`: the
 * label each element draws at it (whole, or '': MapRenderer.labelAt); never wrapped or cut here.
 */
function stylesheet(lod: Lod, label: (n: any) => string): any[] {
  const text = { 'font-size': lod.font, 'text-max-width': 100_000, 'text-wrap': 'wrap' };
  return [
    { selector: 'node', style: { 'z-index': 10, label, ...text, 'text-valign': 'center', 'text-halign': 'center', width: 'data(w)', height: 'data(h)', shape: 'round-rectangle', 'background-color': '#eef2ff', 'border-width': 1, 'border-color': '#6366f1', color: '#1e1b4b', 'line-height': 1.15 } },
    { selector: 'node.has-icon', style: {
      'background-image': 'data(image)', 'background-fit': 'none', 'background-clip': 'none', 'background-width': lod.icon, 'background-height': lod.icon,
      'background-position-x': 4, 'background-position-y': '50%', 'background-image-containment': 'over',
      'text-margin-x': lod.icon / 2,
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
    // Routed around the boxes by the layout (its bends relative to the ends' centres: routeStyle), or
    // straight where a straight line crosses no box.
    { selector: 'edge.routed', style: { 'curve-style': 'segments', 'edge-distances': 'node-position', 'segment-weights': (e: any) => e.data('ws'), 'segment-distances': (e: any) => e.data('ds') } },
    { selector: 'edge.routed-straight', style: { 'curve-style': 'straight' } },
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
    // Under a container drawn as a card (its HTML title covers them): nothing to see or tap.
    { selector: '.in-card', style: { opacity: 0, events: 'no', label: '' } },
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
const ON_SCREEN_ONLY = /:selected|\.dimmed|\.highlighted|\.match|\.named|\.hovered|\.in-card/;
/** The map's stylesheet at 100 % (names, addresses and services) without what only the screen shows: what an export draws (each element's whole label, data 'whole'). */
const exportStylesheet = () => stylesheet(levelOfDetail(1), (n) => String(n.data('whole') ?? '')).filter((rule) => !ON_SCREEN_ONLY.test(rule.selector));
/** Classes of the containers' HTML boxes that only the screen shows (their look is read without them). */
const BOX_ON_SCREEN_ONLY = ['dimmed', 'highlighted', 'match'];

/** An element's icon: its host's kind, or a service's logo. */
function iconOf(n: GraphNode): string | undefined {
  if (n.kind === 'service') return serviceLogo(n.service_definition as string | undefined);
  return kindIcon(n.host_kind);
}

export interface DrawnNode {
  x: number; y: number; screenX: number; screenY: number; screenWidth?: number; screenHeight?: number; classes: string[]; kind?: string; label?: string; fontPx?: number;
  /** The container it is drawn in. */
  parent?: string;
  /** Where its label is drawn, on screen (CSS px: left, top, right, bottom). */
  labelBox?: { x1: number; y1: number; x2: number; y2: number };
  /** A container drawn as a card: the lines it shows under its title. */
  card?: string[];
  /** An edge: its line on screen (CSS px), from its source's border through its bends to its target's. */
  screenPoints?: Array<{ x: number; y: number }>;
  /** An edge not seen (hidden, transparent, or an end is). */
  hidden?: boolean;
  source?: string; target?: string;
}

interface Point { x: number; y: number }

/**
 * How an edge follows its route (the layout's bend points, absolute): Cytoscape's segments, each
 * bend as a weight along the line between the ends' centres and a distance across it
 * ('edge-distances: node-position'). A route made for where its ends no longer are (a node pinned
 * elsewhere: its first bend is not level with the source's centre, or its last with the target's)
 * is not followed: the edge is drawn as its kind draws it. No route: likewise. [] : straight.
 */
export function routeStyle(source: Box | undefined, target: Box | undefined, route: Point[] | undefined): { class: string; ws?: string; ds?: string } | undefined {
  if (!source || !target || !route) return undefined;
  const S = { x: source.x + source.width / 2, y: source.y + source.height / 2 };
  const T = { x: target.x + target.width / 2, y: target.y + target.height / 2 };
  if (!route.length) return { class: 'routed-straight' };
  const level = (p: Point, c: Point) => Math.abs(p.x - c.x) < 0.5 || Math.abs(p.y - c.y) < 0.5;
  const [dx, dy] = [T.x - S.x, T.y - S.y];
  const l2 = dx * dx + dy * dy;
  if (!level(route[0]!, S) || !level(route[route.length - 1]!, T) || l2 < 1) return undefined;
  const l = Math.sqrt(l2);
  const ws = route.map((p) => ((p.x - S.x) * dx + (p.y - S.y) * dy) / l2);
  const ds = route.map((p) => ((p.x - S.x) * -dy + (p.y - S.y) * dx) / l);
  const text = (v: number[]) => v.map((x) => String(Math.round(x * 1e6) / 1e6)).join(' ');
  return { class: 'routed', ws: text(ws), ds: text(ds) };
}

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
  private titled = new Map<string, { node: GraphNode; children: GraphNode[]; width: number; height: number; icon: boolean }>();
  /** Containers drawn as cards at this zoom, with the lines each shows. */
  private cards = new Map<string, string[]>();
  /** l2: the hosts hanging off a switch's ports (linked to it and nothing else), by the switch's id (hangingHosts). */
  private groups = new Map<string, string[]>();
  /** Switches drawn at this zoom as one card with their hanging hosts: the card's box (graph units). */
  private groupCards = new Map<string, Box>();
  /** Blocks of boxes too small for their names drawn as one card, by the id of the box that draws it: all their ids. */
  private blocks = new Map<string, string[]>();
  /** What is drawn outside any container, in the order given. */
  private topLevel: string[] = [];
  /** Nodes and edges hidden under a card at this zoom. */
  private underCards = new Set<string>();
  private readonly measure = new TextMeasure();
  /** The titles' font family (the page's), read once drawn. */
  private titleFamily?: string;
  private readonly layer: HTMLElement;
  private readonly titleLayer: HTMLElement;
  private positions: Record<string, Box> = {};
  private lod: Lod = levelOfDetail(1);
  private restyle = 0;
  private clear?: HTMLElement;
  /** The viewport the last fit set (and whether it was the readable one): while nobody moves it, a canvas that changes size is fitted again. */
  private fitted?: { zoom: number; x: number; y: number; readable: boolean };
  private readonly resizes: ResizeObserver;

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
      container: surface, style: stylesheet(this.lod, this.labelFor(this.lod)), layout: { name: 'preset' }, minZoom: 0.02, maxZoom: 4, boxSelectionEnabled: false, autoungrabify: false,
      // Large maps stay fluid while panning and zooming: a snapshot of the view moves, edges hide.
      hideEdgesOnViewport: true, motionBlur: false,
      // Cytoscape's WebGL renderer, for machines with a GPU; measured 3-7× slower than the canvas in
      // headless Chromium's software GL (bench/README.md), so only when asked for.
      ...(localStorage.getItem('netinventory.renderer') === 'webgl' ? { webgl: true } : {}),
    });
    this.cy.on('viewport', () => this.followViewport());
    // The canvas changes size when a bar or notice above it appears, a panel opens, a phone turns:
    // a drawing still as Fit left it is fitted to the new size (Cytoscape only resizes, the pan stays).
    this.resizes = new ResizeObserver(() => this.refitIfFitted());
    this.resizes.observe(surface);
    this.cy.on('tap', 'node.element', (e) => this.events.select(e.target.id()));
    // A summary of quiet hosts opens in place with one click (it is nothing to select).
    this.cy.on('tap', 'node.summary', (e) => this.events.toggle(e.target.id()));
    this.cy.on('tap', (e) => {
      // A card opens in place: the zoom where its elements are named, centred on it. (A container's
      // own node lies under its box, invisible: a tap there is on the container too.)
      const container = e.target === this.cy ? this.containerAt(e.position) : e.target.hasClass('container') ? e.target.id() as string : undefined;
      if (container && this.cards.has(container)) this.openCard(container, e.position);
      else if (e.target === this.cy) this.events.select(null);
    });
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
    // A route was made for where the node was: while it moves, its edges are drawn as their kind
    // draws them unrouted (straight, or at right angles for a dependency so styled); the pinned
    // position's next answer keeps them so (routeStyle), until a new layout routes them again.
    this.cy.on('drag', 'node', (e) => e.target.connectedEdges().removeClass('routed routed-straight'));
  }

  /**
   * Shows these nodes and edges at these positions (top-left boxes, as the API gives them). Elements
   * already drawn are updated in place, so nothing the user sees moves unless its position changed.
   * `fit`: the viewport fits the whole drawing (a first drawing always does).
   */
  setGraph(nodes: GraphNode[], edges: GraphEdge[], positions: Record<string, Box>, fit = false, routes: Record<string, Point[]> = {}) {
    this.positions = positions;
    const childrenOf = new Map<string, GraphNode[]>();
    for (const n of nodes) if (n.parent_id) (childrenOf.get(n.parent_id) ?? childrenOf.set(n.parent_id, []).get(n.parent_id)!).push(n);
    const parents = new Set(childrenOf.keys());
    this.containers = parents;
    this.groups = hangingHosts(nodes, edges, parents);
    this.topLevel = nodes.filter((n) => !n.parent_id || !parents.has(n.parent_id)).map((n) => n.id);
    const known = new Set(nodes.map((n) => n.id));
    const defs: ElementDefinition[] = [];
    for (const n of nodes) {
      const box = positions[n.id];
      const isParent = parents.has(n.id);
      // What its label may say at each level of detail, most first (labelAt draws the first that fits).
      const labels = isParent ? { v1: [], v2: [], v3: [], whole: '' } : { v1: labelVariants(n, 1), v2: labelVariants(n, 2), v3: labelVariants(n, 3), whole: exportLabelOf(n) };
      const icon = isParent ? undefined : iconOf(n);
      const w = box?.width || 140;
      const data: Record<string, unknown> = {
        // icon: its data: URL (what an export embeds); image: the same picture as the canvas draws it (drawnImage).
        id: n.id, ...labels, icon, image: icon && drawnImage(icon), kind: n.kind, hostKind: n.host_kind, parentId: n.parent_id && known.has(n.parent_id) ? n.parent_id : '',
        w, h: box?.height || 40,
        color: n.color ? COLORS[n.color] ?? '#64748b' : '#64748b',
      };
      const classes = [isParent ? 'container' : 'element', n.kind === 'collapsed' ? 'collapsed' : '', n.kind === 'summary' ? 'collapsed summary' : '', n.kind === 'ghost' ? 'ghost' : '', n.offline ? 'offline' : '', n.new ? 'new' : '', n.kind === 'host' && !isParent ? 'host-node' : '', n.kind === 'tag' ? 'tag' : '', n.services?.length ? 'has-services' : '', icon ? 'has-icon' : ''].filter(Boolean).join(' ');
      defs.push({ group: 'nodes', data, classes, position: box ? { x: box.x + box.width / 2, y: box.y + box.height / 2 } : undefined });
    }
    for (const e of edges) {
      if (!known.has(e.source) || !known.has(e.target)) continue;
      const dependency = e.kind === 'request_path' || e.kind === 'hub_and_spoke';
      const routed = routeStyle(positions[e.source], positions[e.target], routes[e.id]);
      defs.push({
        group: 'edges',
        data: { id: e.id, source: e.source, target: e.target, color: COLORS[e.color ?? ''] ?? '#3b82f6', curve: curveOf(e.edge_style), name: e.label ?? '', dependencyId: e.dependency_id ?? '', ws: routed?.ws ?? '', ds: routed?.ds ?? '' },
        classes: [dependency ? 'dependency' : '', e.kind, e.evidence ?? '', e.source.startsWith('ghost:') || e.target.startsWith('ghost:') ? 'to-ghost' : '', routed?.class ?? ''].filter(Boolean).join(' '),
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
      this.fitTitles();
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
    this.fitTitles();
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
      // Its icon and text on one row and, as a card, what it holds under them: set by fitTitles for the zoom.
      const row = document.createElement('div');
      row.className = 'title-row';
      if (icon) row.appendChild(Object.assign(document.createElement('img'), { src: icon, alt: '' }));
      row.appendChild(Object.assign(document.createElement('span'), { className: 'title-text' }));
      title.replaceChildren(row, Object.assign(document.createElement('div'), { className: 'card-lines' }));
      // The whole title stays a tooltip when a shorter one is drawn (fitTitles).
      title.title = text;
      this.titled.set(c.id, { node: c, children: childrenOf.get(c.id) ?? [], width: box?.width ?? 0, height: box?.height ?? 0, icon: !!icon });
      if (c.color) el.style.borderColor = COLORS[c.color] ?? '';
      el.hidden = title.hidden = !box;
      if (box) {
        Object.assign(el.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px`, height: `${box.height}px` });
        Object.assign(title.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px` });
      }
    }
    for (const id of this.titled.keys()) if (!keep.has(id)) this.titled.delete(id);
    this.followViewport();
  }

  /**
   * Each title as long as reads whole in its box at this zoom (titleThatFits), or none; each
   * container one of whose elements cannot be named at this zoom drawn as a card (its lines, each
   * whole or not at all, as many as its box holds), its elements hidden under it; in l2, a switch
   * one of whose hanging hosts cannot be named drawn with them as one card over them all.
   * Measured at the least zoom of the level of detail's step, so nothing grows out of its box before
   * the next restyle.
   */
  private fitTitles() {
    const lod = this.lod;
    const zoom = 1.1 ** (lod.step - 0.5);
    this.titleFamily ??= getComputedStyle(this.titleLayer).fontFamily || 'sans-serif';
    const family = this.titleFamily;
    const titleWidth = (text: string) => this.measure.width(text, 12.5, 'normal 600', family) * MEASURE_SLACK;
    // (A card's first line, its count, is bold.)
    const lineWidth = (text: string, first = false) => this.measure.width(text, 12, first ? 'normal 600' : 'normal 400', family) * MEASURE_SLACK;
    const cards = new Map<string, string[]>();
    /** Its title in a width (screen px): with its icon, else without it (a name is worth more than an icon), else none. */
    const setTitle = (id: string, width: number) => {
      const t = this.titled.get(id)!;
      const el = this.titles.get(id)!;
      const withIcon = t.icon ? titleThatFits(t.node, t.children, width, 20, titleWidth) : '';
      const title = withIcon || titleThatFits(t.node, t.children, width, 0, titleWidth);
      el.querySelector('.title-text')!.textContent = title;
      el.classList.toggle('no-icon', t.icon && !withIcon);
      el.classList.toggle('untitled', !title);
      return title;
    };
    /** A card's lines in its box (screen px): its count first or nothing; then the lines that fit whole, as many as its height holds. */
    const setCard = (id: string, all: string[], width: number, height: number, title: string) => {
      const el = this.titles.get(id)!;
      // Lines of 12 px at 1.35 under a title of 12.5 px, 6 px of padding each side (styles: mapRenderer.css).
      // A card too low for that but not for one line of its own (a row of small boxes): its count, slim.
      const slim = !title && height < 24.2 && height >= SLIM_CARD_PX;
      const room = slim ? 1 : Math.floor((height - (title ? 17 : 0) - 8) / 16.2);
      const drawn = all.length && lineWidth(all[0]!, true) + 12 <= width ? all.filter((l, i) => lineWidth(l, i === 0) + 12 <= width).slice(0, Math.max(0, room)) : [];
      el.classList.toggle('slim', slim && drawn.length > 0);
      el.querySelector<HTMLElement>('.card-lines')!.replaceChildren(...drawn.map((l) => Object.assign(document.createElement('div'), { textContent: l })));
      el.classList.add('card');
      this.boxes.get(id)?.classList.add('carded');
      el.classList.toggle('untitled', !title && !drawn.length);
      cards.set(id, drawn);
    };
    // Where each box is drawn: its own place (a group card moves its switch's box over the group, below).
    for (const id of this.titled.keys()) {
      const box = this.positions[id];
      const [el, title] = [this.boxes.get(id), this.titles.get(id)];
      if (!box || !el || !title) continue;
      Object.assign(el.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px`, height: `${box.height}px` });
      Object.assign(title.style, { left: `${box.x}px`, top: `${box.y}px`, width: `${box.width}px` });
      el.classList.remove('under-card');
      title.classList.remove('under-card');
    }
    // (l2's hanging hosts are carded with their switch, below.)
    const hanging = new Set([...this.groups.values()].flat());
    for (const [id, t] of this.titled) {
      const el = this.titles.get(id);
      if (!el) continue;
      const width = t.width * zoom;
      const title = setTitle(id, width);
      const elements = t.children.filter((c) => !this.containers.has(c.id));
      const named = elements.reduce((k, c) => k + (this.labelAt(this.cy.getElementById(c.id), lod) ? 1 : 0), 0);
      if (named < elements.length && !hanging.has(id)) {
        setCard(id, containerCardLines(t.node, t.children), width, t.height * zoom, title);
        el.style.height = `${t.height}px`;
        continue;
      }
      el.classList.remove('card');
      this.boxes.get(id)?.classList.remove('carded');
      el.querySelector<HTMLElement>('.card-lines')!.replaceChildren();
      el.style.height = '';
    }
    // The elements of a card, hidden under it (and shown again when it opens).
    const hide = new Set<string>();
    for (const id of cards.keys()) for (const c of this.titled.get(id)!.children) hide.add(c.id);
    // l2: a switch one of whose hanging hosts is unnamed, as one card with them over their bounds.
    const groupCards = new Map<string, Box>();
    for (const [head, hosts] of this.groups) {
      const named = hosts.filter((h) => this.titles.get(h)?.classList.contains('untitled') === false).length;
      const t = this.titled.get(head);
      const boxes = [head, ...hosts].map((id) => this.positions[id]).filter((b): b is Box => !!b);
      if (!t || named === hosts.length || !boxes.length) continue;
      const x1 = Math.min(...boxes.map((b) => b.x)), y1 = Math.min(...boxes.map((b) => b.y));
      const bounds = { x: x1, y: y1, width: Math.max(...boxes.map((b) => b.x + b.width)) - x1, height: Math.max(...boxes.map((b) => b.y + b.height)) - y1 };
      const [el, title] = [this.boxes.get(head)!, this.titles.get(head)!];
      Object.assign(el.style, { left: `${bounds.x}px`, top: `${bounds.y}px`, width: `${bounds.width}px`, height: `${bounds.height}px` });
      Object.assign(title.style, { left: `${bounds.x}px`, top: `${bounds.y}px`, width: `${bounds.width}px`, height: `${bounds.height}px` });
      const text = setTitle(head, bounds.width * zoom);
      setCard(head, groupCardLines(t.node, hosts.map((h) => this.titled.get(h)!.node), t.children.filter((c) => !this.containers.has(c.id))), bounds.width * zoom, bounds.height * zoom, text);
      for (const h of hosts) {
        this.boxes.get(h)?.classList.add('under-card');
        this.titles.get(h)?.classList.add('under-card');
        hide.add(h);
        for (const c of this.titled.get(h)?.children ?? []) hide.add(c.id);
      }
      for (const c of t.children) hide.add(c.id);
      groupCards.set(head, bounds);
    }
    // Boxes too small for even their names (a phone at Fit), side by side and row under row: one
    // card over them saying what they hold, not a field of blank boxes.
    const blocks = new Map<string, string[]>();
    const loose = this.topLevel.filter((id) => this.titled.has(id) && this.titles.get(id)?.classList.contains('untitled') && !hanging.has(id) && !groupCards.has(id));
    if (loose.length > 1) {
      const isLoose = new Set(loose);
      const others = this.topLevel.filter((id) => !isLoose.has(id) && !hide.has(id)).map((id) => groupCards.get(id) ?? this.positions[id]).filter((b): b is Box => !!b);
      for (const block of blocksOf(loose, this.positions, others)) {
        const b = block.bounds;
        const lines = blockCardLines(block.ids.map((id) => this.titled.get(id)!.node));
        // Only where it says something: its count whole, on a line of its own.
        if (b.height * zoom < SLIM_CARD_PX || lineWidth(lines[0]!, true) + 12 > b.width * zoom) continue;
        const [head, ...rest] = block.ids as [string, ...string[]];
        const [el, title] = [this.boxes.get(head)!, this.titles.get(head)!];
        const place = { left: `${b.x}px`, top: `${b.y}px`, width: `${b.width}px`, height: `${b.height}px` };
        Object.assign(el.style, place);
        Object.assign(title.style, place);
        title.querySelector('.title-text')!.textContent = '';
        setCard(head, lines, b.width * zoom, b.height * zoom, '');
        for (const id of block.ids) for (const c of this.titled.get(id)!.children) hide.add(c.id);
        for (const id of rest) {
          this.boxes.get(id)?.classList.add('under-card');
          this.titles.get(id)?.classList.add('under-card');
          hide.add(id);
        }
        groupCards.set(head, b);
        blocks.set(head, block.ids);
      }
    }
    this.blocks = blocks;
    // The links under a group card, hidden with it.
    if (groupCards.size) this.cy.edges().forEach((e) => { if (hide.has(e.data('source')) && hide.has(e.data('target'))) hide.add(e.id()); });
    this.cards = cards;
    this.groupCards = groupCards;
    const was = this.underCards;
    this.underCards = hide;
    this.cy.batch(() => {
      for (const id of was) if (!hide.has(id)) this.cy.getElementById(id).removeClass('in-card');
      for (const id of hide) {
        const el = this.cy.getElementById(id);
        if (!el.hasClass('in-card')) el.addClass('in-card');
      }
    });
  }

  /** The label function of a level of detail's stylesheet. */
  private labelFor(lod: Lod) {
    return (n: any) => this.labelAt(n, lod);
  }

  /**
   * What an element's label says at a level of detail: the most it may say there (labelVariants:
   * data v1, v2, v3) that fits its box whole, measured as the canvas draws it; '' when even its name
   * does not. Cached per element for the step, box and label.
   */
  private labelAt(n: any, lod: Lod): string {
    if (n.empty?.() || n.hasClass('container')) return '';
    const key = `${lod.step}|${n.data('w')}|${n.data('h')}|${n.data('whole')}`;
    const cached = n.scratch('_label');
    if (cached?.key === key) return cached.text as string;
    const text = this.fitLabel(n, lod);
    n.scratch('_label', { key, text });
    return text;
  }

  private fitLabel(n: any, lod: Lod): string {
    const variants = (n.data(lod.level >= 3 ? 'v3' : lod.level === 2 ? 'v2' : 'v1') ?? []) as string[];
    if (!variants.length) return '';
    const style = n.hasClass('ghost') ? 'italic normal' : n.hasClass('collapsed') ? 'normal bold' : 'normal normal';
    const room = labelRoom(Number(n.data('w')), lod, n.hasClass('has-icon'));
    const height = Number(n.data('h')) - 4;
    for (const v of variants) {
      const lines = v.split('\n');
      if (lines.length * lod.font * 1.15 > height) continue;
      if (lines.every((l) => this.measure.width(l, lod.font, style) * MEASURE_SLACK <= room)) return v;
    }
    return '';
  }

  /**
   * A card opened in place: the view centred on its container at the least zoom where it is no
   * longer a card (its elements named), or where the whole container shows if that is more. A
   * group card (l2): the zoom where its hosts are named, centred where it was tapped.
   */
  private openCard(id: string, at?: { x: number; y: number }) {
    const group = this.groupCards.get(id);
    const box = group ?? this.positions[id];
    const t = this.titled.get(id);
    if (!box || !t) return;
    const elements = t.children.filter((c) => !this.containers.has(c.id)).map((c) => this.cy.getElementById(c.id));
    const hosts = (this.blocks.get(id) ?? this.groups.get(id) ?? []).map((h) => this.titled.get(h)).filter((x) => !!x);
    const family = this.titleFamily ?? 'sans-serif';
    const titleWidth = (text: string) => this.measure.width(text, 12.5, 'normal 600', family) * MEASURE_SLACK;
    const opened = (lod: Lod) => {
      if (!group) return elements.every((el) => this.fitLabel(el, lod));
      // (As fitTitles measures: at the least zoom of the step.)
      const z = 1.1 ** (lod.step - 0.5);
      return hosts.every((h) => titleThatFits(h.node, h.children, h.width * z, 0, titleWidth));
    };
    let zoom = this.cy.zoom();
    for (let i = 0; i < 60 && zoom < 4; i++) {
      zoom *= 1.1;
      if (opened(levelOfDetail(zoom))) break;
    }
    const whole = group ? 0 : Math.min(2, (this.cy.width() - 40) / box.width, (this.cy.height() - 40) / box.height);
    zoom = Math.min(4, Math.max(zoom * 1.1, whole));
    // A group is wider than a phone at that zoom: where it was tapped (within it) is centred.
    const [cx, cy] = group && at
      ? [Math.min(box.x + box.width, Math.max(box.x, at.x)), Math.min(box.y + box.height, Math.max(box.y, at.y))]
      : [box.x + box.width / 2, box.y + box.height / 2];
    this.cy.stop();
    this.cy.animate({ zoom, pan: { x: this.cy.width() / 2 - cx * zoom, y: this.cy.height() / 2 - cy * zoom }, duration: 300 });
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
      this.cy.style().fromJson(stylesheet(latest, this.labelFor(latest))).update();
      this.fitTitles();
    };
    window.clearTimeout(this.restyle);
    if (now) apply();
    else this.restyle = window.setTimeout(apply, 60);
  }

  private containerAt(p: { x: number; y: number }): string | undefined {
    for (const [id, el] of this.boxes) {
      const [x, y, w, h] = [el.style.left, el.style.top, el.style.width, el.style.height].map((v) => parseFloat(v));
      if (!el.hidden && !el.classList.contains('under-card') && p.x >= x! && p.x <= x! + w! && p.y >= y! && p.y <= y! + h!) return id;
    }
    return undefined;
  }

  /** Extra classes per element id (pinned, marks of a diff, absent at an instant, highlighted, filtered…), replacing the previous ones. */
  mark(classes: Map<string, string[]>) {
    for (const [id, el] of this.boxes) {
      const cls = classes.get(id) ?? [];
      // (What fitTitles set for the zoom stays: drawn as a card, without a title.)
      const card = this.cards.has(id);
      const under = el.classList.contains('under-card') ? ['under-card'] : [];
      el.className = ['box', `box-${el.dataset.kind}`, ...cls, ...(card ? ['carded'] : []), ...under].join(' ');
      const title = this.titles.get(id)!;
      title.className = ['box-title', ...cls, ...(card ? ['card'] : []), ...['untitled', 'no-icon', 'under-card', 'slim'].filter((c) => title.classList.contains(c))].join(' ');
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
    const pan = this.cy.pan();
    const screen = (b: { x1: number; y1: number; x2: number; y2: number }) => ({ x1: box.left + pan.x + b.x1 * zoom, y1: box.top + pan.y + b.y1 * zoom, x2: box.left + pan.x + b.x2 * zoom, y2: box.top + pan.y + b.y2 * zoom });
    this.cy.nodes().forEach((n) => {
      const p = n.position();
      const r = n.renderedPosition();
      const label = String(n.style('label') ?? '');
      const card = this.cards.get(n.id());
      // A switch drawn as one card with its hosts: that card's box.
      const g = this.groupCards.get(n.id());
      const at = g ? { x: pan.x + (g.x + g.width / 2) * zoom, y: pan.y + (g.y + g.height / 2) * zoom } : r;
      out[n.id()] = {
        x: p.x, y: p.y, screenX: box.left + at.x, screenY: box.top + at.y, screenWidth: (g?.width ?? Number(n.data('w'))) * zoom, screenHeight: (g?.height ?? Number(n.data('h'))) * zoom, classes: n.classes() as unknown as string[],
        kind: n.data('kind'), label, fontPx: label ? parseFloat(n.style('font-size')) * zoom : 0, parent: n.data('parentId') || undefined,
        ...(label ? { labelBox: screen(n.boundingBox({ includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false } as any)) } : {}),
        ...(card ? { card } : {}),
      };
    });
    this.cy.edges().forEach((e) => {
      const onScreen = (p: { x: number; y: number }) => ({ x: box.left + pan.x + p.x * zoom, y: box.top + pan.y + p.y * zoom });
      // The line as drawn, on screen: from the source's border through its bends (or control points) to the target's.
      const via = (e.segmentPoints() ?? e.controlPoints() ?? []) as Array<{ x: number; y: number }>;
      const screenPoints = [e.sourceEndpoint(), ...via, e.targetEndpoint()].map(onScreen);
      // (A container's own node is transparent, its HTML box drawn instead: an edge of it is seen; one
      // to an element under a card or absent is not.)
      const gone = (n: any) => n.hasClass('in-card') || n.hasClass('absent') || (!n.hasClass('container') && !Number(n.style('opacity')));
      const hidden = !e.visible() || !Number(e.style('opacity')) || gone(e.source()) || gone(e.target());
      out[e.id()] = { x: 0, y: 0, screenX: 0, screenY: 0, classes: e.classes() as unknown as string[], label: String(e.style('label') || e.style('source-label') || e.style('target-label') || ''), screenPoints, hidden, source: e.data('source'), target: e.data('target') };
    });
    return out;
  }

  /** The containers' titles as drawn: text and size on screen in CSS px (for tests and tools). */
  titleSnapshot(): Array<{ id: string; text: string; fontPx: number; hidden: boolean; cut: boolean; card: boolean }> {
    const zoom = this.cy.zoom();
    return [...this.titles].map(([id, el]) => {
      const text = el.querySelector<HTMLElement>('.title-text');
      // Cut: its text or a card's line wider than the box shows (scrollWidth counts what overflow hides).
      const cut = [el, ...el.querySelectorAll<HTMLElement>('.card-lines div')].some((x) => x.scrollWidth > x.clientWidth + 1) || (!!text && text.getBoundingClientRect().right > el.getBoundingClientRect().right + 1);
      return { id, text: text?.textContent ?? '', fontPx: parseFloat(getComputedStyle(el).fontSize) * zoom, hidden: el.hidden === true || el.classList.contains('untitled') || el.classList.contains('under-card'), cut, card: el.classList.contains('card') };
    });
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
    // The canvas's size as it is now (Cytoscape's cached size follows a resize only 100 ms later).
    this.cy.resize();
    const x1 = Math.min(...boxes.map((b) => b.x)), y1 = Math.min(...boxes.map((b) => b.y));
    const x2 = Math.max(...boxes.map((b) => b.x + b.width)), y2 = Math.max(...boxes.map((b) => b.y + b.height));
    const zoomIn = (a: Area) => Math.min(2, Math.max(0.02, Math.min(Math.max(1, a.w - 2 * padding) / Math.max(1, x2 - x1), Math.max(1, a.h - 2 * padding) / Math.max(1, y2 - y1))));
    const area = this.freeAreas().reduce((best, a) => (zoomIn(a) > zoomIn(best) ? a : best));
    const zoom = zoomIn(area);
    if (readable && this.cy.width() < NARROW_CANVAS && levelOfDetail(zoom).level < 1) {
      this.cy.viewport({ zoom: READABLE_ZOOM, pan: { x: padding - x1 * READABLE_ZOOM, y: padding - y1 * READABLE_ZOOM } });
    } else {
      this.cy.viewport({ zoom, pan: { x: area.x + (area.w - (x2 - x1) * zoom) / 2 - x1 * zoom, y: area.y + (area.h - (y2 - y1) * zoom) / 2 - y1 * zoom } });
    }
    this.fitted = { zoom: this.cy.zoom(), ...this.cy.pan(), readable };
  }

  private refitIfFitted() {
    const f = this.fitted;
    if (!f || this.cy.destroyed()) return;
    const pan = this.cy.pan();
    const still = Math.abs(this.cy.zoom() - f.zoom) < 1e-9 && Math.abs(pan.x - f.x) < 0.5 && Math.abs(pan.y - f.y) < 0.5;
    if (still) this.fitTo(Object.values(this.positions), f.readable);
    else this.fitted = undefined;
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
        // Where the layout put it (a group card draws its switch's box over the group on screen only).
        const b = this.positions[id]!;
        const [x, y, w, h] = [b.x, b.y, b.width, b.height];
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
      cy.style().fromJson(stylesheet(this.lod, this.labelFor(this.lod))).update();
    }
  }

  destroy() {
    window.clearTimeout(this.restyle);
    this.resizes.disconnect();
    this.cy.destroy();
  }
}
