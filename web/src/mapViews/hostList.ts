// The map's host list (the accessible version of the drawing) and its list of containers, rendered
// from the state (mapScreenState.ts): the hosts listed (search, the slider's instant, the tag
// filter), the one selected, each host's dependencies; the containers present, a click bringing one
// into view and Enter opening a folded one. On a phone the list is a bottom sheet over the map.
import { fill, h } from '../dom.js';
import type { HostEntry } from '../mapState.js';
import { listedHosts, presentIds, shownGraph, type MapState } from '../mapScreenState.js';

export interface HostListActions {
  choose(host: HostEntry): void;
  /** Bring these nodes into view. */
  focus(nodeIds: string[]): void;
  /** Open or close a folded container. */
  toggle(nodeId: string): void;
  /** What an empty network shows instead (how to start discovering). */
  empty(): HTMLElement;
  /** Open the sheet (phone). */
  openSheet(): void;
}

export function hostListView(hostList: HTMLElement, containerList: HTMLElement, sheetToggle: HTMLElement, on: HostListActions) {
  let emptySheetShown = false;
  /** A host's dependencies and its role in each, as the details panel lists them ("Internal DNS: spoke"). */
  const dependencyLine = (s: MapState, hostId: string) => {
    const deps = s.dependencies?.get(hostId);
    return deps?.length ? h('small', { class: 'host-dependencies' }, deps.map((d) => `${d.name}: ${d.role}`).join(' · ')) : null;
  };
  return {
    render(s: MapState) {
      const matches = listedHosts(s);
      const graph = shownGraph(s);
      fill(hostList, matches.length
        ? matches.map((x) => h('li', {}, h('button', {
          type: 'button', class: 'host-entry', 'aria-pressed': x.hostId === s.selectedHost ? 'true' : 'false', 'data-host-id': x.hostId,
          onclick: () => on.choose(x),
        }, x.name, x.ips.length ? h('small', {}, ` ${x.ips.join(', ')}`) : null), dependencyLine(s, x.hostId)))
        : h('li', { class: 'muted' }, graph?.nodes.length ? 'No host matches.' : on.empty()));
      sheetToggle.textContent = `Hosts (${matches.length})`;
      // An empty network: on a phone the instructions live in the closed sheet, so open it once (the canvas is blank).
      if (graph && !graph.nodes.length && !emptySheetShown) {
        emptySheetShown = true;
        on.openSheet();
      }
    },
    /** The selection shown in the list without rebuilding it (the button that has the focus keeps it). */
    renderPressed(s: MapState) {
      for (const b of hostList.querySelectorAll<HTMLElement>('.host-entry')) b.setAttribute('aria-pressed', String(b.dataset.hostId === s.selectedHost));
    },
    renderContainers(s: MapState) {
      const g = shownGraph(s);
      const parents = new Set((g?.nodes ?? []).filter((n) => n.parent_id).map((n) => n.parent_id));
      const present = presentIds(s);
      const containers = (g?.nodes ?? []).filter((n) => (parents.has(n.id) || n.kind === 'collapsed' || n.kind === 'summary') && (!present || present.has(n.id)));
      // A click brings it into view; Enter on a folded one (collapsed, summary) opens it, as a double-click on the map does.
      const opens = (n: { id: string; kind: string }) => (n.kind === 'collapsed' || n.kind === 'summary' ? (e: KeyboardEvent) => {
        if (e.key !== 'Enter') return;
        e.preventDefault();
        on.toggle(n.id);
      } : undefined);
      fill(containerList, containers.map((n) => h('li', { 'data-node-id': n.id }, h('button', { type: 'button', class: 'host-entry', onclick: () => on.focus([n.id]), onkeydown: opens(n) },
        n.label, n.kind === 'collapsed' ? h('small', {}, ` collapsed (${Object.values(n.counts ?? {}).reduce((a, b) => a + b, 0)})`) : null))));
    },
  };
}
