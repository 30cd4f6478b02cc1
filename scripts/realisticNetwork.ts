// A realistic network to look at: about 150 hosts in five subnets of an office and its
// server room — a firewall, a router, a 36-port switch with LLDP neighbours, access points and
// printers, 96 workstations, a Docker host with containers, a Proxmox host with VMs, six
// dependencies (one whose hub is a hidden host), tags, application tags — and a second network of
// 12 hosts. Then a few changes over time, so History and Compare have something to show.
// Built through the public HTTP API only, so it is the network a user of the API would have.
// The web tests, the screenshots and the web bench share it; `buildRealisticNetwork` takes any base URL.

/** Calls the API with a credential: answers `data` of the envelope, waits out a 429, throws on any other error. */
export type ApiCall = (method: string, path: string, body?: unknown) => Promise<any>;

export function apiCaller(base: string, auth: { cookie?: string; bearer?: string }): ApiCall {
  return async function request(method, path, body) {
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(base + path, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...(auth.cookie ? { Cookie: auth.cookie } : {}),
          ...(auth.bearer ? { Authorization: `Bearer ${auth.bearer}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (res.status === 429 && attempt < 60) {
        // The user bucket refills 5 tokens a second: wait what the server says, then try again.
        await new Promise((r) => setTimeout(r, 1000 * Math.max(0.2, Number(res.headers.get('retry-after') ?? 1))));
        continue;
      }
      const text = await res.text();
      const json = text ? JSON.parse(text) : { success: true, data: null };
      if (!json.success) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
      return json.data;
    }
  };
}

interface ServiceSpec { name: string; definition: string; port?: number; udp?: boolean; tags?: string[]; runsUnder?: string }
interface HostSpec {
  name: string; subnet: string; octet: number; hostname?: string; description?: string; hidden?: boolean; tags?: string[];
  services?: ServiceSpec[];
  /** A VM of the Proxmox host, a container of the Docker host: the service it runs under ("host/service"). */
  vmOf?: string;
  /** Its uplink: the switch port it hangs off (LLDP seen from the host's side, or from the switch's). */
  switchPort?: number; lldpFromSwitch?: boolean;
  /** More addresses (a Docker host's container addresses: one per container service, bound to it). */
  extraAddresses?: Array<{ subnet: string; octet: number; forService: string }>;
}

const SUBNETS = [
  { key: 'core', cidr: '10.10.0.0/24', name: 'core', subnet_type: 'Management' },
  { key: 'office', cidr: '10.10.1.0/24', name: 'office', subnet_type: 'Lan' },
  { key: 'servers', cidr: '10.10.2.0/24', name: 'servers', subnet_type: 'Lan' },
  { key: 'dmz', cidr: '10.10.3.0/24', name: 'dmz', subnet_type: 'Dmz' },
  { key: 'docker', cidr: '172.18.0.0/24', name: 'docker app-net', subnet_type: 'DockerBridge' },
] as const;

const TAGS = [
  { key: 'production', name: 'production', color: 'Red' },
  { key: 'staging', name: 'staging', color: 'Amber' },
  { key: 'office', name: 'office', color: 'Gray' },
  { key: 'shop', name: 'shop', color: 'Teal', is_application: true },
  { key: 'observability', name: 'observability', color: 'Purple', is_application: true },
] as const;

const web = (tags: string[] = []): ServiceSpec => ({ name: 'nginx', definition: 'Nginx', port: 443, tags });
const ssh: ServiceSpec = { name: 'ssh', definition: 'SSH', port: 22 };
const nodeExporter: ServiceSpec = { name: 'node-exporter', definition: 'Prometheus Node Exporter', port: 9100, tags: ['observability'] };

/** The hosts of the main network, in the order they are created. */
export function mainHosts(workstations = 96): HostSpec[] {
  const hosts: HostSpec[] = [
    // Core: the edge of the network and the switch everything hangs off.
    { name: 'fw-01', subnet: 'core', octet: 1, hostname: 'fw-01.hq.lan', description: 'OPNsense firewall', tags: ['production'], switchPort: 1,
      services: [{ name: 'opnsense', definition: 'OPNsense', port: 443 }, ssh] },
    { name: 'rtr-01', subnet: 'core', octet: 2, hostname: 'rtr-01.hq.lan', description: 'Edge router', tags: ['production'], switchPort: 2, lldpFromSwitch: true,
      services: [{ name: 'bgp', definition: 'BGP', port: 179 }, { name: 'snmp', definition: 'SNMP', port: 161, udp: true }] },
    { name: 'core-sw-01', subnet: 'core', octet: 3, hostname: 'core-sw-01.hq.lan', description: 'Catalyst 9300, 36 ports', tags: ['production'],
      services: [{ name: 'snmp', definition: 'SNMP', port: 161, udp: true }, ssh] },
    // Servers: a Proxmox host with VMs, a Docker host with containers, and bare metal.
    { name: 'pve-01', subnet: 'servers', octet: 10, hostname: 'pve-01.hq.lan', tags: ['production'], switchPort: 5,
      services: [{ name: 'proxmox', definition: 'Proxmox VE', port: 8006 }, ssh] },
    { name: 'docker-01', subnet: 'servers', octet: 11, hostname: 'docker-01.hq.lan', tags: ['production'], switchPort: 6, lldpFromSwitch: true,
      services: [
        { name: 'docker', definition: 'Docker', port: 2376 },
        { name: 'traefik', definition: 'Traefik', port: 8443, runsUnder: 'docker-01/docker', tags: ['shop'] },
        { name: 'grafana', definition: 'Grafana', port: 3000, runsUnder: 'docker-01/docker', tags: ['observability'] },
        { name: 'prometheus', definition: 'Prometheus', port: 9090, runsUnder: 'docker-01/docker', tags: ['observability'] },
        { name: 'loki', definition: 'Grafana Loki', port: 3100, runsUnder: 'docker-01/docker', tags: ['observability'] },
        { name: 'gitea', definition: 'Gitea', port: 3001, runsUnder: 'docker-01/docker' },
        { name: 'uptime-kuma', definition: 'Uptime Kuma', port: 3002, runsUnder: 'docker-01/docker', tags: ['observability'] },
        { name: 'vaultwarden', definition: 'Vaultwarden', port: 8081, runsUnder: 'docker-01/docker' },
      ],
      extraAddresses: ['traefik', 'grafana', 'prometheus', 'loki', 'gitea', 'uptime-kuma', 'vaultwarden'].map((s, i) => ({ subnet: 'docker', octet: 10 + i, forService: s })) },
    { name: 'web-01', subnet: 'servers', octet: 21, hostname: 'web-01.hq.lan', tags: ['production'], vmOf: 'pve-01/proxmox', services: [web(['shop']), nodeExporter] },
    { name: 'web-02', subnet: 'servers', octet: 22, hostname: 'web-02.hq.lan', tags: ['production'], vmOf: 'pve-01/proxmox', services: [web(['shop']), nodeExporter] },
    { name: 'app-01', subnet: 'servers', octet: 23, hostname: 'app-01.hq.lan', tags: ['production'], vmOf: 'pve-01/proxmox',
      services: [{ name: 'shop-api', definition: 'Node.js', port: 8080, tags: ['shop'] }, nodeExporter] },
    { name: 'db-01', subnet: 'servers', octet: 24, hostname: 'db-01.hq.lan', tags: ['production'], vmOf: 'pve-01/proxmox',
      services: [{ name: 'postgres', definition: 'PostgreSQL', port: 5432, tags: ['shop'] }, nodeExporter] },
    { name: 'cache-01', subnet: 'servers', octet: 25, hostname: 'cache-01.hq.lan', tags: ['production'], vmOf: 'pve-01/proxmox',
      services: [{ name: 'redis', definition: 'Redis', port: 6379, tags: ['shop'] }] },
    { name: 'ci-01', subnet: 'servers', octet: 26, hostname: 'ci-01.hq.lan', tags: ['staging'], vmOf: 'pve-01/proxmox',
      services: [{ name: 'jenkins', definition: 'Jenkins', port: 8080 }] },
    // The resolver is hidden (an appliance nobody wants on the map): "Internal DNS" keeps it as its hub.
    { name: 'dns-01', subnet: 'servers', octet: 2, hostname: 'dns-01.hq.lan', hidden: true, tags: ['production'], switchPort: 7,
      services: [{ name: 'unbound', definition: 'Unbound', port: 53, udp: true }] },
    { name: 'ldap-01', subnet: 'servers', octet: 30, hostname: 'ldap-01.hq.lan', tags: ['production'], switchPort: 8,
      services: [{ name: 'openldap', definition: 'OpenLDAP', port: 636 }, nodeExporter] },
    { name: 'mail-01', subnet: 'servers', octet: 31, hostname: 'mail-01.hq.lan', tags: ['production'], switchPort: 9, lldpFromSwitch: true,
      services: [{ name: 'postfix', definition: 'Postfix', port: 25 }, { name: 'dovecot', definition: 'Dovecot', port: 993 }, nodeExporter] },
    { name: 'mon-01', subnet: 'servers', octet: 32, hostname: 'mon-01.hq.lan', tags: ['production'], switchPort: 10,
      services: [{ name: 'zabbix', definition: 'Zabbix', port: 10051, tags: ['observability'] }] },
    { name: 'backup-01', subnet: 'servers', octet: 33, hostname: 'backup-01.hq.lan', tags: ['production'], switchPort: 11,
      services: [{ name: 'restic-server', definition: 'Restic REST Server', port: 8000 }] },
    { name: 'nas-01', subnet: 'servers', octet: 34, hostname: 'nas.lan', description: 'Synology DS920+', tags: ['production'], switchPort: 12, lldpFromSwitch: true,
      services: [{ name: 'smb', definition: 'Samba', port: 445 }, { name: 'nfs', definition: 'NFS', port: 2049 }, { name: 'dsm', definition: 'Synology DSM', port: 5001 }] },
    { name: 'ntp-01', subnet: 'servers', octet: 35, hostname: 'ntp-01.hq.lan', switchPort: 13, services: [{ name: 'chrony', definition: 'NTP', port: 123, udp: true }] },
    { name: 'pg-replica', subnet: 'servers', octet: 36, hostname: 'pg-replica.hq.lan', tags: ['production'], switchPort: 14,
      services: [{ name: 'postgres', definition: 'PostgreSQL', port: 5432 }] },
    // DMZ: what the internet reaches.
    { name: 'proxy-01', subnet: 'dmz', octet: 10, hostname: 'proxy-01.hq.lan', tags: ['production'], switchPort: 3,
      services: [{ name: 'haproxy', definition: 'HAProxy', port: 443, tags: ['shop'] }] },
    { name: 'vpn-01', subnet: 'dmz', octet: 11, hostname: 'vpn-01.hq.lan', tags: ['production'], switchPort: 4, services: [{ name: 'wireguard', definition: 'WireGuard', port: 51820, udp: true }] },
    { name: 'mx-01', subnet: 'dmz', octet: 12, hostname: 'mx-01.hq.lan', tags: ['production'], switchPort: 15, services: [{ name: 'rspamd', definition: 'Rspamd', port: 11334 }] },
    { name: 'staging-web', subnet: 'dmz', octet: 20, hostname: 'staging.hq.lan', tags: ['staging'], switchPort: 16, services: [web()] },
  ];
  // Office: access points and printers on switch ports, then the workstations (no services: they fold).
  for (let i = 1; i <= 4; i++) {
    hosts.push({ name: `ap-0${i}`, subnet: 'office', octet: 200 + i, hostname: `ap-0${i}.hq.lan`, tags: ['office'], switchPort: 16 + i, lldpFromSwitch: i % 2 === 0,
      services: [{ name: 'unifi-ap', definition: 'UniFi Access Point', port: 22 }] });
  }
  for (let i = 1; i <= 3; i++) {
    hosts.push({ name: `printer-0${i}`, subnet: 'office', octet: 220 + i, hostname: `printer-0${i}.hq.lan`, tags: ['office'], switchPort: 20 + i,
      services: [{ name: 'ipp', definition: 'IPP', port: 631 }] });
  }
  for (let i = 1; i <= 12; i++) {
    hosts.push({ name: `cam-${String(i).padStart(2, '0')}`, subnet: 'office', octet: 180 + i, tags: ['office'], switchPort: i <= 8 ? 23 + i : undefined, lldpFromSwitch: true,
      services: [{ name: 'rtsp', definition: 'RTSP', port: 554 }] });
  }
  hosts.push({ name: 'print-srv', subnet: 'servers', octet: 40, hostname: 'print-srv.hq.lan', switchPort: 32, services: [{ name: 'cups', definition: 'CUPS', port: 631 }] });
  hosts.push({ name: 'hass-01', subnet: 'servers', octet: 41, hostname: 'hass.hq.lan', switchPort: 33, services: [{ name: 'home-assistant', definition: 'Home Assistant', port: 8123 }] });
  hosts.push({ name: 'jump-01', subnet: 'core', octet: 10, hostname: 'jump-01.hq.lan', switchPort: 34, services: [ssh] });
  for (let i = 1; i <= workstations; i++) {
    const n = String(i).padStart(3, '0');
    hosts.push({ name: `ws-${n}`, subnet: 'office', octet: 10 + i, hostname: `ws-${n}.hq.lan`, tags: ['office'] });
  }
  return hosts;
}

/** The second network: a small lab. */
export function labHosts(): HostSpec[] {
  return Array.from({ length: 12 }, (_, i) => ({
    name: `lab-${String(i + 1).padStart(2, '0')}`, subnet: 'lab', octet: 10 + i, hostname: `lab-${i + 1}.lab.lan`,
    services: i % 3 === 0 ? [ssh] : i % 3 === 1 ? [web()] : [],
  }));
}

export interface RealisticNetwork {
  networkId: string;
  labNetworkId: string;
  subnets: Record<string, any>;
  tags: Record<string, any>;
  /** Hosts by name, as the API answered them (with their children). */
  hosts: Record<string, any>;
  /** Service ids by "host/service". */
  services: Record<string, string>;
  dependencies: Record<string, any>;
  /** An instant after the network was built and before the changes over time. */
  builtAt: string;
  switchPorts: number;
}

const ip = (cidr: string, octet: number) => `${cidr.split('.').slice(0, 3).join('.')}.${octet}`;

/** The hosts of `specs` created, one request each (children in the same request), in the network. */
async function createHosts(api: ApiCall, networkId: string, specs: HostSpec[], subnets: Record<string, any>, tags: Record<string, any>, out: RealisticNetwork) {
  for (const h of specs) {
    const services = h.services ?? [];
    const ports = services.filter((s) => s.port).map((s, i) => ({ id: crypto.randomUUID(), number: s.port!, protocol: s.udp ? 'Udp' : 'Tcp', service: s.name, i }));
    // Port numbers are unique per host and protocol: a second service on the same port shares it.
    const uniquePorts = ports.filter((p, i) => ports.findIndex((q) => q.number === p.number && q.protocol === p.protocol) === i);
    const portOf = (s: ServiceSpec) => uniquePorts.find((p) => p.number === s.port && p.protocol === (s.udp ? 'Udp' : 'Tcp'));
    const addresses = [{ id: crypto.randomUUID(), subnet_id: subnets[h.subnet].id, ip_address: ip(subnets[h.subnet].cidr, h.octet), forService: undefined as string | undefined },
      ...(h.extraAddresses ?? []).map((a) => ({ id: crypto.randomUUID(), subnet_id: subnets[a.subnet].id, ip_address: ip(subnets[a.subnet].cidr, a.octet), forService: a.forService }))];
    const created = await api('POST', '/api/v1/hosts', {
      network_id: networkId, name: h.name, hostname: h.hostname, description: h.description, hidden: h.hidden ?? false,
      tags: (h.tags ?? []).map((t) => tags[t].id),
      ip_addresses: addresses.map(({ forService: _f, ...a }) => a),
      ports: uniquePorts.map(({ id, number, protocol }) => ({ id, number, protocol })),
      services: services.map((s) => {
        const own = addresses.find((a) => a.forService === s.name);
        const port = portOf(s);
        // A container is bound on its own address; the host's services on every address of the host (a port binding without one).
        return {
          name: s.name, service_definition: s.definition, tags: (s.tags ?? []).map((t) => tags[t].id),
          bindings: port ? [{ type: 'Port', port_id: port.id, ip_address_id: own?.id ?? null }] : own ? [{ type: 'IPAddress', ip_address_id: own.id }] : [],
        };
      }),
    });
    out.hosts[h.name] = created;
    for (const s of created.services ?? []) out.services[`${h.name}/${s.name}`] = s.id;
  }
  // Virtualization: each VM or container names the service it runs under (as Scanopy's daemons report it).
  for (const h of specs) {
    const host = out.hosts[h.name];
    if (h.vmOf) {
      out.hosts[h.name] = await api('PUT', `/api/v1/hosts/${host.id}`, {
        id: host.id, name: host.name, hidden: host.hidden, tags: host.tags, hostname: host.hostname, description: host.description,
        virtualization: { type: 'Proxmox', details: { service_id: out.services[h.vmOf], vm_id: 100 + h.octet } },
      });
    }
    const containers = (h.services ?? []).filter((s) => s.runsUnder);
    if (containers.length) {
      out.hosts[h.name] = await api('PUT', `/api/v1/hosts/${host.id}`, {
        id: host.id, name: host.name, hidden: host.hidden, tags: host.tags, hostname: host.hostname, description: host.description,
        ip_addresses: host.ip_addresses, ports: host.ports,
        services: host.services.map((s: any) => {
          const spec = containers.find((c) => c.name === s.name);
          return spec ? { ...s, virtualization: { type: 'Docker', details: { service_id: out.services[spec.runsUnder!], container_name: s.name } } } : s;
        }),
      });
    }
  }
}

/** Builds the network into `networkId` (the account's first network) and a second network "lab". */
export async function buildRealisticNetwork(api: ApiCall, networkId: string, opts: { workstations?: number; changes?: boolean } = {}): Promise<RealisticNetwork> {
  const out: RealisticNetwork = { networkId, labNetworkId: '', subnets: {}, tags: {}, hosts: {}, services: {}, dependencies: {}, builtAt: '', switchPorts: 36 };
  for (const t of TAGS) out.tags[t.key] = await api('POST', '/api/v1/tags', { name: t.name, color: t.color, is_application: 'is_application' in t && t.is_application });
  for (const s of SUBNETS) out.subnets[s.key] = await api('POST', '/api/v1/subnets', { network_id: networkId, cidr: s.cidr, name: s.name, subnet_type: s.subnet_type });
  const specs = mainHosts(opts.workstations ?? 96);
  await createHosts(api, networkId, specs, out.subnets, out.tags, out);

  // The switch's 36 ports, in order; each linked host's uplink seen by LLDP from one side.
  const sw = out.hosts['core-sw-01'];
  const linked = new Map(specs.filter((h) => h.switchPort).map((h) => [h.switchPort!, h]));
  for (let port = 1; port <= out.switchPorts; port++) {
    const h = linked.get(port);
    const fromSwitch = h?.lldpFromSwitch ? { lldp_sys_name: h.name, lldp_port_id: 'eth0' } : {};
    await api('POST', '/api/v1/interfaces', {
      host_id: sw.id, if_index: port, if_name: `Gi1/0/${port}`, if_descr: `GigabitEthernet1/0/${port}`, if_type: 6,
      speed_bps: 1_000_000_000, oper_status: h ? 'Up' : 'Down', ...fromSwitch,
    });
  }
  for (const h of specs.filter((x) => x.switchPort)) {
    const fromHost = h.lldpFromSwitch ? {} : { lldp_sys_name: 'core-sw-01', lldp_port_id: `Gi1/0/${h.switchPort}` };
    await api('POST', '/api/v1/interfaces', { host_id: out.hosts[h.name].id, if_index: 2, if_name: 'eth0', if_type: 6, speed_bps: 1_000_000_000, ...fromHost });
  }

  const s = out.services;
  const dependency = async (name: string, color: string, type: 'HubAndSpoke' | 'RequestPath', members: string[], edge_style = 'SmoothStep') => {
    out.dependencies[name] = await api('POST', '/api/v1/dependencies', {
      network_id: networkId, name, color, dependency_type: type, edge_style, members: { type: 'Services', service_ids: members.map((m) => s[m]) },
    });
  };
  await dependency('Internal DNS', 'Sky', 'HubAndSpoke', ['dns-01/unbound', 'mail-01/postfix', 'ldap-01/openldap', 'mon-01/zabbix', 'ci-01/jenkins']);
  await dependency('Web shop', 'Teal', 'RequestPath', ['proxy-01/haproxy', 'web-01/nginx', 'app-01/shop-api', 'db-01/postgres'], 'Bezier');
  await dependency('Sessions', 'Red', 'HubAndSpoke', ['cache-01/redis', 'web-01/nginx', 'web-02/nginx']);
  await dependency('Metrics', 'Purple', 'HubAndSpoke', ['docker-01/prometheus', 'web-01/node-exporter', 'web-02/node-exporter', 'app-01/node-exporter', 'db-01/node-exporter', 'ldap-01/node-exporter', 'mail-01/node-exporter']);
  await dependency('Backups', 'Amber', 'RequestPath', ['backup-01/restic-server', 'nas-01/nfs']);
  await dependency('Directory', 'Indigo', 'HubAndSpoke', ['ldap-01/openldap', 'mail-01/dovecot', 'docker-01/gitea', 'vpn-01/wireguard']);

  const lab = await api('POST', '/api/v1/networks', { name: 'lab' });
  out.labNetworkId = lab.id;
  const labSubnets = { lab: await api('POST', '/api/v1/subnets', { network_id: lab.id, cidr: '192.168.50.0/24', name: 'lab', subnet_type: 'Lan' }) };
  await createHosts(api, lab.id, labHosts(), labSubnets, out.tags, { ...out, hosts: {}, services: {} });

  out.builtAt = new Date().toISOString();
  if (opts.changes ?? true) {
    // A morning's changes: a new VM, a retired workstation, a renamed host, a new port, a recoloured tag.
    await new Promise((r) => setTimeout(r, 20));
    const added = await api('POST', '/api/v1/hosts', {
      network_id: networkId, name: 'web-03', hostname: 'web-03.hq.lan', tags: [out.tags.production.id],
      ip_addresses: [{ subnet_id: out.subnets.servers.id, ip_address: '10.10.2.27' }], ports: [{ number: 443, protocol: 'Tcp' }],
      services: [{ name: 'nginx', service_definition: 'Nginx', tags: [out.tags.shop.id] }],
    });
    out.hosts['web-03'] = added;
    await api('DELETE', `/api/v1/hosts/${out.hosts['ws-007'].id}`);
    delete out.hosts['ws-007'];
    const renamed = out.hosts['ntp-01'];
    out.hosts['ntp-01'] = await api('PUT', `/api/v1/hosts/${renamed.id}`, { id: renamed.id, name: 'time-01', hidden: false, tags: renamed.tags, hostname: renamed.hostname });
    const db = out.hosts['db-01'];
    out.hosts['db-01'] = await api('PUT', `/api/v1/hosts/${db.id}`, {
      id: db.id, name: db.name, hidden: db.hidden, tags: db.tags, hostname: db.hostname, virtualization: db.virtualization,
      ip_addresses: db.ip_addresses, services: db.services, ports: [...db.ports, { number: 9187, protocol: 'Tcp' }],
    });
    const staging = out.tags.staging;
    out.tags.staging = await api('PUT', `/api/v1/tags/${staging.id}`, { name: staging.name, color: 'Orange', is_application: false });
  }
  return out;
}
