/**
 * A small lab of a spec's own: one L2 segment (a bridge in a switch namespace) on a /24 of 198.18/15,
 * the agent's namespace on it with a /30 towards the test server (its only other route), and a few
 * hosts, each a namespace running a Node script that listens on the host's address. Built with
 * test/lab/lab.ts's helpers, with a name prefix of its own (`<tag><hex4>-`) so that several specs'
 * labs coexist; a lab whose owner process is gone is swept at the next start.
 *
 * NETWORK SAFETY: the agent's namespace has no default route, only the lab /24 and the /30 to the
 * server (assertIsolated() before the agent starts and before every spawn there); its nftables
 * output chain drops anything else. Readiness probes go from the agent's namespace to lab addresses
 * only (checked against LAB_SPACE first).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { addNamespace, assertIsolated, attach, cidrInside, claimServerLink, forwardToLoopback, LAB_SPACE, NODE, removeNamespaces, ROOT, sh, STATE_DIR } from './lab.js';

export interface MiniHost {
  name: string;
  ip: string;
  mac: string;
  /** A Node script (run with `node -e`) and its one argument; it listens on the host's address. */
  script: string;
  arg: unknown;
  /** The TCP ports that accept once the script is up (readiness). */
  ports: number[];
}

export interface MiniLabSpec {
  /** Two lower-case letters: the namespaces' prefix is `<tag><hex4>-`. */
  tag: string;
  /** The lab's /24 inside 198.18.0.0/15, of this spec alone. */
  subnet: string;
  agentIp: string;
  hosts: MiniHost[];
}

export interface MiniLab {
  dir: string;
  agentNs: string;
  serverIp: string;
  agentServerIp: string;
  assertAgentIsolated(): void;
  /** A program in the agent's namespace, after the safety check. */
  spawnInAgentNs(cmd: string, args: string[], env?: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> };
  /** Listens on serverIp and passes each connection to 127.0.0.1:port (the test API). */
  forward(port: number): Promise<{ url: string; close(): Promise<void> }>;
  /** Stops a host's script (its services stop; the host stays on the segment). */
  stopServices(name: string): void;
  /** Starts a host's script again and waits for its ports. */
  startServices(name: string): void;
  /** Takes a host off the segment (its interface down: it answers nothing, not even ARP), or puts it back. */
  setLink(name: string, up: boolean): void;
  destroy(): void;
}

/** Connects to each ip:port from the agent's namespace until all accept. */
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
  for (const t of targets) {
    for (;;) {
      if (await once(t)) break;
      if (Date.now() > deadline) { down.push(t); break; }
      await new Promise((w) => setTimeout(w, 200));
    }
  }
  console.log(JSON.stringify(down));
})();
`;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Removes labs of this tag whose owner process is gone. */
function sweepStale(tag: string): void {
  const prefixRe = new RegExp(`^${tag}[0-9a-f]{4}-`);
  const names = sh('ip', ['netns', 'list']).split('\n').map((l) => l.split(' ')[0]!).filter((n) => prefixRe.test(n));
  const prefixes = new Set(names.map((n) => n.slice(0, tag.length + 4)));
  if (fs.existsSync(STATE_DIR)) for (const p of fs.readdirSync(STATE_DIR)) if (prefixRe.test(`${p}-`)) prefixes.add(p);
  for (const p of prefixes) {
    const ownerFile = path.join(STATE_DIR, p, 'owner');
    const owner = Number(fs.existsSync(ownerFile) ? fs.readFileSync(ownerFile, 'utf8') : '') || null;
    if (owner !== null && alive(owner)) continue;
    removeNamespaces(names.filter((n) => n.startsWith(`${p}-`)));
    sh('ip', ['link', 'del', `${p}srv`], { allowFail: true });
    fs.rmSync(path.join(STATE_DIR, p), { recursive: true, force: true });
  }
}

/** Builds the lab; returns when every host's ports accept connections from the agent's namespace. */
export function createMiniLab(spec: MiniLabSpec): MiniLab {
  if (!/^[a-z]{2}$/.test(spec.tag)) throw new Error(`mini lab tag '${spec.tag}': two lower-case letters`);
  for (const ip of [spec.agentIp, ...spec.hosts.map((h) => h.ip)]) {
    if (!cidrInside(ip, spec.subnet) || !cidrInside(ip, LAB_SPACE)) throw new Error(`refusing a lab address outside ${spec.subnet} or ${LAB_SPACE}: ${ip}`);
  }
  sweepStale(spec.tag);
  const labId = `${spec.tag}${randomBytes(2).toString('hex')}`;
  const prefix = `${labId}-`;
  const dir = path.join(STATE_DIR, labId);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'owner'), String(process.pid));
  const switchNs = `${prefix}sw`;
  const agentNs = `${prefix}agent`;
  const nsOf = (name: string) => `${prefix}${name}`;
  const rootLink = `${labId}srv`;
  const allNs = [switchNs, agentNs, ...spec.hosts.map((h) => nsOf(h.name))];
  const children: ChildProcess[] = [];
  const scripts = new Map<string, ChildProcess>();
  let destroyed = false;
  let linkClaim: string | undefined;
  let serverLink = '';
  const teardown = () => {
    if (destroyed) return;
    destroyed = true;
    for (const c of [...children, ...scripts.values()]) c.kill('SIGKILL');
    removeNamespaces(allNs);
    sh('ip', ['link', 'del', rootLink], { allowFail: true });
    fs.rmSync(dir, { recursive: true, force: true });
    if (linkClaim) fs.rmSync(linkClaim, { force: true });
  };
  process.once('exit', teardown);
  const hostOf = (name: string) => {
    const h = spec.hosts.find((x) => x.name === name);
    if (!h) throw new Error(`no lab host ${name}`);
    return h;
  };
  const waitReady = (hosts: MiniHost[]) => {
    const targets = hosts.flatMap((h) => h.ports.map((port) => ({ ip: h.ip, port })));
    if (!targets.length) return;
    assertIsolated(agentNs, serverLink);
    const ready = spawnSync('ip', ['netns', 'exec', agentNs, NODE, '-e', READY_SCRIPT, JSON.stringify({ targets, waitMs: 15_000 })], { encoding: 'utf8', timeout: 30_000 });
    const down = JSON.parse(ready.stdout || '[]') as unknown[];
    if (ready.status !== 0 || down.length) throw new Error(`mini lab ${labId}: not ready: ${JSON.stringify(down)} ${ready.stderr} (logs in ${dir})`);
  };
  const start = (h: MiniHost) => {
    const log = fs.openSync(path.join(dir, `${h.name}.log`), 'a');
    const child = spawn('ip', ['netns', 'exec', nsOf(h.name), NODE, '-e', h.script, JSON.stringify(h.arg)], { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    child.on('error', () => undefined);
    scripts.set(h.name, child);
  };
  try {
    for (const ns of allNs) addNamespace(ns);
    sh('ip', ['-n', switchNs, 'link', 'add', 'br-m', 'type', 'bridge']);
    sh('ip', ['-n', switchNs, 'link', 'set', 'br-m', 'up']);
    const prefixLength = spec.subnet.split('/')[1];
    for (const h of spec.hosts) attach(switchNs, nsOf(h.name), 'eth0', `p-${h.name}`.slice(0, 15), 'br-m', `${h.ip}/${prefixLength}`, h.mac);
    attach(switchNs, agentNs, 'ag0', 'p-agent', 'br-m', `${spec.agentIp}/${prefixLength}`, '3c:7c:3f:00:00:02');
    const server = claimServerLink(labId);
    linkClaim = server.claim;
    serverLink = server.link;
    sh('ip', ['link', 'add', rootLink, 'type', 'veth', 'peer', 'name', 'ag-srv', 'netns', agentNs]);
    sh('ip', ['addr', 'add', `${server.serverIp}/30`, 'dev', rootLink]);
    sh('ip', ['link', 'set', rootLink, 'up']);
    sh('ip', ['-n', agentNs, 'addr', 'add', `${server.agentIp}/30`, 'dev', 'ag-srv']);
    sh('ip', ['-n', agentNs, 'link', 'set', 'ag-srv', 'up']);
    // The agent's own guard beside its routes: anything but the lab /24 and the /30 is counted and dropped.
    sh('ip', ['netns', 'exec', agentNs, 'nft', '-f', '-'], { input: `table inet lab {
  counter outside {}
  chain out { type filter hook output priority 0; policy accept;
    oif "lo" accept
    ip daddr ${spec.subnet} accept
    ip daddr ${server.link} accept
    counter name outside drop
  }
}` });
    assertIsolated(agentNs, server.link);
    for (const h of spec.hosts) start(h);
    waitReady(spec.hosts);

    const lab: MiniLab = {
      dir, agentNs, serverIp: server.serverIp, agentServerIp: server.agentIp,
      assertAgentIsolated: () => assertIsolated(agentNs, server.link),
      spawnInAgentNs(cmd, args, env) {
        assertIsolated(agentNs, server.link);
        const child = spawn('ip', ['netns', 'exec', agentNs, cmd, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
        children.push(child);
        let output = '';
        child.stdout!.on('data', (d) => { output += d; });
        child.stderr!.on('data', (d) => { output += d; });
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
        return { child, output: () => output, exited };
      },
      forward: (port) => forwardToLoopback(server.serverIp, port),
      stopServices(name) {
        const child = scripts.get(hostOf(name).name);
        child?.kill('SIGKILL');
        scripts.delete(name);
      },
      startServices(name) {
        const h = hostOf(name);
        if (!scripts.has(name)) start(h);
        waitReady([h]);
      },
      setLink(name, up) {
        sh('ip', ['-n', nsOf(hostOf(name).name), 'link', 'set', 'eth0', up ? 'up' : 'down']);
      },
      destroy() {
        process.off('exit', teardown);
        teardown();
      },
    };
    return lab;
  } catch (err) {
    process.off('exit', teardown);
    teardown();
    throw err;
  }
}
