// The discovery agent in the lab (issue 24, "What it must show"): network namespaces in
// 198.18.0.0/15 built by test/lab/lab.ts, the agent in a namespace of its own whose only routes
// lead to the lab (asserted before every probe and every agent start), and assertions on the
// server's inventory through the API (sessions, which have no user route, through SQL).
// Root only: otherwise every test here is reported as pending, with the reason.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { createDaemonKey } from '../daemons/world.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { readInventory, type SeenHost } from './inventory.js';
import { LAB_PACKAGES, ensurePackages } from './packages.js';
import {
  AGENT_IP, LAB_SPACE, MIDDLEBOX_RANGE, NODE, PYTHON, ROOT, ROUTER_IPS, SEGMENT_A, SEGMENT_B, WEB_TITLE,
  cidrInside, createLab, labUnavailable, spawnInAgentNs, type Lab, type LabHost, type ProbeTarget,
} from './lab.js';

/** Skips the whole file (pending, with the reason) where the lab cannot be built. */
function skipUnlessLab(ctx: Mocha.Context): void {
  const why = labUnavailable();
  if (why) {
    console.log(`      pending: ${why}`);
    ctx.skip();
  }
}

describe('discovery lab: namespaces, services and the safety check', function () {
  this.timeout(60_000);
  let lab: Lab;

  before(async function () {
    this.timeout(300_000); // the first run on a machine may install Debian packages
    skipUnlessLab(this);
    ensurePackages(LAB_PACKAGES);
    lab = await createLab();
  });
  after(async () => lab?.destroy());

  it('the agent namespace routes only into the lab: a default route or a route elsewhere fails the check', () => {
    lab.assertAgentIsolated();
    // Routes only, added and removed while nothing is sent: the check must refuse each.
    for (const extra of [['default', 'via', '198.18.10.1'], ['192.0.2.0/24', 'via', '198.18.10.1']]) {
      lab.exec(lab.agentNs, 'ip', ['route', 'add', ...extra]);
      try {
        expect(() => lab.assertAgentIsolated()).to.throw(/NETWORK SAFETY/);
      } finally {
        lab.exec(lab.agentNs, 'ip', ['route', 'del', ...extra]);
      }
    }
    lab.assertAgentIsolated();
  });

  it('every service answers from the agent namespace with what identifies it; the quiet hosts stay quiet', async () => {
    const targets: ProbeTarget[] = [
      { ip: '198.18.10.11', port: 80, send: 'GET / HTTP/1.0\r\n\r\n' },
      { ip: '198.18.10.12', port: 6379, send: 'PING\r\n' },
      { ip: '198.18.20.14', port: 2222 },
      { ip: '198.18.20.15', port: 5432, send: '\x00\x00\x00\x08\x04\xd2\x16\x2f' }, // SSLRequest
      { ip: '198.18.20.16', port: 22 },
      { ip: '198.18.10.16', port: 22 },
    ];
    const [web, redis, ssh, pg, quietB, quietA] = await lab.probeFromAgent(targets);
    expect(web!.banner).to.match(/^HTTP\/1\.0 200/).and.include(`<title>${WEB_TITLE}</title>`);
    expect(redis!.banner).to.equal('+PONG\r\n');
    expect(ssh!.banner).to.match(/^SSH-2\.0-OpenSSH_[\d.]+p\d+ Debian/);
    expect(pg!.banner).to.equal('N'); // no TLS: PostgreSQL's answer to an SSLRequest
    expect(quietB!.outcome, 'the routed host without a listener answers RST').to.equal('refused');
    expect(quietA!.outcome, 'the on-link host drops every IP packet').to.equal('silent');
    // ... but it answers ARP: the kernel's neighbour table has its MAC (the agent's unprivileged liveness).
    expect(lab.agentNeighbours()['198.18.10.16']).to.equal(lab.hosts.find((h) => h.name === 'quiet-a')!.mac.toUpperCase());
    // The routed segment is reached through the router: no MAC of a segment-B host is learnt.
    const neighbours = Object.keys(lab.agentNeighbours());
    expect(neighbours.filter((a) => a.startsWith('198.18.20.'))).to.deep.equal([]);
  });

  it('every address of the middlebox range answers TCP 443 and 5060 alike, and nothing else; mid itself neither', async () => {
    const addresses = ['198.18.20.224', '198.18.20.240', '198.18.20.254'];
    expect(MIDDLEBOX_RANGE).to.equal('198.18.20.224/27');
    const results = await lab.probeFromAgent([
      ...addresses.flatMap((ip) => [{ ip, port: 443 }, { ip, port: 5060 }]), { ip: '198.18.20.240', port: 80 },
      { ip: '198.18.20.100', port: 443 }, { ip: '198.18.20.100', port: 5060 },
    ]);
    expect(results.map((r) => r.outcome)).to.deep.equal([...Array(6).fill('open'), 'silent', 'refused', 'refused']);
  });

  it('the 9100–9107 counters count what reaches the printer through a bridge, through the router and from the agent', async () => {
    // From lab hosts (not the agent): web on the same bridge, then ssh across the router.
    const connect = `import socket\ns=socket.create_connection(('198.18.10.13', 9100), 2); s.close()`;
    const start = lab.rawPortPacketsAt();
    lab.exec(lab.hosts.find((h) => h.name === 'web')!.ns, PYTHON, ['-c', connect]);
    const bridged = lab.rawPortPacketsAt();
    expect(bridged.bridges, 'bridge counter').to.be.greaterThan(start.bridges);
    expect(bridged.router, 'the router saw nothing').to.equal(start.router);
    lab.exec(lab.hosts.find((h) => h.name === 'ssh')!.ns, PYTHON, ['-c', connect]);
    const routed = lab.rawPortPacketsAt();
    expect(routed.router, 'router counter').to.be.greaterThan(bridged.router);
    expect(routed.bridges, 'both bridges').to.be.greaterThan(bridged.bridges);
    expect(routed.agent, 'nothing from the agent').to.equal(start.agent);
    // And the agent namespace's own counter (the one an agent probing 9100 would raise first).
    await lab.probeFromAgent([{ ip: '198.18.10.13', port: 9100 }]);
    expect(lab.rawPortPacketsAt().agent, 'agent counter').to.be.greaterThan(routed.agent);
  });

  it('the agent namespace counts its lab traffic and has its own address on segment A only', async () => {
    const before = lab.agentTraffic();
    await lab.probeFromAgent([{ ip: '198.18.10.12', port: 6379, send: 'PING\r\n' }]);
    const after = lab.agentTraffic();
    expect(after.packetsOut).to.be.greaterThan(before.packetsOut);
    expect(after.packetsIn).to.be.greaterThan(before.packetsIn);
    const addrs = JSON.parse(lab.exec(lab.agentNs, 'ip', ['-4', '-j', 'addr'])) as Array<{ ifname: string; addr_info: Array<{ local: string }> }>;
    expect(addrs.flatMap((a) => a.addr_info.map((i) => `${a.ifname} ${i.local}`)).sort())
      .to.deep.equal([`ag-srv ${lab.agentServerIp}`, `ag0 ${AGENT_IP}`, 'lo 127.0.0.1']);
  });
});

// ---- the agent --------------------------------------------------------------------------------

const AGENT_MAIN = path.join(ROOT, 'agent/main.ts');
const BOTH_SEGMENTS = `${SEGMENT_A},${SEGMENT_B}`;
/**
 * The agent's default budget (200 probes/s, 64 sockets: in this lab a larger one was no faster, as
 * silent ports hold sockets until their timeout), and its light port set only: a run otherwise adds
 * a seventh of the whole port range on every live host (about 9,400 ports each, 4 to 5 minutes here);
 * what is found on the lab's ports is the same. The bench runs the agent's defaults.
 */
const FAST = ['--full-range-runs', '0'];
/** Slow enough that a run is still scanning when the test cancels or kills it. */
const SLOW = ['--pps', '5', '--sockets', '4'];
/** One run over both segments is stopped (and fails the test) past this. */
const RUN_LIMIT_MS = 330_000;

interface AgentExit { code: number | null; signal: NodeJS.Signals | null; output: string }
interface RunningAgent { child: ChildProcess; exited: Promise<AgentExit> }

describe('discovery lab: the agent, judged by the server’s inventory', function () {
  this.timeout(RUN_LIMIT_MS + 90_000);
  let lab: Lab;
  let app: TestApp;
  let api: { url: string; close(): Promise<void> };
  let t: Tenant;
  const agents: ChildProcess[] = [];

  before(async function () {
    this.timeout(300_000);
    skipUnlessLab(this);
    if (!fs.existsSync(AGENT_MAIN)) {
      console.log('      pending: the agent (agent/main.ts) is not there yet');
      this.skip();
    }
    ensurePackages(LAB_PACKAGES);
    lab = await createLab();
    // The server may call a server_poll agent at its end of the /30 (the outbound policy refuses 198.19/16 otherwise).
    app = await startTestApp({ daemonAllowedNetworks: [`${lab.agentServerIp}/32`] });
    api = await lab.forward(Number(new URL(app.url).port));
    t = await registerTenant(app.url, 'lab');
  });
  after(async () => {
    for (const a of agents) a.kill('SIGKILL');
    await api?.close();
    await app?.close();
    await lab?.destroy();
  });

  /** Starts the agent inside its namespace, after the safety check (spawnInAgentNs). */
  function startAgent(args: string[]): RunningAgent {
    const run = spawnInAgentNs(lab, NODE, ['--import', 'tsx', AGENT_MAIN, ...args]);
    agents.push(run.child);
    return { child: run.child, exited: run.exited.then(({ code, signal }) => ({ code, signal, output: run.output() })) };
  }

  /** A network of its own with a daemon_poll key: each test's inventory starts empty. */
  async function newDaemon(label: string): Promise<{ networkId: string; key: string; state: string; args: string[] }> {
    const networkId = await createNetwork(app.url, t.owner, `${label} ${Math.random().toString(36).slice(2, 6)}`);
    const { key } = await createDaemonKey(app.url, t.owner, networkId);
    const state = path.join(lab.dir, `state-${networkId}.json`);
    return { networkId, key, state, args: ['--server', api.url, '--key', key, '--network', networkId, '--state', state, '--name', `lab-${label}`] };
  }

  /** One `--once` run; resolves when the agent has exited 0 (stopped and failed past RUN_LIMIT_MS). */
  async function runOnce(d: { args: string[] }, targets = BOTH_SEGMENTS, budget = FAST): Promise<AgentExit> {
    const agent = startAgent([...d.args, '--once', '--targets', targets, ...budget]);
    // Past the limit: asked to stop, then killed (a stopping agent still sends its Cancelled).
    const limit = setTimeout(() => agent.child.kill('SIGTERM'), RUN_LIMIT_MS);
    const kill = setTimeout(() => agent.child.kill('SIGKILL'), RUN_LIMIT_MS + 15_000);
    const run = await agent.exited.finally(() => { clearTimeout(limit); clearTimeout(kill); });
    expect(run.code, `agent exit ${run.code} ${run.signal ?? ''} (stopped after ${RUN_LIMIT_MS / 1000} s?):\n${run.output.slice(-3000)}`).to.equal(0);
    return run;
  }

  const daemonOf = async (networkId: string): Promise<string> => waitFor('the daemon', async () =>
    (expectOk(await call(app.url, 'GET', `/api/v1/daemons?network_id=${networkId}`, { auth: t.owner })) as Array<{ id: string }>)[0]?.id);
  /** A daemon's sessions as users see them, oldest first. */
  const sessionsOf = async (daemonId: string) =>
    (expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}/sessions`, { auth: t.owner })) as Array<{ id: string; discovery_type: { type: string }; phase: string; error: string | null; created_at: string }>)
      .map((x) => ({ ...x, type: x.discovery_type.type })).reverse();

  const inventory = (networkId: string) => readInventory(app.url, t.owner, networkId);

  const labHost = (name: string): LabHost => lab.hosts.find((h) => h.name === name)!;
  /** Every address the lab answers on: its hosts, the router's legs, the agent itself. */
  const labAddresses = () => new Set([...lab.hosts.map((h) => h.ip), ...ROUTER_IPS, AGENT_IP]);
  /**
   * A comparable summary of the lab as found: address, MAC, and each service as definition@port. The
   * agent's own addresses are left out: a server_poll agent self-reports (its MAC, its own service),
   * a --once run does not.
   */
  const summary = (inv: Map<string, SeenHost>) => [...inv.values()].filter((h) => h.ip !== AGENT_IP && h.ip !== lab.agentServerIp).map((h) => ({
    ip: h.ip, mac: h.mac, services: h.services.map((s) => `${s.definition}@${s.port}`).sort(),
  })).sort((a, b) => a.ip.localeCompare(b.ip));

  /**
   * A server_poll agent, provisioned on the server (which calls it at its end of the /30), scanning
   * `targets` (approved for it on the server, and its --targets); the server's side driven as its workers do (poll, then discovery-sync). Resolves when
   * its Network session is Complete and what it reported is stored.
   */
  async function serverPollRun(label: string, targets: string): Promise<{ networkId: string }> {
    const networkId = await createNetwork(app.url, t.owner, label);
    const port = 60073;
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', {
      auth: t.owner, body: { name: `lab-${label}`, network_id: networkId, url: `http://${lab.agentServerIp}:${port}` },
    }), 201);
    const daemonId: string = provisioned.daemon.id;
    // Its targets approved on the server (as on the Daemons page): its first contact then queues a Network session.
    for (const cidr of targets.split(',')) {
      const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: networkId, cidr, name: cidr } }), 201);
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/targets`, { auth: t.owner, body: { subnet_id: subnet.id } }));
    }
    const agent = startAgent(['--mode', 'server_poll', '--listen', `${lab.agentServerIp}:${port}`, '--server', api.url,
      '--key', provisioned.daemon_api_key, '--network', networkId, '--state', path.join(lab.dir, `state-${networkId}.json`),
      '--targets', targets, ...FAST]);
    const services = workerServicesFor(app, { serverPollTimeoutMs: 5000, serverPollAckWaitMs: 10_000 });
    services.config = { ...services.config, daemonAllowedNetworks: [`${lab.agentServerIp}/32`] };
    const sync: Worker = await startDiscoverySync(services);
    try {
      await waitFor('the server_poll Network session to complete', async () => {
        await pollDaemon(services, daemonId);
        const network = (await sessionsOf(daemonId)).find((x) => x.type === 'Network');
        if (network && ['Failed', 'Cancelled'].includes(network.phase)) throw new Error(`server_poll session ${network.phase}: ${network.error}`);
        return network?.phase === 'Complete';
      }, RUN_LIMIT_MS, 1000);
      // What the last polls handed over goes through the discovery-sync queue: done when it is empty.
      await waitFor('discovery-sync drained', async () => {
        const counts = await services.queues.discoverySync.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        return Object.values(counts).every((n) => n === 0);
      }, 30_000, 200);
      return { networkId };
    } finally {
      agent.child.kill('SIGTERM');
      const exit = await agent.exited;
      if (exit.code !== 0) console.log(`server_poll agent exit ${exit.code} ${exit.signal}:\n${exit.output.slice(-2000)}`);
      await sync.close();
      await services.close();
    }
  }

  describe('one run over both segments in each mode (daemon_poll --once and server_poll, side by side)', () => {
    let d: Awaited<ReturnType<typeof newDaemon>>;
    let seen: Map<string, SeenHost>;
    let polledByServer: Map<string, SeenHost>;
    let rawPackets: number;
    let daemonId: string;

    before(async () => {
      d = await newDaemon('poll');
      const raw = lab.rawPortPackets();
      const [, serverPolled] = await Promise.all([runOnce(d), serverPollRun('server poll', BOTH_SEGMENTS)]);
      rawPackets = lab.rawPortPackets() - raw;
      seen = await inventory(d.networkId);
      polledByServer = await inventory(serverPolled.networkId);
      daemonId = await daemonOf(d.networkId);
    });

    it('finds every lab host, each with the evidence it is alive from, and nothing outside the lab', () => {
      for (const h of lab.hosts) expect(seen.has(h.ip), `${h.name} ${h.ip} found`).to.equal(true);
      for (const ip of seen.keys()) expect(labAddresses().has(ip), `${ip} is a lab address`).to.equal(true);
      // Both hosts without an open port: on-link by the neighbour table, routed by a refused connection.
      expect(seen.get(labHost('quiet-a').ip)!.description ?? '').to.match(/neighbour/i);
      expect(seen.get(labHost('quiet-b').ip)!.description ?? '').to.match(/refused|rst/i);
      expect(seen.get(labHost('quiet-b').ip)!.ports).to.deep.equal([]);
    });

    it('records MACs on the on-link segment and none on the routed one', () => {
      for (const h of lab.hosts.filter((x) => x.segment === 'A')) expect(seen.get(h.ip)!.mac, h.name).to.equal(h.mac.toUpperCase());
      for (const h of lab.hosts.filter((x) => x.segment === 'B')) expect(seen.get(h.ip)!.mac, h.name).to.equal(null);
    });

    it('records no phantom host in the middlebox range, and warns once about it', async () => {
      expect([...seen.keys()].filter((ip) => cidrInside(ip, MIDDLEBOX_RANGE))).to.deep.equal([]);
      // The run's session, as users see it: Complete, its warning naming the range once.
      const [network] = (await sessionsOf(daemonId)).filter((s) => s.type === 'Network' && s.phase !== 'Pending');
      expect(network!.phase).to.equal('Complete');
      const warnings = (network!.error ?? '').split('\n').filter((l) => /middlebox/i.test(l));
      expect(warnings, `the session's error: ${network!.error}`).to.have.length(1);
      // The range's 31 addresses (224–254 of the /24 target), all answering 443 and 5060.
      expect(warnings[0]).to.match(/198\.18\.20\.0\/24: 31 addresses answered 443\/tcp,5060\/tcp/);
    });

    it('identifies SSH on 2222, Redis, PostgreSQL and HTTP, each with its reason', () => {
      const service = (host: string, definition: RegExp) => {
        const found = seen.get(labHost(host).ip)!.services.find((s) => definition.test(s.definition));
        expect(found, `${definition} on ${host}: ${JSON.stringify(seen.get(labHost(host).ip)!.services)}`).to.not.equal(undefined);
        return found!;
      };
      const ssh = service('ssh', /^ssh$/i);
      expect(ssh.port).to.equal(2222);
      expect(ssh.source).to.include('OpenSSH').and.include('Debian').and.include('2222');
      const redis = service('redis', /^redis$/i);
      expect(redis.port).to.equal(6379);
      expect(redis.source).to.include('PONG');
      const pg = service('pg', /^postgres/i);
      expect(pg.port).to.equal(5432);
      const web = service('web', /^http$/i);
      expect(web.port).to.equal(80);
      expect(web.source).to.include(WEB_TITLE);
    });

    it('sends no packet to 9100–9107 (nftables counters in the agent, the router and the bridges)', () => {
      expect(rawPackets).to.equal(0);
      expect(seen.get(labHost('printer').ip)!.ports).to.not.include(9100);
    });

    it('server_poll finds the same inventory as daemon_poll', () => {
      expect(summary(polledByServer)).to.deep.equal(summary(seen));
    });

    it('a second run with nothing changed writes no history state and no event', async () => {
      const events = async () => (expectOk(await call(app.url, 'GET', `/api/v1/events?network_id=${d.networkId}&after=0&limit=1000`, { auth: t.owner })) as Array<{ id: string; type: string; entity_type: string }>);
      const states = async () => Promise.all([...seen.values()].map(async (h) => (expectOk(await call(app.url, 'GET', `/api/v1/hosts/${h.id}/history`, { auth: t.owner })) as unknown[]).length));
      const eventsBefore = await events();
      const statesBefore = await states();
      await runOnce(d);
      const fresh = (await events()).slice(eventsBefore.length).filter((e) => e.entity_type !== 'daemon');
      expect(fresh.map((e) => `${e.type} ${e.entity_type}`)).to.deep.equal([]);
      expect(await states()).to.deep.equal(statesBefore);
      expect(summary(await inventory(d.networkId))).to.deep.equal(summary(seen));
    });
  });

  it('a service that stopped is offline after the next run (kept, with its history)', async () => {
    const d = await newDaemon('stopped');
    const redisIp = labHost('redis').ip;
    await runOnce(d, `${redisIp}/32`);
    expect((await inventory(d.networkId)).get(redisIp)!.services.map((s) => s.definition)).to.include('Redis');
    await lab.stopServices('redis');
    try {
      await runOnce(d, `${redisIp}/32`);
      const after = (await inventory(d.networkId)).get(redisIp);
      expect(after, 'the host itself stays (it answers RST)').to.not.equal(undefined);
      expect(after!.services.map((s) => s.definition)).to.not.include('Redis');
      expect(after!.offlineServices).to.include('Redis');
    } finally {
      await lab.startServices('redis');
    }
  });

  it('a user’s cancel mid-run ends the session Cancelled', async () => {
    // The Network session a new daemon_poll daemon runs of its own --targets right after registering.
    const d = await newDaemon('cancel');
    const agent = startAgent([...d.args, '--targets', BOTH_SEGMENTS, '--interval', '0.5', ...SLOW]);
    try {
      const daemonId = await daemonOf(d.networkId);
      const network = await waitFor('a Network session scanning', async () =>
        (await sessionsOf(daemonId)).find((s) => s.type === 'Network' && ['Started', 'Scanning'].includes(s.phase)), 30_000, 200);
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/sessions/${network.id}/cancel`, { auth: t.owner }), 202);
      const ended = await waitFor('the session to end', async () =>
        (await sessionsOf(daemonId)).find((s) => s.id === network.id && ['Complete', 'Failed', 'Cancelled'].includes(s.phase)), 30_000, 200);
      expect(ended.phase).to.equal('Cancelled');
    } finally {
      agent.child.kill('SIGTERM');
      await agent.exited;
    }
  });

  it('a killed agent’s session ends Failed as stalled, and the next run starts clean', async () => {
    const d = await newDaemon('killed');
    const agent = startAgent([...d.args, '--once', '--targets', BOTH_SEGMENTS, ...SLOW]);
    const daemonId = await daemonOf(d.networkId);
    const running = await waitFor('a Network session scanning', async () =>
      (await sessionsOf(daemonId)).find((s) => s.type === 'Network' && ['Started', 'Scanning'].includes(s.phase)), 30_000, 200);
    agent.child.kill('SIGKILL');
    expect((await agent.exited).signal).to.equal('SIGKILL');
    expect((await sessionsOf(daemonId)).find((s) => s.id === running.id)!.phase, 'nothing told the server').to.be.oneOf(['Started', 'Scanning']);
    await runOnce(d, `${labHost('redis').ip}/32`);
    const sessions = await sessionsOf(daemonId);
    const old = sessions.find((s) => s.id === running.id)!;
    expect(old.phase).to.equal('Failed');
    expect(old.error).to.match(/stall/i);
    // (No Network session is queued at registration, nothing being approved: the runs' own two are all.)
    const next = sessions.filter((s) => s.type === 'Network' && s.id !== running.id);
    expect(next.map((s) => s.phase)).to.deep.equal(['Complete']);
  });
});
