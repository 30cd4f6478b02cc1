// Scanopy 0.14 entities for a Docker discovery (daemon-protocol.md §2.1, §2.2, §3.3) from what the
// Engine API said. Ids come from what identifies the thing (the Docker host, the container's name,
// the network's CIDR) and dates from the container's creation, so an unchanged engine gives
// byte-identical reports: no new history on the server.
//
// Each container is a host of its own, with its addresses on its Docker networks and its own ports,
// and one service bound to those only (a container's address lists its own services, not
// the Docker host's). The Docker host gets a "Docker" service and the host ports its containers
// publish, each bound to a service named after its container. docs/agent.md says why containers are
// not sent as the Docker host's payloads (Scanopy's way).
import type Docker from 'dockerode';
import type { DockerSnapshot } from '../docker.js';
import type { LocalHost } from '../selfReport.js';
import { selfHostId } from '../selfReport.js';
import type { DiscoveryType } from './client.js';
import { metadataEntry, NIL, stableUuid, subnetBody, type HostRequest, type SubnetBody } from './entities.js';

export interface DockerContext {
  networkId: string;
  daemonId: string;
  /** The work's Docker type, its host_id the Docker host's (the server keeps bridge CIDRs per Docker host). */
  discoveryType: DiscoveryType;
  /** When the agent first reported its host (the Docker host's dates). */
  date: string;
}

export interface DockerHostIdentity {
  hostId: string;
  name: string;
  /** The Docker host's "Docker" service: every container's virtualization names it. */
  dockerServiceId: string;
}

/** `ip:hostPort` → whether a TCP connect from the agent got an answer (checked only inside --targets). */
export type PublishedCheck = Map<string, boolean>;

/** A local socket: the agent's own host (the SelfReport's id); a remote engine: its engine ID. */
export function dockerHostIdentity(snapshot: DockerSnapshot, local: LocalHost | null, networkId: string, daemonId: string): DockerHostIdentity {
  // Podman's compatible /info may leave ID empty: then the engine's name, else where it was reached.
  const engine = snapshot.info.ID || snapshot.info.Name || snapshot.endpoint.text;
  const hostId = local ? selfHostId(local, networkId, daemonId) : stableUuid('docker-host', networkId, engine);
  return { hostId, name: local?.hostname ?? (snapshot.info.Name || snapshot.endpoint.text), dockerServiceId: stableUuid(hostId, 'service', 'docker', engine) };
}

const SUBNET_TYPES: Record<string, string> = { bridge: 'DockerBridge', overlay: 'DockerBridge', macvlan: 'MacVlan', ipvlan: 'IpVlan' };
const IPV4_CIDR = /^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/;

/** One subnet per Docker network with an IPv4 range (host and none have none), keyed by the network's id. */
export function dockerSubnets(snapshot: DockerSnapshot, identity: DockerHostIdentity, ctx: DockerContext): Array<{ network: string; body: SubnetBody }> {
  return snapshot.networks.flatMap((n) => {
    const type = SUBNET_TYPES[n.Driver];
    const cidr = (n.IPAM?.Config ?? []).map((c) => c.Subnet).find((s): s is string => !!s && IPV4_CIDR.test(s));
    if (!type || !cidr) return [];
    const body = subnetBody({
      cidr, networkId: ctx.networkId, daemonId: ctx.daemonId, discoveryType: ctx.discoveryType, date: ctx.date, subnetType: type,
      name: `${n.Name} (Docker ${n.Driver} on ${identity.name})`.slice(0, 100),
    });
    // The default bridge's CIDR repeats on every Docker host: the id names the host too.
    return [{ network: n.Id, body: { ...body, id: stableUuid('docker-subnet', ctx.networkId, identity.hostId, cidr) } }];
  });
}

const containerName = (c: Docker.ContainerInspectInfo) => c.Name.replace(/^\//, '');
const composeService = (c: Docker.ContainerInspectInfo) => c.Config?.Labels?.['com.docker.compose.service'] ?? null;
const composeProject = (c: Docker.ContainerInspectInfo) => c.Config?.Labels?.['com.docker.compose.project'] ?? null;
/** The service's name: the compose service, else the container's name. */
export const serviceName = (c: Docker.ContainerInspectInfo) => composeService(c) ?? containerName(c);

/**
 * The service's definition: the image's name without registry, path or tag ("ghcr.io/x/shop-api:2.3"
 * → "shop-api"), which the web app's icons know (nginx, postgres, redis…). Never "Docker…": the
 * server calls a host with a Docker service a container host (src/modules/topology/hostKind.ts).
 */
export function imageDefinition(image: string): string {
  const name = image.split('@')[0]!.split('/').at(-1)!.split(':')[0]!;
  const safe = name.replace(/docker|podman/gi, '').replace(/^[-_.]+|[-_.]+$/g, '');
  return (safe || 'container').slice(0, 100);
}

const virtualization = (c: Docker.ContainerInspectInfo, identity: DockerHostIdentity) => ({
  type: 'Docker', details: { container_name: containerName(c), container_id: c.Id, service_id: identity.dockerServiceId },
});

type Protocol = 'Tcp' | 'Udp';
const protocolOf = (p: string): Protocol | null => (p === 'tcp' ? 'Tcp' : p === 'udp' ? 'Udp' : null);

function portEntity(hostId: string, number: number, protocol: Protocol, date: string) {
  return { id: stableUuid(hostId, 'port', protocol, String(number)), created_at: date, updated_at: date, host_id: NIL, network_id: NIL, number, protocol, type: 'Custom' };
}

function binding(serviceId: string, date: string, interfaceId: string | null, portId: string | null) {
  return {
    id: stableUuid(serviceId, 'binding', portId ?? 'interface', interfaceId ?? 'all'), created_at: date, updated_at: date, interface_id: interfaceId,
    network_id: NIL, ...(portId ? { port_id: portId } : {}), service_id: NIL, type: portId ? 'Port' : 'Interface',
  };
}

function serviceEntity(opts: {
  id: string; hostId: string; ctx: DockerContext; date: string; name: string; definition: string; position: number;
  virtualization: object | null; bindings: object[]; reason: string; metadata: Record<string, unknown>;
}) {
  return {
    id: opts.id, created_at: opts.date, updated_at: opts.date, host_id: opts.hostId, network_id: opts.ctx.networkId, name: opts.name.slice(0, 100),
    service_definition: opts.definition, position: opts.position, virtualization: opts.virtualization, tags: [], bindings: opts.bindings,
    source: {
      type: 'DiscoveryWithMatch', metadata: [opts.metadata],
      details: { confidence: 'Certain', reason: { type: 'reason', data: opts.reason.length > 1000 ? `${opts.reason.slice(0, 999)}…` : opts.reason } },
    },
  };
}

/** "0.0.0.0:8080→80/tcp" for each published binding; "(not published)" when none. */
function publishedText(c: Docker.ContainerInspectInfo): string[] {
  return Object.entries(c.NetworkSettings?.Ports ?? {}).flatMap(([spec, bindings]) => (bindings ?? []).map((b) => `${b.HostIp.includes(':') ? `[${b.HostIp}]` : b.HostIp}:${b.HostPort}→${spec}`));
}

/** Why the agent says this: the container, its image, compose labels, what it publishes and what answered. */
function containerReason(c: Docker.ContainerInspectInfo, identity: DockerHostIdentity, published: PublishedCheck): string {
  const project = composeProject(c);
  const compose = project ? `, compose project ${project} service ${composeService(c) ?? '?'}` : '';
  const ports = publishedText(c);
  const checked = [...published.entries()]
    .filter(([key]) => Object.values(c.NetworkSettings?.Ports ?? {}).some((bs) => (bs ?? []).some((b) => key.endsWith(`:${b.HostPort}`))))
    .map(([key, ok]) => `${key} ${ok ? 'answered' : 'did not answer'} a TCP connect`);
  return [
    `Docker container ${containerName(c)} (${c.Id.slice(0, 12)}) of image ${c.Config?.Image ?? c.Image}${compose} on Docker host ${identity.name}, read from the Engine API`,
    ports.length ? `publishes ${ports.join(', ')}` : 'publishes no port',
    ...checked,
  ].join('; ');
}

/** Container ports: the image's exposed ones and the published ones. */
function containerPorts(c: Docker.ContainerInspectInfo): Array<{ number: number; protocol: Protocol }> {
  const specs = new Set([...Object.keys(c.Config?.ExposedPorts ?? {}), ...Object.keys(c.NetworkSettings?.Ports ?? {})]);
  return [...specs].flatMap((spec) => {
    const [number, proto] = spec.split('/');
    const protocol = protocolOf(proto ?? 'tcp');
    return protocol && Number(number) > 0 ? [{ number: Number(number), protocol }] : [];
  }).sort((a, b) => a.number - b.number || a.protocol.localeCompare(b.protocol));
}

const isHostNetwork = (c: Docker.ContainerInspectInfo) => c.HostConfig?.NetworkMode === 'host';

/**
 * A container as a host of its own: its addresses on its Docker networks (with their MACs), its own
 * ports, and one service bound to those ports on those addresses only. None for a container with no
 * address of its own (host network, none, or another container's network): the Docker host's
 * report carries it.
 */
export function containerRequest(
  c: Docker.ContainerInspectInfo, snapshot: DockerSnapshot, identity: DockerHostIdentity, subnetIds: Map<string, string>, ctx: DockerContext, published: PublishedCheck,
): HostRequest | null {
  if (isHostNetwork(c)) return null;
  const name = containerName(c);
  const hostId = stableUuid('docker-container', ctx.networkId, identity.hostId, name);
  const date = Number.isNaN(Date.parse(c.Created)) ? ctx.date : new Date(c.Created).toISOString();
  const metadata = metadataEntry(ctx.discoveryType, ctx.daemonId, date);
  const interfaces = Object.entries(c.NetworkSettings?.Networks ?? {}).flatMap(([network, ep]) => {
    const subnetId = subnetIds.get(ep.NetworkID);
    if (!ep.IPAddress || !subnetId) return [];
    return [{
      id: stableUuid(hostId, 'interface', subnetId, ep.IPAddress), created_at: date, updated_at: date, network_id: ctx.networkId, host_id: NIL,
      subnet_id: subnetId, ip_address: ep.IPAddress, mac_address: ep.MacAddress ? ep.MacAddress.toUpperCase() : null, name: network.slice(0, 100), position: 0,
    }];
  }).map((i, position) => ({ ...i, position }));
  if (!interfaces.length) return null;
  const ports = containerPorts(c).map((p) => portEntity(hostId, p.number, p.protocol, date));
  const serviceId = stableUuid(hostId, 'service', 'docker-container');
  const bindings = ports.length
    ? ports.flatMap((p) => interfaces.map((i) => binding(serviceId, date, i.id, p.id)))
    : interfaces.map((i) => binding(serviceId, date, i.id, null));
  return {
    host: {
      id: hostId, created_at: date, updated_at: date, name: name.slice(0, 100), hostname: null, network_id: ctx.networkId,
      description: `Docker container on ${identity.name} (image ${c.Config?.Image ?? c.Image})`.slice(0, 500),
      source: { type: 'Discovery', metadata: [metadata] }, virtualization: null, hidden: false, tags: [],
    },
    interfaces,
    ports,
    services: [serviceEntity({
      id: serviceId, hostId, ctx, date, name: serviceName(c), definition: imageDefinition(c.Config?.Image ?? c.Image), position: 0,
      virtualization: virtualization(c, identity), bindings, reason: containerReason(c, identity, published), metadata,
    })],
  };
}

/**
 * The Docker host: its own addresses (a local socket: the agent's interfaces, as the SelfReport
 * sends them), a "Docker" service, and per container the host ports it publishes on the host's
 * addresses (all of them for 0.0.0.0, the one it names otherwise; loopback-only ports are not on the
 * network and are named in the container's reason only). A host-network container's exposed ports
 * are the host's own, bound to its service here.
 */
export function dockerHostRequest(
  snapshot: DockerSnapshot, identity: DockerHostIdentity, local: LocalHost | null, subnetIds: Map<string, string>, ctx: DockerContext, published: PublishedCheck,
): HostRequest {
  const hostId = identity.hostId;
  const date = ctx.date;
  const metadata = metadataEntry(ctx.discoveryType, ctx.daemonId, date);
  const interfaces = (local?.interfaces ?? []).filter((i) => subnetIds.has(i.cidr)).map((i, position) => ({
    id: stableUuid(hostId, 'interface', subnetIds.get(i.cidr)!, i.ip), created_at: date, updated_at: date, network_id: ctx.networkId,
    host_id: NIL, subnet_id: subnetIds.get(i.cidr)!, ip_address: i.ip, mac_address: i.mac, name: i.name, position,
  }));
  const interfaceOf = (ip: string) => interfaces.find((i) => i.ip_address === ip);
  const ports = new Map<string, ReturnType<typeof portEntity>>();
  const portOf = (number: number, protocol: Protocol) => {
    const k = `${protocol}/${number}`;
    if (!ports.has(k)) ports.set(k, portEntity(hostId, number, protocol, date));
    return ports.get(k)!;
  };
  const version = [snapshot.info.ServerVersion, snapshot.info.OperatingSystem].filter(Boolean).join(', ');
  const services = [serviceEntity({
    id: identity.dockerServiceId, hostId, ctx, date, name: 'Docker', definition: 'Docker', position: 0, virtualization: null,
    bindings: interfaces.map((i) => binding(identity.dockerServiceId, date, i.id, null)), metadata,
    reason: `Docker Engine API at ${snapshot.endpoint.text} answered (engine ${snapshot.info.Name}${version ? `, ${version}` : ''}): ${snapshot.containers.length} running container(s), ${snapshot.networks.length} network(s)`,
  })];
  for (const c of [...snapshot.containers].sort((a, b) => containerName(a).localeCompare(containerName(b)))) {
    const serviceId = stableUuid(hostId, 'service', 'container', containerName(c));
    const bindings: object[] = [];
    const seen = new Set<string>();
    const bind = (number: number, protocol: Protocol, interfaceId: string | null) => {
      const port = portOf(number, protocol);
      const key = `${port.id}|${interfaceId}`;
      if (seen.has(key)) return;
      seen.add(key);
      bindings.push(binding(serviceId, date, interfaceId, port.id));
    };
    if (isHostNetwork(c)) {
      for (const p of containerPorts(c)) bind(p.number, p.protocol, null);
    } else {
      for (const [spec, list] of Object.entries(c.NetworkSettings?.Ports ?? {})) {
        const protocol = protocolOf(spec.split('/')[1] ?? 'tcp');
        for (const b of list ?? []) {
          const number = Number(b.HostPort);
          if (!protocol || !(number > 0)) continue;
          // 0.0.0.0 and :: are every address of the host; another address only if it is one of the host's.
          if (['0.0.0.0', '::', ''].includes(b.HostIp)) bind(number, protocol, null);
          else if (interfaceOf(b.HostIp)) bind(number, protocol, interfaceOf(b.HostIp)!.id);
        }
      }
    }
    if (!bindings.length) continue;
    services.push(serviceEntity({
      id: serviceId, hostId, ctx, date, name: serviceName(c), definition: imageDefinition(c.Config?.Image ?? c.Image), position: services.length,
      virtualization: virtualization(c, identity), bindings, reason: containerReason(c, identity, published), metadata,
    }));
  }
  return {
    host: {
      id: hostId, created_at: date, updated_at: date, name: identity.name.slice(0, 100), hostname: local?.hostname ?? snapshot.info.Name, network_id: ctx.networkId,
      description: `Docker host${version ? ` (${version})` : ''}`, source: { type: 'Discovery', metadata: [metadata] }, virtualization: null, hidden: false, tags: [],
    },
    interfaces,
    ports: [...ports.values()].sort((a, b) => a.number - b.number || a.protocol.localeCompare(b.protocol)),
    services,
  };
}
