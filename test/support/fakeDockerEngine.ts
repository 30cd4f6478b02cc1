// A fake Docker Engine API (this machine has no Docker engine): a local unix-socket HTTP server
// serving recorded JSON in the shapes of the Engine API v1.43 reference (docs.docker.com/engine/api/v1.43/:
// SystemPing, SystemVersion, SystemInfo, ContainerList, ContainerInspect, NetworkList, NetworkInspect).
// It RECORDS every request. Anything else, every POST, and any exec path answer 404: the agent's
// Docker discovery is read-only, and a test asserts on the log that nothing else was asked.
//
// The recorded engine: a compose project "shop" on a user bridge network (web and api both listen
// on container port 80 and publish 8080 / 8081; db publishes nothing), a "cache" on the default
// bridge published on the host's loopback only, a node-exporter on the host network, and a macvlan
// network with no container.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RecordedRequest {
  method: string;
  path: string;
}

const ENGINE_ID = 'MJ4K:2Y2B:3QXH:7DYY:4UQF:ZB4Q:NRDV:E6G3:3ZB5:ZYTJ:M5OO:BLIA';

const network = (name: string, id: string, driver: string, subnet: string, gateway: string, extra: Record<string, unknown> = {}) => ({
  Name: name, Id: id, Created: '2026-11-20T09:12:44.518346107Z', Scope: 'local', Driver: driver, EnableIPv6: false,
  IPAM: { Driver: 'default', Options: null, Config: subnet ? [{ Subnet: subnet, Gateway: gateway }] : [] },
  Internal: false, Attachable: false, Ingress: false, ConfigFrom: { Network: '' }, ConfigOnly: false, Containers: {}, Options: {}, Labels: {},
  ...extra,
});

const NETWORKS = [
  network('bridge', 'f2de39df4171b0dc801e8002d1d999b77256983dfc63041c0f34030aa3977566', 'bridge', '172.17.0.0/16', '172.17.0.1', {
    Options: { 'com.docker.network.bridge.default_bridge': 'true', 'com.docker.network.bridge.name': 'docker0' },
  }),
  network('shop_default', '7b1c6e4f5a2d3c8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e', 'bridge', '172.20.0.0/16', '172.20.0.1', {
    Labels: { 'com.docker.compose.network': 'default', 'com.docker.compose.project': 'shop', 'com.docker.compose.version': '2.24.5' },
  }),
  network('host', 'e33d1e0b7a9f44d7a1d8e3f0c8a5b2d6c4e7f9a1b3d5e7f9a2c4e6f8a0b2c4d6', 'host', '', ''),
  network('none', '0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9', 'null', '', ''),
  network('lan_macvlan', '3e5a7c9b1d2f4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c', 'macvlan', '192.168.50.0/24', '192.168.50.1', {
    Options: { parent: 'eth0' },
  }),
];

interface ContainerSpec {
  id: string;
  name: string;
  image: string;
  imageId: string;
  command: string[];
  labels: Record<string, string>;
  exposed: string[];
  /** HostConfig.PortBindings and NetworkSettings.Ports: container port → host bindings. */
  published: Record<string, Array<{ HostIp: string; HostPort: string }>>;
  networkMode: string;
  /** network name → [IPv4, MAC] */
  endpoints: Record<string, [string, string]>;
}

const compose = (service: string, number = '1') => ({
  'com.docker.compose.project': 'shop', 'com.docker.compose.service': service, 'com.docker.compose.container-number': number,
  'com.docker.compose.oneoff': 'False', 'com.docker.compose.project.working_dir': '/srv/shop', 'com.docker.compose.version': '2.24.5',
  'com.docker.compose.config-hash': 'a9f4c2d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1',
});

const CONTAINERS: ContainerSpec[] = [
  {
    id: '8dfafdbc3a40b2f1c7d9e6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5', name: 'shop-web-1', image: 'nginx:1.25-alpine',
    imageId: 'sha256:2b70e4aaac6b5370bf3a556f5e13156692351696dd5d7c5530d117aa21772748', command: ['nginx', '-g', 'daemon off;'],
    labels: compose('web'), exposed: ['80/tcp'], published: { '80/tcp': [{ HostIp: '0.0.0.0', HostPort: '8080' }, { HostIp: '::', HostPort: '8080' }] },
    networkMode: 'shop_default', endpoints: { shop_default: ['172.20.0.2', '02:42:ac:14:00:02'] },
  },
  {
    id: '4f0c2a7d9e1b3c5a7f9d1b3e5c7a9f1d3b5e7c9a1f3d5b7e9c1a3f5d7b9e1c3a', name: 'shop-api-1', image: 'ghcr.io/example/shop-api:2.3.1',
    imageId: 'sha256:9c4b1f2e3d4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c', command: ['node', 'server.js'],
    labels: { ...compose('api'), 'org.opencontainers.image.title': 'shop-api' }, exposed: ['80/tcp'], published: { '80/tcp': [{ HostIp: '0.0.0.0', HostPort: '8081' }] },
    networkMode: 'shop_default', endpoints: { shop_default: ['172.20.0.4', '02:42:ac:14:00:04'] },
  },
  {
    id: 'c1e3a5f7b9d1c3e5a7f9b1d3c5e7a9f1b3d5c7e9a1f3b5d7c9e1a3f5b7d9c1e3', name: 'shop-db-1', image: 'postgres:16',
    imageId: 'sha256:d4f2b1e0c9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2', command: ['postgres'],
    labels: compose('db'), exposed: ['5432/tcp'], published: { '5432/tcp': [] as Array<{ HostIp: string; HostPort: string }> },
    networkMode: 'shop_default', endpoints: { shop_default: ['172.20.0.3', '02:42:ac:14:00:03'] },
  },
  {
    id: 'a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a7c9', name: 'cache', image: 'redis:7.2',
    imageId: 'sha256:e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e1d2', command: ['redis-server'],
    labels: {}, exposed: ['6379/tcp'], published: { '6379/tcp': [{ HostIp: '127.0.0.1', HostPort: '6380' }] },
    networkMode: 'default', endpoints: { bridge: ['172.17.0.2', '02:42:ac:11:00:02'] },
  },
  {
    id: 'f9b7d5c3a1e9f7b5d3c1a9e7f5b3d1c9a7e5f3b1d9c7a5e3f1b9d7c5a3e1f9b7', name: 'node-exporter', image: 'prom/node-exporter:v1.7.0',
    imageId: 'sha256:b3a4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4', command: ['/bin/node_exporter', '--path.rootfs=/host'],
    labels: {}, exposed: ['9100/tcp'], published: {}, networkMode: 'host', endpoints: { host: ['', ''] },
  },
];

const networkOf = (name: string) => NETWORKS.find((n) => n.Name === name)!;

function endpointSettings(spec: ContainerSpec, name: string, [ip, mac]: [string, string]) {
  const net = networkOf(name);
  const prefix = ip ? Number(net.IPAM.Config[0]!.Subnet.split('/')[1]) : 0;
  const service = spec.labels['com.docker.compose.service'];
  return {
    IPAMConfig: null, Links: null, Aliases: service ? [spec.name, service] : null, MacAddress: mac, DriverOpts: null, NetworkID: net.Id,
    EndpointID: `${spec.id.slice(0, 32)}${net.Id.slice(0, 32)}`, Gateway: ip ? net.IPAM.Config[0]!.Gateway : '', IPAddress: ip, IPPrefixLen: prefix,
    IPv6Gateway: '', GlobalIPv6Address: '', GlobalIPv6PrefixLen: 0, DNSNames: service ? [spec.name, service, spec.id.slice(0, 12)] : null,
  };
}

/** ContainerInspect (GET /containers/{id}/json), as v1.43 answers it (fields the agent does not read trimmed). */
function inspect(spec: ContainerSpec, exited = false) {
  const full = {
    Id: spec.id, Created: '2026-11-24T16:02:11.204911523Z', Path: spec.command[0], Args: spec.command.slice(1),
    State: { Status: 'running', Running: true, Paused: false, Restarting: false, OOMKilled: false, Dead: false, Pid: 4242, ExitCode: 0, Error: '',
      StartedAt: '2026-11-24T16:02:12.011357229Z', FinishedAt: '0001-01-01T00:00:00Z' },
    Image: spec.imageId, ResolvConfPath: `/var/lib/docker/containers/${spec.id}/resolv.conf`, HostnamePath: `/var/lib/docker/containers/${spec.id}/hostname`,
    Name: `/${spec.name}`, RestartCount: 0, Driver: 'overlay2', Platform: 'linux', MountLabel: '', ProcessLabel: '', AppArmorProfile: 'docker-default',
    HostConfig: {
      NetworkMode: spec.networkMode, PortBindings: Object.fromEntries(Object.entries(spec.published).filter(([, b]) => b.length)),
      RestartPolicy: { Name: spec.labels['com.docker.compose.project'] ? 'unless-stopped' : 'no', MaximumRetryCount: 0 }, AutoRemove: false, Privileged: false,
    },
    Config: {
      Hostname: spec.networkMode === 'host' ? 'docker-01' : spec.id.slice(0, 12), Domainname: '', User: '', Tty: false, OpenStdin: false,
      ExposedPorts: Object.fromEntries(spec.exposed.map((p) => [p, {}])), Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      Cmd: spec.command, Image: spec.image, Volumes: null, WorkingDir: '', Entrypoint: null, Labels: spec.labels,
    },
    NetworkSettings: {
      Bridge: '', SandboxID: `${spec.id.slice(32)}${spec.id.slice(0, 32)}`, HairpinMode: false, LinkLocalIPv6Address: '', LinkLocalIPv6PrefixLen: 0,
      Ports: spec.networkMode === 'host' ? {} : Object.fromEntries(Object.entries(spec.published).map(([p, b]) => [p, b.length ? b : null])),
      SandboxKey: `/var/run/docker/netns/${spec.id.slice(0, 12)}`,
      Networks: Object.fromEntries(Object.entries(spec.endpoints).map(([name, e]) => [name, endpointSettings(spec, name, e)])),
    },
  };
  if (!exited) return full;
  // A stopped container keeps its configuration; the engine frees its addresses and port bindings.
  for (const ep of Object.values(full.NetworkSettings.Networks)) Object.assign(ep, { IPAddress: '', IPPrefixLen: 0, Gateway: '', MacAddress: '', EndpointID: '' });
  return {
    ...full,
    State: { ...full.State, Status: 'exited', Running: false, Pid: 0, ExitCode: 0, FinishedAt: '2026-11-25T08:14:03.120955116Z' },
    NetworkSettings: { ...full.NetworkSettings, Ports: {}, SandboxKey: '' },
  };
}

/** ContainerList's summary (GET /containers/json): what the engine derives from the same container. */
function summary(spec: ContainerSpec, exited = false) {
  const ports = Object.entries(spec.published).flatMap(([p, bindings]) => {
    const [port, type] = p.split('/');
    return bindings.length
      ? bindings.map((b) => ({ IP: b.HostIp, PrivatePort: Number(port), PublicPort: Number(b.HostPort), Type: type }))
      : [{ PrivatePort: Number(port), Type: type }];
  });
  const full = inspect(spec, exited);
  return {
    Id: spec.id, Names: [`/${spec.name}`], Image: spec.image, ImageID: spec.imageId, Command: spec.command.join(' '), Created: 1_795_708_931,
    Ports: exited ? [] : ports, Labels: spec.labels, State: exited ? 'exited' : 'running', Status: exited ? 'Exited (0) 3 minutes ago' : 'Up 2 hours', HostConfig: { NetworkMode: spec.networkMode },
    NetworkSettings: { Networks: full.NetworkSettings.Networks }, Mounts: [],
  };
}

const VERSION = {
  Platform: { Name: 'Docker Engine - Community' }, Version: '24.0.7', ApiVersion: '1.43', MinAPIVersion: '1.12', GitCommit: '311b9ff',
  GoVersion: 'go1.20.10', Os: 'linux', Arch: 'amd64', KernelVersion: '6.1.0-13-amd64', BuildTime: '2023-10-26T09:08:02.000000000+00:00',
};

export interface FakeDockerEngine {
  socketPath: string;
  /** http://127.0.0.1:port when started with tcp (a remote engine, or a socket proxy); else null. */
  url: string | null;
  requests: RecordedRequest[];
  /** Stops a container: /containers/json lists it only with all=1 (state exited, no address); inspect still answers, as Docker's does. */
  stop(name: string): void;
  close(): Promise<void>;
}

const json = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Api-Version': '1.43', Server: 'Docker/24.0.7 (linux)' });
  res.end(JSON.stringify(body));
};

/** The engine on a unix socket; with `tcp`, the same engine also on 127.0.0.1 (loopback only). */
export async function startFakeDockerEngine(options: { tcp?: boolean } = {}): Promise<FakeDockerEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'fake-docker-'));
  const socketPath = join(dir, 'docker.sock');
  const requests: RecordedRequest[] = [];
  const stopped = new Set<string>();
  const running = () => CONTAINERS.filter((c) => !stopped.has(c.name));

  const handle = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    requests.push({ method: req.method ?? '', path: req.url ?? '' });
    // The client may prefix a version: /v1.43/containers/json.
    const path = new URL(req.url ?? '/', 'http://docker').pathname.replace(/^\/v1\.\d+/, '');
    const notFound = () => json(res, 404, { message: `page not found: ${req.method} ${path}` });
    if (req.method !== 'GET' && req.method !== 'HEAD') return notFound();
    if (/\/exec(\/|$)/.test(path)) return notFound();
    if (path === '/_ping') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Api-Version': '1.43' });
      return res.end('OK');
    }
    if (path === '/version') return json(res, 200, VERSION);
    if (path === '/info') {
      return json(res, 200, {
        ID: ENGINE_ID, Name: 'docker-01', Containers: running().length, ContainersRunning: running().length, ContainersPaused: 0, ContainersStopped: stopped.size,
        Images: 5, Driver: 'overlay2', ServerVersion: VERSION.Version, OperatingSystem: 'Debian GNU/Linux 12 (bookworm)', OSType: 'linux', Architecture: 'x86_64',
        NCPU: 4, MemTotal: 8_322_211_840, KernelVersion: VERSION.KernelVersion,
      });
    }
    if (path === '/containers/json') {
      const all = ['1', 'true'].includes(new URL(req.url ?? '/', 'http://docker').searchParams.get('all') ?? '');
      return json(res, 200, CONTAINERS.filter((c) => all || !stopped.has(c.name)).map((c) => summary(c, stopped.has(c.name))));
    }
    const container = /^\/containers\/([^/]+)\/json$/.exec(path);
    if (container) {
      const spec = CONTAINERS.find((c) => c.id === container[1] || c.id.startsWith(container[1]!) || c.name === container[1]);
      return spec ? json(res, 200, inspect(spec, stopped.has(spec.name))) : json(res, 404, { message: `No such container: ${container[1]}` });
    }
    if (path === '/networks') return json(res, 200, NETWORKS);
    const net = /^\/networks\/([^/]+)$/.exec(path);
    if (net) {
      const found = NETWORKS.find((n) => n.Id === net[1] || n.Name === net[1]);
      return found ? json(res, 200, found) : json(res, 404, { message: `network ${net[1]} not found` });
    }
    return notFound();
  };

  const listen = async (at: string | { host: string; port: number }) => {
    const server: Server = createServer((req, res) => {
      req.resume(); // a body (of a POST) is read and dropped
      req.on('end', () => handle(req, res));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if (typeof at === 'string') server.listen(at, resolve);
      else server.listen(at.port, at.host, resolve);
    });
    return server;
  };
  const servers = [await listen(socketPath)];
  let url: string | null = null;
  if (options.tcp) {
    const tcp = await listen({ host: '127.0.0.1', port: 0 });
    servers.push(tcp);
    url = `http://127.0.0.1:${(tcp.address() as AddressInfo).port}`;
  }
  return {
    socketPath,
    url,
    requests,
    stop: (name) => { stopped.add(name); },
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
