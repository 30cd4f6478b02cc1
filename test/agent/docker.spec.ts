// The agent's Docker discovery (issue 25.2), read-only, against a fake Docker Engine API (a unix
// socket serving recorded JSON: test/support/fakeDockerEngine.ts) and the REAL server: what the
// inventory shows afterwards, read through the API; and what the engine was asked (GETs only).
// No probe leaves these tests: the scanner is a fake, and the published-port check is injected.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { dockerEndpoints, parseConfig, UsageError, type AgentConfig } from '../../agent/config.js';
import { runAgent, type AgentDeps } from '../../agent/main.js';
import { runSession, type Log, type RunnerDeps, type SessionResult, type Transport } from '../../agent/runner.js';
import type { HostRequest } from '../../agent/protocol/entities.js';
import type { ScanNetwork } from '../../agent/scan/types.js';
import type { LocalHost } from '../../agent/selfReport.js';
import { emptyState, loadState } from '../../agent/state.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { startFakeDockerEngine, type FakeDockerEngine } from '../support/fakeDockerEngine.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, sql } from '../daemons/world.js';
import { waitFor } from '../workers/support.js';

const silent: Log = { info() {}, warn() {}, error() {} };
/** The Docker host is the agent's own host (a local socket): its one LAN address. */
const LOCAL: LocalHost = {
  hostname: 'docker-01', machineId: '0c7d2e9a41b84f5e8a6b3c2d1e0f9a8b',
  interfaces: [{ name: 'eth0', ip: '172.25.0.4', cidr: '172.25.0.0/28', mac: '8A:07:B6:08:A1:34', subnetType: 'Lan' }],
};
/** A scanner that finds nothing (no Network session runs: no targets, none approved). */
const noScan: ScanNetwork = async () => ({ addressesTried: 0, aliveByEvidence: {}, hosts: [], warnings: [], probesSent: 0, cancelled: false });

const SHOP = '172.20.0.0/16';
const BRIDGE = '172.17.0.0/16';

interface SeenHost {
  id: string;
  name: string;
  ips: Array<{ id: string; ip: string; mac: string | null; subnet: string }>;
  ports: Array<{ id: string; number: number }>;
  services: Array<{ id: string; name: string; definition: string; virtualization: any; source: any; bindings: Array<{ port: number | null; ip: string | null }> }>;
}

describe('agent: Docker discovery, read-only', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let dir: string;
  let engine: FakeDockerEngine;
  let stop: AbortController;
  const running: Promise<number>[] = [];

  const config = (extra: Partial<AgentConfig> = {}): AgentConfig => ({
    ...parseConfig(['--server', app.url, '--key', 'placeholder', '--network', t.defaultNetworkId, '--state', join(dir, 'state.json'), '--interval', '0.1'], {}),
    docker: [engine.socketPath],
    ...extra,
  });
  const deps = (extra: Partial<AgentDeps> = {}): AgentDeps => ({ log: silent, stop: stop.signal, readLocal: () => LOCAL, backoffScale: 0, scanNetwork: noScan, ...extra });

  /** The network's hosts as the API shows them, by name, with subnets as CIDRs and bindings as port numbers and addresses. */
  async function inventory(): Promise<Map<string, SeenHost>> {
    const subnets = expectOk(await call(app.url, 'GET', `/api/v1/subnets?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
    const cidrOf = new Map(subnets.map((s) => [s.id, s.cidr]));
    const list = expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
    const hosts = new Map<string, SeenHost>();
    for (const { id } of list) {
      const h = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${id}`, { auth: t.owner }));
      const portOf = new Map<string, number>(h.ports.map((p: any) => [p.id, p.number]));
      const ipOf = new Map<string, string>(h.ip_addresses.map((a: any) => [a.id, a.ip_address]));
      hosts.set(h.name, {
        id, name: h.name,
        ips: h.ip_addresses.map((a: any) => ({ id: a.id, ip: a.ip_address, mac: a.mac_address, subnet: cidrOf.get(a.subnet_id) })),
        ports: h.ports.map((p: any) => ({ id: p.id, number: p.number })).sort((a: any, b: any) => a.number - b.number),
        services: h.services.map((s: any) => ({
          id: s.id, name: s.name, definition: s.service_definition, virtualization: s.virtualization, source: s.source,
          bindings: (s.bindings ?? []).map((b: any) => ({ port: b.port_id ? portOf.get(b.port_id) ?? null : null, ip: b.ip_address_id ? ipOf.get(b.ip_address_id) ?? null : null })),
        })),
      });
    }
    return hosts;
  }

  /** Queues one more Docker session for the agent's daemon (as the server queues its default ones). */
  async function queueDockerSession(): Promise<string> {
    const { daemonId } = loadState(join(dir, 'state.json'));
    const id = randomUUID();
    await sql(app, `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type)
                    select ?, organization_id, network_id, id, jsonb_build_object('type', 'Docker', 'host_id', host_id, 'host_naming_fallback', 'BestService')
                    from daemons where id = ?`, [id, daemonId]);
    return id;
  }

  beforeEach(async () => {
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url, 'docker');
    dir = mkdtempSync(join(tmpdir(), 'agent-docker-'));
    engine = await startFakeDockerEngine();
    stop = new AbortController();
  });
  afterEach(async () => {
    stop.abort();
    await Promise.all(running.splice(0));
    await engine.close();
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('--docker: socket paths and http(s) URLs, comma-separated; none; the usual socket only when it exists', () => {
    expect(dockerEndpoints('/run/podman/podman.sock, https://docker-02.example:2376', () => false)).to.deep.equal(['/run/podman/podman.sock', 'https://docker-02.example:2376']);
    expect(dockerEndpoints(null, (p) => p === '/var/run/docker.sock')).to.deep.equal(['/var/run/docker.sock']);
    expect(dockerEndpoints(null, () => false)).to.deep.equal([]);
    expect(dockerEndpoints('none', () => true)).to.deep.equal([]);
    expect(() => dockerEndpoints('docker-02:2375')).to.throw(UsageError, /--docker must be a socket path/);
    expect(parseConfig(['--server', 'http://s', '--key', 'k'], { AGENT_DOCKER: 'unix:///run/podman/podman.sock' }).docker).to.deep.equal(['unix:///run/podman/podman.sock']);
  });

  it('a Docker session: containers with their networks, addresses and own ports, one service each bound to its own address only, virtualization set; published ports on the Docker host; no exec, no POST', async () => {
    const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
    const sessions: SessionResult[] = [];
    running.push(runAgent(config({ key }), deps({ onSession: (s) => sessions.push(s) })));
    // The engine answered /_ping at registration: the server queued SelfReport and Docker (Network waits for an approved subnet).
    await waitFor('two sessions', async () => sessions.length >= 2);
    expect(sessions.map((s) => [s.terminal.discovery_type.type, s.terminal.phase])).to.deep.equal([['SelfReport', 'Complete'], ['Docker', 'Complete']]);
    expect(sessions[1]!.terminal.error).to.equal(null);
    const daemon = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${loadState(join(dir, 'state.json')).daemonId}`, { auth: t.owner }));
    expect(daemon.capabilities.has_docker_socket).to.equal(true);

    // Subnets: one per Docker network with a range (host and none have none), typed by driver.
    const subnets = expectOk(await call(app.url, 'GET', `/api/v1/subnets?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
    const typeOf = Object.fromEntries(subnets.map((s) => [s.cidr, s.subnet_type]));
    expect(typeOf).to.include({ [BRIDGE]: 'DockerBridge', [SHOP]: 'DockerBridge', '192.168.50.0/24': 'MacVlan', '172.25.0.0/28': 'Lan' });

    const hosts = await inventory();
    const dockerHost = hosts.get('docker-01')!;
    const dockerService = dockerHost.services.find((s) => s.definition === 'Docker')!;
    expect(dockerService, 'the Docker host has a Docker service').to.exist;

    // Each container with an address of its own is a host: its address on its network's subnet, its MAC, its own ports.
    const expected: Record<string, { ip: string; mac: string; subnet: string; ports: number[]; service: string; definition: string }> = {
      'shop-web-1': { ip: '172.20.0.2', mac: '02:42:AC:14:00:02', subnet: SHOP, ports: [80], service: 'web', definition: 'nginx' },
      'shop-api-1': { ip: '172.20.0.4', mac: '02:42:AC:14:00:04', subnet: SHOP, ports: [80], service: 'api', definition: 'shop-api' },
      'shop-db-1': { ip: '172.20.0.3', mac: '02:42:AC:14:00:03', subnet: SHOP, ports: [5432], service: 'db', definition: 'postgres' },
      cache: { ip: '172.17.0.2', mac: '02:42:AC:11:00:02', subnet: BRIDGE, ports: [6379], service: 'cache', definition: 'redis' },
    };
    for (const [name, e] of Object.entries(expected)) {
      const h = hosts.get(name);
      expect(h, `container ${name} stored`).to.exist;
      expect(h!.ips.map(({ ip, mac, subnet }) => ({ ip, mac, subnet }))).to.deep.equal([{ ip: e.ip, mac: e.mac, subnet: e.subnet }]);
      expect(h!.ports.map((p) => p.number)).to.deep.equal(e.ports);
      // Its own service only, bound to its own ports on its own address (issue 28: not the host's seven).
      expect(h!.services.map((s) => [s.name, s.definition])).to.deep.equal([[e.service, e.definition]]);
      const svc = h!.services[0]!;
      expect(svc.bindings).to.deep.equal(e.ports.map((port) => ({ port, ip: e.ip })));
      expect(svc.virtualization).to.deep.include({ type: 'Docker' });
      expect(svc.virtualization.details).to.include({ container_name: name, service_id: dockerService.id });
      expect(svc.virtualization.details.container_id).to.match(/^[0-9a-f]{64}$/);
      expect(svc.source.type).to.equal('DiscoveryWithMatch');
      expect(svc.source.details.reason.data).to.include(`Docker container ${name}`).and.to.include('of image');
    }
    // Two containers on one container port (80) each keep their service: one host each.
    expect(hosts.get('shop-web-1')!.id).to.not.equal(hosts.get('shop-api-1')!.id);
    // The host-network container has no host of its own.
    expect(hosts.has('node-exporter')).to.equal(false);

    // The Docker host: its own address, the host ports its containers publish on its addresses
    // (cache's 6380 is on 127.0.0.1 only: not on the network), each bound to the container's service there.
    expect(dockerHost.ips.map((i) => i.ip)).to.deep.equal(['172.25.0.4']);
    expect(dockerHost.ports.map((p) => p.number)).to.deep.equal([8080, 8081, 9100]);
    // (The Docker host is the agent's own: its self-report's service is there too.)
    const containerServices = dockerHost.services.filter((s) => s !== dockerService && s.definition !== 'NetInventory Agent');
    const published = Object.fromEntries(containerServices.map((s) => [s.name, s.bindings.map((b) => b.port)]));
    expect(published).to.deep.equal({ web: [8080], api: [8081], 'node-exporter': [9100] });
    for (const s of containerServices) expect(s.virtualization.details.service_id).to.equal(dockerService.id);
    // No container address lists a service of another host, nor the Docker host's.
    for (const h of hosts.values()) for (const s of h.services) for (const b of s.bindings) expect(b.ip === null || h.ips.some((i) => i.ip === b.ip), `${h.name}/${s.name}`).to.equal(true);
    expect(hosts.get('shop-web-1')!.services[0]!.source.details.reason.data).to.include('publishes 0.0.0.0:8080→80/tcp');
    expect(hosts.get('cache')!.services[0]!.source.details.reason.data).to.include('127.0.0.1:6380→6379/tcp');

    // Read-only: the engine got GETs only, on the read paths; no exec, no POST of any kind.
    expect(engine.requests.length).to.be.greaterThan(0);
    expect(engine.requests.filter((r) => r.method !== 'GET')).to.deep.equal([]);
    expect(engine.requests.filter((r) => /exec/.test(r.path))).to.deep.equal([]);
    for (const r of engine.requests) expect(r.path).to.match(/^(\/v1\.\d+)?\/(_ping|info|version|networks|containers\/json|containers\/[0-9a-f]{64}\/json)(\?.*)?$/);
  });

  it('a container that stopped is not reported by the next run (the engine lists running ones), and nothing else changes', async () => {
    const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
    const sessions: SessionResult[] = [];
    const posted: HostRequest[] = [];
    const recording = (async (input: any, init?: RequestInit) => {
      if (String(input).endsWith('/api/v1/hosts/discovery') && init?.body) posted.push(JSON.parse(String(init.body)));
      return fetch(input, init);
    }) as typeof fetch;
    running.push(runAgent(config({ key }), deps({ fetch: recording, onSession: (s) => sessions.push(s) })));
    await waitFor('two sessions', async () => sessions.length >= 2);
    const firstRun = posted.splice(0).map((r) => r.host.name);
    expect(firstRun).to.include.members(['docker-01', 'shop-web-1', 'shop-api-1', 'shop-db-1', 'cache']);
    const before = await inventory();

    engine.stop('shop-api-1');
    const inspectedBefore = engine.requests.length;
    await queueDockerSession();
    await waitFor('the second Docker session', async () => sessions.length >= 3);
    expect([sessions[2]!.terminal.discovery_type.type, sessions[2]!.terminal.phase]).to.deep.equal(['Docker', 'Complete']);
    expect(posted.map((r) => r.host.name).sort()).to.deep.equal(['cache', 'docker-01', 'shop-db-1', 'shop-web-1']);
    // The Docker host's report no longer binds the stopped container's published port 8081.
    const hostReport = posted.find((r) => r.host.name === 'docker-01')!;
    expect(hostReport.services.map((s) => s.name)).to.deep.equal(['Docker', 'node-exporter', 'web']);
    expect(engine.requests.slice(inspectedBefore).filter((r) => r.path.includes('4f0c2a7d9e1b'))).to.deep.equal([]);
    // The running containers' stored rows are unchanged by the second run (byte-identical reports).
    const after = await inventory();
    for (const name of ['shop-web-1', 'shop-db-1', 'cache']) expect(after.get(name)).to.deep.equal(before.get(name));
  });

  // The server takes stopped services offline after Network sessions only (src/modules/discovery/hostIngest.ts
  // pruningDaemon): a Docker session's reports never mark anything, and a container's host is
  // never deleted by discovery. The agent cannot delete (the daemon API has no such call): the
  // server needs a rule for Docker sessions (docs/agent.md, "Docker").
  it('a container that stopped is gone from the server\'s inventory after the next Docker run (needs a server rule)');

  it('several endpoints (a socket and an http URL): each a Docker host, the default bridge CIDR kept once per Docker host, containers apart', async () => {
    await engine.close();
    engine = await startFakeDockerEngine({ tcp: true });
    const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
    const sessions: SessionResult[] = [];
    // The agent's host has Docker's default bridge too: its SelfReport leaves it to the Docker session.
    const withBridge: LocalHost = { ...LOCAL, interfaces: [...LOCAL.interfaces, { name: 'docker0', ip: '172.17.0.1', cidr: BRIDGE, mac: '02:42:5E:1A:7B:01', subnetType: 'DockerBridge' }] };
    running.push(runAgent(config({ key, docker: [engine.socketPath, engine.url!] }), deps({ readLocal: () => withBridge, onSession: (s) => sessions.push(s) })));
    await waitFor('two sessions', async () => sessions.length >= 2);
    expect(sessions[1]!.terminal).to.include({ phase: 'Complete', error: null });
    // The same engine reached twice stands for two Docker hosts: the local one (the agent's host) and a remote one.
    const subnets = expectOk(await call(app.url, 'GET', `/api/v1/subnets?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
    expect(subnets.filter((x) => x.cidr === BRIDGE)).to.have.length(2);
    expect(subnets.filter((x) => x.cidr === SHOP)).to.have.length(2);
    const list = expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
    const named = (name: string) => list.filter((h) => h.name === name);
    expect(named('cache')).to.have.length(2);
    expect(named('docker-01')).to.have.length(2); // the agent's host (LOCAL's hostname) and the remote engine (its /info Name)
    const remote = await Promise.all(named('docker-01').map(async (h) => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${h.id}`, { auth: t.owner }))));
    // The agent's host: its LAN and bridge addresses (the bridge's on its own Docker host's 172.17.0.0/16); a remote engine's: none known.
    expect(remote.map((h) => h.ip_addresses.map((a: any) => a.ip_address).sort())).to.have.deep.members([[], ['172.17.0.1', '172.25.0.4']]);
    expect(engine.requests.filter((r) => r.method !== 'GET')).to.deep.equal([]);
  });

  it('published ports are checked from outside only when the published address is inside --targets', async () => {
    const posted: HostRequest[] = [];
    const transport: Transport = {
      postSubnet: async (b) => ({ id: b.id, cidr: b.cidr }), listSubnets: async () => [], postHost: async (r) => { posted.push(r); },
      update: async () => {}, updateCapabilities: async () => {},
    };
    const checked: string[] = [];
    const run = async (targets: string[], docker = [engine.socketPath]) => {
      posted.length = 0;
      const runnerDeps: RunnerDeps = {
        transport, scanNetwork: noScan, state: emptyState(), saveState() {}, networkId: t.defaultNetworkId, daemonId: randomUUID(), log: silent, listenPort: null,
        readLocal: () => LOCAL, config: { targets, pps: 10, sockets: 2, probeRawSocketPorts: false, fullRangeRuns: 0, docker },
        checkPublishedPort: async (ip, port) => { checked.push(`${ip}:${port}`); return port === 8080; },
      };
      return runSession({ session_id: randomUUID(), discovery_type: { type: 'Docker', host_id: null, host_naming_fallback: 'BestService' } }, new AbortController().signal, runnerDeps);
    };
    // An endpoint that does not answer is a warning; the others are still reported; none read: Failed.
    const failing = await run([], ['/nonexistent/docker.sock']);
    expect(failing.terminal).to.include({ phase: 'Failed' });
    expect(failing.terminal.error).to.match(/Docker at \/nonexistent\/docker.sock not read/);
    const partial = await run([], ['/nonexistent/docker.sock', engine.socketPath]);
    expect(partial.terminal.phase).to.equal('Complete');
    expect(partial.terminal.error).to.match(/^Warning: Docker at \/nonexistent\/docker.sock not read/);
    expect(posted.map((r) => r.host.name)).to.include('shop-web-1');
    // No targets, or targets elsewhere: nothing is sent to any published port.
    expect((await run([])).terminal.phase).to.equal('Complete');
    expect((await run(['198.18.10.0/24'])).terminal.phase).to.equal('Complete');
    expect(checked).to.deep.equal([]);
    // The Docker host's address inside the targets: its TCP ports published on all addresses (not the loopback-only one).
    await run(['172.25.0.0/28']);
    expect(checked.sort()).to.deep.equal(['172.25.0.4:8080', '172.25.0.4:8081']);
    const reason = (name: string) => posted.find((r) => r.host.name === name)!.services[0]!.source as any;
    expect(reason('shop-web-1').details.reason.data).to.include('172.25.0.4:8080 answered a TCP connect');
    expect(reason('shop-api-1').details.reason.data).to.include('172.25.0.4:8081 did not answer a TCP connect');
  });
});
