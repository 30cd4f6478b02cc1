// What kind of device a host is (the map draws an icon per kind), derived in one place
// from what the inventory knows: the kind of device discovery's evidence named (`device_type`,
// e.g. NAS, Printer, Router, Camera), else a guess from its services' definitions, how many
// interfaces it has (and whether their forwarding tables learned MACs), and
// whether it is virtualized or runs containers. Nothing is read from names: a host called
// "sw-01" with only SSH is a server. The first rule that matches wins, most specific first.
import { groupBy } from '../../core/historyTable.js';
import type { Snapshot } from './graph.js';

export const HOST_KINDS = [
  'firewall', 'router', 'switch', 'access_point', 'printer', 'camera', 'nas', 'phone',
  'container_host', 'hypervisor', 'virtual_machine', 'server', 'workstation',
] as const;
export type HostKind = (typeof HOST_KINDS)[number];

type Row = Record<string, any>;

/** Service definitions (lower case) that say what the device is. */
const BY_SERVICE: Array<[HostKind, RegExp]> = [
  ['firewall', /\b(opnsense|pfsense|fortigate|fortios|sophos|check ?point|palo ?alto|firewall|ufw|firewalld)\b/],
  ['router', /\b(bgp|ospf|vrrp|routeros|mikrotik|edgerouter|vyos|router)\b/],
  ['switch', /\b(switch|cisco ios|junos)\b/],
  ['access_point', /\b(access point|unifi ap|wi-?fi|wlan|aruba ap)\b/],
  ['printer', /\b(ipp|jetdirect|lpd|printer)\b/],
  ['camera', /\b(rtsp|onvif|camera|nvr)\b/],
  ['container_host', /\b(docker|podman|kubernetes|k3s|containerd|lxd)\b/],
  ['hypervisor', /\b(proxmox|esxi|vmware|hyper-v|xcp-ng|xen|libvirt)\b/],
];

/**
 * Device types as discovery's evidence names them (Recog's hw.device / os.device and our agent's
 * product rules; lower case, whole value) to a kind. A type not listed ("General", "Device", "Power
 * Device"…) says nothing the map draws: the guess from services decides.
 */
const BY_DEVICE_TYPE: Array<[HostKind, RegExp]> = [
  ['firewall', /^(firewall|security appliance|utm|vpn|ips|ids|nac)$/],
  ['router', /^(router|broadband router|adsl router|sd-wan appliance|remote access server|(docsis )?cable modem|a?dsl modem|gateway)$/],
  ['switch', /^(switch|hub|network switch)$/],
  ['access_point', /^(wap|access point|wireless access point|wireless controller|wlan repeater)$/],
  ['printer', /^(printer|print server|multifunction device|mfp|copier|fax server)$/],
  ['camera', /^(ip camera|camera|web ?cam|dvr|nvr|(cloud )?network video recorder|video encoder)$/],
  ['nas', /^(nas|storage|storage appliance|file server|tape library)$/],
  ['phone', /^(voip|voip phone|sip device|ip phone|phone|mobile phone|mobile|tablet)$/],
  ['hypervisor', /^hypervisor$/],
  ['virtual_machine', /^(virtual machine|vm)$/],
  ['server', /^(server|lights out management|management processor)$/],
  ['workstation', /^(desktop|laptop|workstation|general purpose)$/],
];

/** The kind a `device_type` names, undefined for one that names none. */
export function kindOfDeviceType(deviceType: unknown): HostKind | undefined {
  const t = typeof deviceType === 'string' ? deviceType.trim().toLowerCase().replace(/\s+/g, ' ') : '';
  return t ? BY_DEVICE_TYPE.find(([, pattern]) => pattern.test(t))?.[0] : undefined;
}

/** A switch has many ports: at least this many interfaces, whatever it serves. */
const SWITCH_INTERFACES = 8;

/**
 * A host's kind from its own row (`device_type` when the evidence named one we draw: it wins over
 * every guess; else `virtualization`), its services (`service_definition`, and
 * `virtualization` naming another service: a container running there) and its interfaces.
 */
export function hostKind(host: Row, services: Row[], interfaces: Row[]): HostKind {
  const named = kindOfDeviceType(host.device_type);
  if (named) return named;
  const definitions = services.map((s) => String(s.service_definition ?? '').toLowerCase());
  for (const [kind, pattern] of BY_SERVICE.slice(0, 2)) if (definitions.some((d) => pattern.test(d))) return kind;
  // Many ports, or a forwarding table that learned MACs on its ports (a bridge: what a switch is).
  if (interfaces.length >= SWITCH_INTERFACES || interfaces.some((i) => Array.isArray(i.fdb_macs) && i.fdb_macs.length)) return 'switch';
  for (const [kind, pattern] of BY_SERVICE.slice(2)) if (definitions.some((d) => pattern.test(d))) return kind;
  // Containers reported on the host (a service running under another of its services).
  const ids = new Set(services.map((s) => s.id));
  if (services.some((s) => ids.has(s.virtualization?.details?.service_id) && s.virtualization.details.service_id !== s.id)) return 'container_host';
  if (host.virtualization) return 'virtual_machine';
  // A device that offers nothing on the network is a client.
  return services.length ? 'server' : 'workstation';
}

const kindsOf = new WeakMap<Snapshot, Map<string, HostKind>>();

/** The kind of a host of this snapshot (every host's kind computed once per snapshot). */
export function hostKindIn(s: Snapshot, hostId: string): HostKind | undefined {
  let kinds = kindsOf.get(s);
  if (!kinds) {
    const services = groupBy(s.services, 'host_id');
    const interfaces = groupBy(s.interfaces, 'host_id');
    kinds = new Map(s.hosts.map((h) => [h.id as string, hostKind(h, services.get(h.id) ?? [], interfaces.get(h.id) ?? [])]));
    kindsOf.set(s, kinds);
  }
  return kinds.get(hostId);
}
