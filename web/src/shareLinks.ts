// A network's share links, on the network's page: read-only links to its map for people who do not
// sign in (a wall screen, a wiki page that frames it). Everyone who sees the network lists them;
// Admins make one (the link is shown once, then never again) and revoke them. Reads and writes
// /api/v1/networks/<id>/share-links.
import { api, apiPath, ApiError } from './api.js';
import { fill, h, notice, when } from './dom.js';
import { confirmDialog, openForm } from './forms.js';
import { isAdmin, type Session } from './main.js';

interface ShareLink { id: string; label: string | null; view: string; at: string | null; expires_at: string; status: string; last_used_at: string | null }

const VIEWS: Array<[string, string]> = [['l3', 'Layer 3 (subnets)'], ['workloads', 'Workloads'], ['application', 'Application'], ['l2', 'Layer 2']];

function createForm(networkId: string, done: (url: string) => void) {
  openForm({
    title: 'New share link',
    submitLabel: 'Create link',
    fields: [
      { key: 'label', label: 'What it is for', kind: 'text', placeholder: 'NOC wall screen' },
      { key: 'view', label: 'View', kind: 'select', options: VIEWS },
      { key: 'days', label: 'Valid for (days)', kind: 'number', min: 1, max: 90, hint: 'At most 90 days; revoke it sooner here.' },
      { key: 'fixed', label: 'Show the map as it is now, not live', kind: 'checkbox' },
    ],
    values: { label: '', view: 'l3', days: 30, fixed: false },
    submit: async (v, form) => {
      const days = Math.min(90, Math.max(1, Number(v.days) || 30));
      const created = await api.post<{ token: string }>(apiPath`/api/v1/networks/${networkId}/share-links`, {
        label: String(v.label) || null, view: v.view, expires_at: new Date(Date.now() + days * 86_400_000 - 60_000).toISOString(), at: v.fixed ? new Date().toISOString() : null,
      });
      form.close();
      done(`${location.origin}/share/${created.token}`);
    },
  });
}

/** The section of the network's page. */
export function shareLinksSection(networkId: string, s: Session): HTMLElement {
  const admin = isAdmin(s);
  const list = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const messages = h('div', { 'aria-live': 'polite' });
  const load = async () => {
    try {
      const links = await api.get<ShareLink[]>(apiPath`/api/v1/networks/${networkId}/share-links`);
      fill(list, links.length
        ? h('ul', { class: 'rules share-links' }, links.map((l) => h('li', { class: 'rule', 'data-share-link-id': l.id },
          h('div', { class: 'rule-text' }, h('strong', {}, l.label || 'Share link'),
            h('div', { class: 'muted rule-details' }, [l.view, l.at ? `as of ${when(l.at)}` : 'live', `until ${when(l.expires_at)}`,
              l.last_used_at ? `last opened ${when(l.last_used_at)}` : 'never opened'].join(' · '))),
          admin ? h('div', { class: 'rule-actions' }, h('button', { type: 'button', class: 'danger revoke-share-link', onclick: async () => {
            if (!(await confirmDialog('Revoke this link? Whoever has it (or a page that embeds it) can no longer open the map.', 'Revoke'))) return;
            await api.delete(apiPath`/api/v1/networks/${networkId}/share-links/${l.id}`).catch((err: ApiError) => fill(messages, notice('error', err.message, err.code)));
            await load();
          } }, 'Revoke')) : null)))
        : h('p', { class: 'muted' }, 'No share link.'));
    } catch (err) {
      const e = err as ApiError;
      fill(list, notice('error', e.message, e.code));
    }
  };
  void load();
  const created = (url: string) => {
    fill(messages, h('p', { class: 'share-created' }, 'Copy the link now: it is not shown again. ',
      h('input', { type: 'text', readonly: true, value: url, class: 'share-url', 'aria-label': 'The new share link', onfocus: (e: FocusEvent) => (e.target as HTMLInputElement).select() })));
    void load();
  };
  return h('section', { class: 'item-card share-links-section', 'aria-labelledby': 'share-links-title' },
    h('div', { class: 'item-title' }, h('h2', { id: 'share-links-title' }, 'Share links'),
      admin ? h('button', { type: 'button', id: 'new-share-link', onclick: () => createForm(networkId, created) }, 'New share link') : null),
    h('p', { class: 'muted intro' }, 'Read-only links to this network’s map for people who do not sign in; nothing else of the inventory is reachable through them.'),
    messages, list);
}
