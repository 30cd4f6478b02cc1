/**
 * The discovery lab (issue 24): network namespaces in 198.18.0.0/15 (RFC 2544's benchmarking
 * range) with two L2 segments joined by a router, about eight hosts running real services, and the
 * agent's namespace, whose only routes lead to the lab and to a /30 towards the test's API in the
 * root namespace. Root only. Everything is named with a per-run prefix and torn down in destroy()
 * and at process exit; namespaces left by a run that died are swept at the next start.
 *
 *   root ns ── <p>srv 198.19.255.x/30 ── agent ns (ag-srv)             the API, through forward()
 *   switch ns: bridge br-a (segment A 198.18.10.0/24), bridge br-b (segment B 198.18.20.0/24)
 *   A: router .1, agent .2, web .11 (HTTP :80), redis .12, printer .13 (:9100), quiet-a .16 (drops all IP)
 *   B: router .1, ssh .14 (:2222), pg .15, quiet-b .16 (no listener: RST), mid .100 (no listener of its own: RST)
 *   198.18.20.224/27 is routed by the router to mid, where nftables sends TCP 443 and 5060 of every
 *   address of that range to listeners on mid's loopback that accept and close (a transparent
 *   proxy / SIP helper): 31 addresses that all answer alike, and nothing else (a middlebox).
 *
 * NETWORK SAFETY: nothing here is sent anywhere but inside these namespaces. assertAgentIsolated()
 * must pass before any probe: the agent's namespace has no default route and only lab routes.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inNetwork, parseIPv4Cidr } from '../../agent/net/ip.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The project's Node 22 (devDependency `node`), which the agent and the lab's probes run on. */
export const NODE = fs.existsSync(path.join(ROOT, 'node_modules/.bin/node')) ? path.join(ROOT, 'node_modules/.bin/node') : process.execPath;

export const LAB_SPACE = '198.18.0.0/15';
export const SEGMENT_A = '198.18.10.0/24';
export const SEGMENT_B = '198.18.20.0/24';
export const MIDDLEBOX_RANGE = '198.18.20.224/27';
/** The ports every address of the middlebox range answers (443 is one of the agent's liveness ports). */
export const MIDDLEBOX_PORTS = [443, 5060];
export const AGENT_IP = '198.18.10.2';
export const ROUTER_IPS = ['198.18.10.1', '198.18.20.1'];
export const RAW_PORTS = '9100-9107';
export const WEB_TITLE = 'Netinv Lab Intranet';
const PREFIX_RE = /^nl[0-9a-f]{4}-/;
// One folder per run (its owner's pid, the services' files), at a fixed place: a run with another
// TMPDIR must still see that a lab is live before sweeping it. /run is emptied at boot, as namespaces are.
export const STATE_DIR = '/run/netinv-lab';

export type ServiceKind = 'http' | 'redis' | 'postgresql' | 'ssh' | 'raw9100';

/** A service the lab runs: what a correct fingerprint says about it. */
export interface LabService { kind: ServiceKind; ip: string; port: number }

export interface LabHost {
  name: string;
  /** Its namespace (prefixed). */
  ns: string;
  ip: string;
  segment: 'A' | 'B';
  /** Its MAC: the agent can learn it only on segment A (on-link); on B it sees the router's. */
  mac: string;
  services: LabService[];
  /** How a host without an open port is alive: by the neighbour table only (drops all IP), or by RST. */
  quiet?: 'neighbour' | 'rst';
}

/** The hosts of the lab (no prefix yet). The router is a host too (it answers RST on both legs). */
const HOSTS: Array<Omit<LabHost, 'ns' | 'services'> & { services: Array<Omit<LabService, 'ip'>> }> = [
  { name: 'web', ip: '198.18.10.11', segment: 'A', mac: '00:1b:21:0a:00:11', services: [{ kind: 'http', port: 80 }] },
  { name: 'redis', ip: '198.18.10.12', segment: 'A', mac: '00:1b:21:0a:00:12', services: [{ kind: 'redis', port: 6379 }] },
  { name: 'printer', ip: '198.18.10.13', segment: 'A', mac: '00:1b:21:0a:00:13', services: [{ kind: 'raw9100', port: 9100 }] },
  { name: 'quiet-a', ip: '198.18.10.16', segment: 'A', mac: '00:1b:21:0a:00:16', services: [], quiet: 'neighbour' },
  { name: 'ssh', ip: '198.18.20.14', segment: 'B', mac: '00:1b:21:14:00:14', services: [{ kind: 'ssh', port: 2222 }] },
  { name: 'pg', ip: '198.18.20.15', segment: 'B', mac: '00:1b:21:14:00:15', services: [{ kind: 'postgresql', port: 5432 }] },
  { name: 'quiet-b', ip: '198.18.20.16', segment: 'B', mac: '00:1b:21:14:00:16', services: [], quiet: 'rst' },
  { name: 'mid', ip: '198.18.20.100', segment: 'B', mac: '00:1b:21:14:01:00', services: [], quiet: 'rst' },
];

export interface Lab {
  prefix: string;
  dir: string;
  agentNs: string;
  routerNs: string;
  switchNs: string;
  hosts: LabHost[];
  /** The root namespace's end of the /30 to the agent (where forward() listens). */
  serverIp: string;
  /** The agent's end of that /30 (where a server_poll agent listens). */
  agentServerIp: string;
  /** The /30 itself. */
  serverLink: string;
  /** Throws unless the agent's namespace has no default route and only routes into the lab and the /30. */
  assertAgentIsolated(): void;
  /** Packets to TCP 9100–9107 counted in the agent's output, the router's forwarding and both bridges. */
  rawPortPackets(): number;
  /** The same, per place counted. */
  rawPortPacketsAt(): { agent: number; router: number; bridges: number };
  /** Packets and bytes the agent's namespace sent to and received from the lab (nft counters). */
  agentTraffic(): { packetsOut: number; packetsIn: number; bytesOut: number; bytesIn: number };
  /** The MACs in the agent namespace's neighbour table, by address. */
  agentNeighbours(): Record<string, string>;
  /** Runs a program inside a lab namespace and waits for it (throws on failure). */
  exec(ns: string, cmd: string, args: string[], opts?: { timeoutMs?: number }): string;
  /** A new lab namespace (prefixed, torn down with the lab); its name. */
  addNamespace(name: string): string;
  /** Plugs a namespace into a segment's bridge as eth0 (address, MAC), the rest of the lab through the router. */
  attachToSegment(ns: string, segment: 'A' | 'B', address: string, mac: string): void;
  /** Starts a long-running program inside a lab namespace (ended at destroy()). */
  spawnIn(ns: string, cmd: string, args: string[], opts?: SpawnOptions): ChildProcess;
  /** Stops a lab host's services (e.g. 'redis') and resolves when they no longer answer. */
  stopServices(host: string): Promise<void>;
  /** Starts them again (web, redis, printer, mid, ssh, pg) and resolves when they answer. */
  startServices(host: string): Promise<void>;
  /** Listens on serverIp and passes each connection to 127.0.0.1:port (the test API). */
  forward(port: number): Promise<{ url: string; close(): Promise<void> }>;
  /** Tries each address:port from inside the agent namespace (connect, optional payload, first bytes). */
  probeFromAgent(targets: ProbeTarget[], opts?: { waitMs?: number }): Promise<ProbeResult[]>;
  destroy(): Promise<void>;
}

export interface ProbeTarget { ip: string; port: number; send?: string; expect?: 'open' | 'refused' | 'silent' }
export interface ProbeResult { ip: string; port: number; outcome: 'open' | 'refused' | 'silent' | 'unreachable'; banner: string }

/** Why the lab cannot be built here (null: it can). */
export function labUnavailable(): string | null {
  if (process.platform !== 'linux') return 'the discovery lab needs Linux network namespaces';
  if (process.getuid?.() !== 0) return 'the discovery lab needs root (network namespaces, veth, nftables): run the tests as root';
  return null;
}

// ---- commands ----------------------------------------------------------------------------------

/**
 * Listens on `listenIp` (the server's end of a lab's /30) and passes each connection to
 * 127.0.0.1:port (the test API): what the agent in its namespace reaches the server by.
 */
export async function forwardToLoopback(listenIp: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((inbound) => {
    const outbound = net.connect({ host: '127.0.0.1', port });
    sockets.add(inbound).add(outbound);
    const drop = () => { inbound.destroy(); outbound.destroy(); sockets.delete(inbound); sockets.delete(outbound); };
    inbound.on('error', drop).on('close', drop);
    outbound.on('error', drop).on('close', drop);
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => proxy.once('error', reject).listen(0, listenIp, resolve));
  const { port: listening } = proxy.address() as net.AddressInfo;
  return {
    url: `http://${listenIp}:${listening}`,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      proxy.close(() => resolve());
    }),
  };
}

export function sh(cmd: string, args: string[], opts: { input?: string; timeoutMs?: number; allowFail?: boolean } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input: opts.input, timeout: opts.timeoutMs ?? 30_000, stdio: ['pipe', 'pipe', 'pipe'] });
  if (!opts.allowFail && (r.error || r.status !== 0)) {
    throw new Error(`${cmd} ${args.join(' ')} failed: ${r.error?.message ?? `${r.stderr}${r.stdout}`.trim()}`);
  }
  return String(r.stdout ?? '');
}
const ip = (...args: string[]) => sh('ip', args);
const inNs = (ns: string, cmd: string, args: string[], input?: string) => sh('ip', ['netns', 'exec', ns, cmd, ...args], { input });
const nft = (ns: string, ruleset: string) => inNs(ns, 'nft', ['-f', '-'], ruleset);

/** Whether `cidr` (or an address) lies inside `outer`. */
export function cidrInside(cidr: string, outer: string): boolean {
  const [addr = '', lenText] = cidr.split('/');
  const len = lenText === undefined ? 32 : Number(lenText);
  const within = parseIPv4Cidr(outer);
  return within !== undefined && len >= within[1] && inNetwork(addr, ...within);
}

// ---- stale labs ----------------------------------------------------------------------------------

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};
const ownerOf = (prefix: string): number | null => {
  const text = fs.existsSync(path.join(STATE_DIR, prefix, 'owner')) ? fs.readFileSync(path.join(STATE_DIR, prefix, 'owner'), 'utf8') : '';
  return Number(text) || null;
};
const labNamespaces = () => sh('ip', ['netns', 'list']).split('\n').map((l) => l.split(' ')[0]!).filter((n) => PREFIX_RE.test(n));

/** Kills every process in the namespaces and deletes them (a veth goes with its namespace). */
export function removeNamespaces(names: string[]): void {
  for (const ns of names) {
    const pids = sh('ip', ['netns', 'pids', ns], { allowFail: true }).split('\n').map(Number).filter((p) => p > 1);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch { /* already gone */ }
    }
  }
  for (const ns of names) sh('ip', ['netns', 'del', ns], { allowFail: true });
}

/** Removes labs whose owning process is gone (a run killed before its teardown). */
export function sweepStaleLabs(): string[] {
  const prefixes = new Set(labNamespaces().map((n) => n.slice(0, 7)));
  if (fs.existsSync(STATE_DIR)) for (const p of fs.readdirSync(STATE_DIR)) if (PREFIX_RE.test(`${p}-`)) prefixes.add(`${p}-`);
  const stale = [...prefixes].filter((p) => {
    const owner = ownerOf(p.slice(0, 6));
    return owner === null || !alive(owner);
  });
  for (const p of stale) {
    removeNamespaces(labNamespaces().filter((n) => n.startsWith(p)));
    sh('ip', ['link', 'del', `${p.slice(0, 6)}srv`], { allowFail: true });
    fs.rmSync(path.join(STATE_DIR, p.slice(0, 6)), { recursive: true, force: true });
  }
  return stale;
}

// ---- building ------------------------------------------------------------------------------------

/**
 * A free /30 in 198.19.255.0/24 for the root-namespace link (parallel labs each take their own).
 * Claimed with a file created exclusively (`link-<n>`, naming the lab): two labs built at the same
 * moment (mocha --parallel starts both lab files first) never take the same one. A claim whose lab
 * directory is gone (torn down, or swept as stale) is free again.
 */
export function claimServerLink(labId: string): { link: string; serverIp: string; agentIp: string; claim: string } {
  const used = new Set<string>();
  for (const entry of JSON.parse(ip('-4', '-j', 'addr')) as Array<{ addr_info: Array<{ local: string }> }>) {
    for (const a of entry.addr_info) used.add(a.local);
  }
  const start = randomBytes(1)[0]! % 64;
  for (let n = 0; n < 64; n += 1) {
    const base = ((start + n) % 64) * 4;
    const serverIp = `198.19.255.${base + 1}`;
    if (used.has(serverIp)) continue;
    const claim = path.join(STATE_DIR, `link-${base}`);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        fs.writeFileSync(claim, labId, { flag: 'wx' });
        return { link: `198.19.255.${base}/30`, serverIp, agentIp: `198.19.255.${base + 2}`, claim };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const holder = fs.readFileSync(claim, 'utf8');
        if (fs.existsSync(path.join(STATE_DIR, holder))) break; // a live lab's
        fs.rmSync(claim, { force: true }); // a gone lab's: take it
      }
    }
  }
  throw new Error('no free /30 in 198.19.255.0/24 for the lab: too many labs running?');
}

/** Each lab namespace: loopback up, IPv6 off (no router solicitations or DAD in the counters). */
export function addNamespace(ns: string): void {
  ip('netns', 'add', ns);
  ip('-n', ns, 'link', 'set', 'lo', 'up');
  inNs(ns, 'sysctl', ['-qw', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1']);
}

/** A veth from `ns` (named ifname, with address) to `port` of `bridge` in the switch namespace. */
export function attach(switchNs: string, ns: string, ifname: string, port: string, bridge: string, cidr: string, mac?: string): void {
  ip('link', 'add', ifname, 'netns', ns, ...(mac ? ['address', mac] : []), 'type', 'veth', 'peer', 'name', port, 'netns', switchNs);
  ip('-n', switchNs, 'link', 'set', port, 'master', bridge, 'up');
  ip('-n', ns, 'addr', 'add', cidr, 'dev', ifname);
  ip('-n', ns, 'link', 'set', ifname, 'up');
}

/** Counts packets to the raw-print ports wherever lab traffic passes (must stay 0). */
const rawCounter = (family: 'bridge' | 'inet') => `table ${family} lab {
  counter raw9100 {}
  chain through { type filter hook forward priority 0;
    tcp dport ${RAW_PORTS} counter name raw9100
  }
}`;

/**
 * The agent namespace's own guard, beside its routes: anything it sends outside the lab and the
 * /30 is counted and dropped (there is no route for it anyway); traffic into the lab is counted.
 */
const agentRuleset = (serverLink: string) => `table inet lab {
  counter raw9100 {}
  counter lab_out {}
  counter lab_in {}
  counter outside {}
  chain out { type filter hook output priority 0; policy accept;
    oif "lo" accept
    tcp dport ${RAW_PORTS} counter name raw9100
    ip daddr ${LAB_SPACE} counter name lab_out accept
    ip daddr ${serverLink} accept
    counter name outside drop
  }
  chain in { type filter hook input priority 0; policy accept;
    ip saddr ${LAB_SPACE} counter name lab_in
  }
}`;

/** quiet-a answers ARP (not filtered by inet tables) and nothing else. */
const DROP_ALL_IP = `table inet lab {
  chain in { type filter hook input priority 0; policy drop;
    iif "lo" accept
  }
}`;
/**
 * mid: every address of the middlebox range answers TCP 443 and 5060, through listeners on mid's
 * loopback (route_localnet lets a packet from eth0 be sent there), so mid's own address answers
 * neither: it is a plain host, the range is the middlebox.
 */
const MIDDLEBOX_NAT = `table ip lab {
  chain pre { type nat hook prerouting priority -100;
    ip daddr ${MIDDLEBOX_RANGE} tcp dport { ${MIDDLEBOX_PORTS.join(', ')} } dnat to 127.0.0.1
  }
}`;

export function counterPackets(ns: string, name: string): { packets: number; bytes: number } {
  const out = JSON.parse(inNs(ns, 'nft', ['-j', 'list', 'counters'])) as { nftables: Array<{ counter?: { name: string; packets: number; bytes: number } }> };
  const counters = out.nftables.flatMap((e) => (e.counter && e.counter.name === name ? [e.counter] : []));
  return { packets: counters.reduce((n, c) => n + c.packets, 0), bytes: counters.reduce((n, c) => n + c.bytes, 0) };
}

export const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** The postgres account (initdb and postgres refuse to run as root). */
function postgresUser(): { uid: number; gid: number } {
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no "postgres" user (it comes with the Debian postgresql package)');
  const f = line.split(':');
  return { uid: Number(f[2]), gid: Number(f[3]) };
}
function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (!versions.length) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql (Debian: apt-get install postgresql-15)');
  return path.join(base, versions[0]!, 'bin');
}

// A connect from inside the agent namespace, for the lab's own checks (a probe to lab addresses only).
const PROBE_SCRIPT = `
const net = require('node:net');
const { targets, waitMs } = JSON.parse(process.argv[1]);
const once = (t) => new Promise((resolve) => {
  const s = net.connect({ host: t.ip, port: t.port });
  let banner = '', outcome = 'silent', ended = false;
  const done = () => { if (ended) return; ended = true; s.destroy(); resolve({ ip: t.ip, port: t.port, outcome, banner }); };
  s.on('close', done); // a server that closes at once (the middlebox) sends nothing
  s.setTimeout(1500, done);
  s.on('error', (e) => { outcome = e.code === 'ECONNREFUSED' ? 'refused' : e.code === 'ETIMEDOUT' ? 'silent' : 'unreachable'; done(); });
  s.on('connect', () => { outcome = 'open'; s.setTimeout(800, done); if (t.send) s.write(Buffer.from(t.send, 'binary')); });
  // Until the server closes (HTTP/1.0) or is quiet for 300 ms (a greeting, +PONG): a reply may come in several writes.
  s.on('data', (d) => { banner += d.toString('latin1'); s.setTimeout(300, done); if (banner.length > 4096) done(); });
});
(async () => {
  const deadline = Date.now() + waitMs;
  const results = await Promise.all(targets.map(async (t) => {
    for (;;) {
      const r = await once(t);
      if (!t.expect || r.outcome === t.expect || Date.now() > deadline) return r;
      await new Promise((w) => setTimeout(w, 200));
    }
  }));
  console.log(JSON.stringify(results));
})();
`;

/** Builds the lab and starts its services; resolves when every service answers from the agent namespace. */
export async function createLab(): Promise<Lab> {
  const why = labUnavailable();
  if (why) throw new Error(why);
  sweepStaleLabs();
  const id = randomBytes(2).toString('hex');
  const prefix = `nl${id}-`;
  const dir = path.join(STATE_DIR, `nl${id}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'owner'), String(process.pid));
  const children: ChildProcess[] = [];
  const nsOf = (name: string) => `${prefix}${name}`;
  const switchNs = nsOf('sw');
  const routerNs = nsOf('router');
  const agentNs = nsOf('agent');
  const rootLink = `nl${id}srv`;
  const hosts: LabHost[] = HOSTS.map((h) => ({ ...h, ns: nsOf(h.name), services: h.services.map((s) => ({ ...s, ip: h.ip })) }));
  const allNs = [switchNs, routerNs, agentNs, ...hosts.map((h) => h.ns)];
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
  // A run that ends without destroy() (an exception, Ctrl-C) leaves nothing behind.
  const onExit = () => teardownSync();
  const onSignal = (signal: NodeJS.Signals) => {
    teardownSync();
    process.kill(process.pid, signal);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const spawnIn = (ns: string, cmd: string, args: string[], opts: SpawnOptions = {}): ChildProcess => {
    const log = fs.openSync(path.join(dir, `${ns.slice(prefix.length)}-${path.basename(cmd)}.log`), 'a');
    const child = spawn('ip', ['netns', 'exec', ns, cmd, ...args], { stdio: ['ignore', log, log], ...opts });
    fs.closeSync(log);
    child.on('error', () => undefined); // reported by the readiness check
    children.push(child);
    return child;
  };

  try {
    for (const ns of allNs) addNamespace(ns);
    // The switch: one bridge per segment (802.1Q is not available in this kernel: separate bridges).
    for (const br of ['br-a', 'br-b']) {
      ip('-n', switchNs, 'link', 'add', br, 'type', 'bridge');
      ip('-n', switchNs, 'link', 'set', br, 'up');
    }
    nft(switchNs, rawCounter('bridge'));
    // The router: a leg on each segment, the middlebox range behind mid.
    attach(switchNs, routerNs, 'r-a', 'p-router-a', 'br-a', '198.18.10.1/24');
    attach(switchNs, routerNs, 'r-b', 'p-router-b', 'br-b', '198.18.20.1/24');
    inNs(routerNs, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    ip('-n', routerNs, 'route', 'add', MIDDLEBOX_RANGE, 'via', '198.18.20.100');
    nft(routerNs, rawCounter('inet'));
    // Hosts: their only route beyond their segment is the lab itself, through the router.
    for (const h of hosts) {
      const gw = h.segment === 'A' ? '198.18.10.1' : '198.18.20.1';
      attach(switchNs, h.ns, 'eth0', `p-${h.name}`, h.segment === 'A' ? 'br-a' : 'br-b', `${h.ip}/24`, h.mac);
      ip('-n', h.ns, 'route', 'add', LAB_SPACE, 'via', gw);
    }
    // The agent: on segment A only (B is routed), and a /30 to the root namespace for the API.
    attach(switchNs, agentNs, 'ag0', 'p-agent', 'br-a', `${AGENT_IP}/24`);
    ip('-n', agentNs, 'route', 'add', LAB_SPACE, 'via', '198.18.10.1');
    const server = claimServerLink(`nl${id}`);
    linkClaim = server.claim;
    ip('link', 'add', rootLink, 'type', 'veth', 'peer', 'name', 'ag-srv', 'netns', agentNs);
    ip('addr', 'add', `${server.serverIp}/30`, 'dev', rootLink);
    ip('link', 'set', rootLink, 'up');
    ip('-n', agentNs, 'addr', 'add', `${server.agentIp}/30`, 'dev', 'ag-srv');
    ip('-n', agentNs, 'link', 'set', 'ag-srv', 'up');
    nft(agentNs, agentRuleset(server.link));

    // Services, each bound to its lab address only; the files they need are made once.
    const host = (name: string) => hosts.find((h) => h.name === name)!;
    const www = path.join(dir, 'www');
    fs.mkdirSync(www);
    fs.writeFileSync(path.join(www, 'index.html'), `<!doctype html><html><head><title>${WEB_TITLE}</title></head><body>lab</body></html>\n`);
    nft(host('quiet-a').ns, DROP_ALL_IP);
    inNs(host('mid').ns, 'sysctl', ['-qw', 'net.ipv4.conf.all.route_localnet=1', 'net.ipv4.conf.eth0.route_localnet=1']);
    nft(host('mid').ns, MIDDLEBOX_NAT);
    fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // sshd's privilege-separation directory
    sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'ssh_host_ed25519_key')]);
    // PostgreSQL: a cluster of its own in the lab folder.
    const pgData = path.join(dir, 'pg');
    const pgUser = postgresUser();
    fs.mkdirSync(pgData, { mode: 0o700 });
    fs.chownSync(pgData, pgUser.uid, pgUser.gid);
    fs.chmodSync(dir, 0o755);
    const init = spawnSync(path.join(pgBin(), 'initdb'), ['-D', pgData, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'],
      { uid: pgUser.uid, gid: pgUser.gid, cwd: '/', encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
    const acceptAndClose = (bindIp: string, port: number) => ['-c',
      `import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('${bindIp}', ${port})); s.listen(64)\n`
      + 'while True:\n  c,_=s.accept(); c.close()\n'];
    const starters: Record<string, () => void> = {
      web: () => spawnIn(host('web').ns, PYTHON, ['-m', 'http.server', '80', '--bind', host('web').ip, '--directory', www]),
      redis: () => spawnIn(host('redis').ns, 'redis-server', ['--bind', host('redis').ip, '--port', '6379', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no']),
      printer: () => spawnIn(host('printer').ns, PYTHON, acceptAndClose(host('printer').ip, 9100)),
      mid: () => MIDDLEBOX_PORTS.forEach((port) => spawnIn(host('mid').ns, PYTHON, acceptAndClose('127.0.0.1', port))),
      ssh: () => spawnIn(host('ssh').ns, '/usr/sbin/sshd', ['-D', '-e', '-f', '/dev/null', '-o', `ListenAddress=${host('ssh').ip}:2222`,
        '-o', `HostKey=${path.join(dir, 'ssh_host_ed25519_key')}`, '-o', `PidFile=${path.join(dir, 'sshd.pid')}`]),
      pg: () => spawnIn(host('pg').ns, 'runuser', ['-u', 'postgres', '--', path.join(pgBin(), 'postgres'), '-D', pgData,
        '-c', `listen_addresses=${host('pg').ip}`, '-c', `unix_socket_directories=${pgData}`, '-c', 'port=5432',
        '-c', 'fsync=off', '-c', 'shared_buffers=16MB', '-c', 'max_connections=20', '-c', 'logging_collector=off']),
    };
    for (const start of Object.values(starters)) start();

    const lab: Lab = {
      prefix,
      dir,
      agentNs,
      routerNs,
      switchNs,
      hosts,
      serverIp: server.serverIp,
      agentServerIp: server.agentIp,
      serverLink: server.link,
      assertAgentIsolated: () => assertIsolated(agentNs, server.link),
      rawPortPacketsAt: () => ({
        agent: counterPackets(agentNs, 'raw9100').packets,
        router: counterPackets(routerNs, 'raw9100').packets,
        bridges: counterPackets(switchNs, 'raw9100').packets,
      }),
      rawPortPackets: () => Object.values(lab.rawPortPacketsAt()).reduce((a, b) => a + b, 0),
      agentTraffic: () => {
        const out = counterPackets(agentNs, 'lab_out');
        const inn = counterPackets(agentNs, 'lab_in');
        return { packetsOut: out.packets, packetsIn: inn.packets, bytesOut: out.bytes, bytesIn: inn.bytes };
      },
      agentNeighbours: () => {
        const rows = JSON.parse(ip('-n', agentNs, '-j', 'neigh', 'show', 'dev', 'ag0')) as Array<{ dst: string; lladdr?: string }>;
        return Object.fromEntries(rows.filter((r) => r.lladdr).map((r) => [r.dst, r.lladdr!.toUpperCase()]));
      },
      exec: (ns, cmd, args, opts = {}) => sh('ip', ['netns', 'exec', ns, cmd, ...args], { timeoutMs: opts.timeoutMs }),
      spawnIn,
      addNamespace(name) {
        const ns = nsOf(name);
        addNamespace(ns);
        allNs.push(ns);
        return ns;
      },
      attachToSegment(ns, segment, address, mac) {
        attach(switchNs, ns, 'eth0', `p-${ns.slice(prefix.length)}`, segment === 'A' ? 'br-a' : 'br-b', `${address}/24`, mac);
        ip('-n', ns, 'route', 'add', LAB_SPACE, 'via', segment === 'A' ? '198.18.10.1' : '198.18.20.1');
      },
      async stopServices(name) {
        const h = host(name);
        const pids = sh('ip', ['netns', 'pids', h.ns], { allowFail: true }).split('\n').map(Number).filter((p) => p > 1);
        for (const pid of pids) process.kill(pid, 'SIGTERM');
        const targets = h.services.map((s) => ({ ip: s.ip, port: s.port, expect: 'refused' as const }));
        const results = await lab.probeFromAgent(targets, { waitMs: 10_000 });
        const up = results.filter((r) => r.outcome !== 'refused');
        if (up.length) throw new Error(`${name}'s services still answer: ${JSON.stringify(up)}`);
      },
      async startServices(name) {
        const start = starters[name];
        if (!start) throw new Error(`the lab host ${name} runs no service`);
        start();
        const targets = readinessTargets([host(name)]);
        const results = await lab.probeFromAgent(targets, { waitMs: 20_000 });
        const down = results.filter((r, i) => r.outcome !== targets[i]!.expect);
        if (down.length) throw new Error(`${name}'s services do not answer: ${JSON.stringify(down)}`);
      },
      forward: (port) => forwardToLoopback(server.serverIp, port),
      async probeFromAgent(targets, opts = {}) {
        lab.assertAgentIsolated();
        for (const t of targets) {
          if (!cidrInside(t.ip, LAB_SPACE)) throw new Error(`refusing to probe ${t.ip}: not in the lab (${LAB_SPACE})`);
        }
        const out = await runIn(agentNs, NODE, ['-e', PROBE_SCRIPT, JSON.stringify({ targets, waitMs: opts.waitMs ?? 0 })]);
        try {
          return JSON.parse(out) as ProbeResult[];
        } catch {
          throw new Error(`the lab probe printed no result: ${out}`);
        }
      },
      async destroy() {
        process.off('exit', onExit);
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        teardownSync();
      },
    };

    // Ready when every service answers from the agent's side (and the quiet hosts stay quiet).
    const ready = await lab.probeFromAgent(readinessTargets(hosts), { waitMs: 20_000 });
    const notReady = ready.filter((r, i) => r.outcome !== readinessTargets(hosts)[i]!.expect);
    if (notReady.length) throw new Error(`lab services not ready: ${JSON.stringify(notReady)} (logs in ${dir})`);
    return lab;
  } catch (err) {
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    teardownSync();
    throw err;
  }
}

/** Every service open; the RST hosts refusing (the neighbour-only host is checked apart: it is silent); mid's range answering. */
function readinessTargets(hosts: LabHost[]): ProbeTarget[] {
  return hosts.flatMap((h): ProbeTarget[] => {
    if (h.name === 'mid') return [{ ip: h.ip, port: 443, expect: 'refused' }, ...MIDDLEBOX_PORTS.map((port) => ({ ip: '198.18.20.230', port, expect: 'open' as const }))];
    if (h.quiet === 'rst') return [{ ip: h.ip, port: 80, expect: 'refused' }];
    // 9100 is never probed from the agent's side (its counters must stay 0): the printer is checked by its RST on 80.
    return h.services.map((s) => (s.kind === 'raw9100' ? { ip: s.ip, port: 80, expect: 'refused' } : { ip: s.ip, port: s.port, expect: 'open' }));
  });
}

function runIn(ns: string, cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', ns, cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 && !err ? resolve(out) : reject(new Error(`${cmd} in ${ns} exited ${code}: ${err}`))));
  });
}

/**
 * The safety check before any probe: in the agent's namespace no default route (IPv4 or IPv6), no
 * IPv6 route at all, and every IPv4 route's destination inside the lab or the /30 to the server.
 */
export function assertIsolated(agentNs: string, serverLink: string): void {
  const routes = (family: '-4' | '-6') => JSON.parse(sh('ip', [family, '-j', '-n', agentNs, 'route', 'show', 'table', 'all'])) as Array<{ dst: string; type?: string; table?: string }>;
  const problems: string[] = [];
  for (const r of routes('-4')) {
    if (r.table === 'local') continue; // the namespace's own addresses and broadcasts
    if (r.dst === 'default') problems.push('a default route');
    else if (!cidrInside(r.dst, LAB_SPACE) && !cidrInside(r.dst, serverLink)) problems.push(`a route to ${r.dst}`);
  }
  for (const r of routes('-6')) problems.push(`an IPv6 route to ${r.dst}`);
  if (problems.length) {
    throw new Error(`NETWORK SAFETY: the agent namespace ${agentNs} has ${problems.join(', ')}; only ${LAB_SPACE} and ${serverLink} may be routed. No probe sent.`);
  }
}

// ---- issue 25: SNMP, LLDP, names (addL2) --------------------------------------------------------

/** What addL2 adds to a lab, and the truth its test checks the server against. */
export const L2 = {
  /** Not `public`: Scanopy 0.14 would never read this device. */
  community: 'lab-l2-c0mmunity',
  v3: { user: 'labv3', authKey: 'lab-auth-pass', privKey: 'lab-priv-pass' },
  /** The simulated switch (net-snmp's agent, test/lab/snmpSwitch.ts): v2c only. */
  switch: { name: 'lab-sw1', ip: '198.18.10.50', mac: '00:1b:21:0a:00:50' },
  /** A Linux host with snmpd (v3 only) and lldpd feeding its LLDP-MIB through AgentX. */
  snmpd: { name: 'lab-snmpd', ip: '198.18.10.60', mac: '00:1b:21:0a:00:60' },
  /** A phone-like host: a locally administered (random) MAC and an mDNS responder. */
  phone: { ip: '198.18.10.80', mac: 'a2:1b:21:0a:00:80', mdnsName: 'phone.local' },
  /** Known only from the switch's ARP table (no namespace answers there). */
  arpOnly: { ip: '198.18.10.70', mac: '00:1b:21:0a:00:70' },
  /** The PTR resolver (on the router's segment-A leg) and its records (web only: the switch is named by its sysName). */
  dns: { ip: '198.18.10.1', ptr: { '198.18.10.11': 'web.lab.example' } as Record<string, string> },
};

/** MACs behind the simulated switch's uplink that no lab host has. */
export const L2_STRANGERS = Array.from({ length: 150 }, (_, i) => `00:50:56:01:00:${i.toString(16).padStart(2, '0')}`);

export interface L2Lab {
  /** The agent's flags for SNMP (both credentials), PTR and mDNS. */
  agentArgs: string[];
  /** The simulated switch's description as running now. */
  switchSpec(): SwitchSpecLike;
  /** Restarts the simulated switch with changes (e.g. { stopAfter: 12 }: silent after the agent's 12th request); resolves when it answers. */
  restartSwitch(extra: Partial<SwitchSpecLike>): Promise<void>;
}

/** test/lab/snmpSwitch.ts's SwitchSpec (imported as a type only: the lab runs it as a program). */
export type SwitchSpecLike = import('./snmpSwitch.js').SwitchSpec;

const reverseOf = (address: string) => `${address.split('.').reverse().join('.')}.in-addr.arpa`;

/** A PTR-only DNS server (multicast-dns's codec over plain UDP 53): argv[1] = {ip, names: {reverse name: name}}. */
const DNS_SCRIPT = `
const { ip, names } = JSON.parse(process.argv[1]);
const server = require('multicast-dns')({ multicast: false, port: 53, bind: ip });
server.on('query', (q, rinfo) => {
  const question = q.questions[0];
  const name = question && question.type === 'PTR' ? names[question.name.toLowerCase()] : undefined;
  server.respond({ id: q.id, flags: 0x8000, questions: q.questions, answers: name ? [{ name: question.name, type: 'PTR', ttl: 60, data: name }] : [] }, rinfo);
});
server.on('ready', () => console.log('dns ready on ' + ip + ':53'));
`;

/** An mDNS responder for one name (its own reverse name → name), answering each query to its sender (RFC 6762 §6.7). */
const MDNS_SCRIPT = `
const { reverse, name } = JSON.parse(process.argv[1]);
const mdns = require('multicast-dns')({ multicast: false, port: 5353, bind: '0.0.0.0' });
mdns.on('query', (q, rinfo) => {
  const asked = q.questions.find((x) => x.name.toLowerCase() === reverse && (x.type === 'PTR' || x.type === 'ANY'));
  if (asked) mdns.respond({ id: rinfo.port === 5353 ? 0 : q.id, questions: rinfo.port === 5353 ? [] : q.questions, answers: [{ name: reverse, type: 'PTR', ttl: 120, data: name }] }, rinfo);
});
mdns.on('ready', () => console.log('mdns ready: ' + name));
`;

/**
 * Issue 25's part of the lab, on segment A: the simulated switch (its forwarding table learned the
 * lab hosts' real MACs, its LLDP table names web and the snmpd host), a host with snmpd (SNMPv3 only,
 * its user from createUser, keys and engine id persisted in the lab folder) whose LLDP-MIB lldpd fills
 * through AgentX, lldpd on web and redis too (LLDP frames pass br-a: group_fwd_mask), a phone with a
 * random MAC and an mDNS responder, and a PTR resolver on the router. Needs SNMP_PACKAGES.
 */
export async function addL2(lab: Lab): Promise<L2Lab> {
  const host = (name: string) => lab.hosts.find((h) => h.name === name)!;
  const dir = lab.dir;
  // LLDP's group address (01:80:C2:00:00:0E) is not forwarded by a Linux bridge unless asked.
  lab.exec(lab.switchNs, 'ip', ['link', 'set', 'br-a', 'type', 'bridge', 'group_fwd_mask', String(0x4000)]);

  const simNs = lab.addNamespace('sim');
  lab.attachToSegment(simNs, 'A', L2.switch.ip, L2.switch.mac);
  const snmpdNs = lab.addNamespace('snmpd');
  lab.attachToSegment(snmpdNs, 'A', L2.snmpd.ip, L2.snmpd.mac);
  const phoneNs = lab.addNamespace('phone');
  lab.attachToSegment(phoneNs, 'A', L2.phone.ip, L2.phone.mac);

  // lldpd, each with its own system name (a UTS namespace of its own), control socket and pid file.
  const lldpd = (ns: string, name: string, extra: string[] = []) => lab.spawnIn(ns, 'unshare', ['--uts', 'sh', '-c',
    `hostname ${name} && exec lldpd -d -I eth0 -u ${path.join(dir, `lldpd-${name}.sock`)} -p ${path.join(dir, `lldpd-${name}.pid`)} ${extra.join(' ')}`]);

  // snmpd: v3 only (no community), sysName set, AgentX master for lldpd's LLDP-MIB.
  const agentx = path.join(dir, 'agentx.sock');
  const persist = path.join(dir, 'snmp-var');
  fs.mkdirSync(persist, { recursive: true, mode: 0o700 });
  const conf = path.join(dir, 'snmpd.conf');
  fs.writeFileSync(conf, [
    `agentAddress udp:${L2.snmpd.ip}:161`, 'master agentx', `agentXSocket ${agentx}`, `sysName ${L2.snmpd.name}`,
    'sysLocation lab segment A', 'sysContact lab@example.invalid',
    // In the -c file: with -C snmpd reads no persistent file at start; it still writes the user's keys (usmUser) and engine id there.
    `createUser ${L2.v3.user} SHA "${L2.v3.authKey}" AES "${L2.v3.privKey}"`, `rouser ${L2.v3.user} priv`, '',
  ].join('\n'));
  lab.spawnIn(snmpdNs, '/usr/sbin/snmpd', ['-f', '-Lo', '-C', '-c', conf, '-p', path.join(dir, 'snmpd.pid'), '-I', '-smux'], { env: { ...process.env, SNMP_PERSISTENT_DIR: persist } });
  await until('snmpd answers SNMPv3', () => snmpOk(lab, snmpdNs, ['-v3', '-l', 'authPriv', '-u', L2.v3.user, '-a', 'SHA', '-A', L2.v3.authKey, '-x', 'AES', '-X', L2.v3.privKey, L2.snmpd.ip, '1.3.6.1.2.1.1.5.0']));
  lldpd(snmpdNs, L2.snmpd.name, ['-x', '-X', agentx]);
  lldpd(host('web').ns, 'web');
  lldpd(host('redis').ns, 'redis');

  // The simulated switch: port 1 web (LLDP names it as lldpd there announces itself: port id = its MAC), 2 the snmpd host (LLDP), 3 redis and the printer,
  // 4 an uplink to an unmanaged switch (quiet-a, the phone, the ARP-only address). A MAC is learned on one port.
  const mac = (m: string) => m.toUpperCase();
  let spec: SwitchSpecLike = {
    address: L2.switch.ip, port: 161, communities: [L2.community], sysName: L2.switch.name, sysDescr: 'Lab simulated switch (net-snmp agent)',
    chassisMac: L2.switch.mac,
    ports: [
      { ifIndex: 1, name: 'ge-0/0/1', mac: '00:1b:21:0a:01:01', fdb: [mac(host('web').mac)], lldp: { chassisMac: host('web').mac, portId: host('web').mac, portDesc: 'eth0', sysName: 'web', mgmtAddr: host('web').ip } },
      { ifIndex: 2, name: 'ge-0/0/2', mac: '00:1b:21:0a:01:02', fdb: [mac(L2.snmpd.mac)], lldp: { chassisMac: L2.snmpd.mac, portId: L2.snmpd.mac, portDesc: 'eth0', sysName: L2.snmpd.name, mgmtAddr: L2.snmpd.ip } },
      { ifIndex: 3, name: 'ge-0/0/3', mac: '00:1b:21:0a:01:03', fdb: [mac(host('redis').mac), mac(host('printer').mac)] },
      // The uplink also learned 150 MACs of no lab host: its forwarding table takes several GETBULKs (a walk can be cut inside it).
      { ifIndex: 4, name: 'ge-0/0/4', alias: 'uplink', mac: '00:1b:21:0a:01:04', fdb: [host('quiet-a').mac, L2.phone.mac, L2.arpOnly.mac, ...L2_STRANGERS].map(mac) },
    ],
    arp: [{ ifIndex: 4, ip: L2.arpOnly.ip, mac: L2.arpOnly.mac }, { ifIndex: 4, ip: '198.19.99.9', mac: '00:1b:21:0a:99:09' }],
    fdbMib: 'qbridge',
    countOnlyFrom: AGENT_IP, // the readiness GETs (from the snmpd host) never count towards stopAfter
  };
  let sim: ChildProcess | null = null;
  const startSwitch = async () => {
    sim = lab.spawnIn(simNs, NODE, ['--import', 'tsx', path.join(ROOT, 'test/lab/snmpSwitch.ts'), JSON.stringify(spec)], { cwd: ROOT });
    await until('the simulated switch answers', () => snmpOk(lab, snmpdNs, ['-v2c', '-c', L2.community, L2.switch.ip, '1.3.6.1.2.1.1.5.0']));
  };
  await startSwitch();

  lab.spawnIn(lab.routerNs, NODE, ['-e', DNS_SCRIPT, JSON.stringify({ ip: L2.dns.ip, names: Object.fromEntries(Object.entries(L2.dns.ptr).map(([a, n]) => [reverseOf(a), n])) })], { cwd: ROOT });
  lab.spawnIn(phoneNs, NODE, ['-e', MDNS_SCRIPT, JSON.stringify({ reverse: reverseOf(L2.phone.ip), name: L2.phone.mdnsName })], { cwd: ROOT });
  // Asked from the snmpd host, of that resolver only (never the machine's).
  const ptrCheck = `const r = new (require('node:dns').promises.Resolver)({ timeout: 500, tries: 1 }); r.setServers(['${L2.dns.ip}']);`
    + `r.resolvePtr('${reverseOf('198.18.10.11')}').then((n) => console.log(n[0]), () => console.log(''));`;
  await until('the PTR resolver answers', () => lab.exec(snmpdNs, NODE, ['-e', ptrCheck]).trim() === L2.dns.ptr['198.18.10.11']);

  return {
    agentArgs: ['--snmp-community', L2.community, '--snmp-v3', `${L2.v3.user}:sha:${L2.v3.authKey}:aes:${L2.v3.privKey}`, '--dns', L2.dns.ip, '--mdns'],
    switchSpec: () => spec,
    async restartSwitch(extra) {
      const old = sim as ChildProcess | null;
      if (old && old.exitCode === null) {
        const gone = new Promise((r) => old.once('close', r));
        old.kill('SIGKILL');
        await gone;
      }
      spec = { ...spec, ...extra };
      await startSwitch();
    },
  };
}

/** snmpget from a lab host (never from the agent's namespace or the machine's): true when it answers. */
function snmpOk(lab: Lab, fromNs: string, args: string[]): boolean {
  try {
    lab.exec(fromNs, 'snmpget', ['-t', '1', '-r', '0', '-On', ...args], { timeoutMs: 5000 });
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, check: () => boolean, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`lab: ${what}: not within ${limitMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** A program started in the agent's namespace, after the safety check (the only way the tests and benches start one). */
export function spawnInAgentNs(lab: Lab, cmd: string, args: string[], env?: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  lab.assertAgentIsolated();
  const child = spawn('ip', ['netns', 'exec', lab.agentNs, cmd, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: env && { ...process.env, ...env } });
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

/** Runs a program in the agent's namespace (spawnInAgentNs, `env` added to ours); killed past `timeoutMs` (the benches' tools). */
export async function runInAgentNs(lab: Lab, cmd: string, args: string[], timeoutMs: number, env?: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const run = spawnInAgentNs(lab, cmd, args, env);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
  const { code } = await run.exited.finally(() => clearTimeout(timer));
  return { code, output: run.output() };
}
