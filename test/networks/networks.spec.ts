import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createKey, createUser, registerTenant, type Tenant } from '../support/world.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';

describe('networks', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('register creates a first network named Default', async () => {
    const data = expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: t.owner }));
    expect(data.map((n: { name: string }) => n.name)).to.deep.equal(['Default']);
    expect(data[0].id).to.equal(t.defaultNetworkId);
  });

  it('an Admin creates, replaces and deletes networks with tags; unknown tags are 400 naming the id', async () => {
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'dc', color: 'Sky' } }), 201);
    const net = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab', tags: [tag.id, tag.id] } }), 201);
    expect(net.tags).to.deep.equal([tag.id]); // duplicates collapse
    const unknown = '7f1c2d4e-0000-4000-8000-000000000000';
    const bad = await call(app.url, 'PUT', `/api/v1/networks/${net.id}`, { auth: t.owner, body: { name: 'Lab', tags: [tag.id, unknown] } });
    expectError(bad, 400, 'entity_reference_invalid');
    expect(bad.body.params).to.include({ entity: 'Tag', id: unknown, field: 'tags' });
    const other = await registerTenant(app.url, 'other');
    const foreignTag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: other.owner, body: { name: 'theirs', color: 'Sky' } }), 201);
    expectError(await call(app.url, 'PUT', `/api/v1/networks/${net.id}`, { auth: t.owner, body: { name: 'Lab', tags: [foreignTag.id] } }), 400, 'entity_reference_invalid');
    const cleared = expectOk(await call(app.url, 'PUT', `/api/v1/networks/${net.id}`, { auth: t.owner, body: { name: 'Lab 2', tags: [] } }));
    expect(cleared).to.include({ name: 'Lab 2' });
    expect(cleared.tags).to.deep.equal([]);
    expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${net.id}`, { auth: t.owner })); // empty: no cascade needed
    expectError(await call(app.url, 'GET', `/api/v1/networks/${net.id}`, { auth: t.owner }), 404, 'entity_not_found');
    const history = expectOk(await call(app.url, 'GET', `/api/v1/networks/${net.id}/history`, { auth: t.owner }));
    expect(history.map((h: { name: string }) => h.name)).to.deep.equal(['Lab 2', 'Lab']);
  });

  it('deleting a tag removes it from networks, as a new network state', async () => {
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'gone', color: 'Sky' } }), 201);
    const net = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Tagged', tags: [tag.id] } }), 201);
    expectOk(await call(app.url, 'DELETE', `/api/v1/tags/${tag.id}`, { auth: t.owner }));
    expect(expectOk(await call(app.url, 'GET', `/api/v1/networks/${net.id}`, { auth: t.owner })).tags).to.deep.equal([]);
    const asBefore = expectOk(await call(app.url, 'GET', `/api/v1/networks/${net.id}?at=${encodeURIComponent(net.updated_at)}`, { auth: t.owner }));
    expect(asBefore.tags).to.deep.equal([tag.id]);
  });

  it('Members see only granted networks; out-of-scope is 403, another org is 404', async () => {
    const lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
    const member = await createUser(app.url, t.owner, 'Member', [lab.id]);
    const seen = expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: member.auth }));
    expect(seen.map((n: { id: string }) => n.id)).to.deep.equal([lab.id]);
    const denied = await call(app.url, 'GET', `/api/v1/networks/${t.defaultNetworkId}`, { auth: member.auth });
    expectError(denied, 403, 'entity_access_denied');
    expect(denied.body.params).to.include({ id: t.defaultNetworkId });
    expectError(await call(app.url, 'POST', '/api/v1/networks', { auth: member.auth, body: { name: 'Nope' } }), 403, 'auth_permission_denied');
    const other = await registerTenant(app.url, 'other');
    expectError(await call(app.url, 'GET', `/api/v1/networks/${lab.id}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'DELETE', `/api/v1/networks/${lab.id}`, { auth: other.owner }), 404, 'entity_not_found');
  });

  it('a key scoped to one network sees the intersection with its user’s networks, now', async () => {
    const lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
    const member = await createUser(app.url, t.owner, 'Member', [lab.id, t.defaultNetworkId]);
    const key = await createKey(app.url, member.auth, { network_ids: [lab.id] });
    const seen = expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: { bearer: key.key } }));
    expect(seen.map((n: { id: string }) => n.id)).to.deep.equal([lab.id]);
    expectError(await call(app.url, 'GET', `/api/v1/networks/${t.defaultNetworkId}`, { auth: { bearer: key.key } }), 403, 'entity_access_denied');
    // The user loses the grant: the key loses the network with it.
    expectOk(await call(app.url, 'PUT', `/api/v1/users/${member.id}`, { auth: t.owner, body: { permissions: 'Member', network_ids: [t.defaultNetworkId] } }));
    expect(expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: { bearer: key.key } }))).to.deep.equal([]);
    expectError(await call(app.url, 'GET', `/api/v1/networks/${lab.id}`, { auth: { bearer: key.key } }), 403, 'entity_access_denied');
  });

  it('expected_updated_at on networks is atomic', async () => {
    const net = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Race' } }), 201);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => call(app.url, 'PUT', `/api/v1/networks/${net.id}`, {
      auth: t.owner, body: { name: `Race ${i}`, expected_updated_at: net.updated_at },
    })));
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 409, 409, 409, 409, 409, 409, 409]);
  });

  describe('deleting a network that holds something, and getting it back', () => {
    let lab: any;
    let host: any;
    let before: string;
    const hostsAt = async (at?: string) =>
      call(app.url, 'GET', `/api/v1/hosts?network_id=${lab.id}${at ? `&at=${encodeURIComponent(at)}` : ''}`, { auth: t.owner });
    beforeEach(async () => {
      lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
      const subnet = await createSubnet(app.url, t.owner, lab.id);
      const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'old', color: 'Sky' } }), 201);
      host = await createHostWithChildren(app.url, t.owner, lab.id, subnet.id);
      host = expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: t.owner, body: { id: host.id, name: 'web', hidden: false, tags: [tag.id] } }));
      before = host.updated_at;
      expectOk(await call(app.url, 'DELETE', `/api/v1/tags/${tag.id}`, { auth: t.owner })); // gone by the time of the restore
    });

    it('is refused with the counts unless cascade=true; nothing is lost by the refusal', async () => {
      const refused = await call(app.url, 'DELETE', `/api/v1/networks/${lab.id}`, { auth: t.owner });
      expectError(refused, 409, 'network_not_empty');
      expect(refused.body.params).to.include({ id: lab.id, hosts: 1, subnets: 1, dependencies: 0, daemons: 0, daemon_api_keys: 0 });
      expect(refused.body.error).to.contain('1 host, 1 subnet').and.to.contain('cascade=true');
      // What the web app's question before deleting says: the same counts and the hosts' services.
      expect(expectOk(await call(app.url, 'GET', `/api/v1/networks/${lab.id}/contents`, { auth: t.owner })))
        .to.deep.equal({ hosts: 1, services: 2, subnets: 1, dependencies: 0, daemons: 0, daemon_api_keys: 0 });
      expectError(await call(app.url, 'DELETE', `/api/v1/networks/${lab.id}?cascade=maybe`, { auth: t.owner }), 400, 'validation_failed');
      expect(expectOk(await hostsAt()).map((h: any) => h.name)).to.deep.equal(['web']);
      expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${lab.id}?cascade=true`, { auth: t.owner }));
      expectError(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner }), 404, 'entity_not_found');
      expectError(await hostsAt(), 404, 'entity_not_found');
    });

    it('after a cascade, the hosts are read back as they were (`at`) and restore brings everything back with the same ids', async () => {
      expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${lab.id}?cascade=true`, { auth: t.owner }));
      const old = expectOk(await hostsAt(before));
      expect(old.map((h: any) => [h.id, h.name, h.ports.length, h.ip_addresses.length, h.services.length])).to.deep.equal([[host.id, 'web', 3, 2, 2]]);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/subnets?network_id=${lab.id}&at=${encodeURIComponent(before)}`, { auth: t.owner }))).to.have.length(1);

      const restore = (auth: any, at = before, id = lab.id) => call(app.url, 'POST', `/api/v1/networks/${id}/restore?at=${encodeURIComponent(at)}`, { auth });
      const member = await createUser(app.url, t.owner, 'Member', []);
      expectError(await restore(member.auth), 403, 'auth_permission_denied');
      const other = await registerTenant(app.url, 'other');
      expectError(await restore(other.owner), 404, 'entity_not_found'); // another organization's: as if unknown
      expectError(await restore(t.owner, before, '7f1c2d4e-0000-4000-8000-000000000000'), 404, 'entity_not_found');
      expectError(await call(app.url, 'POST', `/api/v1/networks/${lab.id}/restore`, { auth: t.owner }), 400, 'validation_failed');

      const back = expectOk(await restore(t.owner));
      expect(back).to.include({ id: lab.id, name: 'Lab' });
      expect(back.restored).to.deep.equal({ subnets: 1, hosts: 1, ip_addresses: 2, ports: 3, services: 2, bindings: 2, interfaces: 0, dependencies: 0 });
      const now = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner }));
      const shape = (h: any) => ({
        name: h.name, created_at: h.created_at,
        ips: h.ip_addresses.map((i: any) => [i.id, i.ip_address, i.mac_address]),
        ports: h.ports.map((p: any) => [p.id, p.number]),
        services: h.services.map((s: any) => [s.id, s.name, s.bindings.map((b: any) => [b.id, b.port_id, b.ip_address_id])]),
      });
      expect(shape(now)).to.deep.equal(shape(host));
      expect(now.tags).to.deep.equal([]); // its tag was deleted meanwhile: not revived as a dangling id
      expect(now.updated_at > before).to.equal(true); // a new state, after the deletion
      const states = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}/history`, { auth: t.owner }));
      expect(states[0].valid_to).to.equal(null);
      expect(states[1].valid_to).to.be.a('string'); // the deletion closed it
      expectError(await restore(t.owner), 409, 'entity_already_exists');
    });
  });
});
