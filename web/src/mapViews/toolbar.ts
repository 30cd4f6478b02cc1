// The map's toolbar: View, Tag, Show hidden hosts, Fit and zoom, History, Compare, Unpin all, Add,
// Export and Share. It renders from the state (mapScreenState.ts) and dispatches what the user
// chose; the tools that act on the drawing or the API are given as callbacks. On a phone the
// less-used tools fold behind More, into a row under the toolbar that it opens: the toolbar then
// fits the screen's width with View, Fit, zoom and History always in it. The controls are moved
// between the two, never copied (one control, one state).
import { h } from '../dom.js';
import { VIEW_NAMES, type MapAction, type MapState } from '../mapScreenState.js';

export interface ToolbarTools {
  fit(): void;
  zoomBy(factor: number): void;
  /** Map only (not a comparison): History, Compare, Add. */
  history?: () => void;
  compare?: () => void;
  unpinAll(): void;
  add?: HTMLElement | null;
  exportButton: HTMLElement;
  /** Only for users who may create share links. */
  share?: () => void;
}

export function mapToolbar(initial: MapState, dispatch: (a: MapAction) => void, tools: ToolbarTools) {
  const button = (label: string, onclick: () => void, attrs: Record<string, string> = {}) => h('button', { type: 'button', onclick, ...attrs }, label);
  const viewSelect = h('select', { id: 'view', 'aria-label': 'View' });
  const tagSelect = h('select', { id: 'tag-filter', 'aria-label': 'Filter by tag' }, h('option', { value: '' }, 'All tags'));
  const hidden = h('input', { type: 'checkbox', id: 'show-hidden', checked: initial.includeHidden });
  viewSelect.addEventListener('change', () => dispatch({ type: 'viewChosen', view: viewSelect.value }));
  tagSelect.addEventListener('change', () => dispatch({ type: 'tagChosen', tagId: tagSelect.value || undefined }));
  hidden.addEventListener('change', () => dispatch({ type: 'hiddenChosen', includeHidden: hidden.checked }));
  const viewLabel = h('label', { for: 'view' }, 'View');
  const tagLabel = h('label', { for: 'tag-filter' }, 'Tag');
  const hiddenCheck = h('label', { class: 'check' }, hidden, ' Show hidden hosts');
  const fitButton = button('Fit', () => tools.fit(), { id: 'fit' });
  const zoomIn = button('+', () => tools.zoomBy(1.25), { 'aria-label': 'Zoom in' });
  const zoomOut = button('−', () => tools.zoomBy(0.8), { 'aria-label': 'Zoom out' });
  const historyButton = tools.history ? button('History', tools.history, { id: 'history-button' }) : null;
  const compareButton = tools.compare ? button('Compare…', tools.compare, { id: 'compare-button' }) : null;
  const unpinButton = button('Unpin all', () => tools.unpinAll(), { id: 'unpin-all' });
  const shareButton = tools.share ? button('Share…', tools.share, { id: 'share-map', 'aria-haspopup': 'dialog' }) : null;
  const toolbar = h('div', { class: 'toolbar map-tools', role: 'toolbar', 'aria-label': 'Map tools' });
  const phone = window.matchMedia('(max-width: 720px)');
  const more = h('div', { class: 'toolbar map-more', id: 'map-more', role: 'group', 'aria-label': 'More map tools', hidden: true });
  const moreButton = button('More', () => dispatch({ type: 'moreToggled', open: moreButton.getAttribute('aria-expanded') !== 'true' }), { id: 'map-more-button', class: 'more-toggle', 'aria-controls': 'map-more', 'aria-expanded': 'false' });
  const present = (...xs: Array<HTMLElement | null | undefined>) => xs.filter((x): x is HTMLElement => !!x);
  function fold() {
    if (phone.matches) {
      toolbar.replaceChildren(...present(viewLabel, viewSelect, fitButton, zoomIn, zoomOut, historyButton, moreButton));
      more.replaceChildren(...present(tagLabel, tagSelect, hiddenCheck, compareButton, unpinButton, tools.add, tools.exportButton, shareButton));
    } else {
      toolbar.replaceChildren(...present(viewLabel, viewSelect, tagLabel, tagSelect, hiddenCheck, fitButton, zoomIn, zoomOut, historyButton, compareButton, unpinButton, tools.add, tools.exportButton, shareButton));
      if (moreButton.getAttribute('aria-expanded') === 'true') dispatch({ type: 'moreToggled', open: false });
      showMore(false);
    }
  }
  function showMore(open: boolean) {
    more.hidden = !open;
    moreButton.setAttribute('aria-expanded', String(open));
  }
  fold();
  phone.addEventListener('change', fold);

  let views: string[] | undefined;
  let view: string | undefined;
  let tagsShown = false;
  return {
    toolbar, more,
    render(s: MapState) {
      if (s.views !== views || s.view !== view) {
        views = s.views;
        view = s.view;
        viewSelect.replaceChildren(...s.views.map((v) => h('option', { value: v, selected: v === s.view }, VIEW_NAMES[v] ?? v)));
      }
      // The tags once known: those on services filter services (here), the others hosts (the API).
      if (s.tags && s.serviceTags && !tagsShown) {
        tagsShown = true;
        const serviceTags = s.serviceTags;
        const option = (t: { id: string; name: string }) => h('option', { value: t.id, selected: t.id === s.tagId }, t.name);
        tagSelect.append(
          h('optgroup', { label: 'Hosts tagged' }, s.tags.filter((t) => !serviceTags.has(t.id)).map(option)),
          h('optgroup', { label: 'Services tagged' }, s.tags.filter((t) => serviceTags.has(t.id)).map(option)));
      }
      if (s.moreOpen !== !more.hidden) showMore(s.moreOpen);
    },
    dispose() { phone.removeEventListener('change', fold); },
  };
}
