// What kind of device a host is (issue 23: the map draws an icon per kind), derived in one place
// from what the inventory knows: its services' definitions, how many interfaces it has (and whether
// their forwarding tables learned MACs), and
// whether it is virtualized or runs containers. Nothing is read from names: a host called
// "sw-01" with only SSH is a server. The first rule that matches wins, most specific first.
import { groupBy } from '../../core/historyTable.js';
import type { Snapshot } from './graph.js';

export const HOST_KINDS = [
  'firewall', 'router', 'switch', 'access_point', 'printer', 'camera',
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

/** A switch has many ports: at least this many interfaces, whatever it serves. */
const SWITCH_INTERFACES = 8;

/**
 * A host's kind from its own row (`virtualization`), its services (`service_definition`, and
 * `virtualization` naming another service: a container running there) and its interfaces.
 */
export function hostKind(host: Row, services: Row[], interfaces: Row[]): HostKind {
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
