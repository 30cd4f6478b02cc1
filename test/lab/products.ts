/**
 * The "products" lab: a home / small-office network of 28 hosts on one L2 segment, 198.18.30.0/24,
 * 68 services of 58 products (and an HP printer's snmpd answering `public`),
 * each host a network namespace with a real vendor's MAC, running real Debian daemons (OpenSSH,
 * Redis, PostgreSQL, Mosquitto) and emulations of real products (test/lab/productServices.ts: one
 * Node process per host, answering with the product's own bytes). PRODUCT_TRUTH says what each
 * service is and what a correct identification's name must match.
 *
 *   root ns ── np<id>srv 198.19.255.x/30 ── agent ns (ag-srv)       the API, through forward()
 *   switch ns: bridge br-p; agent 198.18.30.2 (ag0), hosts 198.18.30.1 and .10–.35
 *
 * Built with test/lab/lab.ts's helpers (namespaces, veths, the /30 claim, counters, the isolation
 * check), with its own name prefix (np<hex4>-) and subnet, so it coexists with that lab.
 *
 * NETWORK SAFETY: the agent's namespace has no default route, only the /24 and the /30 (asserted by
 * assertAgentIsolated() before every probe); its nftables output chain drops anything else.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  addNamespace, assertIsolated, attach, cidrInside, claimServerLink, forwardToLoopback, counterPackets, LAB_SPACE, labUnavailable, NODE, removeNamespaces, ROOT, sh, STATE_DIR,
} from './lab.js';
import { ensurePackages, SNMP_PACKAGES } from './packages.js';
import type { EmulatedService, ProductId, ServiceHostSpec } from './productServices.js';

export const PRODUCTS_SUBNET = '198.18.30.0/24';
export const PRODUCTS_AGENT_IP = '198.18.30.2';
const PREFIX_RE = /^np[0-9a-f]{4}-/;
const RAW_PORTS = '9100-9107';

type Real = 'openssh' | 'redis' | 'postgresql' | 'mosquitto';
/** [port, emulation or real daemon, product, regex a correct name matches, identifiable (default true)] */
type Svc = [number, ProductId | Real, string, RegExp, boolean?];
/** snmpPublic: the host runs Debian's snmpd answering v2c `public` with this sysDescr (UDP 161; not in the TCP truth). */
interface HostDef { name: string; octet: number; mac: string; device: string; os?: string; services: Svc[]; quiet?: boolean; snmpPublic?: string }
/** An HP printer's JetDirect sysDescr as HP's firmware writes it (Recog snmp_sysdescr: HP JetDirect). */
export const HP_SYS_DESCR = 'HP ETHERNET MULTI-ENVIRONMENT,ROM none,JETDIRECT,JD153,EEPROM JSI23900013,CIDATE 05/10/2016';

const SSH = /ssh/i;
const SMB = /smb|samba|microsoft-ds|cifs/i;
/**
 * The hosts. MAC prefixes are the vendors' IEEE OUIs: MikroTik 4c:5e:0c, Synology 00:11:32, Raspberry
 * Pi b8:27:eb / dc:a6:32, Intel 3c:7c:3f / 8c:8c:aa / 94:c6:91, Supermicro 0c:c4:7a / 00:25:90,
 * Ubiquiti 24:5a:4c, GL.iNet 94:83:c4, HP a0:d3:c1, Hikvision c0:56:e3, Dell d4:be:d9, Apple a4:83:e7 / f0:18:98.
 */
const HOSTS: HostDef[] = [
  { name: 'router', octet: 1, mac: '4c:5e:0c:30:00:01', device: 'MikroTik router', os: 'RouterOS', services: [
    [80, 'mikrotik-webfig', 'MikroTik RouterOS webfig', /mikrotik|routeros/i], [21, 'mikrotik-ftp', 'MikroTik FTP', /ftp|mikrotik/i],
    [22, 'mikrotik-ssh', 'MikroTik RouterOS SSH', SSH], [8291, 'mikrotik-winbox', 'MikroTik Winbox', /winbox|mikrotik/i, false],
    [8728, 'mikrotik-api', 'MikroTik RouterOS API', /mikrotik|routeros/i, false]] },
  { name: 'nas', octet: 10, mac: '00:11:32:30:00:10', device: 'Synology DiskStation', os: 'DSM', services: [
    [5000, 'synology-http', 'Synology DSM (HTTP redirect)', /synology|dsm/i], [5001, 'synology-https', 'Synology DSM', /synology|dsm/i],
    [445, 'samba', 'Samba SMB', SMB], [21, 'synology-ftp', 'Synology FTP', /ftp/i]] },
  { name: 'pihole', octet: 11, mac: 'b8:27:eb:30:00:11', device: 'Raspberry Pi', os: 'Raspberry Pi OS', services: [
    [80, 'pihole-web', 'Pi-hole', /pi-?hole/i], [53, 'pihole-dns', 'Pi-hole FTL DNS (dnsmasq)', /dns|domain|dnsmasq/i], [22, 'openssh', 'OpenSSH', SSH]] },
  { name: 'homeassistant', octet: 12, mac: 'dc:a6:32:30:00:12', device: 'Raspberry Pi 4', os: 'Home Assistant OS', services: [
    [8123, 'homeassistant', 'Home Assistant', /home.?assistant/i], [1883, 'mosquitto', 'Mosquitto MQTT', /mqtt|mosquitto/i]] },
  { name: 'media', octet: 13, mac: '94:c6:91:30:00:13', device: 'Intel NUC', services: [
    [8096, 'jellyfin', 'Jellyfin', /jellyfin/i], [32400, 'plex', 'Plex Media Server', /plex/i]] },
  { name: 'cloud', octet: 14, mac: '3c:7c:3f:30:00:14', device: 'PC', os: 'Debian', services: [[80, 'nextcloud', 'Nextcloud', /nextcloud/i]] },
  { name: 'docker', octet: 15, mac: '8c:8c:aa:30:00:15', device: 'PC', os: 'Linux', services: [
    [9443, 'portainer-https', 'Portainer', /portainer/i], [9000, 'portainer-http', 'Portainer', /portainer/i],
    [3000, 'grafana', 'Grafana', /grafana/i], [9090, 'prometheus', 'Prometheus', /prometheus/i]] },
  { name: 'pve1', octet: 16, mac: '0c:c4:7a:30:00:16', device: 'Supermicro server', os: 'Proxmox VE', services: [
    [8006, 'proxmox', 'Proxmox VE', /proxmox|pve/i], [22, 'openssh', 'OpenSSH', SSH]] },
  { name: 'unifi', octet: 17, mac: '24:5a:4c:30:00:17', device: 'UniFi Cloud Key', services: [
    [8443, 'unifi-https', 'UniFi Network', /unifi/i], [8080, 'unifi-http', 'UniFi Network (HTTP redirect)', /unifi/i]] },
  { name: 'openwrt', octet: 18, mac: '94:83:c4:30:00:18', device: 'GL.iNet router', os: 'OpenWrt', services: [
    [80, 'luci', 'OpenWrt LuCI', /openwrt|luci/i], [22, 'dropbear', 'Dropbear SSH', SSH], [23, 'busybox-telnet', 'BusyBox telnetd', /telnet/i]] },
  { name: 'truenas', octet: 19, mac: '00:25:90:30:00:19', device: 'Supermicro server', os: 'TrueNAS SCALE', services: [
    [80, 'truenas', 'TrueNAS', /truenas/i], [445, 'samba', 'Samba SMB', SMB]] },
  { name: 'git', octet: 20, mac: '3c:7c:3f:30:00:20', device: 'PC', os: 'Debian', services: [
    [3000, 'gitea', 'Gitea', /gitea/i], [22, 'openssh', 'OpenSSH', SSH]] },
  { name: 'ci', octet: 21, mac: '3c:7c:3f:30:00:21', device: 'PC', services: [[8080, 'jenkins', 'Jenkins', /jenkins/i]] },
  { name: 'elk', octet: 22, mac: '3c:7c:3f:30:00:22', device: 'PC', services: [
    [9200, 'elasticsearch', 'Elasticsearch', /elasticsearch/i], [5601, 'kibana', 'Kibana', /kibana/i]] },
  { name: 'printserver', octet: 23, mac: 'b8:27:eb:30:00:23', device: 'Raspberry Pi', os: 'Debian', services: [
    [631, 'cups', 'CUPS', /cups|ipp/i], [22, 'openssh', 'OpenSSH', SSH]] },
  { name: 'laserjet', octet: 24, mac: 'a0:d3:c1:30:00:24', device: 'HP Color LaserJet MFP M477fdw', snmpPublic: HP_SYS_DESCR, services: [
    [80, 'hp-ews', 'HP LaserJet EWS', /\bhp\b|laserjet|jetdirect/i], [443, 'hp-ews-tls', 'HP LaserJet EWS (TLS)', /\bhp\b|laserjet|jetdirect/i],
    [9100, 'raw9100', 'HP JetDirect raw printing', /jetdirect|raw|print/i, false]] },
  { name: 'camera', octet: 25, mac: 'c0:56:e3:30:00:25', device: 'Hikvision IP camera', services: [
    [80, 'hikvision-web', 'Hikvision web', /hikvision/i], [554, 'hikvision-rtsp', 'Hikvision RTSP', /rtsp/i], [8000, 'hikvision-sdk', 'Hikvision SDK', /hikvision/i, false]] },
  { name: 'proxy', octet: 26, mac: '3c:7c:3f:30:00:26', device: 'PC', os: 'Debian', services: [[80, 'nginx-vaultwarden', 'nginx → Vaultwarden', /nginx|vaultwarden/i]] },
  { name: 'vault', octet: 27, mac: '8c:8c:aa:30:00:27', device: 'PC', services: [[8200, 'vault', 'HashiCorp Vault', /vault/i]] },
  { name: 'winsrv', octet: 28, mac: 'd4:be:d9:30:00:28', device: 'Dell server', os: 'Windows Server', services: [
    [80, 'iis', 'Microsoft IIS', /iis|microsoft/i], [3389, 'rdp', 'Microsoft RDP', /rdp|ms-wbt|terminal/i], [445, 'windows-smb', 'Windows SMB', SMB]] },
  { name: 'macbook', octet: 29, mac: 'a4:83:e7:30:00:29', device: 'Apple Mac', os: 'macOS', services: [
    [5900, 'apple-vnc', 'Apple Screen Sharing (VNC)', /vnc|rfb|screen.?sharing/i], [22, 'apple-ssh', 'OpenSSH (macOS)', SSH], [7000, 'airplay', 'AirPlay receiver', /airtunes|airplay|apple/i]] },
  { name: 'desktop', octet: 30, mac: '94:c6:91:30:00:30', device: 'PC', os: 'Linux', services: [
    [5900, 'tigervnc', 'TigerVNC', /vnc|rfb/i], [22, 'openssh', 'OpenSSH', SSH]] },
  { name: 'broker', octet: 31, mac: '8c:8c:aa:30:00:31', device: 'PC', os: 'Debian', services: [
    [5672, 'rabbitmq-amqp', 'RabbitMQ AMQP', /amqp|rabbitmq/i], [15672, 'rabbitmq-mgmt', 'RabbitMQ Management', /rabbitmq/i],
    [27017, 'mongodb', 'MongoDB', /mongo/i], [6379, 'redis', 'Redis', /redis/i]] },
  { name: 'mail', octet: 32, mac: '8c:8c:aa:30:00:32', device: 'PC', os: 'Debian', services: [
    [25, 'postfix', 'Postfix SMTP', /smtp|postfix/i], [143, 'dovecot-imap', 'Dovecot IMAP', /imap|dovecot/i],
    [110, 'dovecot-pop3', 'Dovecot POP3', /pop|dovecot/i], [993, 'dovecot-imaps', 'Dovecot IMAPS', /imap|dovecot/i]] },
  { name: 'db', octet: 33, mac: '0c:c4:7a:30:00:33', device: 'Supermicro server', os: 'Debian', services: [
    [5432, 'postgresql', 'PostgreSQL', /postgres/i], [3306, 'mariadb', 'MariaDB', /mariadb|mysql/i], [389, 'slapd', 'OpenLDAP slapd', /ldap/i]] },
  { name: 'www', octet: 34, mac: '3c:7c:3f:30:00:34', device: 'PC', os: 'Debian', services: [[80, 'apache-default', 'Apache httpd', /apache/i]] },
  // Web services whose first page names nothing: only a well-known path does (the agent's application probes).
  { name: 'devops', octet: 36, mac: '8c:8c:aa:30:00:36', device: 'PC', os: 'Linux', services: [
    [2379, 'etcd', 'etcd', /etcd/i], [5000, 'docker-registry', 'Docker Registry', /registry/i], [8080, 'spring-boot', 'Spring Boot application', /spring/i]] },
  // A phone: answers ARP only (no open port, drops every IP packet).
  { name: 'iphone', octet: 35, mac: 'f0:18:98:30:00:35', device: 'Apple iPhone', os: 'iOS', services: [], quiet: true },
];

const ipOf = (octet: number) => `198.18.30.${octet}`;

export interface ProductTruth {
  host: string; ip: string; port: number; product: string;
  /** What a correct identification's service name (ours: the definition or name; nmap's: name + product) must match. */
  expect: RegExp;
  /** Whether the service can be told by the bytes at all without risk (false: silent binary protocols, raw printing). */
  identifiable: boolean;
  /** Real Debian daemon or emulation. */
  real: boolean;
}
export const PRODUCT_TRUTH: ProductTruth[] = HOSTS.flatMap((h) => h.services.map(([port, impl, product, expect, identifiable]) => ({
  host: h.name, ip: ipOf(h.octet), port, product, expect, identifiable: identifiable ?? true,
  real: ['openssh', 'redis', 'postgresql', 'mosquitto'].includes(impl),
})));
/** Every host, with the device / OS its bytes state (where they do). */
export const PRODUCT_HOSTS = HOSTS.map((h) => ({ name: h.name, ip: ipOf(h.octet), mac: h.mac, device: h.device, os: h.os, quiet: h.quiet ?? false, snmpPublic: h.snmpPublic ?? null }));
/** Every open port of the lab (the printer's 9100 included). */
export const PRODUCT_PORTS = [...new Set(PRODUCT_TRUTH.map((t) => t.port))].sort((a, b) => a - b);

export interface ProductsLab {
  prefix: string;
  dir: string;
  agentNs: string;
  serverIp: string;
  agentServerIp: string;
  serverLink: string;
  assertAgentIsolated(): void;
  /** Packets to 9100–9107 from the agent's namespace and across the bridge. */
  rawPortPackets(): number;
  agentTraffic(): { packetsOut: number; packetsIn: number; bytesOut: number; bytesIn: number };
  exec(ns: string, cmd: string, args: string[]): string;
  /** A program in the agent's namespace (after the safety check). */
  spawnInAgentNs(cmd: string, args: string[], env?: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> };
  /** Listens on serverIp and passes each connection to 127.0.0.1:port (the test API). */
  forward(port: number): Promise<{ url: string; close(): Promise<void> }>;
  destroy(): Promise<void>;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Removes products labs whose owner is gone (lab.ts's sweep covers its own prefix only). */
export function sweepStaleProductsLabs(): string[] {
  const names = sh('ip', ['netns', 'list']).split('\n').map((l) => l.split(' ')[0]!).filter((n) => PREFIX_RE.test(n));
  const prefixes = new Set(names.map((n) => n.slice(0, 6)));
  if (fs.existsSync(STATE_DIR)) for (const p of fs.readdirSync(STATE_DIR)) if (PREFIX_RE.test(`${p}-`)) prefixes.add(p);
  const stale = [...prefixes].filter((p) => {
    const owner = Number(fs.existsSync(path.join(STATE_DIR, p, 'owner')) ? fs.readFileSync(path.join(STATE_DIR, p, 'owner'), 'utf8') : '') || null;
    return owner === null || !alive(owner);
  });
  for (const p of stale) {
    removeNamespaces(names.filter((n) => n.startsWith(`${p}-`)));
    sh('ip', ['link', 'del', `${p}srv`], { allowFail: true });
    fs.rmSync(path.join(STATE_DIR, p), { recursive: true, force: true });
  }
  return stale;
}

const agentRuleset = (serverLink: string) => `table inet lab {
  counter raw9100 {}
  counter lab_out {}
  counter lab_in {}
  counter outside {}
  chain out { type filter hook output priority 0; policy accept;
    oif "lo" accept
    tcp dport ${RAW_PORTS} counter name raw9100
    ip daddr ${PRODUCTS_SUBNET} counter name lab_out accept
    ip daddr ${serverLink} accept
    counter name outside drop
  }
  chain in { type filter hook input priority 0; policy accept;
    ip saddr ${PRODUCTS_SUBNET} counter name lab_in
  }
}`;
const BRIDGE_COUNTER = `table bridge lab {
  counter raw9100 {}
  chain through { type filter hook forward priority 0;
    tcp dport ${RAW_PORTS} counter name raw9100
  }
}`;
const DROP_ALL_IP = `table inet lab {
  chain in { type filter hook input priority 0; policy drop;
    iif "lo" accept
  }
}`;

/** Connects to each ip:port from `ns` until all accept (readiness; never 9100–9107). */
const READY_SCRIPT = `
const net = require('node:net');
const { targets, waitMs } = JSON.parse(process.argv[1]);
const deadline = Date.now() + waitMs;
const once = (t) => new Promise((resolve) => {
  const s = net.connect({ host: t.ip, port: t.port });
  const done = (ok) => { s.destroy(); resolve(ok); };
  s.setTimeout(1000, () => done(false));
  s.on('connect', () => done(true));
  s.on('error', () => done(false));
});
(async () => {
  const down = [];
  await Promise.all(targets.map(async (t) => {
    for (;;) {
      if (await once(t)) return;
      if (Date.now() > deadline) { down.push(t); return; }
      await new Promise((w) => setTimeout(w, 250));
    }
  }));
  console.log(JSON.stringify(down));
})();
`;

function postgresUser(): { uid: number; gid: number } {
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no "postgres" user (Debian: apt-get install postgresql)');
  const f = line.split(':');
  return { uid: Number(f[2]), gid: Number(f[3]) };
}
function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (!versions.length) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  return path.join(base, versions[0]!, 'bin');
}

/** A self-signed certificate naming a product (openssl, at lab start). */
function makeCert(dir: string, name: string, subject: string, san: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  sh('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650', '-keyout', key, '-out', cert, '-subj', subject, '-addext', `subjectAltName=${san}`]);
  return { cert, key };
}

/** Builds the products lab; resolves when every service accepts connections from the agent's namespace. */
export async function createProductsLab(): Promise<ProductsLab> {
  const why = labUnavailable();
  if (why) throw new Error(why);
  ensurePackages(SNMP_PACKAGES); // snmpd for the hosts that answer `public`, snmpget to see it ready
  sweepStaleProductsLabs();
  const id = randomBytes(2).toString('hex');
  const labId = `np${id}`;
  const prefix = `${labId}-`;
  const dir = path.join(STATE_DIR, labId);
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, 0o755);
  fs.writeFileSync(path.join(dir, 'owner'), String(process.pid));
  const nsOf = (name: string) => `${prefix}${name}`;
  const switchNs = nsOf('sw');
  const agentNs = nsOf('agent');
  const rootLink = `${labId}srv`;
  const allNs = [switchNs, agentNs, ...HOSTS.map((h) => nsOf(h.name))];
  const children: ChildProcess[] = [];
  let destroyed = false;
  let linkClaim: string | undefined;
  const teardownSync = () => {
    if (destroyed) return;
    destroyed = true;
    for (const c of children) c.kill('SIGKILL');
    removeNamespaces(allNs);
    sh('ip', ['link', 'del', rootLink], { allowFail: true });
    fs.rmSync(dir, { recursive: true, force: true });
    if (linkClaim) fs.rmSync(linkClaim, { force: true });
  };
  const onExit = () => teardownSync();
  const onSignal = (signal: NodeJS.Signals) => {
    teardownSync();
    process.kill(process.pid, signal);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const spawnIn = (ns: string, cmd: string, args: string[], opts: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {}): ChildProcess => {
    const log = fs.openSync(path.join(dir, `${ns.slice(prefix.length)}-${path.basename(cmd)}.log`), 'a');
    const child = spawn('ip', ['netns', 'exec', ns, cmd, ...args], { stdio: ['ignore', log, log], ...opts });
    fs.closeSync(log);
    child.on('error', () => undefined);
    children.push(child);
    return child;
  };
  const inNs = (ns: string, cmd: string, args: string[], input?: string) => sh('ip', ['netns', 'exec', ns, cmd, ...args], { input });

  try {
    for (const ns of allNs) addNamespace(ns);
    sh('ip', ['-n', switchNs, 'link', 'add', 'br-p', 'type', 'bridge']);
    sh('ip', ['-n', switchNs, 'link', 'set', 'br-p', 'up']);
    inNs(switchNs, 'nft', ['-f', '-'], BRIDGE_COUNTER);
    for (const h of HOSTS) attach(switchNs, nsOf(h.name), 'eth0', `p-${h.name}`, 'br-p', `${ipOf(h.octet)}/24`, h.mac);
    attach(switchNs, agentNs, 'ag0', 'p-agent', 'br-p', `${PRODUCTS_AGENT_IP}/24`, '3c:7c:3f:30:00:02');
    const server = claimServerLink(labId);
    linkClaim = server.claim;
    sh('ip', ['link', 'add', rootLink, 'type', 'veth', 'peer', 'name', 'ag-srv', 'netns', agentNs]);
    sh('ip', ['addr', 'add', `${server.serverIp}/30`, 'dev', rootLink]);
    sh('ip', ['link', 'set', rootLink, 'up']);
    sh('ip', ['-n', agentNs, 'addr', 'add', `${server.agentIp}/30`, 'dev', 'ag-srv']);
    sh('ip', ['-n', agentNs, 'link', 'set', 'ag-srv', 'up']);
    inNs(agentNs, 'nft', ['-f', '-'], agentRuleset(server.link));
    assertIsolated(agentNs, server.link);

    // Certificates: self-signed, each naming its product.
    const certs: Record<string, { cert: string; key: string }> = {
      'synology-https': makeCert(dir, 'synology', '/C=TW/L=Taipei/O=Synology Inc./OU=Synology/CN=synology', 'DNS:synology'),
      'portainer-https': makeCert(dir, 'portainer', '/O=Portainer/CN=portainer', 'DNS:localhost,DNS:portainer'),
      proxmox: makeCert(dir, 'pve', '/OU=PVE Cluster Node/O=Proxmox Virtual Environment/CN=pve1.lab.example', `DNS:pve1,DNS:pve1.lab.example,IP:${ipOf(16)}`),
      'unifi-https': makeCert(dir, 'unifi', '/C=US/ST=New York/L=New York/O=Ubiquiti Inc./OU=UniFi/CN=UniFi', 'DNS:unifi'),
      'hp-ews-tls': makeCert(dir, 'hp', '/O=HP/OU=HP Color LaserJet MFP M477fdw/CN=NPI6A2B3C', 'DNS:NPI6A2B3C'),
      'dovecot-imaps': makeCert(dir, 'dovecot', '/CN=mail.lab.example', 'DNS:mail.lab.example'),
    };

    fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'ssh_host_ed25519_key')]);
    for (const h of HOSTS) {
      const ns = nsOf(h.name);
      const ip = ipOf(h.octet);
      if (h.quiet) inNs(ns, 'nft', ['-f', '-'], DROP_ALL_IP);
      const emulated: EmulatedService[] = [];
      for (const [port, impl] of h.services) {
        if (impl === 'openssh') {
          spawnIn(ns, '/usr/sbin/sshd', ['-D', '-e', '-f', '/dev/null', '-o', `ListenAddress=${ip}:${port}`, '-o', `HostKey=${path.join(dir, 'ssh_host_ed25519_key')}`, '-o', `PidFile=${path.join(dir, `sshd-${h.name}.pid`)}`]);
        } else if (impl === 'redis') {
          spawnIn(ns, 'redis-server', ['--bind', ip, '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no']);
        } else if (impl === 'mosquitto') {
          const conf = path.join(dir, `mosquitto-${h.name}.conf`);
          fs.writeFileSync(conf, `listener ${port} ${ip}\nallow_anonymous true\npersistence false\nlog_dest stdout\n`, { mode: 0o644 });
          spawnIn(ns, '/usr/sbin/mosquitto', ['-c', conf]);
        } else if (impl === 'postgresql') {
          const pgData = path.join(dir, `pg-${h.name}`);
          const pgUser = postgresUser();
          fs.mkdirSync(pgData, { mode: 0o700 });
          fs.chownSync(pgData, pgUser.uid, pgUser.gid);
          const init = spawnSync(path.join(pgBin(), 'initdb'), ['-D', pgData, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'],
            { uid: pgUser.uid, gid: pgUser.gid, cwd: '/', encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
          if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
          spawnIn(ns, 'runuser', ['-u', 'postgres', '--', path.join(pgBin(), 'postgres'), '-D', pgData, '-c', `listen_addresses=${ip}`, '-c', `unix_socket_directories=${pgData}`,
            '-c', `port=${port}`, '-c', 'fsync=off', '-c', 'shared_buffers=16MB', '-c', 'max_connections=20', '-c', 'logging_collector=off']);
        } else {
          emulated.push({ port, product: impl, ...(certs[impl] ? { cert: certs[impl] } : {}) });
        }
      }
      if (h.snmpPublic) {
        const conf = path.join(dir, `snmpd-${h.name}.conf`);
        fs.writeFileSync(conf, [`agentAddress udp:${ip}:161`, 'rocommunity public', `sysDescr ${h.snmpPublic}`, `sysName ${h.name}`, ''].join('\n'), { mode: 0o644 });
        const persist = path.join(dir, `snmp-var-${h.name}`);
        fs.mkdirSync(persist, { recursive: true, mode: 0o700 });
        spawnIn(ns, '/usr/sbin/snmpd', ['-f', '-Lo', '-C', '-c', conf, '-p', path.join(dir, `snmpd-${h.name}.pid`), '-I', '-smux'], { env: { ...process.env, SNMP_PERSISTENT_DIR: persist } });
      }
      if (emulated.length) {
        const spec: ServiceHostSpec = { ip, hostname: h.name, services: emulated };
        spawnIn(ns, NODE, ['--import', 'tsx', path.join(ROOT, 'test/lab/productServices.ts'), JSON.stringify(spec)], { cwd: ROOT });
      }
    }

    const lab: ProductsLab = {
      prefix, dir, agentNs,
      serverIp: server.serverIp, agentServerIp: server.agentIp, serverLink: server.link,
      assertAgentIsolated: () => assertIsolated(agentNs, server.link),
      rawPortPackets: () => counterPackets(agentNs, 'raw9100').packets + counterPackets(switchNs, 'raw9100').packets,
      agentTraffic: () => {
        const out = counterPackets(agentNs, 'lab_out');
        const inn = counterPackets(agentNs, 'lab_in');
        return { packetsOut: out.packets, packetsIn: inn.packets, bytesOut: out.bytes, bytesIn: inn.bytes };
      },
      exec: (ns, cmd, args) => sh('ip', ['netns', 'exec', ns, cmd, ...args]),
      spawnInAgentNs(cmd, args, env) {
        lab.assertAgentIsolated();
        const child = spawn('ip', ['netns', 'exec', agentNs, cmd, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: env && { ...process.env, ...env } });
        children.push(child);
        let output = '';
        child.stdout!.on('data', (d) => { output += d; });
        child.stderr!.on('data', (d) => { output += d; });
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
        return { child, output: () => output, exited };
      },
      forward: (port) => forwardToLoopback(server.serverIp, port),
      async destroy() {
        process.off('exit', onExit);
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        teardownSync();
      },
    };

    // Ready when every port accepts a connection from the agent's side (9100 is never touched: the printer's counter stays 0).
    const targets = PRODUCT_TRUTH.filter((t) => !(t.port >= 9100 && t.port <= 9107)).map((t) => ({ ip: t.ip, port: t.port }));
    for (const t of targets) if (!cidrInside(t.ip, PRODUCTS_SUBNET) || !cidrInside(t.ip, LAB_SPACE)) throw new Error(`refusing to probe ${t.ip}`);
    lab.assertAgentIsolated();
    const ready = spawnSync('ip', ['netns', 'exec', agentNs, NODE, '-e', READY_SCRIPT, JSON.stringify({ targets, waitMs: 30_000 })], { encoding: 'utf8', timeout: 60_000 });
    const down = JSON.parse(ready.stdout || '[]') as unknown[];
    if (ready.status !== 0 || down.length) throw new Error(`products lab: services not ready: ${JSON.stringify(down)} ${ready.stderr} (logs in ${dir})`);
    // snmpd asked from its own host's namespace (nothing from the agent's side before the agent runs).
    for (const h of HOSTS.filter((x) => x.snmpPublic)) {
      const ask = () => spawnSync('ip', ['netns', 'exec', nsOf(h.name), 'snmpget', '-v2c', '-c', 'public', '-t', '1', '-r', '0', ipOf(h.octet), '1.3.6.1.2.1.1.1.0'], { encoding: 'utf8' }).status === 0;
      const until = Date.now() + 15_000;
      while (!ask()) {
        if (Date.now() > until) throw new Error(`products lab: snmpd on ${h.name} does not answer (logs in ${dir})`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    return lab;
  } catch (err) {
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    teardownSync();
    throw err;
  }
}

// ---- scoring (test/lab/products.spec.ts and bench/discoveryProducts.ts) --------------------------

/** A service a tool named: ours "<definition> <name>", nmap's "<service name> <product>". */
export interface NamedService {
  ip: string; port: number; name: string;
  /** Named from the port number alone (the agent's port rules, nmap's method=table): shown, never counted. */
  guess?: boolean;
}
export interface ProductRow { truth: ProductTruth; found: string | null; ok: boolean }
export interface ProductScore {
  hostsFound: number;
  hostsMissed: string[];
  phantoms: string[];
  /** Identifiable services whose name matched the truth's regex. */
  identified: number;
  identifiable: number;
  /** Every service of the truth with what the tool said on its address and port. */
  rows: ProductRow[];
}

/** Scores what a tool found against PRODUCT_TRUTH (the agent's own address is neither found nor a phantom). */
export function scoreProducts(foundHosts: string[], services: NamedService[]): ProductScore {
  const truthHosts = PRODUCT_HOSTS.map((h) => h.ip);
  const hosts = foundHosts.filter((ip) => ip !== PRODUCTS_AGENT_IP);
  const rows = PRODUCT_TRUTH.map((truth) => {
    const named = services.filter((s) => s.ip === truth.ip && s.port === truth.port);
    const found = named.length ? named.map((s) => (s.guess ? `guess: ${s.name}` : s.name)).join(' | ') : null;
    return { truth, found, ok: named.some((s) => !s.guess && truth.expect.test(s.name)) };
  });
  return {
    hostsFound: hosts.filter((ip) => truthHosts.includes(ip)).length,
    hostsMissed: truthHosts.filter((ip) => !hosts.includes(ip)),
    phantoms: hosts.filter((ip) => !truthHosts.includes(ip)),
    identified: rows.filter((r) => r.ok && r.truth.identifiable).length,
    identifiable: rows.filter((r) => r.truth.identifiable).length,
    rows,
  };
}

/** Truth against what each tool found, one line per service (a markdown table). */
export function productTable(tools: Array<{ tool: string; score: ProductScore }>): string {
  const cell = (r: ProductRow) => `${r.ok ? 'OK' : r.truth.identifiable ? 'MISS' : '-'} ${(r.found ?? '(nothing)').replace(/\|/g, '/').slice(0, 60)}`;
  const lines = [`| host | ip:port | product | expect | ${tools.map((t) => t.tool).join(' | ')} |`, `|---|---|---|---|${tools.map(() => '---').join('|')}|`];
  PRODUCT_TRUTH.forEach((truth, i) => {
    lines.push(`| ${truth.host} | ${truth.ip}:${truth.port} | ${truth.product}${truth.identifiable ? '' : ' (not identifiable)'} | ${String(truth.expect)} | ${tools.map((t) => cell(t.score.rows[i]!)).join(' | ')} |`);
  });
  return lines.join('\n');
}
