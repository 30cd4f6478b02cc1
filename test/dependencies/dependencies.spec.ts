import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { otherTenant, privateCorner, q, startInventory, type Inventory } from '../ipAddresses/inventory.js';

describe('dependencies', () => {
  let inv: Inventory;
  let tag: any;
  beforeEach(async () => {
    inv = await startInventory();
    tag = expectOk(await inv.api.post('/api/v1/tags', { name: 'critical', color: 'Red' }), 201);
  });
  afterEach(() => inv.app.close());

  const services = (...ids: string[]) => ({ type: 'Services', service_ids: ids });
  const bindings = (...ids: string[]) => ({ type: 'Bindings', binding_ids: ids });
  const body = (extra: Record<string, unknown> = {}) => ({
    name: 'web path', network_id: inv.t.defaultNetworkId, color: 'Blue', dependency_type: 'RequestPath', edge_style: 'Bezier',
    members: services(inv.svc.snmpd.id, inv.svc.nginx.id), tags: [], ...extra,
  });
  const create = async (extra: Record<string, unknown> = {}) => expectOk(await inv.api.post('/api/v1/dependencies', body(extra)), 201);

  it('creates (source Manual, member order kept, tags deduplicated), reads, lists, replaces and deletes', async () => {
    const dep = await create({ description: 'front to back', tags: [tag.id, tag.id], source: { type: 'Discovery', metadata: [] } });
    expect(dep).to.include({
      name: 'web path', network_id: inv.t.defaultNetworkId, organization_id: inv.t.orgId, color: 'Blue', dependency_type: 'RequestPath',
      edge_style: 'Bezier', description: 'front to back', valid_to: null, lineage_id: dep.id,
    });
    expect(dep.source).to.deep.equal({ type: 'Manual' });
    expect(dep.members).to.deep.equal(services(inv.svc.snmpd.id, inv.svc.nginx.id));
    expect(dep.tags).to.deep.equal([tag.id]);
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`))).to.deep.equal(dep);
    // Defaults on create: RequestPath, SmoothStep, no members, no tags.
    const bare = expectOk(await inv.api.post('/api/v1/dependencies', { name: 'bare', network_id: inv.t.defaultNetworkId, color: 'Gray' }), 201);
    expect(bare).to.include({ dependency_type: 'RequestPath', edge_style: 'SmoothStep', description: null });
    expect(bare.members).to.deep.equal(services());

    const list = await inv.api.get(`/api/v1/dependencies?network_id=${inv.t.defaultNetworkId}&order_by=name&order_direction=desc`);
    expect(expectOk(list).map((d: any) => d.name)).to.deep.equal(['web path', 'bare']);
    expect(list.body.meta.pagination).to.deep.equal({ total_count: 2, limit: 50, offset: 0, has_more: false });
    expect(expectOk(await inv.api.get('/api/v1/dependencies?order_by=dependency_type&limit=1&offset=1')).map((d: any) => d.name)).to.have.length(1);

    // PUT echoes the dependency back: description left out becomes null, [] clears tags, source is kept.
    const { description: _d, ...echo } = dep;
    const put = expectOk(await inv.api.put(`/api/v1/dependencies/${dep.id}`, {
      ...echo, name: 'hub', dependency_type: 'HubAndSpoke', edge_style: 'Straight', color: 'Fuchsia', tags: [],
      members: bindings(inv.svc.nginx.bindings[0].id, inv.svc.snmpd.bindings[0].id), source: { type: 'System' },
    }));
    expect(put).to.include({ name: 'hub', dependency_type: 'HubAndSpoke', edge_style: 'Straight', color: 'Fuchsia', description: null, created_at: dep.created_at });
    expect(put.members).to.deep.equal(bindings(inv.svc.nginx.bindings[0].id, inv.svc.snmpd.bindings[0].id));
    expect(put.tags).to.deep.equal([]);
    expect(put.source).to.deep.equal({ type: 'Manual' });

    expectOk(await inv.api.del(`/api/v1/dependencies/${dep.id}`));
    expectError(await inv.api.get(`/api/v1/dependencies/${dep.id}`), 404, 'entity_not_found');
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}/history`)).map((h: any) => h.name)).to.deep.equal(['hub', 'web path']);
  });

  it('members must exist, be visible and be on the dependency’s network', async () => {
    const unknown = randomUUID();
    const missing = await inv.api.post('/api/v1/dependencies', body({ members: services(inv.svc.nginx.id, unknown) }));
    expectError(missing, 400, 'entity_reference_invalid');
    expect(missing.body.params).to.deep.equal({ entity: 'Service', id: unknown, field: 'members.service_ids' });
    const missingBinding = await inv.api.post('/api/v1/dependencies', body({ members: bindings(unknown) }));
    expectError(missingBinding, 400, 'entity_reference_invalid');
    expect(missingBinding.body.params).to.deep.equal({ entity: 'Binding', id: unknown, field: 'members.binding_ids' });

    const other = await otherTenant(inv);
    const foreign = await inv.api.post('/api/v1/dependencies', body({ members: services(other.host.services[0].id) }));
    expectError(foreign, 400, 'entity_reference_invalid');
    expect(foreign.body.params.id).to.equal(other.host.services[0].id);

    const corner = await privateCorner(inv);
    const elsewhere = corner.host.services[0].id;
    const mismatch = await inv.api.post('/api/v1/dependencies', body({ members: services(inv.svc.nginx.id, elsewhere) }));
    expectError(mismatch, 400, 'entity_network_mismatch');
    expect(mismatch.body.params).to.deep.equal({ entity: 'Service', id: elsewhere });
    const bindingMismatch = await inv.api.post('/api/v1/dependencies', body({ members: bindings(corner.host.services[0].bindings[0].id) }));
    expectError(bindingMismatch, 400, 'entity_network_mismatch');
    // A Member who cannot see the other network is not told it exists there.
    const hidden = await inv.api.post('/api/v1/dependencies', body({ members: services(elsewhere) }), corner.member.auth);
    expectError(hidden, 400, 'entity_reference_invalid');
    expect(hidden.body.params.id).to.equal(elsewhere);

    // The same on PUT; nothing changes.
    const dep = await create();
    expectError(await inv.api.put(`/api/v1/dependencies/${dep.id}`, body({ members: services(elsewhere) })), 400, 'entity_network_mismatch');
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`)).updated_at).to.equal(dep.updated_at);
  });

  it('validation: colours, types, edge styles, member shapes, required fields on PUT; network_id stays; tags', async () => {
    const bad = async (extra: Record<string, unknown>, field?: string) => {
      const res = await inv.api.post('/api/v1/dependencies', body(extra));
      expectError(res, 400, 'validation_failed');
      if (field) expect(res.body.params.field).to.equal(field);
    };
    await bad({ color: 'Chartreuse' }, 'color');
    await bad({ dependency_type: 'Mesh' }, 'dependency_type');
    await bad({ edge_style: 'Curvy' }, 'edge_style');
    await bad({ members: { type: 'Services', binding_ids: [] } });
    await bad({ members: { type: 'Hosts', service_ids: [] } });
    await bad({ members: services(inv.svc.nginx.id, inv.svc.nginx.id) });
    await bad({ members: [inv.svc.nginx.id] });
    await bad({ name: 'x'.repeat(101) }, 'name');
    expectError(await inv.api.post('/api/v1/dependencies', body({ group_type: 'RequestPath' })), 400, 'validation_unknown_field');
    for (const color of ['Amber', 'Fuchsia', 'Violet', 'Sky', 'Lime']) expectOk(await inv.api.post('/api/v1/dependencies', body({ color })), 201);

    const dep = await create();
    const path = `/api/v1/dependencies/${dep.id}`;
    for (const field of ['name', 'network_id', 'color', 'dependency_type', 'edge_style', 'members', 'tags']) {
      const { [field]: _omit, ...partial } = body() as Record<string, unknown>;
      const res = await inv.api.put(path, partial);
      expectError(res, 400, 'validation_failed');
      expect(res.body.params.field, field).to.equal(field);
    }
    const moved = await inv.api.put(path, body({ network_id: (await privateCorner(inv)).network }));
    expectError(moved, 400, 'validation_failed');
    expect(moved.body.params.field).to.equal('network_id');
    expectError(await inv.api.put(path, body({ id: randomUUID() })), 400, 'validation_failed');

    const unknownTag = randomUUID();
    const tags = await inv.api.put(path, body({ tags: [tag.id, unknownTag] }));
    expectError(tags, 400, 'entity_reference_invalid');
    expect(tags.body.params).to.deep.equal({ entity: 'Tag', id: unknownTag, field: 'tags' });
    const other = await otherTenant(inv);
    const theirs = expectOk(await inv.api.post('/api/v1/tags', { name: 'theirs', color: 'Red' }, other.tenant.owner), 201);
    expectError(await inv.api.post('/api/v1/dependencies', body({ tags: [theirs.id] })), 400, 'entity_reference_invalid');
    const unknownNet = randomUUID();
    const net = await inv.api.post('/api/v1/dependencies', body({ network_id: unknownNet }));
    expectError(net, 400, 'entity_reference_invalid');
    expect(net.body.params).to.include({ entity: 'Network', id: unknownNet });
  });

  it('member ids in upper case are stored lower-cased, so a deleted member still leaves the dependency', async () => {
    const dep = await create({ network_id: inv.t.defaultNetworkId.toUpperCase(), members: services(inv.svc.nginx.id.toUpperCase(), inv.svc.snmpd.id) });
    expect(dep.members).to.deep.equal(services(inv.svc.nginx.id, inv.svc.snmpd.id));
    expectOk(await inv.api.put(`/api/v1/dependencies/${dep.id}`, body({ network_id: inv.t.defaultNetworkId.toUpperCase(), members: services(inv.svc.nginx.id.toUpperCase()) })));
    expectOk(await inv.api.del(`/api/v1/services/${inv.svc.nginx.id}`));
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`)).members).to.deep.equal(services());
  });

  it('expected_updated_at: stale is 409 entity_modified; of concurrent PUTs exactly one wins', async () => {
    const dep = await create();
    const path = `/api/v1/dependencies/${dep.id}`;
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => inv.api.put(path, body({ name: `race ${i}`, expected_updated_at: dep.updated_at }))));
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 409, 409, 409, 409, 409]);
    const loser = results.find((r) => r.status === 409)!;
    expectError(loser, 409, 'entity_modified');
    expect(loser.body.params).to.include({ entity: 'Dependency', id: dep.id, expected: dep.updated_at });
    const winner = results.find((r) => r.status === 200)!.body.data;
    expect(expectOk(await inv.api.get(path)).name).to.equal(winner.name);
    expectOk(await inv.api.put(path, body({ name: 'next', expected_updated_at: winner.updated_at })));
  });

  it('a binding whose port is deleted leaves the dependency; `at` shows the members as they were', async () => {
    const httpBinding = inv.svc.nginx.bindings[0];
    const snmpBinding = inv.svc.snmpd.bindings[0];
    const dep = await create({ dependency_type: 'HubAndSpoke', members: bindings(httpBinding.id, snmpBinding.id) });
    expectOk(await inv.api.del(`/api/v1/ports/${inv.port.http.id}`));
    const now = expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`));
    expect(now.members).to.deep.equal(bindings(snmpBinding.id));
    expect(now.updated_at > dep.updated_at).to.equal(true);
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}?${q(dep.updated_at)}`)).members).to.deep.equal(bindings(httpBinding.id, snmpBinding.id));
    const list = expectOk(await inv.api.get(`/api/v1/dependencies?${q(dep.updated_at)}`));
    expect(list.map((d: any) => d.members.binding_ids)).to.deep.equal([[httpBinding.id, snmpBinding.id]]);
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}/history`)).map((h: any) => h.members.binding_ids.length)).to.deep.equal([1, 2]);
  });

  it('another organization gets 404; a Member without a grant 403; a Viewer reads only', async () => {
    const dep = await create();
    const path = `/api/v1/dependencies/${dep.id}`;
    const other = await otherTenant(inv);
    for (const res of [
      await inv.api.get(path, other.tenant.owner), await inv.api.put(path, body(), other.tenant.owner),
      await inv.api.del(path, other.tenant.owner), await inv.api.get(`${path}/history`, other.tenant.owner),
    ]) {
      expectError(res, 404, 'entity_not_found');
      expect(res.body.params).to.deep.equal({ entity: 'Dependency', id: dep.id });
    }
    expect(expectOk(await inv.api.get('/api/v1/dependencies', other.tenant.owner))).to.deep.equal([]);
    expectError(await inv.api.get(`/api/v1/dependencies?network_id=${inv.t.defaultNetworkId}`, other.tenant.owner), 404, 'entity_not_found');

    const corner = await privateCorner(inv);
    const hidden = await create({ network_id: corner.network, members: services(corner.host.services[0].id) });
    const denied = await inv.api.get(`/api/v1/dependencies/${hidden.id}`, corner.member.auth);
    expectError(denied, 403, 'entity_access_denied');
    expect(denied.body.params).to.deep.equal({ entity: 'Dependency', id: hidden.id });
    expectError(await inv.api.put(`/api/v1/dependencies/${hidden.id}`, body({ network_id: corner.network, members: services() }), corner.member.auth), 403, 'entity_access_denied');
    const post = await inv.api.post('/api/v1/dependencies', body({ network_id: corner.network, members: services() }), corner.member.auth);
    expectError(post, 403, 'entity_access_denied');
    expect(post.body.params).to.deep.equal({ entity: 'Network', id: corner.network });
    expectError(await inv.api.get(`/api/v1/dependencies?network_id=${corner.network}`, corner.member.auth), 403, 'entity_access_denied');
    expect(expectOk(await inv.api.get('/api/v1/dependencies', corner.member.auth)).map((d: any) => d.id)).to.deep.equal([dep.id]);

    expect(expectOk(await inv.api.get(path, corner.viewer.auth)).id).to.equal(dep.id);
    expectError(await inv.api.put(path, body(), corner.viewer.auth), 403, 'auth_permission_denied');
    expectError(await inv.api.post('/api/v1/dependencies', body(), corner.viewer.auth), 403, 'auth_permission_denied');
    expectOk(await inv.api.put(path, body({ name: 'by member' }), corner.member.auth));
    expectOk(await inv.api.del(path, corner.member.auth));
  });
});
