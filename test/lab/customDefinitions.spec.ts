// Custom service definitions end to end (issue 38.6): an Admin's definitions, made through the API,
// travel with the discovery work to the real agent (agent/main.ts, in a lab namespace whose only
// routes lead to the lab and to the /30 towards the test server), are applied at its next scan, and
// name the services they match, the stored reason saying which definition. Both modes: daemon_poll
// (the agent asks for work: request-work) and server_poll (the server calls the agent: initiate).
//
// The lab here is small and of its own (198.18.31.0/24, namespaces prefixed nc<hex4>-, built by
// test/lab/miniLab.ts): one host, "acme", runs an HTTP server whose `/` says nothing known and whose
// /status answers `acme-console v3` (8088, one of the agent's HTTP ports), a TCP service that
// greets `ACME-RELAY ready` (7070, in the agent's light set; 7171, in no port set: only a definition
// asks for it) and one that greets `ZETA-GATE ready` (4444), the mark of a definition left disabled.
// Root only: otherwise pending, with the reason.
//
// NETWORK SAFETY: the agent's namespace has no default route, only the lab /24 and the /30 to the
// server (assertIsolated() before the agents start); its nftables output chain drops anything else.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { createDaemonKey } from '../daemons/world.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { readInventory, type SeenHost } from './inventory.js';
import { LAB_PACKAGES, ensurePackages } from './packages.js';
import { labUnavailable, NODE, ROOT } from './lab.js';
import { createMiniLab, type MiniLab } from './miniLab.js';

const AGENT_MAIN = path.join(ROOT, 'agent/main.ts');
const SUBNET = '198.18.31.0/24';
const AGENT_LAB_IP = '198.18.31.2';
const ACME_IP = '198.18.31.10';
const PORTS = { console: 8088, relay: 7070, relayOff: 7171, zeta: 4444 };
/** A scan of the /24 (two live addresses) takes seconds, over a minute on a loaded 2-core machine; a session not done by then has failed. */
const SCAN_LIMIT_MS = 180_000;
/** The agent's light port set only (no slice of the full range): 7171 is probed only when a definition asks. */
const FAST = ['--full-range-runs', '0'];

const definitions = {
  console: { name: 'Acme console', category: 'Web', icon: 'server', ports: [PORTS.console], probe: { type: 'http', path: '/status' }, match: { field: 'body', pattern: '^acme-console v\\d+' } },
  relay: { name: 'Acme relay', category: 'Messaging', icon: null, ports: [PORTS.relay, PORTS.relayOff], probe: { type: 'banner' }, match: { field: 'banner', pattern: '^ACME-RELAY ready' } },
  zeta: { name: 'Zeta gate', category: 'Network', icon: null, ports: [PORTS.zeta], probe: { type: 'banner' }, match: { field: 'banner', pattern: '^ZETA-GATE' }, enabled: false },
};

/** The acme host's services, bound to its lab address only. */
const SERVICES_SCRIPT = `
const http = require('node:http');
const net = require('node:net');
const { ip, ports } = JSON.parse(process.argv[1]);
http.createServer((req, res) => {
  if (req.url === '/status') { res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end('acme-console v3\\n'); return; }
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.end('<!doctype html><html><head><title>Home</title></head><body><p>hello</p></body></html>\\n');
}).listen(ports.console, ip);
const greeter = (greeting) => net.createServer((s) => {
  s.on('error', () => undefined);
  s.setTimeout(5000, () => s.destroy());
  s.write(greeting);
  s.on('data', () => s.write('ERR unknown command\\r\\n'));
});
greeter('ACME-RELAY ready\\r\\n').listen(ports.relay, ip);
greeter('ACME-RELAY ready\\r\\n').listen(ports.relayOff, ip);
greeter('ZETA-GATE ready\\r\\n').listen(ports.zeta, ip);
console.log('acme services listening on ' + ip);
`;

type Session = { id: string; discovery_type: { type: string }; phase: string; error: string | null; report?: { services_by_rule?: Record<string, number> } | null };

describe('custom service definitions end to end: API → work → agent in the lab → named services', function () {
  this.timeout(90_000);
  let lab: MiniLab;
  let app: TestApp;
  let api: { url: string; close(): Promise<void> };
  let t: Tenant;
  let admin: { auth: Awaited<ReturnType<typeof createUser>>['auth'] };
  const agents: Array<{ child: ChildProcess; output: () => string }> = [];
  /** The daemon_poll agent's daemon and network, and the server_poll one's (with the server's poll worker side). */
  let polling: { networkId: string; daemonId: string };
  let polled: { networkId: string; daemonId: string; services: ReturnType<typeof workerServicesFor>; sync: Worker };

  before(async function () {
    this.timeout(300_000); // the first run on a machine may install Debian packages
    const why = labUnavailable();
    if (why) {
      console.log(`      pending: ${why}`);
      this.skip();
    }
    ensurePackages(LAB_PACKAGES.filter((n) => n.pkg === 'iproute2' || n.pkg === 'nftables'));
    lab = createMiniLab({
      tag: 'nc', subnet: SUBNET, agentIp: AGENT_LAB_IP,
      hosts: [{ name: 'acme', ip: ACME_IP, mac: '3c:7c:3f:31:00:10', script: SERVICES_SCRIPT, arg: { ip: ACME_IP, ports: PORTS }, ports: Object.values(PORTS) }],
    });
    lab.assertAgentIsolated();
    // The server calls the server_poll agent at its end of the /30 (the outbound policy refuses 198.19/16 otherwise).
    app = await startTestApp({ daemonAllowedNetworks: [`${lab.agentServerIp}/32`] });
    api = await lab.forward(Number(new URL(app.url).port));
    t = await registerTenant(app.url, 'custom-defs');
    admin = await createUser(app.url, t.owner, 'Admin');

    // daemon_poll: an agent with no --targets of its own, asking for work every half second.
    const pollNetwork = await createNetwork(app.url, t.owner, 'custom daemon_poll');
    const { key } = await createDaemonKey(app.url, t.owner, pollNetwork);
    agents.push(lab.spawnInAgentNs(NODE, ['--import', 'tsx', AGENT_MAIN, '--server', api.url, '--network', pollNetwork,
      '--state', path.join(lab.dir, 'state-poll.json'), '--name', 'custom-poll', '--interval', '0.5', ...FAST], { AGENT_KEY: key }));
    const daemonId = await waitFor('the daemon_poll agent registered', async () =>
      (expectOk(await call(app.url, 'GET', `/api/v1/daemons?network_id=${pollNetwork}`, { auth: t.owner })) as Array<{ id: string }>)[0]?.id, 30_000, 200);
    polling = { networkId: pollNetwork, daemonId };

    // server_poll: provisioned on the server, which calls it at its end of the /30; the subnet approved
    // before first contact (that contact then queues its SelfReport and a Network session).
    const polledNetwork = await createNetwork(app.url, t.owner, 'custom server_poll');
    const listen = 60073;
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', {
      auth: t.owner, body: { name: 'custom-server-poll', network_id: polledNetwork, url: `http://${lab.agentServerIp}:${listen}` },
    }), 201);
    await approve(polledNetwork, provisioned.daemon.id);
    agents.push(lab.spawnInAgentNs(NODE, ['--import', 'tsx', AGENT_MAIN, '--mode', 'server_poll', '--listen', `${lab.agentServerIp}:${listen}`,
      '--server', api.url, '--network', polledNetwork, '--state', path.join(lab.dir, 'state-server-poll.json'), ...FAST], { AGENT_KEY: provisioned.daemon_api_key }));
    const services = workerServicesFor(app, { serverPollTimeoutMs: 5000, serverPollAckWaitMs: 10_000 });
    services.config = { ...services.config, daemonAllowedNetworks: [`${lab.agentServerIp}/32`] };
    polled = { networkId: polledNetwork, daemonId: provisioned.daemon.id, services, sync: await startDiscoverySync(services) };
  });

  after(async () => {
    for (const a of agents) a.child.kill('SIGKILL');
    await polled?.sync.close();
    await polled?.services.close();
    await api?.close();
    await app?.close();
    lab?.destroy();
  });

  /** The lab's subnet on the network, approved for the daemon (as on the Daemons page). */
  async function approve(networkId: string, daemonId: string): Promise<void> {
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: networkId, cidr: SUBNET, name: 'acme lab' } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/targets`, { auth: t.owner, body: { subnet_id: subnet.id } }));
  }

  const sessionsOf = async (daemonId: string) =>
    (expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}/sessions`, { auth: t.owner })) as Session[]).reverse();
  const agentOutput = () => agents.map((a) => a.output().slice(-2000)).join('\n----\n');

  /** Waits for the daemon's Network session (`sessionId`, else the first) to end; throws unless Complete. */
  async function networkSessionDone(daemonId: string, sessionId: string | null, onEachTry?: () => Promise<unknown>): Promise<Session> {
    const ended = await waitFor(`the Network session ${sessionId ?? ''} to end`, async () => {
      await onEachTry?.();
      const s = (await sessionsOf(daemonId)).find((x) => (sessionId ? x.id === sessionId : x.discovery_type.type === 'Network'));
      return s && ['Complete', 'Failed', 'Cancelled'].includes(s.phase) ? s : undefined;
    }, SCAN_LIMIT_MS, 300).catch((err: Error) => { throw new Error(`${err.message}\nagents:\n${agentOutput()}`); });
    expect(ended.phase, `session ${ended.id}: ${ended.error}`).to.equal('Complete');
    return ended;
  }

  /** The server_poll side driven as the workers do (poll, then discovery-sync) until the session ends and what it reported is stored. */
  async function serverPollDone(sessionId: string | null): Promise<Session> {
    const ended = await networkSessionDone(polled.daemonId, sessionId, () => pollDaemon(polled.services, polled.daemonId));
    await waitFor('discovery-sync drained', async () => {
      const counts = await polled.services.queues.discoverySync.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      return Object.values(counts).every((n) => n === 0);
    }, 30_000, 200);
    return ended;
  }

  const acmeOf = async (networkId: string): Promise<SeenHost> => {
    const host = (await readInventory(app.url, t.owner, networkId)).get(ACME_IP);
    expect(host, `${ACME_IP} found`).to.not.equal(undefined);
    return host!;
  };
  const on = (host: SeenHost, port: number) => host.services.filter((s) => s.port === port);
  const show = (host: SeenHost) => JSON.stringify(host.services.map((s) => ({ port: s.port, definition: s.definition, source: s.source.slice(0, 300) })), null, 1);

  describe('before any definition', () => {
    const seen: Record<string, SeenHost> = {};
    before(async function () {
      this.timeout(SCAN_LIMIT_MS * 2);
      // daemon_poll: the first approved subnet queues its first Network session; server_poll: its first contact.
      await approve(polling.networkId, polling.daemonId);
      await Promise.all([networkSessionDone(polling.daemonId, null), serverPollDone(null)]);
      seen.daemon_poll = await acmeOf(polling.networkId);
      seen.server_poll = await acmeOf(polled.networkId);
    });

    for (const mode of ['daemon_poll', 'server_poll']) {
      it(`${mode}: the acme host's ports are found and named generically (HTTP) or not at all; nothing Acme`, () => {
        const acme = seen[mode]!;
        expect(acme.ports, show(acme)).to.include.members([PORTS.console, PORTS.relay, PORTS.zeta]);
        expect(acme.ports, '7171 is in no port set until a definition asks for it').to.not.include(PORTS.relayOff);
        expect(on(acme, PORTS.console).map((s) => s.definition), show(acme)).to.deep.equal(['HTTP']);
        for (const s of acme.services) {
          expect(s.definition, show(acme)).to.not.match(/acme|zeta/i);
          expect(s.source, show(acme)).to.not.include('custom definition');
        }
      });
    }
  });

  describe('after an Admin creates definitions through the API', () => {
    const seen: Record<string, SeenHost> = {};
    const sessions: Record<string, Session> = {};
    const made: Record<string, { id: string; name: string; enabled: boolean }> = {};
    before(async function () {
      this.timeout(SCAN_LIMIT_MS * 2);
      for (const [k, body] of Object.entries(definitions)) {
        made[k] = expectOk(await call(app.url, 'POST', '/api/v1/service_definitions', { auth: admin.auth, body }), 201);
      }
      expect(made.zeta!.enabled).to.equal(false);
      // The next scan of each: "Scan now" (a Network session queued through the API).
      const queued = await Promise.all([polling.daemonId, polled.daemonId].map(async (id) =>
        expectOk(await call(app.url, 'POST', `/api/v1/daemons/${id}/sessions`, { auth: admin.auth }), 201) as Session));
      [sessions.daemon_poll, sessions.server_poll] = await Promise.all([networkSessionDone(polling.daemonId, queued[0]!.id), serverPollDone(queued[1]!.id)]);
      seen.daemon_poll = await acmeOf(polling.networkId);
      seen.server_poll = await acmeOf(polled.networkId);
    });

    for (const mode of ['daemon_poll', 'server_poll']) {
      it(`${mode}: the HTTP service is named by the "Acme console" definition, its reason naming the definition`, () => {
        const acme = seen[mode]!;
        // The port's generic HTTP service of the first run is gone (stopped), the definition's bound to the port in its place.
        expect(on(acme, PORTS.console).map((s) => s.definition), show(acme)).to.deep.equal(['Acme console']);
        const named = on(acme, PORTS.console)[0]!;
        expect(named!.name).to.equal('Acme console');
        // agent/fingerprint/custom.ts: rule id custom:<id>, reason "custom definition <name> (<id>): …", the category a fact.
        expect(named!.source).to.include(`custom definition Acme console (${made.console!.id}): `).and.include('custom GET /status').and.include('category: Web');
      });

      it(`${mode}: the banner service is named "Acme relay" on its port, and on the port only the definition adds`, () => {
        const acme = seen[mode]!;
        for (const port of [PORTS.relay, PORTS.relayOff]) {
          const named = on(acme, port).find((s) => s.definition === 'Acme relay');
          expect(named, `${port}: ${show(acme)}`).to.not.equal(undefined);
          expect(named!.source).to.include(`custom definition Acme relay (${made.relay!.id}): `).and.include('ACME-RELAY ready').and.include('category: Messaging');
        }
      });

      it(`${mode}: the disabled definition is not applied`, () => {
        const acme = seen[mode]!;
        expect(acme.ports).to.include(PORTS.zeta);
        for (const s of acme.services) {
          expect(s.definition, show(acme)).to.not.equal('Zeta gate');
          expect(s.source, show(acme)).to.not.include(made.zeta!.id);
        }
      });

      it(`${mode}: the run's report counts the custom rules (custom:<id>) and the session stored no definition`, async () => {
        const byRule = sessions[mode]!.report?.services_by_rule ?? {};
        expect(byRule, JSON.stringify(sessions[mode])).to.include({ [`custom:${made.console!.id}`]: 1, [`custom:${made.relay!.id}`]: 2 });
        expect(byRule).to.not.have.property(`custom:${made.zeta!.id}`);
        expect(sessions[mode]!.discovery_type).to.not.have.property('service_definitions');
      });
    }

    it('the services list shows them by definition name (GET /api/v1/services)', async () => {
      for (const networkId of [polling.networkId, polled.networkId]) {
        const list = expectOk(await call(app.url, 'GET', `/api/v1/services?network_id=${networkId}&limit=1000`, { auth: t.owner })) as Array<{ service_definition: string; source: { details?: { reason?: { data?: string } } } }>;
        const defs = list.map((s) => s.service_definition);
        expect(defs.filter((d) => d === 'Acme console')).to.have.length(1);
        expect(defs.filter((d) => d === 'Acme relay')).to.have.length(2);
        expect(defs).to.not.include('Zeta gate');
        expect(list.find((s) => s.service_definition === 'Acme console')!.source.details?.reason?.data).to.match(new RegExp(`^custom definition Acme console \\(${made.console!.id}\\): `));
      }
    });
  });
});
