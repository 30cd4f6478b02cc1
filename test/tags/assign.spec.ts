// Tagging many entities at once (issue 14.5): replace one entity's tags, add or remove one tag on
// many, all or none, tenancy-checked, each change a state in the entity's history.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';

describe('tags: assignment', () => {
  let app: TestApp;
  let t: Tenant;
  const req = async (method: string, path: string, body?: unknown, auth = t.owner) => call(app.url, method, path, { auth, body });
  const host = async (name: string, network = t.defaultNetworkId) => expectOk(await req('POST', '/api/v1/hosts', { network_id: network, name }), 201);
  const tagsOf = async (id: string) => expectOk(await req('GET', `/api/v1/hosts/${id}`)).tags;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('replaces one entity’s tags and adds or removes one tag on many, in history', async () => {
    const [red, blue] = [
      expectOk(await req('POST', '/api/v1/tags', { name: 'red', color: 'Red' }), 201),
      expectOk(await req('POST', '/api/v1/tags', { name: 'blue', color: 'Blue' }), 201),
    ];
    const [a, b, c] = [await host('a'), await host('b'), await host('c')];
    expectOk(await req('PUT', '/api/v1/tags/assign', { entity_type: 'Host', entity_id: a.id, tag_ids: [red.id, blue.id] }));
    expect(await tagsOf(a.id)).to.deep.equal([red.id, blue.id]);
    const added = expectOk(await req('POST', '/api/v1/tags/assign/bulk-add', { entity_type: 'Host', entity_ids: [a.id, b.id, c.id], tag_id: red.id }));
    expect(added).to.deep.equal({ affected_count: 2 }); // a had it
    const removed = expectOk(await req('POST', '/api/v1/tags/assign/bulk-remove', { entity_type: 'Host', entity_ids: [a.id, b.id], tag_id: red.id }));
    expect(removed).to.deep.equal({ affected_count: 2 });
    expect([await tagsOf(a.id), await tagsOf(b.id), await tagsOf(c.id)]).to.deep.equal([[blue.id], [], [red.id]]);
    const history = expectOk(await req('GET', `/api/v1/hosts/${a.id}/history`));
    expect(history.map((s: { tags: string[] }) => s.tags)).to.deep.equal([[blue.id], [red.id, blue.id], []]);
    // Dependencies answer to Scanopy's name too.
    const dep = expectOk(await req('POST', '/api/v1/dependencies', { network_id: t.defaultNetworkId, name: 'd', color: 'Blue' }), 201);
    expectOk(await req('PUT', '/api/v1/tags/assign', { entity_type: 'Group', entity_id: dep.id, tag_ids: [blue.id] }));
    expect(expectOk(await req('GET', `/api/v1/dependencies/${dep.id}`)).tags).to.deep.equal([blue.id]);
  });

  it('all or none: another organization’s entity is 404, one out of reach 403, an unknown tag 400, and nothing changes', async () => {
    const tag = expectOk(await req('POST', '/api/v1/tags', { name: 'red', color: 'Red' }), 201);
    const mine = await host('mine');
    const other = await registerTenant(app.url, 'other');
    const theirs = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: other.owner, body: { network_id: other.defaultNetworkId, name: 'theirs' } }), 201);
    const res = await req('POST', '/api/v1/tags/assign/bulk-add', { entity_type: 'Host', entity_ids: [mine.id, theirs.id], tag_id: tag.id });
    expectError(res, 404, 'entity_not_found');
    expect(res.body.params.id).to.equal(theirs.id);
    expect(await tagsOf(mine.id)).to.deep.equal([]);
    expectError(await req('PUT', '/api/v1/tags/assign', { entity_type: 'Host', entity_id: mine.id, tag_ids: [theirs.id] }), 400, 'entity_reference_invalid');
    const lab = expectOk(await req('POST', '/api/v1/networks', { name: 'Lab' }), 201);
    const member = await createUser(app.url, t.owner, 'Member', [lab.id]);
    expectError(await req('PUT', '/api/v1/tags/assign', { entity_type: 'Host', entity_id: mine.id, tag_ids: [tag.id] }, member.auth), 403, 'entity_access_denied');
    expectError(await req('PUT', '/api/v1/tags/assign', { entity_type: 'Network', entity_id: lab.id, tag_ids: [tag.id] }, member.auth), 403, 'auth_permission_denied');
    expectError(await req('PUT', '/api/v1/tags/assign', { entity_type: 'Port', entity_id: mine.id, tag_ids: [] }), 400, 'validation_failed');
  });
});
