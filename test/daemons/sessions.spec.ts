// Operators' discovery sessions (issue 25.3) through HTTP: "scan now" (POST /api/v1/daemons/:id/sessions)
// queues a Network session that request-work hands out with the approved targets; cancel (POST
// …/sessions/:session_id/cancel) ends a pending one at once and asks a running one to stop (the
// daemon's next request-work answers cancel true; its Cancelled update ends it; the server_poll
// poller calls the daemon's cancel); the run's report our agent sends is stored and shown.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { postSubnet } from '../discovery/reports.js';
import { envelope, seedDaemon, startStandInDaemon, workerServicesFor, type Responder } from '../workers/support.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from './world.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };

/** A report as our agent sends it with Complete. */
const REPORT = {
  addresses_tried: 254, alive_by_evidence: { tcp_open: 3, tcp_refused: 1, neighbour: 2 }, services_by_rule: { 'http-title': 2, 'ssh-banner': 1 },
  warnings: ['198.18.2.0/24: 40 addresses answered every port alike (a middlebox): not counted as hosts'], incomplete: ['snmp 198.18.1.1: walk cut short'],
  probes_sent: 1790,
};

describe('daemons: scan now, cancel and the run\'s report', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let lan: any;

  const path = (id = d.id) => `/api/v1/daemons/${id}/sessions`;
  const scanNow = (auth: Credential = t.owner, id = d.id) => call(app.url, 'POST', path(id), { auth });
  const cancel = (sessionId: string, auth: Credential = t.owner, id = d.id) => call(app.url, 'POST', `${path(id)}/${sessionId}/cancel`, { auth });
  const sessions = async () => expectOk(await call(app.url, 'GET', path(), { auth: t.owner })) as any[];
  const sessionOf = async (id: string) => (await sessions()).find((s) => s.id === id);
  const requestWork = async () => expectOk(await d.post(`/api/daemons/${d.id}/request-work`, STATUS)) as [any, boolean];
  const update = async (work: any, change: Record<string, unknown>) => expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, ...change }));
  const complete = (work: any, extra: Record<string, unknown> = {}) => update(work, { phase: 'Complete', progress: 100, finished_at: new Date().toISOString(), ...extra });
  const approveLan = async () => expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
  /** Runs the session every new daemon gets (SelfReport), approves its subnet and runs the Network session that queues, so the queue is empty. */
  const runDefaults = async () => {
    const [selfReport] = await requestWork();
    expect(selfReport.discovery_type.type).to.equal('SelfReport');
    await complete(selfReport);
    await approveLan();
    const [network] = await requestWork();
    expect(network.discovery_type.type).to.equal('Network');
    await complete(network);
  };

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'sessions');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    lan = await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
    expectOk(await d.post(`/api/daemons/${d.id}/update-capabilities`, { has_docker_socket: false, interfaced_subnet_ids: [lan.id] }));
  });
  afterEach(() => app.close());

  it('scan now queues a Network session that request-work hands out with the approved targets; 409 with no target approved, and while one is pending or running', async () => {
    // Nothing approved: nothing to scan, said in the envelope.
    const nothing = await scanNow();
    expectError(nothing, 409, 'discovery_no_target');
    expect(nothing.body.params).to.deep.equal({ daemon_id: d.id });
    expect(nothing.body.error).to.contain('Approve a subnet first');
    // The first approval queued a Network session: still pending, no second one.
    await approveLan();
    const pending = (await sessions()).find((s) => s.discovery_type.type === 'Network');
    const refused = await scanNow();
    expectError(refused, 409, 'discovery_session_active');
    expect(refused.body.params).to.include({ session_id: pending.id, phase: 'Pending' });
    await runDefaults();

    const admin = await createUser(app.url, t.owner, 'Admin');
    const queued = expectOk(await scanNow(admin.auth), 201);
    expect(queued).to.include({ daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Pending', progress: 0, cancel_requested: false, report: null });
    expect(queued.discovery_type).to.include({ type: 'Network', subnet_ids: null }); // filled in at hand-out
    expect((await sessions())[0]).to.deep.equal(queued);
    expectError(await scanNow(), 409, 'discovery_session_active');

    const [work, cancelFlag] = await requestWork();
    expect(cancelFlag).to.equal(false);
    expect(work.session_id).to.equal(queued.id);
    expect(work.discovery_type).to.deep.include({ type: 'Network', subnet_ids: [lan.id] });
    const running = await scanNow();
    expectError(running, 409, 'discovery_session_active');
    expect(running.body.params).to.include({ session_id: queued.id, phase: 'Starting' });

    await update(work, { phase: 'Scanning', progress: 40, started_at: new Date().toISOString() });
    expect(await sessionOf(queued.id)).to.include({ phase: 'Scanning', progress: 40 });
    await complete(work);
    const again = expectOk(await scanNow(), 201); // the last one ended: a new one
    expect(again.id).to.not.equal(queued.id);
  });

  it('a Viewer or a Member may not scan nor cancel (403); another daemon\'s session or an unknown one is not found (404)', async () => {
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    await approveLan();
    const pending = (await sessions()).find((s) => s.phase === 'Pending' && s.discovery_type.type === 'Network')!;
    for (const who of [viewer, member]) {
      expectError(await scanNow(who.auth), 403, 'auth_permission_denied');
      expectError(await cancel(pending.id, who.auth), 403, 'auth_permission_denied');
    }
    expect((await sessionOf(pending.id)).phase).to.equal('Pending');
    expect(await sessions()).to.have.length(2); // SelfReport and the Network one the approval queued: nothing more

    const other = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(other, t.defaultNetworkId);
    expectError(await cancel(pending.id, t.owner, other.id), 404, 'entity_not_found');
    expectError(await cancel(randomUUID()), 404, 'entity_not_found');
    expect((await sessionOf(pending.id)).phase).to.equal('Pending');
  });

  it('cancel of a pending session ends it at once: never handed out; cancelled again, 409', async () => {
    await runDefaults();
    const queued = expectOk(await scanNow(), 201);
    const cancelled = expectOk(await cancel(queued.id), 202);
    expect(cancelled).to.include({ id: queued.id, phase: 'Cancelled', cancel_requested: false });
    expect(cancelled.finished_at).to.be.a('string');
    expect(await requestWork()).to.deep.equal([null, false]);
    const twice = await cancel(queued.id);
    expectError(twice, 409, 'discovery_session_finished');
    expect(twice.body.params).to.include({ id: queued.id, phase: 'Cancelled' });
    expectOk(await scanNow(), 201); // a cancelled scan does not block the next
  });

  it('cancel of a running session: request-work answers cancel true until the daemon\'s Cancelled update ends it', async () => {
    await runDefaults();
    const queued = expectOk(await scanNow(), 201);
    const [work] = await requestWork();
    await update(work, { phase: 'Scanning', progress: 40, started_at: new Date().toISOString() });

    const asked = expectOk(await cancel(queued.id), 202);
    expect(asked).to.include({ id: queued.id, phase: 'Scanning', cancel_requested: true, finished_at: null });
    expect(await requestWork()).to.deep.equal([null, true]);
    expect(await requestWork()).to.deep.equal([null, true]); // until the daemon says it stopped
    expectOk(await cancel(queued.id), 202); // asking again is harmless

    await update(work, { phase: 'Cancelled', progress: 40, finished_at: new Date().toISOString() });
    expect(await sessionOf(queued.id)).to.include({ phase: 'Cancelled' });
    expect(await requestWork()).to.deep.equal([null, false]);
    expectError(await cancel(queued.id), 409, 'discovery_session_finished');
  });

  it('the run\'s report our agent sends is stored and shown (kept by a later update without one); a bad report is refused whole', async () => {
    await runDefaults();
    const sent = await sessions();
    expect(sent.map((s) => s.report)).to.deep.equal([null, null]); // Scanopy's updates: no report
    const queued = expectOk(await scanNow(), 201);
    const [work] = await requestWork();
    await update(work, { phase: 'Scanning', progress: 90, report: { ...REPORT, warnings: [] } });
    expect((await sessionOf(queued.id)).report).to.deep.equal({ ...REPORT, warnings: [] });
    await complete(work, { report: REPORT });
    expect(await sessionOf(queued.id)).to.deep.include({ phase: 'Complete', report: REPORT });

    // A later run: its progress without a report keeps none; its Complete brings its own.
    expectOk(await scanNow(), 201);
    const [next] = await requestWork();
    await update(next, { phase: 'Scanning', progress: 10, report: REPORT });
    await update(next, { phase: 'Scanning', progress: 20 }); // no report: the last one stays
    expect((await sessionOf(next.session_id)).report).to.deep.equal(REPORT);

    const bad: Array<[string, unknown]> = [
      ['an unknown key', { ...REPORT, extra: 1 }],
      ['a missing field', { ...REPORT, probes_sent: undefined }],
      ['101 warnings', { ...REPORT, warnings: Array.from({ length: 101 }, (_, i) => `w${i}`) }],
      ['a warning of 501 characters', { ...REPORT, warnings: ['x'.repeat(501)] }],
      ['an incomplete entry of 501 characters', { ...REPORT, incomplete: ['x'.repeat(501)] }],
      ['a negative count', { ...REPORT, alive_by_evidence: { tcp_connect: -1 } }],
      ['a count that is not an integer', { ...REPORT, services_by_rule: { http: 1.5 } }],
      ['a fractional addresses_tried', { ...REPORT, addresses_tried: 2.5 }],
    ];
    for (const [what, report] of bad) {
      const res = await d.post(`/api/v1/discovery/${next.session_id}/update`, { ...next, phase: 'Complete', progress: 100, report });
      expect(res.status, what).to.equal(400);
    }
    expect(await sessionOf(next.session_id)).to.include({ phase: 'Scanning', progress: 20 });
  });

  it('the server_poll poller delivers a cancellation to the daemon (POST /api/discovery/cancel); its Cancelled progress ends the session', async function () {
    this.timeout(30_000);
    await app.close();
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] }); // the stand-in daemon listens on loopback
    t = await registerTenant(app.url, 'sessions-poll');
    const status = { name: 'poll-daemon', mode: 'server_poll', version: '0.14.13', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
    let progress: unknown = null;
    const respond: Responder = (req) => {
      if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(status) };
      if (req.path === '/api/poll') return { status: 200, body: envelope({ progress, entities: { hosts: [], subnets: [] } }) };
      if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
      if (req.path === '/api/discovery/cancel') return { status: 200, body: envelope(null) };
      return undefined;
    };
    const standIn = await startStandInDaemon(respond);
    const services = workerServicesFor(app, { serverPollTimeoutMs: 1000, serverPollAckWaitMs: 500 });
    try {
      const seeded = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: standIn.url });
      const list = async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${seeded.id}/sessions`, { auth: t.owner })) as any[];
      const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.3.0/24', name: 'lab', network_id: t.defaultNetworkId } }), 201);
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${seeded.id}/targets`, { auth: t.owner, body: { subnet_id: subnet.id } }));
      expect((await pollDaemon(services, seeded.id)).initiated).to.have.length(1); // first contact: SelfReport, then the Network one (a subnet is approved) waits
      const [network, selfReport] = await list();
      // The SelfReport runs: cancelling it reaches the daemon on the next cycle.
      expect(expectOk(await call(app.url, 'POST', `/api/v1/daemons/${seeded.id}/sessions/${selfReport.id}/cancel`, { auth: t.owner }), 202).cancel_requested).to.equal(true);
      // The pending Network one is cancelled here and now, with nothing sent.
      expect(expectOk(await call(app.url, 'POST', `/api/v1/daemons/${seeded.id}/sessions/${network.id}/cancel`, { auth: t.owner }), 202).phase).to.equal('Cancelled');
      expect((await pollDaemon(services, seeded.id)).cancelled).to.deep.equal([selfReport.id]);
      expect(standIn.requests.filter((r) => r.path === '/api/discovery/cancel').map((r) => r.body)).to.deep.equal([selfReport.id]);
      progress = {
        session_id: selfReport.id, daemon_id: seeded.id, network_id: t.defaultNetworkId, phase: 'Cancelled', discovery_type: selfReport.discovery_type,
        progress: 10, error: null, started_at: null, finished_at: new Date().toISOString(), report: REPORT,
      };
      await pollDaemon(services, seeded.id);
      const after = await list();
      expect(after.find((s) => s.id === selfReport.id)).to.deep.include({ phase: 'Cancelled', report: REPORT });
      expect(after.find((s) => s.id === network.id)!.phase).to.equal('Cancelled');
      expect(standIn.requests.filter((r) => r.path === '/api/discovery/initiate')).to.have.length(1); // the cancelled Network never went out
    } finally {
      await standIn.close();
      await services.close();
    }
  });
});
