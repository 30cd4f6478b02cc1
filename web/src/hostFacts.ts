// What discovery's evidence says a host is (read-only in the API): its kind of device
// and model, its OS and version with the confidence of that evidence, and its MACs' vendors; and
// its status (online, offline, stale, ignored). Shown by the hosts list (one compact
// cell, a Vendor and a Status column) and a host's details (hostDetails.ts).
import { h, when } from './dom.js';
import type { Host } from './apiTypes.js';

export const STATUSES = ['online', 'offline', 'stale', 'ignored'] as const;
export const STATUS_TEXT: Record<(typeof STATUSES)[number], string> = { online: 'Online', offline: 'Offline', stale: 'Stale', ignored: 'Ignored' };

/** A host's status as a badge; offline and stale say since when. */
export function statusBadge(host: Pick<Host, 'status' | 'offline_at'>) {
  const status = host.status ?? 'online';
  return h('span', { class: `badge status-${status}`, title: host.offline_at ? `Not seen by a completed scan since ${when(host.offline_at)}` : undefined }, STATUS_TEXT[status]);
}

type Facts = Partial<Pick<Host, 'device_type' | 'device_model' | 'os_name' | 'os_version' | 'os_confidence'>>;

/** Device types the evidence commonly names (suggested by the list's filter; any other is typed). */
export const DEVICE_TYPES = ['Camera', 'Firewall', 'Hypervisor', 'IP Camera', 'Multifunction Device', 'NAS', 'Printer', 'Router', 'Storage', 'Switch', 'VoIP', 'WAP'];

/** "HP Color LaserJet" or the type alone; null when the evidence named neither. */
export function deviceText(host: Facts): string | null {
  const type = host.device_type?.trim();
  const model = host.device_model?.trim();
  if (!type && !model) return null;
  // A model that repeats the type ("Printer") says nothing more.
  return type && model && model.toLowerCase() !== type.toLowerCase() ? `${type} · ${model}` : (type || model)!;
}

/** "Debian Linux 12" (the version unless the name already ends with it); null without an OS. */
export function osText(host: Facts): string | null {
  const name = host.os_name?.trim();
  if (!name) return null;
  const version = host.os_version?.trim();
  return version && !name.endsWith(version) ? `${name} ${version}` : name;
}

/** The distinct vendors of a host's MACs, in address order. */
export const macVendors = (host: { ip_addresses?: Array<{ mac_vendor?: string | null }> }) =>
  [...new Set((host.ip_addresses ?? []).map((ip) => ip.mac_vendor?.trim()).filter((v): v is string => !!v))];

/**
 * The list's cell: the device (its type a link that filters the list by it) over the OS, or "—".
 * `filterBy` is the list's own navigation to a device type.
 */
export function factsCell(host: Facts, filterBy: (deviceType: string) => void): Node {
  const device = deviceText(host);
  const os = osText(host);
  if (!device && !os) return document.createTextNode('—');
  const type = host.device_type?.trim();
  const model = host.device_model?.trim() && host.device_model.trim().toLowerCase() !== type?.toLowerCase() ? host.device_model.trim() : null;
  return h('div', { class: 'host-facts' },
    device ? h('div', { class: 'facts-device' },
      type ? h('a', { href: `/hosts?device_type=${encodeURIComponent(type)}`, class: 'device-type', title: `Only ${type} hosts`, onclick: (e: MouseEvent) => { e.preventDefault(); filterBy(type); } }, type) : null,
      type && model ? ' · ' : null,
      model ? h('span', { class: 'device-model' }, model) : null) : null,
    os ? h('div', { class: 'facts-os muted' }, os) : null);
}

/** The details' lines (dt/dd pairs): device, OS with its confidence, MAC vendor. */
export function factsLines(host: Facts & { ip_addresses?: Array<{ mac_vendor?: string | null }> }): Node[] {
  const vendors = macVendors(host);
  const os = osText(host);
  return [
    h('dt', {}, 'Device'), h('dd', { class: 'facts-device' }, deviceText(host) ?? '—'),
    h('dt', {}, 'OS'), h('dd', { class: 'facts-os' }, os ?? '—',
      os && host.os_confidence ? h('span', { class: `badge confidence confidence-${host.os_confidence.toLowerCase()}`, title: 'How sure the evidence is' }, `${host.os_confidence} confidence`) : null),
    ...(vendors.length ? [h('dt', {}, vendors.length > 1 ? 'MAC vendors' : 'MAC vendor'), h('dd', { class: 'facts-vendor' }, vendors.join(', '))] : []),
  ];
}
