// Approved targets per daemon (issue 24.8): the subnets a daemon reported being on are suggestions;
// an Admin approves some (GET/POST/DELETE /api/v1/daemons/:id/targets), and a Network discovery of
// "every subnet" goes out with the approved ones (request-work, and the server_poll poller's initiate).
// A daemon gets no Network discovery before its first approved subnet, which queues one.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { postSubnet } from '../discovery/reports.js';
import { envelope, seedDaemon, startStandInDaemon, workerServicesFor, type Responder } from '../workers/support.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from './world.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };

describe('daemons: approved targets', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let lan: any;
  let dmz: any;

  const targets = async (id = d.id) => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${id}/targets`, { auth: t.owner }));
  const approve = (body: unknown, auth = t.owner) => call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth, body });
  const revoke = (subnetId: string) => call(app.url, 'DELETE', `/api/v1/daemons/${d.id}/targets/${subnetId}`, { auth: t.owner });
  const requestWork = () => d.post(`/api/daemons/${d.id}/request-work`, STATUS);
  const sessions = async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner })) as any[];
  const scanNow = () => call(app.url, 'POST', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner });
  /** The daemon ends the session it was handed (Complete). */
  const complete = async (work: any) => expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, {
    ...work, phase: 'Complete', progress: 100, finished_at: new Date().toISOString(),
  }));

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'targets');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    // Its SelfReport: the subnets it is on, as the server stored them.
    lan = await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
    dmz = await postSubnet(d, t.defaultNetworkId, '198.18.2.0/24');
    expectOk(await d.post(`/api/daemons/${d.id}/update-capabilities`, { has_docker_socket: false, interfaced_subnet_ids: [dmz.id, lan.id] }));
  });
  afterEach(() => app.close());

  it('suggests the subnets the daemon reported; an Admin approves (by id or CIDR, twice is once) and revokes; the record keeps who and when', async () => {
    expect(await targets()).to.deep.equal({
      approved: [],
      suggested: [{ subnet_id: lan.id, cidr: '198.18.1.0/24', name: lan.name }, { subnet_id: dmz.id, cidr: '198.18.2.0/24', name: dmz.name }],
    });

    const admin = await createUser(app.url, t.owner, 'Admin');
    const first = expectOk(await approve({ subnet_id: lan.id }, admin.auth));
    expect(first).to.include({ subnet_id: lan.id, cidr: '198.18.1.0/24', approved_by: admin.id });
    expect(Date.parse(first.approved_at)).to.be.closeTo(Date.now(), 60_000);
    expect(expectOk(await approve({ subnet_id: lan.id }))).to.deep.equal(first); // the first approval stays
    const byCidr = expectOk(await approve({ cidr: '198.18.2.0/24' }));
    expect(byCidr).to.include({ subnet_id: dmz.id, approved_by: t.ownerId });
    expect(await targets()).to.deep.equal({ approved: [first, byCidr], suggested: [] });

    // A subnet the daemon is not on (a routed one) may be approved too; what is not a subnet of its network may not.
    const routed = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.19.0.0/24', name: 'routed', network_id: t.defaultNetworkId } }), 201);
    expect(expectOk(await approve({ cidr: '198.19.0.0/24' })).subnet_id).to.equal(routed.id);
    expectError(await approve({ cidr: '198.19.9.0/24' }), 400, 'entity_reference_invalid'); // never created by an approval
    expectError(await approve({ subnet_id: randomUUID() }), 400, 'entity_reference_invalid');
    const other = await createNetwork(app.url, t.owner, 'Other');
    const elsewhere = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.1.0/24', name: 'x', network_id: other } }), 201);
    expectError(await approve({ subnet_id: elsewhere.id }), 400, 'entity_network_mismatch');
    expectError(await approve({ subnet_id: lan.id, cidr: '198.18.1.0/24' }), 400, 'validation_failed');
    expectError(await approve({}), 400, 'validation_failed');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expectError(await approve({ subnet_id: lan.id }, member.auth), 403, 'auth_permission_denied');

    expectOk(await revoke(lan.id));
    expectError(await revoke(lan.id), 404, 'entity_not_found');
    const after = await targets();
    expect(after.approved.map((a: any) => a.subnet_id)).to.deep.equal([dmz.id, routed.id]);
    expect(after.suggested).to.deep.equal([{ subnet_id: lan.id, cidr: '198.18.1.0/24', name: lan.name }]);
    const records = await sql(app, `select approved_by, revoked_by, revoked_at from daemon_targets where subnet_id = ?`, [lan.id]);
    expect(records).to.have.length(1);
    expect(records[0]).to.include({ approved_by: admin.id, revoked_by: t.ownerId });
    expect(records[0]!.revoked_at).to.not.equal(null);
    // Approved again: a new record, the revoked one kept.
    expect(expectOk(await approve({ subnet_id: lan.id })).approved_by).to.equal(t.ownerId);
    expect(await sql(app, `select id from daemon_targets where subnet_id = ?`, [lan.id])).to.have.length(2);
  });

  it('an approval says what else the daemon may do there: SNMP public (on by default), 9100–9107 (off by default); an Admin changes it, and the work carries it', async () => {
    const update = (subnetId: string, body: unknown, auth = t.owner) => call(app.url, 'PATCH', `/api/v1/daemons/${d.id}/targets/${subnetId}`, { auth, body });
    expect(expectOk(await approve({ subnet_id: lan.id }))).to.include({ snmp_public: true, probe_raw_socket_ports: false });
    expect(expectOk(await approve({ subnet_id: dmz.id, snmp_public: false, probe_raw_socket_ports: true }))).to.include({ snmp_public: false, probe_raw_socket_ports: true });
    const changed = expectOk(await update(lan.id, { probe_raw_socket_ports: true }));
    expect(changed).to.include({ subnet_id: lan.id, snmp_public: true, probe_raw_socket_ports: true });
    expectError(await update(lan.id, {}), 400, 'validation_failed');
    expectError(await update(lan.id, { snmp_public: 'yes please' }), 400, 'validation_failed');
    expectError(await update(randomUUID(), { snmp_public: false }), 404, 'entity_not_found');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expectError(await update(lan.id, { snmp_public: false }, member.auth), 403, 'auth_permission_denied');
    const [selfReport] = expectOk(await requestWork());
    await complete(selfReport);
    const [work] = expectOk(await requestWork());
    expect(work.discovery_type.target_options).to.deep.equal([
      { subnet_id: lan.id, snmp_public: true, probe_raw_socket_ports: true }, { subnet_id: dmz.id, snmp_public: false, probe_raw_socket_ports: true }]);
  });

  it('no Network discovery is queued before a subnet is approved; the first approval queues one, which goes out with the approved subnets', async () => {
    const [selfReport] = expectOk(await requestWork());
    expect(selfReport.discovery_type.type).to.equal('SelfReport');
    await complete(selfReport);
    expect(expectOk(await requestWork())).to.deep.equal([null, false]); // nothing approved: nothing to scan, no Network session
    expect((await sessions()).map((s) => s.discovery_type.type)).to.deep.equal(['SelfReport']);
    expectError(await scanNow(), 409, 'discovery_no_target');

    // The first approval queues the scan; the second does not queue another (the queued one takes both).
    expectOk(await approve({ subnet_id: dmz.id }));
    expectOk(await approve({ subnet_id: lan.id }));
    const gone = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.9.0/24', name: 'gone', network_id: t.defaultNetworkId } }), 201);
    expectOk(await approve({ subnet_id: gone.id }));
    expectOk(await call(app.url, 'DELETE', `/api/v1/subnets/${gone.id}`, { auth: t.owner })); // deleted since its approval: not handed out
    const queued = (await sessions()).filter((s) => s.discovery_type.type === 'Network');
    expect(queued.map((s) => s.phase)).to.deep.equal(['Pending']);
    expect(queued[0].discovery_type.subnet_ids).to.equal(null);
    const [work] = expectOk(await requestWork());
    expect(work.session_id).to.equal(queued[0].id);
    const defaults = { snmp_public: true, probe_raw_socket_ports: false };
    expect(work.discovery_type).to.deep.equal({
      ...queued[0].discovery_type, subnet_ids: [dmz.id, lan.id], target_options: [{ subnet_id: dmz.id, ...defaults }, { subnet_id: lan.id, ...defaults }],
    });
    const stored = await sql(app, `select discovery_type from discovery_sessions where id = ?`, [work.session_id]);
    expect(stored[0]!.discovery_type.subnet_ids).to.equal(null); // the approvals count when it is handed out
    await complete(work);
    expectOk(await approve({ subnet_id: lan.id })); // not the first any more: nothing queued
    expect(expectOk(await requestWork())).to.deep.equal([null, false]);

    // Every approval revoked, then one again: the daemon had nothing to scan, so that one queues a scan.
    expectOk(await revoke(dmz.id));
    expectOk(await revoke(lan.id));
    expectOk(await approve({ subnet_id: lan.id }));
    expect(expectOk(await requestWork())[0].discovery_type.subnet_ids).to.deep.equal([lan.id]);

    // An explicit list is the operator's: left as it is.
    const explicit = randomUUID();
    await sql(app, `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type) values (?, ?, ?, ?, ?::jsonb)`,
      [explicit, t.orgId, t.defaultNetworkId, d.id, JSON.stringify({ ...queued[0].discovery_type, subnet_ids: [dmz.id] })]);
    await sql(app, `update discovery_sessions set phase = 'Complete' where daemon_id = ? and phase = 'Starting'`, [d.id]);
    expect(expectOk(await requestWork())[0].discovery_type.subnet_ids).to.deep.equal([dmz.id]);
  });

  it('the server_poll poller initiates a Network discovery with the approved subnets', async function () {
    this.timeout(30_000);
    await app.close();
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] }); // the stand-in daemon listens on loopback
    t = await registerTenant(app.url, 'targets-poll');
    const status = { name: 'poll-daemon', mode: 'server_poll', version: '0.14.13', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
    const respond: Responder = (req) => {
      if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(status) };
      if (req.path === '/api/poll') return { status: 200, body: envelope({ progress: null, entities: { hosts: [], subnets: [] } }) };
      if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
      return undefined;
    };
    const standIn = await startStandInDaemon(respond);
    const services = workerServicesFor(app, { serverPollTimeoutMs: 1000, serverPollAckWaitMs: 500 });
    try {
      const seeded = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: standIn.url });
      const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.3.0/24', name: 'lab', network_id: t.defaultNetworkId } }), 201);
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${seeded.id}/targets`, { auth: t.owner, body: { subnet_id: subnet.id } }));
      expect((await pollDaemon(services, seeded.id)).initiated).to.have.length(1); // SelfReport first
      await sql(app, `update discovery_sessions set phase = 'Complete' where daemon_id = ? and discovery_type->>'type' = 'SelfReport'`, [seeded.id]);
      expect((await pollDaemon(services, seeded.id)).initiated).to.have.length(1);
      const initiates = standIn.requests.filter((r) => r.path === '/api/discovery/initiate').map((r) => r.body as any);
      expect(initiates.map((b) => b.discovery_type.type)).to.deep.equal(['SelfReport', 'Network']);
      expect(initiates[1].discovery_type.subnet_ids).to.deep.equal([subnet.id]);
    } finally {
      await standIn.close();
      await services.close();
    }
  });
});
