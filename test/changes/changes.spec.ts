// What each scan changed (issue 39.4) through HTTP: the ended Network scans of a network, newest
// first, each with its new, gone, changed, offline and back-online hosts (written when the session
// ends), acknowledged by a Member (the first acknowledgement stays), filtered to the unacknowledged;
// another organization's scan is 404 and a Viewer may read but not acknowledge.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';

describe('changes: what each scan changed, acknowledged', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  const ids = { a: randomUUID(), b: randomUUID(), c: randomUUID() };

  const run = async (hosts: Array<[string, string, string, number?]>) => {
    const id = randomUUID();
    const type = { type: 'Network', subnet_ids: [lan.id], host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false };
    const update = { session_id: id, daemon_id: d.id, network_id: net, phase: 'Scanning', discovery_type: type, progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
    expectOk(await d.post(`/api/v1/discovery/${id}/update`, update));
    for (const [hostId, name, ip, port] of hosts) {
      await postHost(d, hostReport(d, net, { hostId, name, hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: ip }], ports: [{ number: port ?? 22 }], services: [{ name: 'SSH', ports: [port ?? 22] }] }));
    }
    expectOk(await d.post(`/api/v1/discovery/${id}/update`, { ...update, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    return id;
  };
  const list = async (query = '') => expectOk(await call(app.url, 'GET', `/api/v1/changes?network_id=${net}${query}`, { auth: t.owner })) as any[];

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'changes');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key, randomUUID());
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.40.0.0/24');
  });
  afterEach(() => app.close());

  it('lists each scan with what appeared, went offline, changed and came back, newest first; a Member acknowledges it once', async () => {
    const first = await run([[ids.a, 'alpha', '10.40.0.1'], [ids.b, 'bravo', '10.40.0.2']]);
    const second = await run([[ids.a, 'alpha', '10.40.0.1', 2222], [ids.c, 'charlie', '10.40.0.3']]); // bravo missed, alpha's port changed, charlie new
    const third = await run([[ids.a, 'alpha', '10.40.0.1', 2222], [ids.b, 'bravo', '10.40.0.2'], [ids.c, 'charlie', '10.40.0.3']]); // bravo back
    const scans = await list();
    expect(scans.map((s) => s.session_id)).to.deep.equal([third, second, first]);
    const names = (xs: Array<{ name: string }> | undefined) => (xs ?? []).map((x) => x.name);
    expect(scans[1].summary).to.include({ hosts_new: 1, hosts_offline: 1, hosts_changed: 1 });
    expect([names(scans[1].summary.new_hosts), names(scans[1].summary.offline_hosts), names(scans[1].summary.changed_hosts)]).to.deep.equal([['charlie'], ['bravo'], ['alpha']]);
    expect(names(scans[0].summary.back_online_hosts)).to.deep.equal(['bravo']);
    expect(scans[0].summary.hosts_back_online).to.equal(1);
    expect(scans[0]).to.include({ daemon_id: d.id, phase: 'Complete', acknowledged_at: null, acknowledged_by: null });

    const member = await createUser(app.url, t.owner, 'Member', [net]);
    const viewer = await createUser(app.url, t.owner, 'Viewer', [net]);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/changes?network_id=${net}`, { auth: viewer.auth })).length).to.equal(3);
    expectError(await call(app.url, 'POST', `/api/v1/changes/${second}/acknowledge`, { auth: viewer.auth }), 403, 'auth_permission_denied');
    const acked = expectOk(await call(app.url, 'POST', `/api/v1/changes/${second}/acknowledge`, { auth: member.auth }));
    expect(acked).to.include({ session_id: second, acknowledged_by: member.id });
    const again = expectOk(await call(app.url, 'POST', `/api/v1/changes/${second}/acknowledge`, { auth: t.owner }));
    expect(again).to.include({ acknowledged_by: member.id, acknowledged_at: acked.acknowledged_at }); // the first stays
    expect((await list('&unacknowledged=true')).map((s) => s.session_id)).to.deep.equal([third, first]);
  });

  it('another organization neither sees nor acknowledges a scan; an unknown one is 404', async () => {
    const scan = await run([[ids.a, 'alpha', '10.40.0.1']]);
    const other = await registerTenant(app.url, 'other');
    expect(expectOk(await call(app.url, 'GET', '/api/v1/changes', { auth: other.owner }))).to.deep.equal([]);
    expectError(await call(app.url, 'GET', `/api/v1/changes?network_id=${net}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'POST', `/api/v1/changes/${scan}/acknowledge`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'POST', `/api/v1/changes/${randomUUID()}/acknowledge`, { auth: t.owner }), 404, 'entity_not_found');
    expect((await list()).map((s) => s.acknowledged_at)).to.deep.equal([null]);
  });
});
