// Docker discovery, read-only: the agent lists and inspects containers and lists
// networks through the Engine API (dockerode; Podman's socket serves the same API). It never execs
// into a container, never creates, starts or stops one, and sends no POST at all: what a container
// listens on is what its configuration says (exposed and published ports), not what a shell inside
// it would tell. Published ports may be checked from outside with one TCP connect each, and only
// when the published address is inside the agent's --targets.
//
// What is reported (agent/protocol/dockerEntities.ts builds it): a subnet per Docker network, the
// Docker host with a "Docker" service and the host ports its containers publish, and each container
// as a host of its own (why not the Docker host's payloads, as Scanopy sends them: docs/agent.md).
import { connect } from 'node:net';
import Docker from 'dockerode';
import { cidrContains, type RunnerDeps, type SessionResult } from './runner.js';
import type { DiscoveryType } from './protocol/client.js';
import { dockerHostRequest, dockerSubnets, containerRequest, dockerHostIdentity, type DockerContext, type PublishedCheck } from './protocol/dockerEntities.js';
import { readLocalHost, selfSubnets, type LocalHost } from './selfReport.js';

/** Upstream's ping timeout. */
const PING_MS = 5_000;
/** A published port's connect check. */
const CONNECT_MS = 2_000;

/** A configured Engine API: a unix socket path (or unix://…) or an http(s) URL. */
export interface DockerEndpoint {
  text: string;
  /** A socket on this machine: the Docker host is the agent's own host. */
  local: boolean;
  options: Docker.DockerOptions;
}

export function dockerEndpoint(text: string): DockerEndpoint {
  const t = text.trim();
  if (t.startsWith('/') || t.startsWith('unix://')) return { text: t, local: true, options: { socketPath: t.replace(/^unix:\/\//, ''), timeout: 30_000 } };
  const url = new URL(t); // the caller (config) has checked it
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return { text: t, local: false, options: { host: url.hostname, port: url.port || (protocol === 'https' ? 443 : 2375), protocol, timeout: 30_000 } };
}

/** Whether the Engine API answers /_ping (the self-report's has_docker_socket). */
export async function pingDocker(endpoint: DockerEndpoint): Promise<boolean> {
  const docker = new Docker({ ...endpoint.options, timeout: PING_MS });
  try {
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}

/** has_docker_socket: one configured endpoint answers. */
export async function anyDockerAnswers(endpoints: string[]): Promise<boolean> {
  for (const text of endpoints) if (await pingDocker(dockerEndpoint(text))) return true;
  return false;
}

export interface DockerSnapshot {
  endpoint: DockerEndpoint;
  info: { ID: string; Name: string; ServerVersion?: string; OperatingSystem?: string };
  networks: Docker.NetworkInspectInfo[];
  containers: Docker.ContainerInspectInfo[];
}

/**
 * What the engine says, with GET requests only: /info, /networks, /containers/json (running ones)
 * and /containers/{id}/json for each. A container gone or stopped between list and inspect is left out.
 */
export async function readDocker(endpoint: DockerEndpoint): Promise<DockerSnapshot> {
  const docker = new Docker(endpoint.options);
  const info = (await docker.info()) as DockerSnapshot['info'];
  const networks = await docker.listNetworks();
  const listed = await docker.listContainers();
  const containers: Docker.ContainerInspectInfo[] = [];
  for (const c of listed) {
    try {
      const inspected = await docker.getContainer(c.Id).inspect();
      // Stopped meanwhile: it has no address any more, and it is not running anything.
      if (inspected.State?.Running) containers.push(inspected);
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    }
  }
  return { endpoint, info, networks, containers };
}

/** One TCP connect: does the published port answer at that address? */
export function tcpAnswers(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: ip, port, timeout: CONNECT_MS });
    const done = (ok: boolean) => { socket.destroy(); resolve(ok); };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

export interface DockerSteps {
  start(): Promise<void>;
  finish(phase: 'Complete' | 'Cancelled' | 'Failed', error: string | null, extra: Omit<SessionResult, 'terminal'>): Promise<SessionResult>;
}

export interface DockerDeps {
  /** Reads an endpoint (tests: the fake engine's socket goes through the real reader). */
  readDocker?: (endpoint: DockerEndpoint) => Promise<DockerSnapshot>;
  /** The outside check of a published port (default: one TCP connect); called only inside --targets. */
  checkPublishedPort?: (ip: string, port: number) => Promise<boolean>;
}

/**
 * Published TCP ports bound on one of the Docker host's addresses (or on all of them) that lie in
 * --targets: one connect each. Outside the targets nothing is sent.
 */
async function checkPublished(snapshot: DockerSnapshot, local: LocalHost | null, targets: string[], check: (ip: string, port: number) => Promise<boolean>): Promise<PublishedCheck> {
  const answers: PublishedCheck = new Map();
  if (!targets.length) return answers;
  const hostAddresses = local?.interfaces.map((i) => i.ip) ?? [];
  for (const c of snapshot.containers) {
    for (const [spec, bindings] of Object.entries(c.NetworkSettings?.Ports ?? {})) {
      const protocol = spec.split('/')[1];
      if (protocol !== 'tcp') continue;
      for (const b of bindings ?? []) {
        const addresses = b.HostIp === '0.0.0.0' || b.HostIp === '' ? hostAddresses : b.HostIp.includes(':') ? [] : [b.HostIp];
        for (const ip of addresses) {
          if (!targets.some((t) => cidrContains(t, ip))) continue;
          const key = `${ip}:${b.HostPort}`;
          if (!answers.has(key)) answers.set(key, await check(ip, Number(b.HostPort)));
        }
      }
    }
  }
  return answers;
}

/**
 * A Docker session: for each configured endpoint, its networks' subnets, the Docker host and its
 * containers; an endpoint that does not answer is a warning (the others are still reported).
 */
export async function runDocker(
  work: { session_id: string; discovery_type: DiscoveryType }, signal: AbortSignal, deps: RunnerDeps & DockerDeps, steps: DockerSteps,
): Promise<SessionResult> {
  const endpoints = (deps.config.docker ?? []).map(dockerEndpoint);
  await steps.start();
  if (!endpoints.length) return steps.finish('Failed', 'no Docker endpoint configured (--docker <socket or URL>)', { warnings: [], hostsReported: 0 });
  const read = deps.readDocker ?? readDocker;
  const now = deps.now ?? (() => new Date());
  const warnings: string[] = [];
  let hostsReported = 0;
  const failures: string[] = [];
  for (const endpoint of endpoints) {
    if (signal.aborted) return steps.finish('Cancelled', null, { warnings, hostsReported });
    let snapshot: DockerSnapshot;
    try {
      snapshot = await read(endpoint);
    } catch (err) {
      warnings.push(`Docker at ${endpoint.text} not read: ${(err as Error).message}`);
      continue;
    }
    const local = endpoint.local ? (deps.readLocal ?? readLocalHost)() : null;
    deps.state.selfSince ??= now().toISOString();
    deps.saveState();
    const identity = dockerHostIdentity(snapshot, local, deps.networkId, deps.daemonId);
    const ctx: DockerContext = {
      networkId: deps.networkId, daemonId: deps.daemonId, date: deps.state.selfSince,
      // Each Docker host's metadata names it: the server keeps a bridge CIDR once per Docker host (reference §2.1).
      discoveryType: { ...work.discovery_type, host_id: identity.hostId } as DiscoveryType,
    };
    // The host's own subnets first (a local socket: the agent's host), then the Docker networks'.
    const hostSubnetIds = new Map<string, string>();
    if (local) {
      const selfCtx = { ...ctx, listenPort: null };
      for (const s of selfSubnets(local, selfCtx)) hostSubnetIds.set(s.cidr, (await deps.transport.postSubnet(s)).id);
    }
    const networkSubnetIds = new Map<string, string>();
    for (const { network, body } of dockerSubnets(snapshot, identity, ctx)) networkSubnetIds.set(network, (await deps.transport.postSubnet(body)).id);
    const published = await checkPublished(snapshot, local, deps.config.targets ?? [], deps.checkPublishedPort ?? tcpAnswers);

    const requests = [
      dockerHostRequest(snapshot, identity, local, hostSubnetIds, ctx, published),
      ...snapshot.containers.flatMap((c) => containerRequest(c, snapshot, identity, networkSubnetIds, ctx, published) ?? []),
    ];
    for (const request of requests) {
      if (signal.aborted) return steps.finish('Cancelled', null, { warnings, hostsReported });
      try {
        await deps.transport.postHost(request);
        hostsReported++;
      } catch (err) {
        failures.push(`${request.host.name}: ${(err as Error).message}`);
      }
    }
  }
  if (failures.length) warnings.push(`${failures.length} host report(s) not accepted by the server: ${failures.slice(0, 3).join('; ')}`);
  for (const w of warnings) deps.log.warn(w, { session_id: work.session_id });
  const error = warnings.length ? `Warning: ${warnings.join('\n')}`.slice(0, 10_000) : null;
  if (!hostsReported) return steps.finish('Failed', error ?? 'nothing reported', { warnings, hostsReported });
  return steps.finish('Complete', error, { warnings, hostsReported });
}

