// The discovery agent's protocol side (issue 24 parts 1, 2, 3, 7) against the real server over HTTP,
// with a FAKE scanner injected: no probe leaves these tests. The agent's daemon_poll messages and its
// server_poll answers are compared by shape with the recorded Scanopy daemons (v0.14.10's files,
// whose bodies a 0.14.13 daemon made); its findings are checked in the server's inventory.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { parseConfig, UsageError, type AgentConfig } from '../../agent/config.js';
import { runAgent, type AgentDeps } from '../../agent/main.js';
import type { Log, SessionResult } from '../../agent/runner.js';
import type { FoundHost, ScanNetwork, ScanOptions, ScanReport } from '../../agent/scan/types.js';
import type { LocalHost } from '../../agent/selfReport.js';
import { emptyState, loadState, saveState } from '../../agent/state.js';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { readRecording } from '../support/fixtures.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from '../daemons/world.js';
import { NODE, ROOT, waitFor, workerServicesFor } from '../workers/support.js';
import { buildAgentArtifacts } from '../../scripts/build.js';

const TARGET = '198.18.10.0/24';
/** What a server_poll agent without a key needs to take one (test/agent/pairing.spec.ts). */
const PAIRING_CODE = 'TEST-PAIR-CODE';
const silent: Log = { info() {}, warn() {}, error() {} };
const LOCAL: LocalHost = {
  hostname: 'agent-01', machineId: '5f1b0c8e2a7d4e6f9a3b1c2d4e5f6a7b',
  interfaces: [{ name: 'br0 (bridge of eth0)', ip: '172.25.0.4', cidr: '172.25.0.0/28', mac: '8A:07:B6:08:A1:34', subnetType: 'Lan' }],
};

/** What the fake scanner "finds" in a target: a web server with SSH (on-link, MAC) and a host with no open port. */
function foundHosts(target: ScanOptions['targets'][number]): FoundHost[] {
  const net = target.cidr.split('.').slice(0, 3).join('.'); // .11 and .12 of the target's /24
  return [
    {
      ip: `${net}.11`, mac: 'AA:BB:CC:00:00:11', hostname: 'web-01', target,
      evidence: [{ kind: 'neighbour', mac: 'AA:BB:CC:00:00:11' }, { kind: 'tcp_open', port: 80 }],
      openPorts: [{ port: 22, protocol: 'Tcp' }, { port: 80, protocol: 'Tcp' }],
      services: [
        {
          rule: 'http-title', name: 'HTTP', definition: 'HTTP', port: 80, protocol: 'Tcp', confidence: 'High', reason: 'rule http-title: probe "GET / HTTP/1.1" on 80/tcp answered "Server: nginx"',
          facts: { title: 'Lab web', server: 'nginx' },
        },
        { rule: 'ssh-banner', name: 'SSH', definition: 'SSH', port: 22, protocol: 'Tcp', confidence: 'High', reason: 'rule ssh-banner: NULL probe on 22/tcp answered "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3"' },
      ],
    },
    { ip: `${net}.12`, mac: null, hostname: null, target, evidence: [{ kind: 'tcp_refused', port: 22 }], openPorts: [], services: [] },
  ];
}

const report = (hosts: FoundHost[], cancelled = false): ScanReport => {
  const aliveByEvidence: Record<string, number> = {};
  for (const h of hosts) aliveByEvidence[h.evidence[0]!.kind] = (aliveByEvidence[h.evidence[0]!.kind] ?? 0) + 1;
  return { addressesTried: 254, aliveByEvidence, hosts, warnings: [], probesSent: 10, cancelled };
};

/** A scanner that finds foundHosts() in every target at once, and records what it was asked. */
function fakeScan(): ScanNetwork & { calls: ScanOptions[] } {
  const calls: ScanOptions[] = [];
  const scan = (async (options: ScanOptions) => {
    calls.push(options);
    const hosts = options.targets.flatMap(foundHosts);
    options.onProgress?.(50);
    for (const h of hosts) await options.onHost?.(h);
    return report(hosts);
  }) as ScanNetwork & { calls: ScanOptions[] };
  scan.calls = calls;
  return scan;
}

/** A scanner that reports progress and then runs until its signal aborts it. */
const endlessScan: ScanNetwork = (options) => new Promise((resolve) => {
  options.onProgress?.(10);
  const end = () => resolve(report([], true));
  if (options.signal?.aborted) end();
  else options.signal?.addEventListener('abort', end, { once: true });
});

interface Sent { method: string; path: string; body: any }

/** fetch that records what the agent sends. */
function recordingFetch(sent: Sent[]): typeof fetch {
  return (async (input: any, init?: RequestInit) => {
    const url = new URL(String(input));
    sent.push({ method: init?.method ?? 'GET', path: url.pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    return fetch(input, init);
  }) as typeof fetch;
}

/**
 * Differences in shape: the same keys, and values of the same JSON type, recursively. A null on
 * either side matches anything (nullable fields), and an empty array matches any array.
 */
export function shapeDiff(actual: unknown, expected: unknown, path = '$'): string[] {
  if (actual === null || expected === null) return [];
  if (Array.isArray(expected) || Array.isArray(actual)) {
    if (!Array.isArray(expected) || !Array.isArray(actual)) return [`${path}: ${Array.isArray(actual) ? 'array' : typeof actual} vs ${Array.isArray(expected) ? 'array' : typeof expected}`];
    if (!expected.length || !actual.length) return [];
    return actual.flatMap((item, i) => shapeDiff(item, expected[0], `${path}[${i}]`));
  }
  if (typeof actual !== typeof expected) return [`${path}: ${typeof actual} vs ${typeof expected}`];
  if (typeof actual !== 'object') return [];
  const a = actual as Record<string, unknown>;
  const e = expected as Record<string, unknown>;
  const out: string[] = [];
  for (const k of Object.keys(e)) if (!(k in a)) out.push(`${path}.${k}: missing`);
  for (const k of Object.keys(a)) if (!(k in e)) out.push(`${path}.${k}: not sent by Scanopy`);
  for (const k of Object.keys(a)) if (k in e) out.push(...shapeDiff(a[k], e[k], `${path}.${k}`));
  return out;
}

describe('agent: the protocol side', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let dir: string;
  let stop: AbortController;
  const running: Promise<number>[] = [];
  const workers: Worker[] = [];
  let closeServices: (() => Promise<void>) | undefined;

  const config = (extra: Partial<AgentConfig> = {}): AgentConfig => ({
    ...parseConfig(['--server', app.url, '--key', 'placeholder', '--network', t.defaultNetworkId, '--state', join(dir, 'state.json'), '--interval', '0.1']),
    ...extra,
  });
  /** The sessions users see for the agent's daemon (newest first; the pending default ones left out). */
  const daemonSessions = async () => {
    const { daemonId } = loadState(join(dir, 'state.json'));
    const all = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}/sessions`, { auth: t.owner }));
    return all.filter((x: any) => x.phase !== 'Pending');
  };
  const deps = (extra: Partial<AgentDeps> = {}): AgentDeps => ({ log: silent, stop: stop.signal, readLocal: () => LOCAL, backoffScale: 0, ...extra });
  /** The agent's daemon id, once the server knows it (registered). */
  const registered = (statePath = join(dir, 'state.json')) => waitFor('the agent registered', async () => {
    const { daemonId } = loadState(statePath);
    return daemonId && (await sql(app, `select id from daemons where id = ?`, [daemonId])).length > 0 && daemonId;
  });
  /** An operator approves a (new) subnet for a daemon, as on the Daemons page: the first approval queues its Network session. */
  const approveTarget = async (daemonId: string, cidr = TARGET): Promise<string> => {
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: t.defaultNetworkId, cidr, name: `approved ${cidr}` } }), 201);
    expect((await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/targets`, { auth: t.owner, body: { subnet_id: subnet.id } })).status).to.be.oneOf([200, 201]);
    return subnet.id;
  };

  beforeEach(async () => {
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url, 'agent');
    dir = mkdtempSync(join(tmpdir(), 'agent-test-'));
    stop = new AbortController();
  });
  afterEach(async () => {
    stop.abort();
    await Promise.all(running.splice(0));
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await closeServices?.();
    closeServices = undefined;
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('configuration', () => {
    it('flags and AGENT_* variables; a bad CIDR, a missing key or an unknown flag is a usage error', () => {
      const c = parseConfig(['--server', 'http://s', '--key', 'k', '--targets', '198.18.10.0/24, 198.18.20.5', '--once', '--pps', '50'], {});
      expect(c).to.include({ server: 'http://s', key: 'k', once: true, pps: 50, mode: 'daemon_poll' });
      expect(c.targets).to.deep.equal(['198.18.10.0/24', '198.18.20.5/32']);
      const env = parseConfig([], { AGENT_SERVER: 'http://e', AGENT_KEY: 'scp_d_x', AGENT_MODE: 'server_poll', AGENT_LISTEN: '127.0.0.1:0', AGENT_TARGETS: '10.0.0.0/16' });
      expect(env).to.include({ server: 'http://e', key: 'scp_d_x', mode: 'server_poll' });
      expect(env.listen).to.deep.equal({ host: '127.0.0.1', port: 0 });
      expect(parseConfig(['--server', 'http://s'], { AGENT_SERVER: 'http://e', AGENT_KEY: 'k' }).server).to.equal('http://s'); // flags win
      const bad = (argv: string[], message: RegExp) => expect(() => parseConfig(argv, {})).to.throw(UsageError, message);
      bad(['--server', 'http://s', '--key', 'k', '--targets', '198.18.10.0/33'], /bad target '198.18.10.0\/33': expected an IPv4 CIDR/);
      bad(['--server', 'http://s', '--key', 'k', '--targets', '198.18.10.7/24'], /did you mean 198.18.10.0\/24/);
      bad(['--server', 'http://s', '--key', 'k', '--targets', '300.1.1.0/24'], /bad target/);
      bad(['--server', 'http://s', '--key', 'k', '--targets', '10.0.0.0/8'], /more than a \/16/);
      bad(['--server', 'http://s'], /--key/);
      bad(['--server', 'http://s', '--key', 'k', '--frobnicate'], /unknown argument '--frobnicate'/);
      bad(['--server', 'http://s', '--key', 'k', '--once'], /--once needs --targets/);
      bad(['--server', 'http://s', '--key', 'k', '--mode', 'push'], /--mode/);
      bad(['--server', 'http://s', '--key', 'k', '--full-range-runs', '-1'], /--full-range-runs/);
      expect(parseConfig(['--server', 'http://s', '--key', 'k', '--full-range-runs', '0'], {}).fullRangeRuns).to.equal(0);
    });

    it('without --network the agent registers with a nil network_id, learns its key’s network from the answer and remembers it', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const once = { ...config({ key, targets: [TARGET], once: true }), network: null };
      expect(await runAgent(once, deps({ scanNetwork: fakeScan() }))).to.equal(0);
      expect(loadState(join(dir, 'state.json')).networkId).to.equal(t.defaultNetworkId);
      const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=100', { auth: t.owner }));
      expect(hosts.some((h: any) => h.ip_addresses.some((a: any) => a.ip_address === '198.18.10.11'))).to.equal(true);
      // Another network's id is still refused.
      const other = await registerDaemon(daemonClient(app.url, key), randomUUID()).then(() => 'accepted', (err) => String(err));
      expect(other).to.match(/403|daemon_network_mismatch/);
    });

    it('the CLI (a child process) exits 2 with a message for a bad CIDR, before any contact', () => {
      const child = spawnSync(NODE, ['--import', 'tsx', 'agent/main.ts', '--server', 'http://127.0.0.1:9', '--key', 'scp_d_x', '--once', '--targets', '198.18.10.0/33'], {
        cwd: ROOT, encoding: 'utf8', env: { ...process.env, AGENT_STATE: join(dir, 'cli.json') }, timeout: 20_000,
      });
      expect(child.status, child.stderr).to.equal(2);
      expect(child.stderr).to.include("bad target '198.18.10.0/33': expected an IPv4 CIDR");
      expect(child.stderr).to.include('Usage: netinventory-agent');
    });

    it('the downloadable single file (netinventory-agent.cjs) runs alone, copied away from the repository', async () => {
      await buildAgentArtifacts(); // already built by test/setup.ts: nothing to do unless the agent changed since
      const copy = join(dir, 'netinventory-agent.cjs');
      copyFileSync(join(ROOT, 'dist/downloads/netinventory-agent.cjs'), copy);
      const run = (args: string[]) => spawnSync(NODE, [copy, ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, AGENT_STATE: join(dir, 'b.json') }, timeout: 20_000 });
      const help = run(['--help']);
      expect(help.status, help.stderr).to.equal(0);
      expect(help.stdout).to.include('--targets <cidr,…>');
      const bad = run(['--server', 'http://127.0.0.1:9', '--key', 'scp_d_x', '--frobnicate']);
      expect(bad.status).to.equal(2);
      expect(bad.stderr).to.include("unknown argument '--frobnicate'");
    });
  });

  describe('daemon_poll', () => {
    it('registers, runs SelfReport then the Network work an approval queued, and sends what a 0.14.13 daemon sends, by shape', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const sent: Sent[] = [];
      const sessions: SessionResult[] = [];
      const scan = fakeScan();
      // No --targets: every session is the server's work (a new daemon given --targets first runs one of its own).
      running.push(runAgent(config({ key }), deps({ scanNetwork: scan, fetch: recordingFetch(sent), onSession: (s) => sessions.push(s) })));
      const subnetId = await approveTarget(await registered());
      await waitFor('two sessions', async () => sessions.length >= 2);
      expect(sessions.map((s) => [s.terminal.discovery_type.type, s.terminal.phase])).to.deep.equal([['SelfReport', 'Complete'], ['Network', 'Complete']]);

      const recorded = readRecording('v0.14.10', 'daemon_to_server.json').exchanges;
      const rec = (pattern: RegExp, pick: (body: any) => boolean = () => true) => recorded.find((e) => pattern.test(e.path) && pick(e.request_body))!.request_body;
      const mine = (pattern: RegExp, pick: (body: any) => boolean = () => true) => sent.filter((s) => pattern.test(s.path) && pick(s.body)).map((s) => s.body);
      const isType = (type: string) => (b: any) => b.discovery_type?.type === type;
      const first = (bodies: any[]) => { expect(bodies).to.not.be.empty; return bodies[0]; };

      // The order of a 0.14.13 daemon: startup (404) → register → request-work → the SelfReport's subnets, Started, capabilities, host, Complete.
      const order = sent.map((s) => s.path.replace(/[0-9a-f-]{36}/g, ':id')).filter((p, i, all) => all.indexOf(p) === i);
      expect(order.slice(0, 7)).to.deep.equal([
        '/api/daemons/:id/startup', '/api/daemons/register', '/api/daemons/:id/request-work', '/api/v1/subnets',
        '/api/v1/discovery/:id/update', '/api/daemons/:id/update-capabilities', '/api/v1/hosts/discovery',
      ]);
      expect(shapeDiff(first(mine(/startup$/)), rec(/startup$/))).to.deep.equal([]);
      expect(shapeDiff(first(mine(/register$/)), rec(/register$/))).to.deep.equal([]);
      expect(shapeDiff(first(mine(/request-work$/)), rec(/request-work$/))).to.deep.equal([]);
      expect(shapeDiff(first(mine(/\/api\/v1\/subnets$/, (b) => b?.source.metadata[0].type === 'SelfReport')), rec(/\/api\/v1\/subnets$/))).to.deep.equal([]);
      expect(shapeDiff(first(mine(/update-capabilities$/)), rec(/update-capabilities$/))).to.deep.equal([]);
      // Every progress update of either type has the shape of the recorded Started update of that type;
      // the one addition is ours and optional: a Network session's end carries the run's report (issue 25.3).
      for (const type of ['SelfReport', 'Network']) {
        const updates = mine(/\/update$/, isType(type));
        expect(updates.map((u) => u.phase).filter((p) => p !== 'Scanning')).to.deep.equal(['Started', 'Complete']);
        expect(updates.map((u) => 'report' in u)).to.deep.equal(updates.map((u) => type === 'Network' && u.phase === 'Complete'));
        for (const { report: _report, ...u } of updates) expect(shapeDiff(u, rec(/\/update$/, isType(type)))).to.deep.equal([]);
      }
      // The self-report host: the recorded host's shape; the agent listens on no port in daemon_poll,
      // so its service is bound to each interface (a binding of type Interface has no port_id).
      const self = first(mine(/hosts\/discovery$/, (b) => b.host.source.metadata[0].type === 'SelfReport'));
      const recordedHost = rec(/hosts\/discovery$/);
      const withoutBindings = (b: any) => ({ ...b, services: b.services.map((s: any) => ({ ...s, bindings: [] })) });
      expect(shapeDiff(withoutBindings(self), withoutBindings(recordedHost))).to.deep.equal([]);
      const { port_id: _portId, ...interfaceBinding } = recordedHost.services[0].bindings[0];
      expect(shapeDiff(self.services[0].bindings[0], { ...interfaceBinding, type: 'Interface' })).to.deep.equal([]);
      expect(self.host).to.include({ name: 'agent-01', hostname: 'agent-01' });
      expect(self.interfaces[0]).to.include({ ip_address: '172.25.0.4', mac_address: '8A:07:B6:08:A1:34', name: 'br0 (bridge of eth0)' });
      expect(self.services[0]).to.include({ service_definition: 'NetInventory Agent' });

      // A Network host: the recorded host's shape, with the metadata of a Network discovery (as the recorded Network update's type).
      const networkMeta = { ...rec(/\/update$/, isType('Network')).discovery_type, daemon_id: 'x', date: 'x' };
      const asRecorded = (b: any) => {
        const c = structuredClone(b);
        c.host.source.metadata = [networkMeta];
        for (const s of c.services) s.source.metadata = [networkMeta];
        return c;
      };
      const webHost = first(mine(/hosts\/discovery$/, (b) => b.interfaces[0]?.ip_address === '198.18.10.11'));
      expect(shapeDiff(webHost.host.source.metadata[0], networkMeta)).to.deep.equal([]);
      expect(shapeDiff(webHost.services[0].source.metadata[0], networkMeta)).to.deep.equal([]);
      // Our documented extensions (the server's schema says "Our agent" for each) are the only extra keys.
      const ours = /\.(mac_vendor|mac_random|hostname_source|name_source|device_type|device_model|os_name|os_version|os_confidence|if_entries|collections): not sent by Scanopy$/;
      expect(shapeDiff(webHost, asRecorded(recordedHost)).filter((d) => !ours.test(d))).to.deep.equal([]);
      // The Network work named the approved subnet: only it was scanned, never the agent's own subnet.
      expect(scan.calls.map((c) => c.targets)).to.deep.equal([[{ cidr: TARGET, subnetId, snmpPublic: true, probeRawSocketPorts: false }]]); // the approval's defaults
    });

    it('a session an operator cancels through the API ends Cancelled (request-work answers cancel: true)', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const sessions: SessionResult[] = [];
      const sent: Sent[] = [];
      running.push(runAgent(config({ key, targets: [TARGET] }), deps({ scanNetwork: endlessScan, fetch: recordingFetch(sent), onSession: (s) => sessions.push(s) })));
      const session = await waitFor('the Network session running', async () =>
        (await sql(app, `select id from discovery_sessions where discovery_type->>'type' = 'Network' and phase in ('Started', 'Scanning')`))[0]);
      // An operator cancels it through the API; the agent hears it from request-work's cancel flag.
      const daemonId = loadState(join(dir, 'state.json')).daemonId;
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/sessions/${session.id}/cancel`, { auth: t.owner }), 202);
      // The agent's own session of its --targets (a new daemon's first): the server created it from its first update.
      const ended = await waitFor('the session to end', async () => sessions.find((s) => s.terminal.session_id === session.id));
      expect([ended.terminal.discovery_type.type, ended.terminal.phase]).to.deep.equal(['Network', 'Cancelled']);
      const stored = (await sql(app, `select phase from discovery_sessions where id = ?`, [session.id]))[0]!;
      expect(stored.phase).to.equal('Cancelled');
      // Exactly one terminal update for the session.
      const terminals = sent.filter((s) => s.body?.session_id === session.id && ['Complete', 'Cancelled', 'Failed'].includes(s.body.phase));
      expect(terminals.map((s) => s.body.phase)).to.deep.equal(['Cancelled']);
    });

    it('stopping the agent (SIGTERM) cancels its running session: the server hears Cancelled', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const agentStop = new AbortController();
      const done = runAgent(config({ key, targets: [TARGET] }), deps({ scanNetwork: endlessScan, stop: agentStop.signal }));
      const session = await waitFor('the Network session running', async () =>
        (await sql(app, `select id from discovery_sessions where discovery_type->>'type' = 'Network' and phase in ('Started', 'Scanning')`))[0]);
      agentStop.abort();
      expect(await done).to.equal(0);
      expect((await sql(app, `select phase from discovery_sessions where id = ?`, [session.id]))[0]!.phase).to.equal('Cancelled');
    });

    it('Network work with no subnet approved (revoked while it waited) and no --targets scans nothing and ends Complete, with a warning', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      // The daemon exists already; its first approval queued a Network session, revoked before the agent took it.
      const daemonId = randomUUID();
      saveState(join(dir, 'state.json'), { ...emptyState(), daemonId, networkId: t.defaultNetworkId });
      await registerDaemon(daemonClient(app.url, key, daemonId), t.defaultNetworkId);
      const subnetId = await approveTarget(daemonId);
      expect((await call(app.url, 'DELETE', `/api/v1/daemons/${daemonId}/targets/${subnetId}`, { auth: t.owner })).status).to.be.oneOf([200, 204]);
      const sessions: SessionResult[] = [];
      const scan = fakeScan();
      running.push(runAgent(config({ key }), deps({ scanNetwork: scan, onSession: (s) => sessions.push(s) })));
      await waitFor('two sessions', async () => sessions.length >= 2);
      expect(sessions[1]!.terminal).to.include({ phase: 'Complete' });
      expect(sessions[1]!.warnings.join()).to.match(/nothing to scan/);
      expect(scan.calls).to.deep.equal([]);
      const network = (await daemonSessions()).find((x: any) => x.discovery_type.type === 'Network');
      expect(network).to.include({ phase: 'Complete' });
      expect(network.error).to.match(/^Warning: nothing to scan: no subnet approved for this agent on the server and no --targets/);
    });

    it('work handed out while the last session’s end is still on its way back is run after it, not dropped', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      // The answer to each terminal update comes late: the server has the end and hands out the next work meanwhile.
      const slowEnds = (async (input: any, init?: RequestInit) => {
        const res = await fetch(input, init);
        if (/\/update$/.test(new URL(String(input)).pathname) && /"phase":"(Complete|Cancelled|Failed)"/.test(String(init?.body))) await new Promise((r) => setTimeout(r, 500));
        return res;
      }) as typeof fetch;
      const sessions: SessionResult[] = [];
      running.push(runAgent(config({ key }), deps({ scanNetwork: fakeScan(), fetch: slowEnds, onSession: (s) => sessions.push(s) })));
      await approveTarget(await registered()); // queues a Network session after the SelfReport
      await waitFor('both sessions', async () => sessions.length >= 2);
      expect(sessions.map((s) => [s.terminal.discovery_type.type, s.terminal.phase])).to.deep.equal([['SelfReport', 'Complete'], ['Network', 'Complete']]);
    });

    it('a new daemon given --targets scans them once, right after registering; one without scans nothing until a subnet is approved for it', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const typesAndPhases = (results: SessionResult[]) => results.map((s) => [s.terminal.discovery_type.type, s.terminal.phase]);
      const requestWorks = (sent: Sent[]) => sent.filter((s) => s.path.endsWith('/request-work')).length;
      const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

      // --targets: its own Network session first (the server queued none), then the SelfReport the server queued.
      const sent: Sent[] = [];
      const sessions: SessionResult[] = [];
      const scan = fakeScan();
      const firstStop = new AbortController();
      const first = runAgent(config({ key, targets: [TARGET] }), deps({ scanNetwork: scan, fetch: recordingFetch(sent), stop: firstStop.signal, onSession: (s) => sessions.push(s) }));
      await waitFor('its scan and the SelfReport', async () => sessions.length >= 2);
      expect(typesAndPhases(sessions)).to.deep.equal([['Network', 'Complete'], ['SelfReport', 'Complete']]);
      expect(scan.calls.map((c) => c.targets.map((x) => x.cidr))).to.deep.equal([[TARGET]]);
      // Its first update (which creates the session on the server) comes before its first request-work.
      const paths = sent.map((s) => s.path.replace(uuid, ':id'));
      expect(paths.slice(0, 2)).to.deep.equal(['/api/daemons/:id/startup', '/api/daemons/register']);
      expect(paths.indexOf('/api/v1/discovery/:id/update')).to.be.lessThan(paths.indexOf('/api/daemons/:id/request-work'));
      // On the server: the session the agent made up, Complete, and what it found.
      const ownId = sessions[0]!.terminal.session_id;
      expect((await daemonSessions()).filter((x: any) => x.discovery_type.type === 'Network').map((x: any) => [x.id, x.phase])).to.deep.equal([[ownId, 'Complete']]);
      const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=100', { auth: t.owner }));
      expect(hosts.some((h: any) => h.ip_addresses.some((a: any) => a.ip_address === '198.18.10.11'))).to.equal(true);
      firstStop.abort();
      expect(await first).to.equal(0);
      // A restart is no new daemon: no scan of its own again, only the server's work (none).
      const again: Sent[] = [];
      running.push(runAgent(config({ key, targets: [TARGET] }), deps({ scanNetwork: scan, fetch: recordingFetch(again) })));
      await waitFor('three request-works after the restart', async () => requestWorks(again) >= 3);
      expect(again[0]!.path).to.match(/\/startup$/);
      expect(scan.calls).to.have.length(1);

      // Without --targets: the SelfReport, then nothing queued and nothing scanned, poll after poll.
      const statePath = join(dir, 'plain.json');
      const plainSent: Sent[] = [];
      const plain: SessionResult[] = [];
      const plainScan = fakeScan();
      running.push(runAgent({ ...config({ key }), statePath }, deps({ scanNetwork: plainScan, fetch: recordingFetch(plainSent), onSession: (s) => plain.push(s) })));
      await waitFor('the SelfReport', async () => plain.length >= 1);
      const polled = requestWorks(plainSent);
      await waitFor('three more request-works', async () => requestWorks(plainSent) >= polled + 3);
      const daemonId = loadState(statePath).daemonId!;
      const networkSessions = () => sql(app, `select id from discovery_sessions where daemon_id = ? and discovery_type->>'type' = 'Network'`, [daemonId]);
      expect(typesAndPhases(plain)).to.deep.equal([['SelfReport', 'Complete']]);
      expect(await networkSessions()).to.deep.equal([]);
      expect(plainScan.calls).to.deep.equal([]);
      // An operator approves a subnet: that queues its first scan, of that subnet.
      const subnetId = await approveTarget(daemonId, '198.18.20.0/24');
      await waitFor('the Network session', async () => plain.length >= 2);
      expect(typesAndPhases(plain)).to.deep.equal([['SelfReport', 'Complete'], ['Network', 'Complete']]);
      expect(plainScan.calls.map((c) => c.targets.map(({ cidr, subnetId: id }) => ({ cidr, subnetId: id })))).to.deep.equal([[{ cidr: '198.18.20.0/24', subnetId }]]);
      expect(await networkSessions()).to.have.length(1);
    });
  });

  describe('targets from the server, identity, restarts', () => {
    it('scans the subnets approved for it on the server (Network work subnet_ids), never its own suggested subnet', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      // The daemon exists already (registered earlier), with one subnet approved for it.
      const daemonId = randomUUID();
      saveState(join(dir, 'state.json'), { ...emptyState(), daemonId, networkId: t.defaultNetworkId });
      await registerDaemon(daemonClient(app.url, key, daemonId), t.defaultNetworkId);
      const routed = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: t.defaultNetworkId, cidr: '198.18.20.0/24', name: 'segment B' } }), 201);
      expect((await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/targets`, { auth: t.owner, body: { subnet_id: routed.id } })).status).to.be.oneOf([200, 201]);

      const sessions: SessionResult[] = [];
      const scan = fakeScan();
      running.push(runAgent(config({ key }), deps({ scanNetwork: scan, onSession: (x) => sessions.push(x) })));
      await waitFor('two sessions', async () => sessions.length >= 2);
      expect(sessions[1]!.terminal.discovery_type).to.deep.include({ type: 'Network', subnet_ids: [routed.id] });
      expect(scan.calls.map((c) => c.targets)).to.deep.equal([[{ cidr: '198.18.20.0/24', subnetId: routed.id, snmpPublic: true, probeRawSocketPorts: false }]]); // the approval's defaults
      const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=100', { auth: t.owner }));
      const web = hosts.find((h: any) => h.name === 'web-01');
      expect(web.ip_addresses[0]).to.include({ subnet_id: routed.id });
      // Its own subnet is listed as a suggestion for an operator, not scanned.
      const targets = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}/targets`, { auth: t.owner }));
      expect(targets.suggested.map((x: any) => x.cidr)).to.deep.equal(['172.25.0.0/28']);
    });

    it('a reinstalled agent (new state, new daemon id) on the same machine reports the same host, even with new addresses', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const selfReported = async (state: string, local: LocalHost) => {
        const sessions: SessionResult[] = [];
        const agentStop = new AbortController();
        const done = runAgent({ ...config({ key }), statePath: join(dir, state) }, deps({ scanNetwork: fakeScan(), readLocal: () => local, stop: agentStop.signal, onSession: (x) => sessions.push(x) }));
        await waitFor('the self-report', async () => sessions.length >= 1);
        agentStop.abort();
        await done;
        return loadState(join(dir, state)).daemonId;
      };
      const first = await selfReported('first.json', LOCAL);
      const moved: LocalHost = { ...LOCAL, interfaces: [{ ...LOCAL.interfaces[0]!, ip: '172.25.0.9', mac: '8A:07:B6:08:A1:99' }] };
      const second = await selfReported('second.json', moved);
      expect(second).to.not.equal(first);
      const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=100', { auth: t.owner }));
      const agentHosts = hosts.filter((h: any) => h.hostname === 'agent-01');
      expect(agentHosts).to.have.length(1);
      expect(agentHosts[0].ip_addresses.map((a: any) => a.ip_address).sort()).to.deep.equal(['172.25.0.4', '172.25.0.9']);
    });

    it('a killed agent starts clean: its startup ends the session it left running, and it takes the next work', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      let killed = false;
      const dying = (async (input: any, init?: RequestInit) => {
        if (killed) throw new Error('killed'); // nothing leaves a killed process
        return fetch(input, init);
      }) as typeof fetch;
      const firstStop = new AbortController();
      const first = runAgent(config({ key, targets: [TARGET] }), deps({ scanNetwork: endlessScan, fetch: dying, stop: firstStop.signal }));
      const left = await waitFor('the Network session running', async () =>
        (await sql(app, `select id from discovery_sessions where discovery_type->>'type' = 'Network' and phase in ('Started', 'Scanning')`))[0]);
      killed = true;
      firstStop.abort();
      await first;
      expect((await sql(app, `select phase from discovery_sessions where id = ?`, [left.id]))[0]!.phase).to.be.oneOf(['Started', 'Scanning']);

      // The same machine (state file) starts again.
      const sessions: SessionResult[] = [];
      running.push(runAgent(config({ key, targets: [TARGET] }), deps({ scanNetwork: fakeScan(), onSession: (x) => sessions.push(x) })));
      const ended = await waitFor('the old session ended', async () => {
        const [row] = await sql(app, `select phase, error from discovery_sessions where id = ?`, [left.id]);
        return row!.phase === 'Failed' && row;
      });
      expect(ended.error).to.match(/restarted/i);
      // Queued work flows again: a new Network session, run to the end.
      const next = randomUUID();
      await sql(app, `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, created_at, updated_at)
        select ?, organization_id, network_id, id, discovery_type, now(), now() from daemons d,
          (select discovery_type from discovery_sessions where id = ?) s where d.id = ?`, [next, left.id, loadState(join(dir, 'state.json')).daemonId]);
      const ran = await waitFor('the next session', async () => sessions.find((s) => s.terminal.session_id === next));
      expect(ran.terminal).to.include({ phase: 'Complete' });
    });

    it('--explain prints what the scanner explains (the scanner\'s explainAddress, with the budget)', async () => {
      const asked: Array<[string, unknown]> = [];
      let printed = '';
      const code = await runAgent(parseConfig(['--explain', '198.18.10.11', '--pps', '20', '--sockets', '4'], {}), deps({
        explainAddress: async (address, options) => { asked.push([address, options.budget]); return 'explain 198.18.10.11: …'; },
        out: (text) => { printed += text; },
      }));
      expect(code).to.equal(0);
      expect(asked).to.deep.equal([['198.18.10.11', { probesPerSecond: 20, maxOpenSockets: 4 }]]);
      expect(printed).to.equal('explain 198.18.10.11: …\n');
    });
  });

  describe('--once --targets', () => {
    it('reports each host with its services and reasons; exits 0; a second run changes nothing on the server', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const scan = fakeScan();
      const once = config({ key, targets: [TARGET], once: true });
      expect(await runAgent(once, deps({ scanNetwork: scan }))).to.equal(0);

      const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=100', { auth: t.owner }));
      const byIp = (ip: string) => hosts.find((h: any) => h.ip_addresses.some((a: any) => a.ip_address === ip));
      const web = byIp('198.18.10.11');
      expect(web).to.include({ name: 'web-01', hostname: 'web-01' });
      expect(web.description).to.equal('Found by the NetInventory agent (alive by neighbour AA:BB:CC:00:00:11, tcp_open 80)');
      expect(web.ip_addresses[0].mac_address).to.equal('AA:BB:CC:00:00:11');
      expect(web.ports.map((p: any) => p.number).sort()).to.deep.equal([22, 80]);
      const quiet = byIp('198.18.10.12');
      expect(quiet).to.include({ name: '198.18.10.12' });
      expect(quiet.description).to.equal('Found by the NetInventory agent (alive by tcp_refused 22)');
      const services = expectOk(await call(app.url, 'GET', '/api/v1/services?limit=100', { auth: t.owner }));
      const reasons = services.filter((s: any) => s.host_id === web.id).map((s: any) => [s.service_definition, s.source.details.confidence, s.source.details.reason.data]).sort();
      expect(reasons).to.deep.equal([
        ['HTTP', 'High', 'rule http-title: probe "GET / HTTP/1.1" on 80/tcp answered "Server: nginx" (title: Lab web; server: nginx)'],
        ['SSH', 'High', 'rule ssh-banner: NULL probe on 22/tcp answered "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3"'],
      ]);
      const subnet = (await sql(app, `select id, cidr::text as cidr from subnets where cidr = ?::cidr`, [TARGET]))[0]!;
      expect(web.ip_addresses[0].subnet_id).to.equal(subnet.id);
      // The run's report, as users see it with the daemon's sessions.
      const [run] = await daemonSessions();
      expect(run).to.include({ phase: 'Complete', error: null });
      expect(run.discovery_type).to.include({ type: 'Network' });
      expect(run.report).to.deep.equal({
        addresses_tried: 254, alive_by_evidence: { neighbour: 1, tcp_refused: 1 }, services_by_rule: { 'http-title': 1, 'ssh-banner': 1 },
        warnings: [], incomplete: [], probes_sent: 10,
      });

      // The second run sends every live host again: byte-identical reports, so no new state anywhere.
      const historyTables = (await sql<{ t: string }>(app, `select tablename as t from pg_tables where schemaname = 'public' and tablename like '%\\_history' order by 1`)).map((r) => r.t);
      const counts = async () => {
        // The outbox sequenced first: the API sequences its writes after they commit (migration 21),
        // so unsequenced rows may still be moving into events while this counts.
        await sql(app, 'select events_sequence(1000000)');
        const out: Record<string, number> = {};
        for (const table of [...historyTables, 'events', 'event_outbox']) out[table] = (await sql(app, `select count(*)::int as n from ${table}`))[0]!.n;
        return out;
      };
      const before = await counts();
      expect(await runAgent(once, deps({ scanNetwork: scan }))).to.equal(0);
      expect(scan.calls).to.have.length(2);
      expect(scan.calls[1]!.known).to.deep.equal({ '198.18.10.11': [22, 80] }); // probed again: a stopped service is noticed
      expect(scan.calls.map((c) => c.fullRangeSlice)).to.deep.equal([{ index: 0, of: 64 }, { index: 1, of: 64 }]); // ports 1–1023, then the next 1,024
      const after = await counts();
      // Only the two new sessions' own rows may differ (a session is no inventory).
      const inventory = (c: Record<string, number>) => Object.fromEntries(Object.entries(c).filter(([k]) => !k.startsWith('discovery')));
      expect(inventory(after)).to.deep.equal(inventory(before));
    });

    it('a target that had hosts and has none now is a warning', async () => {
      const key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
      const once = config({ key, targets: [TARGET], once: true });
      const results: SessionResult[] = [];
      const empty: ScanNetwork = async () => report([]);
      // A target never seen with hosts: nothing to compare with, no warning.
      expect(await runAgent(once, deps({ scanNetwork: empty, onSession: (s) => results.push(s) }))).to.equal(0);
      expect(await runAgent(once, deps({ scanNetwork: fakeScan(), onSession: (s) => results.push(s) }))).to.equal(0);
      expect(await runAgent(once, deps({ scanNetwork: empty, onSession: (s) => results.push(s) }))).to.equal(0);
      const warning = `${TARGET}: no host answered (2 last run): is the target reachable from this agent?`;
      expect(results.map((r) => r.warnings)).to.deep.equal([[], [], [warning]]);
      // Still Complete, with the warning where users see it: the daemon's sessions on the server.
      const shown = await daemonSessions();
      expect(shown.map((x: any) => [x.phase, x.error])).to.deep.equal([['Complete', `Warning: ${warning}`], ['Complete', null], ['Complete', null]]);
      expect(shown[0].report).to.include({ addresses_tried: 254 });
      expect(shown[0].report.warnings).to.deep.equal([warning]);
    });
  });

  describe('server_poll', () => {
    it('a running session an operator cancels through the API ends Cancelled (the poller calls the agent’s cancel)', async () => {
      const listening = new Promise<number>((resolve) => {
        running.push(runAgent(config({ key: null, network: null, mode: 'server_poll', listen: { host: '127.0.0.1', port: 0 }, targets: [TARGET], pairingCode: PAIRING_CODE }),
          deps({ scanNetwork: endlessScan, onListening: resolve })));
      });
      const agentUrl = `http://127.0.0.1:${await listening}`;
      const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'agent-sp', network_id: t.defaultNetworkId, url: agentUrl } }), 201);
      const daemonId: string = provisioned.daemon.id;
      await approveTarget(daemonId); // its first contact then queues a Network session after the SelfReport
      const paired = await fetch(`${agentUrl}/api/initialize`, { method: 'POST', body: JSON.stringify({ network_id: t.defaultNetworkId, api_key: provisioned.daemon_api_key, pairing_code: PAIRING_CODE }) });
      expect(paired.status).to.equal(200);
      const services = workerServicesFor(app, { serverPollTimeoutMs: 5000, serverPollAckWaitMs: 5000 });
      closeServices = () => services.close();
      workers.push(await startDiscoverySync(services));
      const network = await waitFor('the Network session running', async () => {
        await pollDaemon(services, daemonId);
        return (await sql(app, `select id from discovery_sessions where daemon_id = ? and discovery_type->>'type' = 'Network' and phase in ('Started', 'Scanning')`, [daemonId]))[0];
      }, 40_000, 50);
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/sessions/${network.id}/cancel`, { auth: t.owner }), 202);
      await waitFor('the session Cancelled', async () => {
        await pollDaemon(services, daemonId);
        return (await sql(app, `select phase from discovery_sessions where id = ?`, [network.id]))[0]!.phase === 'Cancelled';
      }, 20_000, 50);
    });

    it('answers as the recorded daemons do, and what it finds reaches the inventory through the server’s poll', async () => {
      const listening = new Promise<number>((resolve) => {
        running.push(runAgent(config({ key: null, network: null, mode: 'server_poll', listen: { host: '127.0.0.1', port: 0 }, targets: [TARGET], pairingCode: PAIRING_CODE }),
          deps({ scanNetwork: fakeScan(), onListening: resolve })));
      });
      const port = await listening;
      const agentUrl = `http://127.0.0.1:${port}`;
      const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'agent-sp', network_id: t.defaultNetworkId, url: agentUrl } }), 201);
      const daemonId: string = provisioned.daemon.id;
      const key: string = provisioned.daemon_api_key;
      await approveTarget(daemonId); // its first contact then queues a Network session after the SelfReport
      const agent = async (method: string, path: string, body?: unknown, auth = key) => {
        const res = await fetch(agentUrl + path, { method, headers: { Authorization: `Bearer ${auth}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await res.text();
        let parsed: any = text;
        try { parsed = JSON.parse(text); } catch { /* plain text */ }
        return { status: res.status, body: parsed };
      };
      const recorded = readRecording('v0.14.10', 'server_to_daemon.json').exchanges;
      const rec = (path: string) => recorded.find((e) => e.path === path)!;
      const sameAsRecorded = async (path: string, res: { status: number; body: any }) => {
        expect(res.status, JSON.stringify(res.body)).to.equal(rec(path).response_status);
        expect(shapeDiff(res.body, rec(path).response_body), path).to.deep.equal([]);
      };

      // Before initialisation every authenticated route is refused in plain text.
      expect(await agent('GET', '/api/status')).to.deep.equal({ status: 401, body: 'Daemon not configured' });
      expect((await agent('POST', '/api/discovery/initiate', { session_id: randomUUID(), discovery_type: { type: 'SelfReport', host_id: null } })).status).to.equal(401);
      await sameAsRecorded('/api/initialize', await agent('POST', '/api/initialize', { network_id: t.defaultNetworkId, api_key: key, pairing_code: PAIRING_CODE }));
      // Paired: another initialize is refused unless it presents the current key (a replacement).
      expect((await agent('POST', '/api/initialize', { network_id: t.defaultNetworkId, api_key: key, pairing_code: PAIRING_CODE }, 'scp_d_other')).status).to.equal(409);
      expect(await agent('GET', '/api/status', undefined, 'scp_d_wrong')).to.deep.equal({ status: 401, body: 'Invalid API key' });
      expect((await fetch(`${agentUrl}/api/status`)).status).to.equal(401);
      await sameAsRecorded('/api/status', await agent('GET', '/api/status'));
      await sameAsRecorded('/api/poll', await agent('GET', '/api/poll'));
      await sameAsRecorded('/api/discovery/cancel', await agent('POST', '/api/discovery/cancel', '00000000-0000-0000-0000-000000000000'));
      await sameAsRecorded('/api/discovery/entities-created', await agent('POST', '/api/discovery/entities-created', { subnets: [], hosts: [] }));

      await sameAsRecorded('/api/first-contact', await agent('POST', '/api/first-contact', {
        daemon_id: daemonId, server_capabilities: { server_version: '0.14.13', minimum_daemon_version: '0.12.0' },
      }));
      // The server drives it: contact, poll, initiate; the discovery-sync worker stores the entities.
      const services = workerServicesFor(app, { serverPollTimeoutMs: 5000, serverPollAckWaitMs: 5000 });
      closeServices = () => services.close();
      workers.push(await startDiscoverySync(services));
      const sessionsDone = async () => (await sql(app, `select count(*)::int as n from discovery_sessions where daemon_id = ? and phase = 'Complete'`, [daemonId]))[0]!.n;
      await waitFor('SelfReport and Network complete', async () => {
        await pollDaemon(services, daemonId);
        return (await sessionsDone()) >= 2;
      }, 40_000, 50);
      const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=100', { auth: t.owner }));
      const ips = hosts.flatMap((h: any) => h.ip_addresses.map((a: any) => a.ip_address)).sort();
      expect(ips).to.deep.equal(['172.25.0.4', '198.18.10.11', '198.18.10.12']);
      const daemon = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}`, { auth: t.owner }));
      expect(daemon.capabilities.interfaced_subnet_ids).to.have.length(1);
      expect(daemon.last_seen).to.be.a('string');
      // Nothing is left waiting for a confirmation.
      expect((await agent('GET', '/api/poll')).body.data.entities).to.deep.equal({ hosts: [], subnets: [] });
      // The run's report came through the poll too.
      const runs = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}/sessions`, { auth: t.owner }));
      expect(runs.find((x: any) => x.discovery_type.type === 'Network' && x.phase === 'Complete').report.services_by_rule).to.deep.equal({ 'http-title': 1, 'ssh-banner': 1 });

      // Initiate (as recorded); a second one while it runs is 409; cancel stops it and the next poll says Cancelled once.
      const session = randomUUID();
      await sameAsRecorded('/api/discovery/initiate', await agent('POST', '/api/discovery/initiate', { session_id: session, discovery_type: { type: 'SelfReport', host_id: null } }));
      const busy = await agent('POST', '/api/discovery/initiate', { session_id: randomUUID(), discovery_type: { type: 'SelfReport', host_id: null } });
      expect(busy.status).to.equal(409); // its subnet waits for the server's confirmation: still running
      expect(busy.body.error).to.equal('Discovery session already in progress');
      const cancelled = await agent('POST', '/api/discovery/cancel', session);
      expect(cancelled).to.deep.include({ status: 200 });
      expect(cancelled.body.data).to.equal(session);
      const terminal = await waitFor('the Cancelled progress', async () => {
        const progress = (await agent('GET', '/api/poll')).body.data.progress;
        return progress?.phase === 'Cancelled' && progress;
      });
      expect(terminal).to.include({ session_id: session, daemon_id: daemonId, network_id: t.defaultNetworkId });
      expect((await agent('GET', '/api/poll')).body.data.progress).to.equal(null); // a terminal progress is handed out once
      // The end is also sent straight to the server (a stopping agent is polled no more).
      await waitFor('the Cancelled session on the server', async () => (await sql(app, `select phase from discovery_sessions where id = ?`, [session]))[0]?.phase === 'Cancelled');
    });
  });
});
