// Issue 10.1: a key limited to network N1 used to create an Admin (or promote a Member), sign in as
// that user and reach N2; and to delete an organization tag, which strips it from hosts of N2.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';
import { createKey, createNetwork, createUser, PASSWORD, registerTenant, type Tenant } from '../support/world.js';

describe('http: a network-limited key stays inside its networks', () => {
  let app: TestApp;
  let t: Tenant;
  let n2: string;
  let scoped: { bearer: string };
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    n2 = await createNetwork(app.url, t.owner, 'N2');
    scoped = { bearer: (await createKey(app.url, t.owner, { name: 'n1 only', network_ids: [t.defaultNetworkId] })).key };
  });
  afterEach(() => app.close());

  it('cannot create an Admin or promote a Member (and so cannot reach another network through them)', async () => {
    const email = 'escalate@example.test';
    expectError(await call(app.url, 'POST', '/api/v1/users', { auth: scoped, body: { email, password: PASSWORD, permissions: 'Admin' } }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } }), 401, 'auth_invalid_credentials');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expectError(await call(app.url, 'PUT', `/api/v1/users/${member.id}`, { auth: scoped, body: { permissions: 'Admin', network_ids: [n2] } }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'DELETE', `/api/v1/users/${member.id}`, { auth: scoped }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'GET', `/api/v1/networks/${n2}`, { auth: member.auth }), 403, 'entity_access_denied');
    // The same calls with the Owner's unscoped key go through.
    const full = { bearer: (await createKey(app.url, t.owner, { name: 'full' })).key };
    expectOk(await call(app.url, 'PUT', `/api/v1/users/${member.id}`, { auth: full, body: { permissions: 'Member', network_ids: [t.defaultNetworkId, n2] } }));
  });

  it('cannot delete or change an organization tag, nor create, change or delete networks', async () => {
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'prod', color: 'Red' } }), 201);
    const subnet = await createSubnet(app.url, t.owner, n2);
    const host = await createHostWithChildren(app.url, t.owner, n2, subnet.id);
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: t.owner, body: { id: host.id, name: host.name, hidden: false, tags: [tag.id] } }));
    expectError(await call(app.url, 'DELETE', `/api/v1/tags/${tag.id}`, { auth: scoped }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'PUT', `/api/v1/tags/${tag.id}`, { auth: scoped, body: { name: 'x', color: 'Blue' } }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'POST', '/api/v1/tags', { auth: scoped, body: { name: 'new', color: 'Blue' } }), 403, 'auth_key_network_scoped');
    expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner })).tags).to.deep.equal([tag.id]);
    expectError(await call(app.url, 'POST', '/api/v1/networks', { auth: scoped, body: { name: 'N3' } }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'PUT', `/api/v1/networks/${t.defaultNetworkId}`, { auth: scoped, body: { name: 'renamed' } }), 403, 'auth_key_network_scoped');
    expectError(await call(app.url, 'DELETE', `/api/v1/networks/${t.defaultNetworkId}?cascade=true`, { auth: scoped }), 403, 'auth_key_network_scoped');
    // Inside its network it works as before: reads, and inventory writes.
    expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: scoped }));
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: scoped, body: { name: 'inside', network_id: t.defaultNetworkId, tags: [tag.id] } }), 201);
  });
});
