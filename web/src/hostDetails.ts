// A host as a person reads it: its status (online, offline since, stale, ignored), what it is (device, OS, MAC vendor: hostFacts.ts), addresses, ports, services with their bindings, tags, last seen,
// its daemon's version status with warnings, and its history (hostHistory.ts: each change of the host
// or its children).
// Used by the map's side panel and by the host page; it only reads the API.
import { api, apiPath, ApiError } from './api.js';
import { h, notice, when } from './dom.js';
import { navigate } from './main.js';
import type { Tag } from './apiTypes.js';
import { memberServiceIds, roleAt, serviceOfBindings } from './hostDependencies.js';
import { historySection } from './hostHistory.js';
import { factsLines, statusBadge } from './hostFacts.js';

let tagCache: Promise<Map<string, Tag>> | undefined;
export const tagsById = () => (tagCache ??= api.get<Tag[]>('/api/v1/tags?limit=1000').then((tags) => new Map(tags.map((t) => [t.id, t])), () => new Map()));

/** The host on its network's map, selected (hidden hosts shown, if it is one). */
function mapLinkOf(host: { id: string; network_id: string; hidden?: boolean }) {
  const href = `/networks/${host.network_id}/topology?${new URLSearchParams({ focus: host.id, ...(host.hidden ? { hidden: 'true' } : {}) })}`;
  return h('a', { href, id: 'show-on-map', onclick: (e: MouseEvent) => { e.preventDefault(); navigate(href); } }, 'Show on the map');
}

function table(caption: string, head: string[], rows: Array<Array<string | Node>>, empty: string) {
  if (!rows.length) return h('section', {}, h('h3', {}, caption), h('p', { class: 'muted' }, empty));
  return h('section', {},
    h('h3', {}, caption),
    h('table', {}, h('thead', {}, h('tr', {}, head.map((x) => h('th', { scope: 'col' }, x)))), h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c)))))));
}

const DEPENDENCY_KIND: Record<string, string> = { HubAndSpoke: 'hub and spoke', RequestPath: 'request path' };

/**
 * The dependencies the host's services are members of: each one's name (in its colour), kind, the
 * host's role (hub, spoke, step n of a path) and the other members as "service · host".
 */
async function dependenciesOf(host: { id: string; network_id: string }, q: string): Promise<Node> {
  const list = (path: string) => api.get<any[]>(`${path}?${new URLSearchParams({ network_id: host.network_id, limit: '1000' })}${q.replace('?', '&')}`).catch(() => []);
  const [deps, services, hosts] = await Promise.all([list('/api/v1/dependencies'), list('/api/v1/services'), list('/api/v1/hosts')]);
  const serviceById = new Map<string, any>(services.map((s) => [s.id, s]));
  const serviceOfBinding = serviceOfBindings(services);
  const hostName = new Map<string, string>(hosts.map((x) => [x.id, x.name]));
  const named = (id: string) => `${serviceById.get(id)?.name ?? id} · ${hostName.get(serviceById.get(id)?.host_id) ?? '?'}`;
  const rows: Array<Array<string | Node>> = [];
  for (const d of deps) {
    const ids = memberServiceIds(d, serviceOfBinding);
    const mine = ids.map((id, i) => [id, i] as const).filter(([id]) => serviceById.get(id)?.host_id === host.id);
    if (!mine.length) continue;
    const role = mine.map(([, i]) => (d.dependency_type === 'HubAndSpoke' ? roleAt(d, i) : `${roleAt(d, i)} of ${ids.length}`)).join(', ');
    const others = ids.filter((id) => serviceById.get(id)?.host_id !== host.id).map(named).join(', ') || '—';
    rows.push([h('span', { class: `tag tag-${d.color ?? 'Gray'}` }, d.name), DEPENDENCY_KIND[d.dependency_type] ?? d.dependency_type, role, others]);
  }
  return table('Dependencies', ['Dependency', 'Kind', 'Role', 'Other members'], rows, 'In no dependency.');
}

/**
 * The host's details as an element (a loading placeholder is replaced when the API answers).
 * `mapLink`: with a link to the host on its network's map (the host page; not the map's own panel).
 */
export async function hostDetails(hostId: string, opts: { at?: string; mapLink?: boolean } = {}): Promise<HTMLElement> {
  try {
    const q = opts.at ? `?at=${encodeURIComponent(opts.at)}` : '';
    const history = historySection(hostId);
    const [host, tags, daemons] = await Promise.all([
      api.get(apiPath`/api/v1/hosts/${hostId}` + q),
      tagsById(),
      api.get<any[]>('/api/v1/daemons?limit=1000').catch(() => []),
    ]);
    const ipById = new Map<string, any>((host.ip_addresses ?? []).map((ip: any) => [ip.id, ip]));
    const portById = new Map<string, any>((host.ports ?? []).map((p: any) => [p.id, p]));
    const binding = (b: any) => b.type === 'Port'
      ? `port ${portById.get(b.port_id)?.number ?? '?'}/${portById.get(b.port_id)?.protocol ?? ''}${b.ip_address_id ? ` on ${ipById.get(b.ip_address_id)?.ip_address ?? '?'}` : ' on every address'}`
      : `address ${ipById.get(b.ip_address_id)?.ip_address ?? '?'}`;
    const daemon = daemons.find((d) => d.host_id === hostId);
    // An address, port or service a scan no longer saw: offline since then (kept, with its history).
    const seen = (c: { offline_at?: string | null; last_seen_at?: string | null }) => (c.offline_at ? `offline since ${when(c.offline_at)}` : c.last_seen_at ? 'online' : '—');
    const dependencies = await dependenciesOf(host, q);
    return h('article', { class: 'host-details', 'aria-label': `Host ${host.name}` },
      h('h2', {}, host.name, host.hidden ? h('span', { class: 'badge' }, 'hidden') : null),
      opts.mapLink ? h('p', {}, mapLinkOf(host)) : null,
      h('dl', {},
        h('dt', {}, 'Status'), h('dd', { class: 'host-status' }, statusBadge(host),
          host.offline_at ? h('span', { class: 'muted' }, ` not seen by a scan since ${when(host.offline_at)}`) : null),
        h('dt', {}, 'Hostname'), h('dd', {}, host.hostname ?? '—'),
        factsLines(host),
        h('dt', {}, 'Last seen'), h('dd', {}, when(host.last_seen_at)),
        h('dt', {}, 'Tags'), h('dd', {}, (host.tags ?? []).length ? host.tags.map((t: string) => h('span', { class: `tag tag-${tags.get(t)?.color ?? 'Gray'}` }, tags.get(t)?.name ?? t)) : '—'),
        host.description ? [h('dt', {}, 'Description'), h('dd', {}, host.description)] : null),
      daemon ? h('section', { class: 'daemon' },
        h('h3', {}, 'Daemon'),
        h('p', {}, `${daemon.name}: version ${daemon.version ?? 'unknown'} — `, h('strong', {}, daemon.version_status?.status ?? 'Unknown'), daemon.is_unreachable ? h('span', { class: 'badge bad' }, 'unreachable') : null),
        (daemon.version_status?.warnings ?? []).map((w: any) => notice(w.severity === 'Critical' ? 'error' : 'info', `${w.severity}: ${w.message}`))) : null,
      table('IP addresses', ['Address', 'MAC', 'Vendor', 'Name', 'Seen'], (host.ip_addresses ?? []).map((ip: any) => [ip.ip_address, ip.mac_address ?? '—', ip.mac_vendor ?? '—', ip.name ?? '—', seen(ip)]), 'No addresses.'),
      table('Ports', ['Port', 'Protocol', 'Seen'], (host.ports ?? []).map((p: any) => [String(p.number), p.protocol, seen(p)]), 'No open ports.'),
      table('Services', ['Service', 'Definition', 'Bindings', 'Seen'], (host.services ?? []).map((s: any) => [s.name, s.service_definition ?? '—', (s.bindings ?? []).map(binding).join('; ') || '—', seen(s)]), 'No services.'),
      dependencies,
      await history);
  } catch (err) {
    const e = err as ApiError;
    return notice('error', e.message, e.code);
  }
}
