// Alert rules and alerts through HTTP (issue 39.4): CRUD of rules, validation (a known kind, the
// offline delay for host_offline only, quiet hours HH:MM in a known time zone, e-mail addresses,
// webhooks of the organization), roles (Viewers read, Admins write, Members acknowledge), networks
// out of a user's scope (403) and another organization's rules and alerts (404).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { sql } from '../daemons/world.js';

describe('alerts: rules and digests through HTTP', function () {
  this.timeout(30_000);
  let app: TestApp;
  let t: Tenant;
  const path = '/api/v1/alert_rules';
  const create = (body: Record<string, unknown>, auth: Credential = t.owner) => call(app.url, 'POST', path, { auth, body: { network_id: t.defaultNetworkId, ...body } });
  /** A digest as a session's end stores it (its evaluation: evaluation.spec.ts). */
  const digest = async (networkId = t.defaultNetworkId, orgId = t.orgId) => {
    const id = randomUUID();
    await sql(app, `insert into alerts (id, organization_id, network_id, items) values (?, ?, ?, ?::jsonb)`,
      [id, orgId, networkId, JSON.stringify([{ kind: 'host_new', host_id: randomUUID(), host_name: 'web', ip: '10.0.0.5' }])]);
    return id;
  };

  beforeEach(async () => {
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url, 'alert-rules');
  });
  afterEach(() => app.close());

  it('creates, lists, gets, replaces and deletes a rule', async () => {
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'chat', url: 'http://127.0.0.1:9/hook', preset: 'discord', event_types: ['alert.digest'] } }), 201);
    expect(hook.preset).to.equal('discord');
    const made = expectOk(await create({ kind: 'host_offline', offline_delay_minutes: 15, quiet_hours: { start: '22:00', end: '07:00', timezone: 'Europe/Paris' }, webhook_ids: [hook.id], email_to: ['ops@example.test'] }), 201);
    expect(made).to.include({ network_id: t.defaultNetworkId, kind: 'host_offline', enabled: true, offline_delay_minutes: 15 });
    expect(made).to.deep.include({ quiet_hours: { start: '22:00', end: '07:00', timezone: 'Europe/Paris' }, webhook_ids: [hook.id], email_to: ['ops@example.test'] });
    const plain = expectOk(await create({ kind: 'host_new' }), 201);
    expect(plain).to.deep.include({ offline_delay_minutes: 0, quiet_hours: null, webhook_ids: [], email_to: [] });

    expect(expectOk(await call(app.url, 'GET', `${path}?network_id=${t.defaultNetworkId}`, { auth: t.owner })).map((r: any) => r.id)).to.deep.equal([made.id, plain.id]);
    expect(expectOk(await call(app.url, 'GET', `${path}/${made.id}`, { auth: t.owner }))).to.deep.equal(made);
    const replaced = expectOk(await call(app.url, 'PUT', `${path}/${made.id}`, { auth: t.owner, body: { network_id: t.defaultNetworkId, kind: 'host_offline', enabled: false, email_to: [] } }));
    expect(replaced).to.deep.include({ enabled: false, offline_delay_minutes: 0, quiet_hours: null, webhook_ids: [], email_to: [] });
    expectOk(await call(app.url, 'DELETE', `${path}/${made.id}`, { auth: t.owner }));
    expectError(await call(app.url, 'GET', `${path}/${made.id}`, { auth: t.owner }), 404, 'entity_not_found');
    expect(expectOk(await call(app.url, 'GET', path, { auth: t.owner })).map((r: any) => r.id)).to.deep.equal([plain.id]);
  });

  it('refuses what does not validate (400)', async () => {
    const refused: Array<[Record<string, unknown>, string]> = [
      [{}, 'kind'],
      [{ kind: 'host_gone' }, 'kind'],
      [{ kind: 'host_new', offline_delay_minutes: 5 }, 'host_offline rules only'],
      [{ kind: 'host_offline', offline_delay_minutes: -1 }, 'offline_delay_minutes'],
      [{ kind: 'host_offline', offline_delay_minutes: 10081 }, 'offline_delay_minutes'],
      [{ kind: 'host_new', quiet_hours: { start: '25:00', end: '07:00' } }, 'start'],
      [{ kind: 'host_new', quiet_hours: { start: '22:00' } }, 'end'],
      [{ kind: 'host_new', quiet_hours: { start: '22:00', end: '07:00', timezone: 'Mars/Olympus_Mons' } }, 'time zone'],
      [{ kind: 'host_new', email_to: ['not an address'] }, 'email_to'],
      [{ kind: 'host_new', webhook_ids: ['nope'] }, 'webhook_ids'],
    ];
    for (const [body, says] of refused) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(JSON.stringify(res.body), JSON.stringify(body)).to.contain(says);
    }
    expectError(await create({ kind: 'host_new', webhook_ids: [randomUUID()] }), 400, 'entity_reference_invalid');
    expectError(await create({ kind: 'host_new', nope: 1 }), 400, 'validation_unknown_field');
    expectError(await create({ kind: 'host_new', network_id: randomUUID() }), 404, 'entity_not_found');
    const made = expectOk(await create({ kind: 'host_new' }), 201);
    const lab = await createNetwork(app.url, t.owner, 'Lab');
    expectError(await call(app.url, 'PUT', `${path}/${made.id}`, { auth: t.owner, body: { network_id: lab, kind: 'host_new' } }), 400, 'validation_failed');
    expectError(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'x', url: 'http://127.0.0.1:9/', preset: 'pager' } }), 400, 'validation_failed');
  });

  it('Viewers read rules and digests; Admins write rules; Members acknowledge; a network out of scope is 403', async () => {
    const admin = await createUser(app.url, t.owner, 'Admin');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const made = expectOk(await create({ kind: 'host_new' }, admin.auth), 201);
    const alert = await digest();
    for (const who of [member, viewer]) {
      expect(expectOk(await call(app.url, 'GET', path, { auth: who.auth }))).to.have.length(1);
      expectOk(await call(app.url, 'GET', `${path}/${made.id}`, { auth: who.auth }));
      expect(expectOk(await call(app.url, 'GET', '/api/v1/alerts', { auth: who.auth }))).to.have.length(1);
      expectError(await create({ kind: 'host_new' }, who.auth), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'PUT', `${path}/${made.id}`, { auth: who.auth, body: { network_id: t.defaultNetworkId, kind: 'host_new' } }), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'DELETE', `${path}/${made.id}`, { auth: who.auth }), 403, 'auth_permission_denied');
    }
    expectError(await call(app.url, 'POST', `/api/v1/alerts/${alert}/acknowledge`, { auth: viewer.auth }), 403, 'auth_permission_denied');
    expect(expectOk(await call(app.url, 'POST', `/api/v1/alerts/${alert}/acknowledge`, { auth: member.auth })).acknowledged_by).to.equal(member.id);

    // Another network of the organization that the member does not see.
    const lab = await createNetwork(app.url, t.owner, 'Lab');
    const hidden = expectOk(await create({ kind: 'host_new', network_id: lab }), 201);
    const hiddenAlert = await digest(lab);
    expect(expectOk(await call(app.url, 'GET', path, { auth: member.auth })).map((r: any) => r.id)).to.deep.equal([made.id]);
    expect(expectOk(await call(app.url, 'GET', '/api/v1/alerts', { auth: member.auth })).map((a: any) => a.id)).to.deep.equal([alert]);
    expectError(await call(app.url, 'GET', `${path}?network_id=${lab}`, { auth: member.auth }), 403, 'entity_access_denied');
    expectError(await call(app.url, 'GET', `${path}/${hidden.id}`, { auth: member.auth }), 403, 'entity_access_denied');
    expectError(await call(app.url, 'POST', `/api/v1/alerts/${hiddenAlert}/acknowledge`, { auth: member.auth }), 403, 'entity_access_denied');
    expectError(await call(app.url, 'GET', path, {}), 401, 'auth_not_authenticated');
  });

  it('another organization’s rules and digests are not found (404), and its lists do not show them', async () => {
    const made = expectOk(await create({ kind: 'host_new' }), 201);
    const alert = await digest();
    const other = await registerTenant(app.url, 'other');
    expect(expectOk(await call(app.url, 'GET', path, { auth: other.owner }))).to.deep.equal([]);
    expect(expectOk(await call(app.url, 'GET', '/api/v1/alerts', { auth: other.owner }))).to.deep.equal([]);
    expectError(await call(app.url, 'GET', `${path}?network_id=${t.defaultNetworkId}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'GET', `${path}/${made.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'PUT', `${path}/${made.id}`, { auth: other.owner, body: { network_id: other.defaultNetworkId, kind: 'host_new' } }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `${path}/${made.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'GET', `/api/v1/alerts/${alert}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'POST', `/api/v1/alerts/${alert}/acknowledge`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await create({ kind: 'host_new' }, other.owner), 404, 'entity_not_found'); // our network, their owner
    // Their rule cannot name our webhook.
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'ours', url: 'http://127.0.0.1:9/hook' } }), 201);
    expectError(await call(app.url, 'POST', path, { auth: other.owner, body: { network_id: other.defaultNetworkId, kind: 'host_new', webhook_ids: [hook.id] } }), 400, 'entity_reference_invalid');
    expect(expectOk(await call(app.url, 'GET', `/api/v1/alerts/${alert}`, { auth: t.owner })).acknowledged_at).to.equal(null);
  });
});
