// Changes (/changes?network=&unacknowledged=true): what each Network scan of the network changed,
// newest first: the hosts that appeared, went offline, came back or changed,
// each a link to the host; Compare opens the map's diff over the scan's time; a Member acknowledges
// a scan (Viewers read; the API refuses them and the message is shown). Reads GET /api/v1/changes.
import { api, ApiError, apiPath, query } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { navigate, type Route, type Session } from '../main.js';
import type { ScanChanges } from '../apiTypes.js';

const PAGE_SIZE = 20;
type Listed = Array<{ id: string; name: string }> | undefined;

/** The kinds of change a scan's summary lists, in the order shown: [label, count field, hosts field]. */
const KINDS: Array<[string, string, string, string]> = [
  ['New', 'hosts_new', 'new_hosts', 'new'],
  ['Offline', 'hosts_offline', 'offline_hosts', 'offline'],
  ['Back online', 'hosts_back_online', 'back_online_hosts', 'online'],
  ['Changed', 'hosts_changed', 'changed_hosts', 'changed'],
];
// (The summary's "gone" hosts are not shown: a host a completed scan missed is offline, which says
// the same from the host's side, and an ignored one is not worth a line.)

export function changesScreen(outlet: HTMLElement, route: Route, session: Session) {
  const q = route.query;
  const networkId = session.networks.some((n) => n.id === q.get('network')) ? q.get('network')! : session.networks[0]?.id;
  const onlyOpen = q.get('unacknowledged') === 'true';
  const page = Math.max(0, Number(q.get('page') ?? 0) || 0);
  const go = (o: { network?: string; open?: boolean; page?: number }) => navigate(`/changes${query({
    network: o.network ?? networkId, unacknowledged: (o.open ?? onlyOpen) || undefined, page: o.page || undefined,
  })}`);
  const network = h('select', { id: 'changes-network' }, session.networks.map((n) => h('option', { value: n.id, selected: n.id === networkId }, n.name)));
  network.addEventListener('change', () => go({ network: network.value, page: 0 }));
  const open = h('input', { type: 'checkbox', id: 'changes-open', checked: onlyOpen });
  open.addEventListener('change', () => go({ open: open.checked, page: 0 }));
  const results = h('div', { 'aria-live': 'polite' });
  fill(outlet, h('div', { class: 'map-head' }, h('h1', {}, 'Changes')),
    h('div', { class: 'toolbar host-filters' },
      h('span', { class: 'field' }, h('label', { for: 'changes-network' }, 'Network'), network),
      h('label', { class: 'check' }, open, ' Not acknowledged only')),
    results);
  if (!networkId) return fill(results, notice('info', 'No network yet.'));

  const hostLinks = (hosts: Listed, total: number) => h('span', { class: 'hosts' },
    (hosts ?? []).map((x, i) => [i ? ', ' : '', h('a', { href: `/hosts/${x.id}`, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(`/hosts/${x.id}`); } }, x.name)]),
    total > (hosts?.length ?? 0) ? ` and ${total - (hosts?.length ?? 0)} more` : '');

  function card(scan: ScanChanges, refresh: () => void) {
    const s = scan.summary as unknown as Record<string, unknown>;
    const rows = KINDS.flatMap(([label, count, list, cls]) => {
      const n = Number(s[count] ?? 0);
      return n ? [h('li', { class: `change ${cls}` }, h('span', { class: `badge change-${cls}` }, `${label} ${n}`), ' ', hostLinks(s[list] as Listed, n))] : [];
    });
    const from = scan.started_at ?? scan.created_at;
    const compare = `/networks/${scan.network_id}/topology/diff${query({ from, to: scan.finished_at ?? undefined })}`;
    const error = h('span', { class: 'field-error', role: 'alert' });
    const ack = scan.acknowledged_at
      ? h('span', { class: 'muted acknowledged' }, `Acknowledged ${when(scan.acknowledged_at)}`)
      : h('button', {
        type: 'button', class: 'acknowledge', onclick: async (e: MouseEvent) => {
          (e.target as HTMLButtonElement).disabled = true;
          try {
            await api.post(apiPath`/api/v1/changes/${scan.session_id}/acknowledge`);
            refresh();
          } catch (err) {
            (e.target as HTMLButtonElement).disabled = false;
            fill(error, (err as ApiError).message);
          }
        },
      }, 'Acknowledge');
    return h('article', { class: `card scan${scan.acknowledged_at ? ' acknowledged' : ''}`, 'data-session-id': scan.session_id },
      h('div', { class: 'scan-head' },
        h('h2', {}, when(scan.finished_at ?? scan.created_at)),
        h('span', { class: 'muted' }, `${scan.daemon_name ?? 'a deleted daemon'} · ${scan.phase === 'Complete' ? `${s.hosts_found ?? 0} hosts found` : scan.phase.toLowerCase()}`),
        h('a', { class: 'button', href: compare, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(compare); } }, 'Compare'),
        ack, error),
      rows.length ? h('ul', { class: 'changes' }, rows) : h('p', { class: 'muted' }, 'Nothing changed.'));
  }

  const load = async () => {
    try {
      const list = await api.list<ScanChanges>(`/api/v1/changes${query({ network_id: networkId, unacknowledged: onlyOpen || undefined, limit: PAGE_SIZE, offset: page * PAGE_SIZE })}`);
      if (!list.items.length) {
        fill(results, notice('info', onlyOpen ? 'Every scan is acknowledged.' : 'No scan has ended on this network yet: start one from the Daemons page.'));
        return;
      }
      fill(results, list.items.map((scan) => card(scan, () => void load())),
        h('nav', { class: 'pager', 'aria-label': 'Pages' },
          h('span', {}, `${list.offset + 1}–${list.offset + list.items.length} of ${list.total}`),
          h('button', { type: 'button', disabled: page === 0, onclick: () => go({ page: page - 1 }) }, 'Newer'),
          h('button', { type: 'button', disabled: list.offset + list.items.length >= list.total, onclick: () => go({ page: page + 1 }) }, 'Older')));
    } catch (err) {
      const e = err as ApiError;
      fill(results, notice('error', e.message, e.code));
    }
  };
  void load();
}
