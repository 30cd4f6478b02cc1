// Networks (/networks): every network the user sees, each with what it holds (hosts, services,
// subnets, daemons: GET /api/v1/networks/<id>/contents) and links to its map, hosts and changes;
// "Use this network" makes it the one the Map link, the switcher and the pages that name none are
// about. Admins create a network, rename it and change its settings (host_expiry_days: how long a
// host may stay offline before it shows as stale), and delete it after a question that first says
// what goes with it. One network (/networks/<id>): its settings, what it holds, and its alert rules
// (alertRules.ts). Viewers and Members read; the API refuses their writes and the message is shown.
import { api, apiPath, ApiError } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { confirmDialog, openForm, type Field } from '../forms.js';
import { chosenNetwork, isAdmin, navigate, reloadNetworks, useNetwork, type Route, type Session } from '../main.js';
import { alertRulesSection } from '../alertRules.js';
import { shareLinksSection } from '../shareLinks.js';
import type { Network, NetworkContents } from '../apiTypes.js';

/** The API's default (src/modules/hosts: DEFAULT_HOST_EXPIRY_DAYS). */
const DEFAULT_EXPIRY_DAYS = 30;
const EXPIRY_HINT = 'A host offline longer than this is shown as stale (hosts list, map). 1 to 3650 days.';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const expiryOf = (n: Network) => n.host_expiry_days ?? DEFAULT_EXPIRY_DAYS;

/** What a network holds as short phrases: hosts, services, subnets, daemons always; dependencies and daemon keys when `all` and there are some. */
export function contentsParts(c: NetworkContents, all = false): string[] {
  const parts = [plural(c.hosts, 'host'), plural(c.services, 'service'), plural(c.subnets, 'subnet'), plural(c.daemons, 'daemon')];
  if (all && c.dependencies) parts.push(plural(c.dependencies, 'dependency', 'dependencies'));
  if (all && c.daemon_api_keys) parts.push(plural(c.daemon_api_keys, 'daemon key'));
  return parts;
}

/** The phrases on one line each where they fit ("0 daemons" never broken in two). */
const countsLine = (parts: string[]) => parts.map((part, i) => [i ? ' · ' : '', h('span', { class: 'count' }, part)]);

const contentsOf = (id: string) => api.get<NetworkContents>(apiPath`/api/v1/networks/${id}/contents`);

const link = (href: string, label: string, attrs: Record<string, string> = {}) =>
  h('a', { href, ...attrs, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(href); } }, label);

/** The form of a new network or of an existing one (name, description, host expiry). */
function networkForm(s: Session, network: Network | undefined, done: (saved: Network) => void) {
  const fields: Field[] = [
    { key: 'name', label: 'Name', kind: 'text', required: true, placeholder: 'Home lab' },
    { key: 'description', label: 'Description', kind: 'textarea' },
    { key: 'host_expiry_days', label: 'Hosts are stale after (days offline)', kind: 'number', min: 1, max: 3650, required: true, hint: EXPIRY_HINT },
  ];
  openForm({
    title: network ? `Edit network ${network.name}` : 'New network',
    submitLabel: network ? 'Save' : 'Create network',
    fields,
    values: { name: network?.name ?? '', description: network?.description ?? '', host_expiry_days: network ? expiryOf(network) : DEFAULT_EXPIRY_DAYS },
    submit: async (v, form) => {
      const body = { name: v.name, description: v.description || null, host_expiry_days: Number(v.host_expiry_days) || DEFAULT_EXPIRY_DAYS };
      let saved: Network;
      try {
        saved = network
          ? await api.patch<Network>(apiPath`/api/v1/networks/${network.id}`, { ...body, expected_updated_at: network.updated_at })
          : await api.post<Network>('/api/v1/networks', body);
      } catch (err) {
        if ((err as ApiError).code === 'entity_modified') throw new Error('This network changed since you opened it: cancel and open it again to see the newer settings.');
        throw err;
      }
      await reloadNetworks(s).catch(() => undefined);
      form.close();
      done(saved);
    },
  });
}

/** Asks first what deleting takes with it (the network's contents), then deletes; answers whether it did. */
async function deleteNetwork(s: Session, network: Network, report: (n: Node) => void): Promise<boolean> {
  let contents: NetworkContents;
  try {
    contents = await contentsOf(network.id);
  } catch (err) {
    const e = err as ApiError;
    report(notice('error', e.message, e.code));
    return false;
  }
  const empty = Object.values(contents).every((n) => !n);
  const question = empty
    ? [h('p', {}, `The network “${network.name}” holds nothing.`), h('p', {}, 'Delete it?')]
    : [
      h('p', {}, `The network “${network.name}” holds:`),
      h('ul', { class: 'network-contents' }, contentsParts(contents, true).map((part) => h('li', {}, part))),
      h('p', {}, 'Deleting the network deletes all of it. Its history is kept; its daemons stop working and must be set up again.'),
    ];
  if (!(await confirmDialog(question, empty ? 'Delete network' : 'Delete network and contents'))) return false;
  try {
    // An empty network is deleted without cascade: anything that arrived since the question refuses it (409, shown).
    await api.delete(apiPath`/api/v1/networks/${network.id}` + (empty ? '' : '?cascade=true'));
  } catch (err) {
    const e = err as ApiError;
    report(notice('error', e.message, e.code));
    return false;
  }
  await reloadNetworks(s).catch(() => undefined);
  return true;
}

export function networksScreen(outlet: HTMLElement, _route: Route, s: Session) {
  const admin = isAdmin(s);
  const messages = h('div', { 'aria-live': 'polite' });
  const list = h('div', { class: 'item-list network-list' });
  const redraw = () => navigate('/networks', true);
  const newButton = admin ? h('button', { type: 'button', class: 'primary', id: 'new-network', onclick: () => networkForm(s, undefined, (n) => {
    redraw();
    fill(messages, notice('info', `Network “${n.name}” created.`));
  }) }, 'New network') : null;
  fill(outlet, h('div', { class: 'settings-screen' },
    h('div', { class: 'map-head' }, h('h1', {}, 'Networks'), newButton),
    h('p', { class: 'muted intro' }, 'Each network has its own hosts, subnets, daemons, map and alert rules. The one in use is what the Map link and the pages that name no network show.'),
    messages, list));

  const current = chosenNetwork(s);
  if (!s.networks.length) {
    fill(list, notice('info', admin ? 'No network yet: create one.' : 'No network you may see.'));
    return;
  }
  fill(list, s.networks.map((n) => {
    const counts = h('p', { class: 'network-counts' }, h('span', { class: 'muted' }, 'Counting…'));
    void contentsOf(n.id).then((c) => fill(counts, countsLine(contentsParts(c))), (err: ApiError) => fill(counts, h('span', { class: 'muted' }, err.message)));
    const isCurrent = n.id === current;
    return h('article', { class: 'item-card network-card', 'data-network-id': n.id, 'aria-label': `Network ${n.name}` },
      h('div', { class: 'item-title' },
        h('h2', {}, link(`/networks/${n.id}`, n.name)),
        isCurrent ? h('span', { class: 'badge good current' }, 'in use') : null),
      n.description ? h('p', { class: 'description' }, n.description) : null,
      counts,
      h('p', { class: 'muted network-facts' }, `Hosts stale after ${plural(expiryOf(n), 'day')} offline · created ${when(n.created_at)}`),
      h('div', { class: 'item-actions' },
        isCurrent ? null : h('button', { type: 'button', class: 'use-network', onclick: () => { useNetwork(n.id); redraw(); } }, 'Use this network'),
        link(`/networks/${n.id}/topology`, 'Map'), link(`/hosts?network=${n.id}`, 'Hosts'), link(`/changes?network=${n.id}`, 'Changes'),
        link(`/networks/${n.id}`, 'Alert rules'),
        admin ? h('span', { class: 'push' },
          h('button', { type: 'button', class: 'edit-network', 'aria-label': `Rename or edit ${n.name}`, onclick: () => networkForm(s, n, () => redraw()) }, 'Rename / edit'), ' ',
          h('button', { type: 'button', class: 'danger delete-network', 'aria-label': `Delete ${n.name}`, onclick: async () => {
            if (await deleteNetwork(s, n, (m) => fill(messages, m))) {
              redraw();
              fill(messages, notice('info', `Network “${n.name}” deleted.`));
            }
          } }, 'Delete')) : null));
  }));
}

export function networkScreen(outlet: HTMLElement, route: Route, s: Session) {
  const id = route.params.network!;
  const admin = isAdmin(s);
  const messages = h('div', { 'aria-live': 'polite' });
  fill(outlet, h('p', { class: 'muted' }, 'Loading…'));
  void (async () => {
    let network: Network;
    try {
      network = s.networks.find((n) => n.id === id) ?? await api.get<Network>(apiPath`/api/v1/networks/${id}`);
    } catch (err) {
      const e = err as ApiError;
      fill(outlet, h('p', {}, link('/networks', '← Networks')), notice('error', e.message, e.code));
      return;
    }
    const redraw = () => navigate(`/networks/${id}`, true);
    const counts = h('p', { class: 'network-counts' }, h('span', { class: 'muted' }, 'Counting…'));
    void contentsOf(id).then((c) => fill(counts, countsLine(contentsParts(c, true))), (err: ApiError) => fill(counts, notice('error', err.message, err.code)));
    const isCurrent = chosenNetwork(s) === id;
    fill(outlet, h('div', { class: 'settings-screen network-screen', 'data-network-id': id },
      h('p', { class: 'back' }, link('/networks', '← Networks')),
      h('div', { class: 'map-head' }, h('h1', {}, network.name),
        isCurrent ? h('span', { class: 'badge good current' }, 'in use')
          : h('button', { type: 'button', class: 'use-network', onclick: () => { useNetwork(id); redraw(); } }, 'Use this network')),
      messages,
      h('section', { class: 'item-card network-settings', 'aria-labelledby': 'network-settings-title' },
        h('h2', { id: 'network-settings-title' }, 'Settings'),
        h('dl', {},
          h('dt', {}, 'Description'), h('dd', {}, network.description || '—'),
          h('dt', {}, 'Stale after'), h('dd', { class: 'host-expiry' }, `${plural(expiryOf(network), 'day')} offline`,
            h('span', { class: 'muted hint' }, ' — hosts offline longer than this are shown as stale')),
          h('dt', {}, 'Holds'), h('dd', {}, counts),
          h('dt', {}, 'Created'), h('dd', {}, when(network.created_at))),
        h('div', { class: 'item-actions' },
          link(`/networks/${id}/topology`, 'Map'), link(`/hosts?network=${id}`, 'Hosts'), link(`/changes?network=${id}`, 'Changes'),
          admin ? h('span', { class: 'push' },
            h('button', { type: 'button', class: 'edit-network', onclick: () => networkForm(s, network, () => redraw()) }, 'Rename / edit'), ' ',
            h('button', { type: 'button', class: 'danger delete-network', onclick: async () => {
              if (await deleteNetwork(s, network, (m) => fill(messages, m))) navigate('/networks', true);
            } }, 'Delete')) : null)),
      alertRulesSection(id, s), shareLinksSection(id, s)));
  })();
}
