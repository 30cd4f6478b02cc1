// The agent's own host (SelfReport, daemon-protocol.md §1.1 step 4): hostname, IPv4 interfaces with
// MACs and their bridge / bond parents (from /sys/class/net), the subnets it is on (listed as
// suggestions: the agent never scans them unless an operator approves them), and a stable identity
// from /etc/machine-id, so a reinstalled agent (a new daemon id) reports the same host.
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { hostname as osHostname, networkInterfaces } from 'node:os';
import { basename } from 'node:path';
import { networkAddress, parseIPv4 } from './net/ip.js';
import type { DiscoveryType } from './protocol/client.js';
import { metadataEntry, NIL, stableUuid, type HostRequest, type SubnetBody } from './protocol/entities.js';

export interface LocalInterface {
  /** Kernel name plus its bridge / bond relations, e.g. "br0 (bridge of eth0, veth1)". */
  name: string;
  ip: string;
  cidr: string;
  mac: string | null;
  subnetType: string;
}

export interface LocalHost {
  hostname: string;
  machineId: string | null;
  interfaces: LocalInterface[];
}

const SYS = '/sys/class/net';
const list = (dir: string) => { try { return readdirSync(dir).sort(); } catch { return []; } };
const read = (file: string) => { try { return readFileSync(file, 'utf8').trim(); } catch { return null; } };

/** "eth0" → "eth0 (port of br0)", "br0" → "br0 (bridge of eth0, veth1)", "bond0" → "bond0 (bond of eth1, eth2)". */
export function describeInterface(name: string, sys = SYS): string {
  const relations: string[] = [];
  const bridgePorts = list(`${sys}/${name}/brif`);
  if (bridgePorts.length) relations.push(`bridge of ${bridgePorts.join(', ')}`);
  const bondSlaves = read(`${sys}/${name}/bonding/slaves`);
  if (bondSlaves) relations.push(`bond of ${bondSlaves.split(/\s+/).join(', ')}`);
  try {
    const master = basename(readlinkSync(`${sys}/${name}/master`));
    relations.push(existsSync(`${sys}/${master}/bonding`) ? `in bond ${master}` : `port of ${master}`);
  } catch {
    /* no master */
  }
  return relations.length ? `${name} (${relations.join('; ')})` : name;
}

function networkOf(ip: string, prefix: number): string {
  return `${networkAddress(parseIPv4(ip)!, prefix).toString()}/${prefix}`;
}

/** Docker's bridges are the containers' networks, not the host's LAN. */
const subnetTypeOf = (name: string) => (name === 'docker0' || name.startsWith('br-') ? 'DockerBridge' : 'Lan');

export function readMachineId(): string | null {
  return read('/etc/machine-id') || read('/var/lib/dbus/machine-id');
}

/** IPv4 interfaces other than loopback (IPv6 is not reported: the server's subnets would be /64 suggestions nobody scans). */
export function readLocalHost(): LocalHost {
  const interfaces: LocalInterface[] = [];
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    for (const a of addresses ?? []) {
      if (a.family !== 'IPv4' || a.internal || !a.cidr) continue;
      const prefix = Number(a.cidr.split('/')[1]);
      if (prefix < 10) continue; // upstream skips such huge subnets too
      const mac = a.mac && a.mac !== '00:00:00:00:00:00' ? a.mac.toUpperCase() : null;
      interfaces.push({ name: describeInterface(name), ip: a.address, cidr: networkOf(a.address, prefix), mac, subnetType: subnetTypeOf(name) });
    }
  }
  return { hostname: osHostname(), machineId: readMachineId(), interfaces };
}

/** The host's id: from the machine id and the network (a reinstall keeps it), else from the daemon id. */
export const selfHostId = (local: LocalHost, networkId: string, daemonId: string) =>
  stableUuid('self', networkId, local.machineId ?? `daemon:${daemonId}`);

export interface SelfReportContext {
  networkId: string;
  daemonId: string;
  discoveryType: DiscoveryType;
  date: string;
  /** The agent's API port (server_poll), bound to the service; none in daemon_poll (it listens nowhere). */
  listenPort: number | null;
}

export function selfSubnets(local: LocalHost, ctx: SelfReportContext): SubnetBody[] {
  const seen = new Map<string, SubnetBody>();
  for (const i of local.interfaces) {
    if (seen.has(i.cidr)) continue;
    seen.set(i.cidr, {
      id: stableUuid('subnet', ctx.networkId, i.cidr), created_at: ctx.date, updated_at: ctx.date, cidr: i.cidr, network_id: ctx.networkId,
      name: i.cidr, description: null, subnet_type: i.subnetType,
      source: { type: 'Discovery', metadata: [metadataEntry(ctx.discoveryType, ctx.daemonId, ctx.date)] }, tags: [],
    });
  }
  return [...seen.values()];
}

/** The agent's host report; `subnetIds` maps each CIDR to the id the server answered. */
export function selfHostRequest(local: LocalHost, ctx: SelfReportContext, subnetIds: Map<string, string>): HostRequest {
  const hostId = selfHostId(local, ctx.networkId, ctx.daemonId);
  const metadata = metadataEntry(ctx.discoveryType, ctx.daemonId, ctx.date);
  const interfaces = local.interfaces.filter((i) => subnetIds.has(i.cidr)).map((i, position) => ({
    id: stableUuid(hostId, 'interface', subnetIds.get(i.cidr)!, i.ip), created_at: ctx.date, updated_at: ctx.date, network_id: ctx.networkId,
    host_id: NIL, subnet_id: subnetIds.get(i.cidr)!, ip_address: i.ip, mac_address: i.mac, name: i.name, position,
  }));
  const port = ctx.listenPort === null ? null : {
    id: stableUuid(hostId, 'port', 'Tcp', String(ctx.listenPort)), created_at: ctx.date, updated_at: ctx.date, host_id: NIL, network_id: NIL,
    number: ctx.listenPort, protocol: 'Tcp', type: 'Custom',
  };
  const serviceId = stableUuid(hostId, 'service', 'netinventory-agent');
  // Listening: bound to its port on every interface; not listening (daemon_poll): bound to each interface.
  const bindings = interfaces.map((i) => ({
    id: stableUuid(serviceId, 'binding', i.id), created_at: ctx.date, updated_at: ctx.date, interface_id: i.id, network_id: NIL,
    ...(port ? { port_id: port.id } : {}), service_id: NIL, type: port ? 'Port' : 'Interface',
  }));
  return {
    host: {
      id: hostId, created_at: ctx.date, updated_at: ctx.date, name: local.hostname, hostname: local.hostname, network_id: ctx.networkId,
      description: 'NetInventory agent', source: { type: 'Discovery', metadata: [metadata] }, virtualization: null, hidden: false, tags: [],
    },
    interfaces,
    ports: port ? [port] : [],
    services: [{
      id: serviceId, created_at: ctx.date, updated_at: ctx.date, host_id: hostId, network_id: ctx.networkId, name: 'NetInventory Agent',
      service_definition: 'NetInventory Agent', position: 0, virtualization: null, tags: [], bindings,
      source: { type: 'DiscoveryWithMatch', metadata: [metadata], details: { confidence: 'Certain', reason: { type: 'reason', data: 'NetInventory agent self-report' } } },
    }],
  };
}
