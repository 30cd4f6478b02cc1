// Daemon API keys under /api/v1/auth/daemon (reference §14, decisions §2): a signed-in Admin makes
// them for one visible network; `scp_d_` + 32 base62, only the SHA-256 stored, the plaintext shown
// at creation and rotation only.
import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { DAEMON_SERVER_KEY, open } from '../../src/core/secretBox.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { callFrom, createKey, createNetwork, createUser, freshLoopbackIp, registerTenant, type Tenant } from '../support/world.js';
import { daemonClient, registerBody, sql } from '../daemons/world.js';

const KEY = /^scp_d_[0-9A-Za-z]{32}$/;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('daemonKeys: /api/v1/auth/daemon', () => {
  let app: TestApp;
  let t: Tenant;
  const create = (body: Record<string, unknown>, auth = t.owner) => call(app.url, 'POST', '/api/v1/auth/daemon', { auth, body });
  /** Registers a new daemon with the key: 200, or the error. */
  const use = (key: string, id = randomUUID()) => callFrom(freshLoopbackIp(), app.url, 'POST', '/api/daemons/register', {
    auth: { bearer: key }, headers: { 'X-Daemon-ID': id }, body: registerBody(daemonClient(app.url, key, id), t.defaultNetworkId),
  });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'keys');
  });
  afterEach(() => app.close());

  it('creates a key for a network: the plaintext once, only its SHA-256 stored, no server copy', async () => {
    const data = expectOk(await create({ name: 'lab daemon', network_id: t.defaultNetworkId }), 201);
    expect(data.key).to.match(KEY);
    expect(data.api_key).to.include({ name: 'lab daemon', network_id: t.defaultNetworkId, organization_id: t.orgId, user_id: t.ownerId, is_enabled: true, expires_at: null, last_used_at: null });
    expect(Object.keys(data.api_key).sort()).to.deep.equal(['created_at', 'expires_at', 'id', 'is_enabled', 'last_used_at', 'name', 'network_id', 'organization_id', 'updated_at', 'user_id']);
    const rows = await sql(app, `select * from daemon_api_keys`);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ key_hash: sha256(data.key), server_key: null });
    for (const [column, value] of Object.entries(rows[0]!)) expect(JSON.stringify(value) ?? '', column).to.not.include(data.key.slice(6));
    for (const res of [await call(app.url, 'GET', '/api/v1/auth/daemon', { auth: t.owner }), await call(app.url, 'GET', `/api/v1/auth/daemon/${data.api_key.id}`, { auth: t.owner })]) {
      expect(JSON.stringify(expectOk(res))).to.not.include(data.key.slice(6));
    }
    expectOk(await use(data.key));
  });

  it('lists (paginated, network_id filter), gets, updates (fields left out kept), rotates and deletes', async () => {
    const other = await createNetwork(app.url, t.owner, 'Other');
    const a = expectOk(await create({ name: 'a', network_id: t.defaultNetworkId }), 201);
    const b = expectOk(await create({ name: 'b', network_id: other }), 201);
    const page = await call(app.url, 'GET', '/api/v1/auth/daemon?limit=1', { auth: t.owner });
    expect(expectOk(page).map((k: any) => k.name)).to.deep.equal(['a']);
    expect(page.body.meta.pagination).to.deep.equal({ total_count: 2, limit: 1, offset: 0, has_more: true });
    expect(expectOk(await call(app.url, 'GET', `/api/v1/auth/daemon?network_id=${other}`, { auth: t.owner })).map((k: any) => k.id)).to.deep.equal([b.api_key.id]);

    const expires = new Date(Date.now() + 86400_000).toISOString();
    const updated = expectOk(await call(app.url, 'PUT', `/api/v1/auth/daemon/${a.api_key.id}`, { auth: t.owner, body: { name: 'a2', expires_at: expires, network_id: other } }));
    expect(updated).to.include({ name: 'a2', is_enabled: true, network_id: t.defaultNetworkId });
    expect(Date.parse(updated.expires_at)).to.equal(Date.parse(expires));
    expect(expectOk(await call(app.url, 'GET', `/api/v1/auth/daemon/${a.api_key.id}`, { auth: t.owner }))).to.deep.equal(updated);
    expectError(await call(app.url, 'PUT', `/api/v1/auth/daemon/${a.api_key.id}`, { auth: t.owner, body: { expires_at: '2020-01-01T00:00:00Z' } }), 400, 'validation_failed');

    const rotated = expectOk(await call(app.url, 'POST', `/api/v1/auth/daemon/${a.api_key.id}/rotate`, { auth: t.owner }));
    expect(rotated.key).to.match(KEY).and.not.equal(a.key);
    expect(rotated.api_key.id).to.equal(a.api_key.id);
    expectError(await use(a.key), 401, 'auth_daemon_key_not_created');
    expectOk(await use(rotated.key));

    expectOk(await call(app.url, 'DELETE', `/api/v1/auth/daemon/${a.api_key.id}`, { auth: t.owner }));
    expectError(await call(app.url, 'GET', `/api/v1/auth/daemon/${a.api_key.id}`, { auth: t.owner }), 404, 'entity_not_found');
    expectError(await use(rotated.key), 401, 'auth_daemon_key_not_created');
  });

  it('rotating a provisioned (server_poll) key moves its server copy along', async () => {
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'poller', network_id: t.defaultNetworkId, url: 'http://10.0.0.9:60073' } }), 201);
    const rotated = expectOk(await call(app.url, 'POST', `/api/v1/auth/daemon/${provisioned.daemon.api_key_id}/rotate`, { auth: t.owner }));
    const [row] = await sql(app, `select key_hash, server_key from daemon_api_keys where id = ?`, [provisioned.daemon.api_key_id]);
    expect(row!.key_hash).to.equal(sha256(rotated.key));
    expect(row!.server_key).to.match(/^enc:v1:/).and.not.include(rotated.key.slice(6));
    expect(open(row!.server_key, DAEMON_SERVER_KEY)).to.equal(rotated.key);
  });

  it('the network must be one the Admin sees: unknown or another organization’s is 400 entity_reference_invalid', async () => {
    const b = await registerTenant(app.url, 'other');
    for (const network_id of [randomUUID(), b.defaultNetworkId]) {
      const res = await create({ name: 'x', network_id });
      expectError(res, 400, 'entity_reference_invalid');
      expect(res.body.params).to.include({ entity: 'Network', id: network_id, field: 'network_id' });
    }
    expectError(await create({ name: 'x' }), 400, 'validation_failed');
    expect(await sql(app, `select id from daemon_api_keys`)).to.deep.equal([]);
  });

  it('Admin sessions only: a Member is 403, an API key (even the Owner’s) is 403; another organization’s key is 404', async () => {
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expectError(await create({ name: 'x', network_id: t.defaultNetworkId }, member.auth), 403, 'auth_permission_denied');
    const ownerKey = await createKey(app.url, t.owner);
    expectError(await create({ name: 'x', network_id: t.defaultNetworkId }, { bearer: ownerKey.key } as any), 403, 'auth_permission_denied');
    const admin = await createUser(app.url, t.owner, 'Admin');
    const k = expectOk(await create({ name: 'by admin', network_id: t.defaultNetworkId }, admin.auth), 201);
    expect(k.api_key.user_id).to.equal(admin.id);

    const b = await registerTenant(app.url, 'other');
    for (const [method, path, body] of [
      ['GET', `/api/v1/auth/daemon/${k.api_key.id}`], ['PUT', `/api/v1/auth/daemon/${k.api_key.id}`, { name: 'stolen' }],
      ['POST', `/api/v1/auth/daemon/${k.api_key.id}/rotate`], ['DELETE', `/api/v1/auth/daemon/${k.api_key.id}`],
    ] as Array<[string, string, unknown?]>) {
      const res = await call(app.url, method, path, { auth: b.owner, body });
      expectError(res, 404, 'entity_not_found');
      expect(res.body.params).to.deep.equal({ entity: 'Daemon API Key', id: k.api_key.id });
    }
    expect(expectOk(await call(app.url, 'GET', '/api/v1/auth/daemon', { auth: b.owner }))).to.deep.equal([]);
    expectOk(await use(k.key));
  });

  it('a disabled key is refused until enabled again; a key created disabled too', async () => {
    const k = expectOk(await create({ name: 'off', network_id: t.defaultNetworkId, is_enabled: false }), 201);
    expect(k.api_key.is_enabled).to.equal(false);
    expectError(await use(k.key), 401, 'auth_key_revoked');
    expectOk(await call(app.url, 'PUT', `/api/v1/auth/daemon/${k.api_key.id}`, { auth: t.owner, body: { is_enabled: true } }));
    expectOk(await use(k.key));
  });
});
