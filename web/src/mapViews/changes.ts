// The changes panel of a comparison (/networks/<id>/topology/diff): the diff as lines a person
// reads, at most CHANGE_LIST_MAX of them (the map marks every change), each bringing its element
// into view; and why some are not listed or not marked. Rendered from the state once the diff is read.
import { fill, h, when } from '../dom.js';
import { changeLines } from '../mapState.js';
import type { MapState } from '../mapScreenState.js';
import { COMPARE_LAST_CHANGES } from '../mapEffects.js';

/** The diff list shows at most this many lines (the map marks every change). */
const CHANGE_LIST_MAX = 200;

export function renderChanges(panel: HTMLElement, s: MapState, focusChange: (line: { id: string; mark: string }) => void) {
  const diff = s.diff;
  if (!diff) return;
  const labels = new Map([...(s.timeline?.nodes ?? []), ...diff.nodes.removed, ...diff.nodes.added].map((n) => [n.id, n.label]));
  const lines = changeLines(diff, (id) => labels.get(id), (id) => s.tagNames?.get(id));
  const listed = lines.slice(0, CHANGE_LIST_MAX);
  const truncated = (diff.truncated?.nodes ?? 0) + (diff.truncated?.edges ?? 0);
  panel.hidden = false;
  fill(panel, h('h2', {}, `${lines.length.toLocaleString()} changes`),
    s.diffRequest?.from ? null : h('p', { class: 'muted', id: 'compare-window' }, `The last ${COMPARE_LAST_CHANGES} changes to the network, since ${when(diff.from)}: choose From and To to compare other instants.`),
    lines.length > listed.length ? h('p', { class: 'notice info', id: 'change-list-cut' }, `Showing ${listed.length} of ${lines.length.toLocaleString()} changes: narrow the window (From, To) or filter by a tag to see the others.`) : null,
    truncated > 0
      ? h('p', { class: 'notice info', id: 'change-list-truncated' }, `${truncated.toLocaleString()} more changes are not marked on the map (a comparison lists at most 5,000 nodes and 5,000 links): narrow the window.`)
      : null,
    lines.length
      ? h('ul', { id: 'change-list' }, listed.map((l) => h('li', { class: `change ${l.mark}`, 'data-node-id': l.id }, h('span', { class: 'mark' }, l.mark), ' ',
        h('button', { type: 'button', class: 'change-entry', onclick: () => focusChange(l) }, l.text))))
      : h('p', { class: 'muted' }, 'Nothing changed between these instants.'));
}
