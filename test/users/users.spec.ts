import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, login, PASSWORD, registerTenant, type Tenant } from '../support/world.js';

describe('users of an organization', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('an Admin creates, lists, changes and removes users; passwords are stored hashed', async () => {
    const admin = await createUser(app.url, t.owner, 'Admin');
    const viewer = await createUser(app.url, admin.auth, 'Viewer', [t.defaultNetworkId]);
    const list = await call(app.url, 'GET', '/api/v1/users', { auth: admin.auth });
    expect(expectOk(list).map((u: { permissions: string }) => u.permissions)).to.deep.equal(['Owner', 'Admin', 'Viewer']);
    expect(list.body.meta.pagination.total_count).to.equal(3);
    const changed = expectOk(await call(app.url, 'PUT', `/api/v1/users/${viewer.id}`, { auth: admin.auth, body: { permissions: 'Member', network_ids: [] } }));
    expect(changed).to.include({ permissions: 'Member' });
    expect(changed.network_ids).to.deep.equal([]);
    // Scanopy's path for the same change.
    const viaAdmin = expectOk(await call(app.url, 'PUT', `/api/v1/users/${viewer.id}/admin`, { auth: admin.auth, body: { permissions: 'Viewer', network_ids: [t.defaultNetworkId] } }));
    expect(viaAdmin).to.include({ permissions: 'Viewer' });
    expect(viaAdmin.network_ids).to.deep.equal([t.defaultNetworkId]);
    const rows = await app.services.orm.em.fork().execute<{ password_hash: string }[]>(`select password_hash from users where id = ?`, [viewer.id]);
    expect(rows[0]!.password_hash).to.match(/^scrypt\$/).and.not.include(PASSWORD);
    expectOk(await call(app.url, 'DELETE', `/api/v1/users/${viewer.id}`, { auth: admin.auth }));
    expectError(await call(app.url, 'GET', `/api/v1/users/${viewer.id}`, { auth: admin.auth }), 404, 'entity_not_found');
    expectError(await call(app.url, 'GET', '/api/auth/me', { auth: viewer.auth }), 401, 'auth_session_expired');
  });

  it('an Admin cannot hand out Owner nor touch the Owner; the last Owner stays', async () => {
    const admin = await createUser(app.url, t.owner, 'Admin');
    expectError(await call(app.url, 'POST', '/api/v1/users', { auth: admin.auth, body: { email: 'x@example.test', password: PASSWORD, permissions: 'Owner' } }), 403, 'auth_permission_denied');
    expectError(await call(app.url, 'PUT', `/api/v1/users/${t.ownerId}`, { auth: admin.auth, body: { permissions: 'Viewer' } }), 403, 'auth_permission_denied');
    expectError(await call(app.url, 'DELETE', `/api/v1/users/${t.ownerId}`, { auth: t.owner }), 409, 'entity_in_use');
  });

  it('grants name networks of the organization (400 otherwise); users of another org are 404', async () => {
    const other = await registerTenant(app.url, 'other');
    const bad = await call(app.url, 'POST', '/api/v1/users', { auth: t.owner, body: { email: 'g@example.test', password: PASSWORD, network_ids: [other.defaultNetworkId] } });
    expectError(bad, 400, 'entity_reference_invalid');
    expect(bad.body.params).to.include({ entity: 'Network', id: other.defaultNetworkId });
    expectError(await call(app.url, 'GET', `/api/v1/users/${other.ownerId}`, { auth: t.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `/api/v1/users/${other.ownerId}`, { auth: t.owner }), 404, 'entity_not_found');
  });

  it('me returns the signed-in user with the networks they see', async () => {
    const me = expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner }));
    expect(me).to.include({ id: t.ownerId, permissions: 'Owner', organization_id: t.orgId });
    expect(me.network_ids).to.deep.equal([t.defaultNetworkId]);
    expect(me).to.not.have.property('password_hash');
  });

  it('a new login rotates the session id; both sessions stay valid until logout', async () => {
    const email = expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).email;
    const second = await login(app.url, email);
    expect(second.cookie).to.not.equal(t.owner.cookie);
    expectOk(await call(app.url, 'POST', '/api/auth/logout', { auth: second }));
    expectError(await call(app.url, 'GET', '/api/auth/me', { auth: second }), 401, 'auth_session_expired');
    expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner }));
  });
});
