// Hosts (/hosts?q=&network=&tag=&device_type=&os=&status=&page=): search, network, tag, device type
// (exact), OS (prefix) and status (online, offline, stale, ignored) filters, pagination; each host's device and OS as discovery's evidence names them
// (hostFacts.ts); and one host
// (/hosts/<id>): its details and history (hostDetails.ts). Reads GET /api/v1/hosts and GET
// /api/v1/hosts/<id>. A tag found on services lists the hosts running such a service (the API's
// tag_ids filters hosts by their own tags). `ids=<id>,<id>…` lists those hosts only (the Daemons
// page links a run's new and gone hosts so); a search, filter or "all hosts" leaves that list.
import { api, ApiError, query } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { hostDetails, tagsById } from '../hostDetails.js';
import { addMenu, hostActions } from '../editors.js';
import { navigate, type Route, type Session } from '../main.js';
import { agentSteps } from '../agentHelp.js';
import type { Host } from '../apiTypes.js';
import { DEVICE_TYPES, factsCell, macVendors, STATUSES, STATUS_TEXT, statusBadge } from '../hostFacts.js';

const PAGE_SIZE = 50;
/** The API's `ids` filter takes at most this many. */
const IDS_MAX = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The host ids a link names (`ids=a,b`): well-formed ones only, at most IDS_MAX; undefined when none is named. */
export function idsFilter(q: URLSearchParams): string[] | undefined {
  const ids = (q.get('ids') ?? '').split(',').map((x) => x.trim()).filter((x) => UUID.test(x));
  return ids.length ? [...new Set(ids)].slice(0, IDS_MAX) : undefined;
}


export function hostsScreen(outlet: HTMLElement, route: Route, session: Session) {
  const q = route.query;
  const networkNames = new Map(session.networks.map((n) => [n.id, n.name]));
  const search = h('input', { type: 'search', id: 'hosts-search', value: q.get('q') ?? '', placeholder: 'Name, hostname or IP' });
  const network = h('select', { id: 'hosts-network' }, h('option', { value: '' }, 'All networks'),
    session.networks.map((n) => h('option', { value: n.id, selected: n.id === q.get('network') }, n.name)));
  const tag = h('select', { id: 'hosts-tag' }, h('option', { value: '' }, 'All tags'));
  const deviceType = h('input', { type: 'text', id: 'hosts-device-type', class: 'narrow', list: 'device-types', value: q.get('device_type') ?? '', placeholder: 'Any', autocomplete: 'off' });
  const os = h('input', { type: 'text', id: 'hosts-os', class: 'narrow', value: q.get('os') ?? '', placeholder: 'Any', autocomplete: 'off' });
  const status = h('select', { id: 'hosts-status' }, h('option', { value: '' }, 'Any'),
    STATUSES.map((x) => h('option', { value: x, selected: x === q.get('status') }, STATUS_TEXT[x])));
  const results = h('div', { 'aria-live': 'polite' });
  const named = idsFilter(q);
  const page = Math.max(0, Number(q.get('page') ?? 0) || 0);
  /** To another page of this list (`ids` kept), or to a new search (a list of named hosts is left). */
  const go = (p: number, ids?: string[]) => goTo(`/hosts${query({
      q: search.value.trim() || undefined, network: network.value || undefined, tag: tag.value || undefined,
      device_type: deviceType.value.trim() || undefined, os: os.value.trim() || undefined, status: status.value || undefined, ids, page: p || undefined,
    })}`);
  // (The same page asked again, e.g. the form submitted unchanged: no second history entry.)
  const goTo = (to: string) => navigate(to, to === location.pathname + location.search);
  network.addEventListener('change', () => go(0));
  tag.addEventListener('change', () => go(0));
  status.addEventListener('change', () => go(0));
  // A typed filter applies with the form (Enter or Search), not when it is left: moving from one
  // to the other must not redraw the page under the typing. A suggestion picked applies at once.
  for (const input of [deviceType, os]) input.addEventListener('input', (e: Event) => { if ((e as InputEvent).inputType === 'insertReplacementText' || !(e instanceof InputEvent)) go(0); });
  const byDeviceType = (type: string) => { deviceType.value = type; go(0); };

  // After an edit the page is drawn again from the API.
  const edits = { networkId: networkNames.has(q.get('network') ?? '') ? q.get('network')! : session.networks[0]?.id, changed: () => navigate(location.pathname + location.search, true) };
  const importLink = `/hosts/import${query({ network: edits.networkId })}`;
  fill(outlet, h('div', { class: 'map-head' }, h('h1', {}, 'Hosts'), addMenu(edits),
    h('a', { class: 'button', id: 'import-csv', href: importLink, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(importLink); } }, 'Import CSV')),
    // Each filter a label and its control (a phone lays them out two by two, every one in sight).
    h('form', { class: 'toolbar host-filters', role: 'search', onsubmit: (e: SubmitEvent) => { e.preventDefault(); go(0); } },
      h('span', { class: 'field search' }, h('label', { for: 'hosts-search' }, 'Search'), search),
      h('span', { class: 'field' }, h('label', { for: 'hosts-network' }, 'Network'), network),
      h('span', { class: 'field' }, h('label', { for: 'hosts-tag' }, 'Tag'), tag),
      h('span', { class: 'field' }, h('label', { for: 'hosts-device-type' }, 'Device'), deviceType, h('datalist', { id: 'device-types' }, DEVICE_TYPES.map((t) => h('option', { value: t })))),
      h('span', { class: 'field' }, h('label', { for: 'hosts-os' }, 'OS'), os),
      h('span', { class: 'field' }, h('label', { for: 'hosts-status' }, 'Status'), status),
      h('button', { type: 'submit' }, 'Search')),
    named ? h('p', { class: 'notice info ids-filter', role: 'status' }, `Only the ${named.length === 1 ? 'host' : `${named.length} hosts`} the link names. `,
      h('a', { href: '/hosts', onclick: (e: MouseEvent) => { e.preventDefault(); go(0); } }, 'Show all hosts')) : null,
    results);

  void (async () => {
    const networkId = networkNames.has(q.get('network') ?? '') ? q.get('network')! : undefined;
    const [tags, services] = await Promise.all([
      tagsById(),
      api.get<Array<{ id: string; host_id: string; tags?: string[] }>>(`/api/v1/services${query({ network_id: networkId, limit: 1000 })}`).catch(() => []),
    ]);
    const onServices = new Set(services.flatMap((s) => s.tags ?? []));
    const option = (t: { id: string; name: string }) => h('option', { value: t.id, selected: t.id === q.get('tag') }, t.name);
    tag.append(h('optgroup', { label: 'Hosts tagged' }, [...tags.values()].filter((t) => !onServices.has(t.id)).map(option)),
      h('optgroup', { label: 'Running a service tagged' }, [...tags.values()].filter((t) => onServices.has(t.id)).map(option)));
    const tagId = q.get('tag') ?? undefined;
    // A tag of services: the hosts of the services carrying it.
    // (The API takes at most 100 ids: past that, the first 100.)
    const byServiceTag = tagId && onServices.has(tagId) ? [...new Set(services.filter((s) => s.tags?.includes(tagId)).map((s) => s.host_id))].slice(0, IDS_MAX) : undefined;
    // Hosts a link names, within what the other filters keep.
    const hostIds = named && byServiceTag ? named.filter((id) => byServiceTag.includes(id)) : named ?? byServiceTag;
    try {
      const list = hostIds && !hostIds.length ? { items: [], total: 0, limit: PAGE_SIZE, offset: 0 }
        : await api.list<Host>(`/api/v1/hosts${query({
          q: q.get('q') ?? undefined, network_id: networkId, tag_ids: byServiceTag ? undefined : tagId,
          device_type: q.get('device_type')?.trim() || undefined, os: q.get('os')?.trim() || undefined,
          status: (STATUSES as readonly string[]).includes(q.get('status') ?? '') ? q.get('status')! as Host['status'] : undefined,
          ids: hostIds, limit: PAGE_SIZE, offset: page * PAGE_SIZE,
        })}`);
      if (!list.items.length) {
        fill(results, q.get('q') || q.get('tag') || q.get('device_type') || q.get('os') || q.get('status') || networkId || named ? notice('info', 'No host matches.') : h('div', { class: 'notice info', role: 'status' },
          h('p', {}, 'No hosts yet. Start a discovery agent:'), agentSteps(edits.networkId, { onDaemonsLink: (e) => { e.preventDefault(); navigate('/daemons'); } }),
          h('p', {}, 'Or add hosts by hand (Add, or POST /api/v1/hosts).')));
        return;
      }
      fill(results,
        // One network to list (one in all, or one chosen): its column says nothing, and a phone leaves it out.
        h('div', { class: 'table-wrap' }, h('table', { class: `list hosts${networkId || session.networks.length === 1 ? ' one-network' : ''}` },
          h('thead', {}, h('tr', {}, ['Name', 'Status', 'Network', 'Hostname', 'Device · OS', 'Vendor', 'Addresses', 'Tags', 'Last seen'].map((x) => h('th', { scope: 'col', class: x === 'Network' ? 'network' : x === 'Last seen' ? 'seen' : undefined }, x)))),
          h('tbody', {}, list.items.map((host) => h('tr', {},
            h('td', {}, h('a', { href: `/hosts/${host.id}`, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(`/hosts/${host.id}`); } }, host.name), host.hidden ? h('span', { class: 'badge' }, 'hidden') : null),
            h('td', { class: 'status' }, statusBadge(host)),
            h('td', { class: 'network' }, networkNames.get(host.network_id) ?? '—'),
            h('td', {}, host.hostname ?? '—'),
            h('td', { class: 'facts' }, factsCell(host, byDeviceType)),
            h('td', { class: 'vendor' }, macVendors(host).join(', ') || '—'),
            h('td', {}, (host.ip_addresses ?? []).map((ip) => ip.ip_address).join(', ') || '—'),
            h('td', {}, (host.tags ?? []).map((t) => h('span', { class: `tag tag-${tags.get(t)?.color ?? 'Gray'}` }, tags.get(t)?.name ?? t))),
            h('td', { class: 'seen' }, when(host.last_seen_at))))))),
        h('nav', { class: 'pager', 'aria-label': 'Pages' },
          h('span', {}, `${list.offset + 1}–${list.offset + list.items.length} of ${list.total}`),
          h('button', { type: 'button', disabled: page === 0, onclick: () => go(page - 1, named) }, 'Previous'),
          h('button', { type: 'button', disabled: list.offset + list.items.length >= list.total, onclick: () => go(page + 1, named) }, 'Next')));
    } catch (err) {
      const e = err as ApiError;
      fill(results, notice('error', e.message, e.code));
    }
  })();
}

export function hostScreen(outlet: HTMLElement, route: Route) {
  fill(outlet, h('p', { class: 'muted' }, 'Loading…'));
  const host = { id: route.params.host!, name: 'this host' };
  const edits = { networkId: undefined, changed: (_kind: string, saved: unknown) => navigate(saved ? location.pathname : '/hosts', !!saved) };
  void hostDetails(host.id, { mapLink: true }).then((details) => {
    host.name = details.getAttribute('aria-label')?.replace(/^Host /, '') ?? host.name;
    fill(outlet, h('p', {}, h('a', { href: '/hosts' }, '← Hosts')), details, details.matches('article') ? hostActions(host, edits) : null);
  });
}
