// Hosts (/hosts?q=&tag=&page=): search, tag filter, pagination; and one host (/hosts/<id>): its
// details and history (hostDetails.ts). Reads GET /api/v1/hosts and GET /api/v1/hosts/<id>.
import { api, ApiError, query } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { hostDetails, tagsById } from '../hostDetails.js';
import { navigate, type Route } from '../main.js';
import type { Host } from '../apiTypes.js';

const PAGE_SIZE = 50;

export function hostsScreen(outlet: HTMLElement, route: Route) {
  const q = route.query;
  const search = h('input', { type: 'search', id: 'hosts-search', value: q.get('q') ?? '', placeholder: 'Name, hostname or IP' });
  const tag = h('select', { id: 'hosts-tag' }, h('option', { value: '' }, 'All tags'));
  const results = h('div', { 'aria-live': 'polite' });
  const page = Math.max(0, Number(q.get('page') ?? 0) || 0);
  const go = (p: number) => navigate(`/hosts${query({ q: search.value.trim() || undefined, tag: tag.value || undefined, page: p || undefined })}`);

  fill(outlet, h('h1', {}, 'Hosts'),
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e: SubmitEvent) => { e.preventDefault(); go(0); } },
      h('label', { for: 'hosts-search' }, 'Search'), search, h('label', { for: 'hosts-tag' }, 'Tag'), tag, h('button', { type: 'submit' }, 'Search')),
    results);

  void (async () => {
    const tags = await tagsById();
    for (const t of tags.values()) tag.append(h('option', { value: t.id, selected: t.id === q.get('tag') }, t.name));
    try {
      const list = await api.list<Host>(`/api/v1/hosts${query({ q: q.get('q') ?? undefined, tag_ids: q.get('tag') ?? undefined, limit: PAGE_SIZE, offset: page * PAGE_SIZE})}`);
      if (!list.items.length) {
        fill(results, notice('info', q.get('q') || q.get('tag') ? 'No host matches.' : 'No hosts yet: provision a daemon or POST /api/v1/hosts.'));
        return;
      }
      fill(results,
        h('table', { class: 'list' },
          h('thead', {}, h('tr', {}, ['Name', 'Hostname', 'Addresses', 'Tags', 'Last seen'].map((x) => h('th', { scope: 'col' }, x)))),
          h('tbody', {}, list.items.map((host) => h('tr', {},
            h('td', {}, h('a', { href: `/hosts/${host.id}`, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(`/hosts/${host.id}`); } }, host.name), host.hidden ? h('span', { class: 'badge' }, 'hidden') : null),
            h('td', {}, host.hostname ?? '—'),
            h('td', {}, (host.ip_addresses ?? []).map((ip) => ip.ip_address).join(', ') || '—'),
            h('td', {}, (host.tags ?? []).map((t) => h('span', { class: `tag tag-${tags.get(t)?.color ?? 'Gray'}` }, tags.get(t)?.name ?? t))),
            h('td', {}, when(host.last_seen_at)))))),
        h('nav', { class: 'pager', 'aria-label': 'Pages' },
          h('span', {}, `${list.offset + 1}–${list.offset + list.items.length} of ${list.total}`),
          h('button', { type: 'button', disabled: page === 0, onclick: () => go(page - 1) }, 'Previous'),
          h('button', { type: 'button', disabled: list.offset + list.items.length >= list.total, onclick: () => go(page + 1) }, 'Next')));
    } catch (err) {
      const e = err as ApiError;
      fill(results, notice('error', e.message, e.code));
    }
  })();
}

export function hostScreen(outlet: HTMLElement, route: Route) {
  fill(outlet, h('p', { class: 'muted' }, 'Loading…'));
  void hostDetails(route.params.host!, { mapLink: true }).then((details) => fill(outlet, h('p', {}, h('a', { href: '/hosts' }, '← Hosts')), details));
}
