// The details panel beside the map: the selected host's details (hostDetails.ts) as of the instant
// shown, with its edit actions on the live map and a link to its page. Selecting dispatches the
// selection (the state's); the panel follows. Focus stays where it was when the panel opens and
// comes back there when it closes (the list's button for that host if the list was redrawn since).
import { fill, h } from '../dom.js';
import { hostDetails } from '../hostDetails.js';
import { hostActions, type EditContext } from '../editors.js';
import { hostsOf, tickInstant, type MapAction, type MapState } from '../mapScreenState.js';

export interface DetailsContext {
  state(): MapState;
  dispatch(action: MapAction): void;
  edits: EditContext;
  hostList: HTMLElement;
  canvas: HTMLElement;
  sheetToggle: HTMLElement;
  /** Open or close the host list's sheet (phone). */
  setSheet(open: boolean): void;
  /** Bring these nodes into view. */
  focus(nodeIds: string[]): void;
}

export function detailsPanel(panel: HTMLElement, c: DetailsContext) {
  /** What had the focus when the panel opened: it gets it back when the panel closes. */
  let opener: { element: Element | null; hostId?: string } | undefined;

  /** Focus back on what opened the panel (the list's button for that host if the list was redrawn since). */
  function restoreFocus() {
    const o = opener;
    opener = undefined;
    if (!o) return;
    const target = (o.element?.isConnected ? o.element : o.hostId ? c.hostList.querySelector(`[data-host-id="${CSS.escape(o.hostId)}"]`) : c.canvas) as HTMLElement | null;
    // (In the host list's sheet, closed since on a phone: the button that opens the sheet.)
    (target?.offsetParent ? target : c.hostList.contains(target) ? c.sheetToggle : c.canvas).focus({ preventScroll: true });
  }

  /** `focus`: the host brought into view; `at`: the details as of that instant (a diff's entry), else the slider's or the map's. */
  async function select(hostId: string | undefined, focus = false, at?: string) {
    const wasOpen = !panel.hidden;
    c.dispatch({ type: 'hostSelected', hostId });
    const entry = hostsOf(c.state()).find((x) => x.hostId === hostId);
    if (!hostId) {
      panel.hidden = true;
      if (wasOpen) restoreFocus();
      return;
    }
    // Focus stays where it is; it comes back here when the panel closes.
    if (!panel.contains(document.activeElement)) opener = { element: document.activeElement, hostId: (document.activeElement as HTMLElement | null)?.dataset?.hostId };
    panel.hidden = false;
    c.setSheet(false); // on a phone, the host list's sheet gives way to the details
    fill(panel, h('p', { class: 'muted' }, 'Loading…'));
    // Centred in the canvas as the open panel leaves it.
    if (focus && entry) c.focus(entry.nodeIds);
    const s = c.state();
    const details = await hostDetails(hostId, { at: at ?? tickInstant(s) ?? s.at });
    const now = c.state();
    if (now.selectedHost === hostId) fill(panel, h('button', { type: 'button', class: 'close', 'aria-label': 'Close details', onclick: () => void select(undefined) }, 'Close'), details,
      now.at || now.timeline ? null : hostActions({ id: hostId, name: hostsOf(now).find((x) => x.hostId === hostId)?.name ?? 'this host' }, c.edits),
      h('p', {}, h('a', { href: `/hosts/${hostId}` }, 'Open the host page')));
  }

  return { select, isOpen: () => !panel.hidden };
}
