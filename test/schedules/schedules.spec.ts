// Discovery schedules through HTTP (issue 39.1): CRUD under a daemon, validation (exactly one of
// every_minutes and cron, a cron expression and an IANA time zone that parse, jitter 0..3600),
// roles (Viewers read, Admins write) and tenancy (another organization's daemon or schedule: 404).
// The runs themselves: test/schedules/scheduler.spec.ts.
import { expect } from 'chai';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { postSubnet } from '../discovery/reports.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../daemons/world.js';

describe('discovery schedules: the API', function () {
  this.timeout(30_000);
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;

  const path = (daemonId = d.id) => `/api/v1/daemons/${daemonId}/schedules`;
  const create = (body: Record<string, unknown>, auth: Credential = t.owner, daemonId = d.id) => call(app.url, 'POST', path(daemonId), { auth, body });

  beforeEach(async () => {
    app = await startTestApp(FIXTURE_BUILDING);
    t = await registerTenant(app.url, 'schedules');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
  });
  afterEach(() => app.close());

  it('creates, lists, gets, changes and deletes a schedule', async () => {
    const before = Date.now();
    const made = expectOk(await create({ every_minutes: 15, jitter_seconds: 30 }), 201);
    expect(made).to.include({
      daemon_id: d.id, network_id: t.defaultNetworkId, every_minutes: 15, cron: null, timezone: 'UTC', jitter_seconds: 30, enabled: true,
      max_failures: 3, consecutive_failures: 0, disabled_reason: null, last_run_at: null, last_outcome: null, last_error: null, subnet_ids: null,
      description: 'every 15 minutes',
    });
    // The first run one interval after it is set.
    expect(Date.parse(made.next_run_at) - before).to.be.within(15 * 60_000 - 2000, 15 * 60_000 + 5000);

    const cron = expectOk(await create({ cron: '0 3 * * 1-5', timezone: 'Europe/Paris' }), 201);
    expect(cron).to.include({ every_minutes: null, cron: '0 3 * * 1-5', timezone: 'Europe/Paris', description: 'cron 0 3 * * 1-5 (Europe/Paris)' });
    const next = new Date(cron.next_run_at);
    // 03:00 in Paris is 01:00 or 02:00 UTC, a weekday.
    expect(next.getUTCMinutes()).to.equal(0);
    expect([1, 2]).to.include(next.getUTCHours());
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', weekday: 'short' }).format(next)).to.be.oneOf(['Mon', 'Tue', 'Wed', 'Thu', 'Fri']);

    const list = expectOk(await call(app.url, 'GET', path(), { auth: t.owner }));
    expect(list.map((s: { id: string }) => s.id)).to.deep.equal([made.id, cron.id]);
    expect(expectOk(await call(app.url, 'GET', `${path()}/${made.id}`, { auth: t.owner }))).to.deep.equal(made);

    // Disabled: no next run. Re-timed to a cron expression: every_minutes cleared.
    const off = expectOk(await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: t.owner, body: { enabled: false } }));
    expect(off).to.include({ enabled: false, next_run_at: null, disabled_reason: null });
    const retimed = expectOk(await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: t.owner, body: { cron: '*/30 * * * *', enabled: true } }));
    expect(retimed).to.include({ every_minutes: null, cron: '*/30 * * * *', enabled: true, jitter_seconds: 30 });
    expect(retimed.next_run_at).to.be.a('string');
    expect(new Date(retimed.next_run_at).getUTCMinutes() % 30).to.equal(0);

    expectOk(await call(app.url, 'DELETE', `${path()}/${made.id}`, { auth: t.owner }));
    expectError(await call(app.url, 'GET', `${path()}/${made.id}`, { auth: t.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `${path()}/${made.id}`, { auth: t.owner }), 404, 'entity_not_found');
    expect(expectOk(await call(app.url, 'GET', path(), { auth: t.owner })).map((s: { id: string }) => s.id)).to.deep.equal([cron.id]);
  });

  it('a subset of subnets names subnets of the daemon’s network', async () => {
    const lan = await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
    const made = expectOk(await create({ every_minutes: 60, subnet_ids: [lan.id] }), 201);
    expect(made.subnet_ids).to.deep.equal([lan.id]);
    expectError(await create({ every_minutes: 60, subnet_ids: ['00000000-0000-4000-8000-000000000001'] }), 400, 'entity_reference_invalid');
  });

  it('refuses what does not validate (400)', async () => {
    const refused: Array<[Record<string, unknown>, string]> = [
      [{}, 'every_minutes'],
      [{ every_minutes: 5, cron: '* * * * *' }, 'not both'],
      [{ every_minutes: 0 }, 'every_minutes'],
      [{ every_minutes: 1.5 }, 'every_minutes'],
      [{ cron: '61 * * * *' }, 'cron'],
      [{ cron: 'every day' }, 'cron'],
      [{ cron: '* * * *' }, 'cron'],
      [{ cron: '*/10 * * * * *' }, 'seconds'],
      [{ cron: '0 3 * * *', timezone: 'Mars/Olympus_Mons' }, 'time zone'],
      [{ every_minutes: 5, jitter_seconds: 3601 }, 'jitter_seconds'],
      [{ every_minutes: 5, jitter_seconds: -1 }, 'jitter_seconds'],
      [{ every_minutes: 5, max_failures: 0 }, 'max_failures'],
      [{ every_minutes: 5, subnet_ids: [] }, 'subnet_ids'],
    ];
    for (const [body, says] of refused) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(JSON.stringify(res.body), JSON.stringify(body)).to.contain(says);
    }
    expectError(await create({ every_minutes: 5, nope: 1 }), 400, 'validation_unknown_field');
    const made = expectOk(await create({ every_minutes: 5 }), 201);
    expect((await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: t.owner, body: { cron: 'bad' } })).status).to.equal(400);
    expect((await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: t.owner, body: {} })).status).to.equal(400);
    expect((await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: t.owner, body: { every_minutes: 5, cron: '* * * * *' } })).status).to.equal(400);
    expect(expectOk(await call(app.url, 'GET', `${path()}/${made.id}`, { auth: t.owner }))).to.include({ every_minutes: 5, cron: null });
  });

  it('Viewers read; Admins write (403 for the others)', async () => {
    const admin = await createUser(app.url, t.owner, 'Admin');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const made = expectOk(await create({ every_minutes: 10 }, admin.auth), 201);
    for (const who of [member, viewer]) {
      expect(expectOk(await call(app.url, 'GET', path(), { auth: who.auth }))).to.have.length(1);
      expectOk(await call(app.url, 'GET', `${path()}/${made.id}`, { auth: who.auth }));
      expectError(await create({ every_minutes: 10 }, who.auth), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: who.auth, body: { enabled: false } }), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'DELETE', `${path()}/${made.id}`, { auth: who.auth }), 403, 'auth_permission_denied');
    }
    expectOk(await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: admin.auth, body: { enabled: false } }));
    expectOk(await call(app.url, 'DELETE', `${path()}/${made.id}`, { auth: admin.auth }));
    expectError(await call(app.url, 'GET', path(), {}), 401, 'auth_not_authenticated');
  });

  it('another organization’s daemon and schedule are not found (404)', async () => {
    const made = expectOk(await create({ every_minutes: 10 }), 201);
    const other = await registerTenant(app.url, 'other');
    expectError(await call(app.url, 'GET', path(), { auth: other.owner }), 404, 'entity_not_found');
    expectError(await create({ every_minutes: 10 }, other.owner), 404, 'entity_not_found');
    expectError(await call(app.url, 'GET', `${path()}/${made.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'PATCH', `${path()}/${made.id}`, { auth: other.owner, body: { enabled: false } }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `${path()}/${made.id}`, { auth: other.owner }), 404, 'entity_not_found');
    // Its own daemon does not reach this schedule either.
    const od = daemonClient(app.url, (await createDaemonKey(app.url, other.owner, other.defaultNetworkId)).key);
    await registerDaemon(od, other.defaultNetworkId);
    expectError(await call(app.url, 'GET', `${path(od.id)}/${made.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `${path(od.id)}/${made.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expect(expectOk(await call(app.url, 'GET', `${path()}/${made.id}`, { auth: t.owner }))).to.include({ enabled: true });
  });
});
