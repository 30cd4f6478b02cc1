// Custom service definitions (issue 38.6) through HTTP: CRUD, roles (Admin/Owner write, every member
// reads), tenancy (another organization neither sees nor changes them), the safe-pattern check (a
// catastrophic pattern is 400 naming match.pattern) and the ports limit (64 accepted, 65 refused).
import { expect } from 'chai';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { postSubnet } from '../discovery/reports.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';

const PATH = '/api/v1/service_definitions';
const definition = (over: Record<string, unknown> = {}) => ({
  name: 'Acme console', category: 'Web', icon: 'server', ports: [8080],
  probe: { type: 'http', path: '/status' }, match: { field: 'body', pattern: 'acme-console v\\d+' }, ...over,
});

describe('service definitions', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  // A clean app per test: its own rate buckets too (sign-ups and logins are anonymous requests from
  // one address, 10 at once: the tests together register more tenants than that).
  beforeEach(async () => {
    app = await startTestApp(FIXTURE_BUILDING);
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('creates, lists, gets, replaces and deletes a definition', async () => {
    const created = expectOk(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition() }), 201);
    expect(created).to.include({ name: 'Acme console', category: 'Web', icon: 'server', enabled: true, organization_id: t.orgId });
    expect(created.probe).to.deep.equal({ type: 'http', path: '/status' });
    expect(created.match).to.deep.equal({ field: 'body', pattern: 'acme-console v\\d+' });
    const list = await call(app.url, 'GET', PATH, { auth: t.owner });
    expect(expectOk(list).map((d: any) => d.id)).to.include(created.id);
    expect(list.body.meta.pagination.total_count).to.be.at.least(1);
    expect(expectOk(await call(app.url, 'GET', `${PATH}/${created.id}`, { auth: t.owner })).name).to.equal('Acme console');
    const replaced = expectOk(await call(app.url, 'PUT', `${PATH}/${created.id}`, {
      auth: t.owner, body: definition({ name: 'Acme banner', probe: { type: 'banner' }, match: { field: 'banner', pattern: '(?i)^acme ready' }, ports: [7000, 7001], enabled: false, icon: null }),
    }));
    expect(replaced).to.include({ name: 'Acme banner', enabled: false, icon: null });
    expect(replaced.probe).to.deep.equal({ type: 'banner' });
    expect(replaced.ports).to.deep.equal([7000, 7001]);
    expectOk(await call(app.url, 'DELETE', `${PATH}/${created.id}`, { auth: t.owner }));
    expectError(await call(app.url, 'GET', `${PATH}/${created.id}`, { auth: t.owner }), 404, 'entity_not_found');
  });

  it('a name is unique in the organization (409)', async () => {
    expectOk(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: 'Twice' }) }), 201);
    expectError(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: 'Twice' }) }), 409, 'entity_already_exists');
  });

  it('Admins write; Members and Viewers read only', async () => {
    const admin = await createUser(app.url, t.owner, 'Admin');
    const member = await createUser(app.url, t.owner, 'Member');
    const viewer = await createUser(app.url, t.owner, 'Viewer');
    const made = expectOk(await call(app.url, 'POST', PATH, { auth: admin.auth, body: definition({ name: 'By admin' }) }), 201);
    for (const who of [member, viewer]) {
      expect(expectOk(await call(app.url, 'GET', `${PATH}/${made.id}`, { auth: who.auth })).id).to.equal(made.id);
      expect(expectOk(await call(app.url, 'GET', PATH, { auth: who.auth })).map((d: any) => d.id)).to.include(made.id);
      expectError(await call(app.url, 'POST', PATH, { auth: who.auth, body: definition({ name: 'Not allowed' }) }), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'PUT', `${PATH}/${made.id}`, { auth: who.auth, body: definition({ name: 'Renamed' }) }), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'DELETE', `${PATH}/${made.id}`, { auth: who.auth }), 403, 'auth_permission_denied');
    }
    expectOk(await call(app.url, 'PUT', `${PATH}/${made.id}`, { auth: admin.auth, body: definition({ name: 'By admin, renamed' }) }));
    expectOk(await call(app.url, 'DELETE', `${PATH}/${made.id}`, { auth: admin.auth }));
  });

  it('another organization neither sees nor changes them (404, as an unknown id)', async () => {
    const mine = expectOk(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: 'Private' }) }), 201);
    const other = await registerTenant(app.url, 'other');
    expect(expectOk(await call(app.url, 'GET', PATH, { auth: other.owner })).map((d: any) => d.id)).not.to.include(mine.id);
    expectError(await call(app.url, 'GET', `${PATH}/${mine.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'PUT', `${PATH}/${mine.id}`, { auth: other.owner, body: definition({ name: 'Taken over' }) }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `${PATH}/${mine.id}`, { auth: other.owner }), 404, 'entity_not_found');
    // The same name is free in another organization.
    expectOk(await call(app.url, 'POST', PATH, { auth: other.owner, body: definition({ name: 'Private' }) }), 201);
    expect(expectOk(await call(app.url, 'GET', `${PATH}/${mine.id}`, { auth: t.owner })).name).to.equal('Private');
  });

  it('refuses a pattern that could backtrack without bound: 400 naming match.pattern, with the reason', async () => {
    for (const pattern of ['(a+)+$', '(a|ab)*c', '(\\w+)\\1', 'x(?=y)', '\\d+\\d+\\d+x']) {
      const res = await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: `Evil ${pattern}`, match: { field: 'body', pattern } }) });
      expectError(res, 400, 'validation_failed');
      expect(res.body.params.field, pattern).to.equal('match.pattern');
      expect(res.body.params.reason, pattern).to.match(/refused: .*(exponential|backreference|lookaround|polynomial)/);
    }
    // Nothing was stored; the same definition with a safe pattern is taken.
    expectOk(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: 'Evil fixed', match: { field: 'body', pattern: 'a+$' } }) }), 201);
  });

  it('takes exactly 64 ports and refuses 65; a banner match needs a banner probe', async () => {
    const ports = Array.from({ length: 65 }, (_, i) => 10000 + i);
    expectOk(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: '64 ports', ports: ports.slice(0, 64) }) }), 201);
    const over = await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: '65 ports', ports }) });
    expectError(over, 400, 'validation_failed');
    expect(over.body.params.field).to.equal('ports');
    expect(expectOk(await call(app.url, 'GET', PATH, { auth: t.owner })).map((d: any) => d.name)).not.to.include('65 ports');
    for (const bad of [{ ports: [] }, { ports: [0] }, { ports: [65536] }, { icon: 'not-an-icon' }, { probe: { type: 'http', path: 'no-slash' } },
      { match: { field: 'banner', pattern: 'x' } }, { match: { field: 'cookie', pattern: 'x' } }]) {
      expectError(await call(app.url, 'POST', PATH, { auth: t.owner, body: definition({ name: 'Bad', ...bad }) }), 400, 'validation_failed');
    }
  });

  it('a Network discovery\'s work carries the organization\'s enabled definitions (request-work), others\' and disabled ones not', async () => {
    const tenant = await registerTenant(app.url, 'work');
    const enabled = expectOk(await call(app.url, 'POST', PATH, { auth: tenant.owner, body: definition({ name: 'Sent' }) }), 201);
    expectOk(await call(app.url, 'POST', PATH, { auth: tenant.owner, body: definition({ name: 'Off', enabled: false }) }), 201);
    const other = await registerTenant(app.url, 'work-other');
    expectOk(await call(app.url, 'POST', PATH, { auth: other.owner, body: definition({ name: 'Not theirs' }) }), 201);
    const d = daemonClient(app.url, (await createDaemonKey(app.url, tenant.owner, tenant.defaultNetworkId)).key);
    await registerDaemon(d, tenant.defaultNetworkId);
    const lan = await postSubnet(d, tenant.defaultNetworkId, '198.18.7.0/24');
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: tenant.owner, body: { subnet_id: lan.id } }));
    const status = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
    const [selfReport] = expectOk(await d.post(`/api/daemons/${d.id}/request-work`, status));
    expect(selfReport.discovery_type.type).to.equal('SelfReport');
    expect(selfReport.discovery_type).not.to.have.property('service_definitions');
    expectOk(await d.post(`/api/v1/discovery/${selfReport.session_id}/update`, { ...selfReport, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    const [work] = expectOk(await d.post(`/api/daemons/${d.id}/request-work`, status));
    expect(work.discovery_type.type).to.equal('Network');
    expect(work.discovery_type.service_definitions).to.deep.equal([{
      id: enabled.id, name: 'Sent', category: 'Web', icon: 'server', ports: [8080], probe: { type: 'http', path: '/status' }, match: { field: 'body', pattern: 'acme-console v\\d+' },
    }]);
  });
});
