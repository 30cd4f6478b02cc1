import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { otherTenant, privateCorner, q, startInventory, type Inventory } from '../ipAddresses/inventory.js';

describe('services', () => {
  let inv: Inventory;
  let tag: any;
  beforeEach(async () => {
    inv = await startInventory();
    tag = expectOk(await inv.api.post('/api/v1/tags', { name: 'app', color: 'Green' }), 201);
  });
  afterEach(() => inv.app.close());

  const create = async (body: Record<string, unknown>) =>
    expectOk(await inv.api.post('/api/v1/services', { host_id: inv.host.id, name: 'sshd', service_definition: 'OpenSSH', ...body }), 201);

  it('creates with source Manual, deduplicated tags and bindings; reads, lists, replaces and deletes', async () => {
    const svc = await create({
      tags: [tag.id, tag.id], source: { type: 'Discovery', metadata: [] }, virtualization: { type: 'Docker', details: { container_name: 'ssh' } },
      bindings: [{ id: inv.svc.nginx.bindings[0].id, type: 'Port', port_id: inv.port.ssh.id }], // a body id of a new binding is ignored
    });
    expect(svc).to.include({ host_id: inv.host.id, network_id: inv.t.defaultNetworkId, organization_id: inv.t.orgId, name: 'sshd', position: 2, valid_to: null });
    expect(svc.source).to.deep.equal({ type: 'Manual' });
    expect(svc.tags).to.deep.equal([tag.id]);
    expect(svc.virtualization).to.deep.equal({ type: 'Docker', details: { container_name: 'ssh' } });
    expect(svc.bindings).to.have.length(1);
    const bindingId = svc.bindings[0].id;
    expect(bindingId).to.not.equal(inv.svc.nginx.bindings[0].id);
    expect(svc.bindings[0]).to.include({ service_id: svc.id, network_id: inv.t.defaultNetworkId, type: 'Port', port_id: inv.port.ssh.id, ip_address_id: null });
    expect(expectOk(await inv.api.get(`/api/v1/services/${svc.id}`))).to.deep.equal(svc);

    const list = expectOk(await inv.api.get(`/api/v1/services?host_id=${inv.host.id}&order_by=name`));
    expect(list.map((s: any) => [s.name, s.bindings.length])).to.deep.equal([['nginx', 1], ['snmpd', 1], ['sshd', 1]]);

    // PUT echoes the read service back with changes: source never changes; virtualization left out is null;
    // bindings absent are kept, [] clears them.
    const { virtualization: _v, ...echo } = svc;
    const put = expectOk(await inv.api.put(`/api/v1/services/${svc.id}`, { ...echo, name: 'ssh daemon', position: 0, tags: [] }));
    expect(put).to.include({ name: 'ssh daemon', position: 0, virtualization: null });
    expect(put.source).to.deep.equal({ type: 'Manual' });
    expect(put.tags).to.deep.equal([]);
    expect(put.bindings.map((b: any) => b.id)).to.deep.equal([bindingId]);
    const noBindings = { name: 'ssh daemon', service_definition: 'OpenSSH', tags: [] };
    expect(expectOk(await inv.api.put(`/api/v1/services/${svc.id}`, { ...noBindings, bindings: null })).bindings).to.have.length(1);
    expect(expectOk(await inv.api.put(`/api/v1/services/${svc.id}`, { ...noBindings, bindings: [] })).bindings).to.deep.equal([]);
    const host = expectOk(await inv.api.get(`/api/v1/hosts/${inv.host.id}`));
    expect(host.services.map((s: any) => `${s.name}@${s.position}`)).to.deep.equal(['ssh daemon@0', 'nginx@1', 'snmpd@2']);

    expectOk(await inv.api.del(`/api/v1/services/${inv.svc.nginx.id}`));
    expectError(await inv.api.get(`/api/v1/services/${inv.svc.nginx.id}`), 404, 'entity_not_found');
    expectError(await inv.api.get(`/api/v1/bindings/${inv.svc.nginx.bindings[0].id}`), 404, 'entity_not_found');
    const after = expectOk(await inv.api.get(`/api/v1/hosts/${inv.host.id}`));
    expect(after.services.map((s: any) => `${s.name}@${s.position}`)).to.deep.equal(['ssh daemon@0', 'snmpd@1']);
  });

  it('PUT with a bindings list syncs them by id (kept, changed, new, dropped)', async () => {
    const nginx = inv.svc.nginx;
    const kept = nginx.bindings[0];
    const put = expectOk(await inv.api.put(`/api/v1/services/${nginx.id}`, {
      ...nginx, bindings: [kept, { type: 'Port', port_id: inv.port.ssh.id, ip_address_id: inv.ip.a.id }],
    }));
    expect(put.bindings).to.have.length(2);
    expect(put.bindings.find((b: any) => b.id === kept.id)).to.deep.equal(kept);
    const added = put.bindings.find((b: any) => b.id !== kept.id);
    expect(added).to.include({ port_id: inv.port.ssh.id, ip_address_id: inv.ip.a.id });
    const moved = expectOk(await inv.api.put(`/api/v1/services/${nginx.id}`, { ...nginx, bindings: [{ ...added, ip_address_id: null }] }));
    expect(moved.bindings.map((b: any) => [b.id, b.ip_address_id])).to.deep.equal([[added.id, null]]);
    expectError(await inv.api.get(`/api/v1/bindings/${kept.id}`), 404, 'entity_not_found');
  });

  it('tags must exist in the organization; bindings follow the host’s rules', async () => {
    const unknown = randomUUID();
    const badTag = await inv.api.post('/api/v1/services', { host_id: inv.host.id, name: 'x', service_definition: 'X', tags: [tag.id, unknown] });
    expectError(badTag, 400, 'entity_reference_invalid');
    expect(badTag.body.params).to.deep.equal({ entity: 'Tag', id: unknown, field: 'tags' });
    const other = await otherTenant(inv);
    const theirTag = expectOk(await inv.api.post('/api/v1/tags', { name: 'theirs', color: 'Red' }, other.tenant.owner), 201);
    const foreign = await inv.api.put(`/api/v1/services/${inv.svc.nginx.id}`, { name: 'nginx', service_definition: 'Nginx', tags: [theirTag.id] });
    expectError(foreign, 400, 'entity_reference_invalid');
    expect(foreign.body.params.id).to.equal(theirTag.id);

    // Port 80 is nginx's: no other service of the host binds it.
    const taken = await inv.api.post('/api/v1/services', { host_id: inv.host.id, name: 'apache', service_definition: 'Apache', bindings: [{ type: 'Port', port_id: inv.port.http.id }] });
    expectError(taken, 400, 'validation_failed');
    expect(taken.body.params.field).to.equal('bindings.port_id');
    // An IP address binding and an all-addresses port binding conflict within a service.
    const conflict = await inv.api.post('/api/v1/services', {
      host_id: inv.host.id, name: 'x', service_definition: 'X',
      bindings: [{ type: 'IPAddress', ip_address_id: inv.ip.a.id }, { type: 'Port', port_id: inv.port.ssh.id }],
    });
    expectError(conflict, 400, 'validation_failed');
    // Another host's port.
    const theirs = await inv.api.post('/api/v1/services', {
      host_id: inv.host.id, name: 'x', service_definition: 'X', bindings: [{ type: 'Port', port_id: other.host.ports[0].id }],
    });
    expectError(theirs, 400, 'entity_reference_invalid');
    expect(theirs.body.params).to.deep.equal({ entity: 'Port', id: other.host.ports[0].id, field: 'bindings.port_id' });
    // A binding id that is not one of this service's is a new binding (the other service's stays).
    const stolen = expectOk(await inv.api.put(`/api/v1/services/${inv.svc.nginx.id}`, {
      name: 'nginx', service_definition: 'Nginx', bindings: [{ id: inv.svc.snmpd.bindings[0].id, type: 'Port', port_id: inv.port.http.id }],
    }));
    expect(stolen.bindings.map((b: any) => b.id)).to.not.include(inv.svc.snmpd.bindings[0].id);
    expect(expectOk(await inv.api.get(`/api/v1/bindings/${inv.svc.snmpd.bindings[0].id}`)).service_id).to.equal(inv.svc.snmpd.id);
    expectError(await inv.api.put(`/api/v1/services/${inv.svc.nginx.id}`, {
      name: 'nginx', service_definition: 'Nginx', bindings: [{ id: stolen.bindings[0].id, type: 'Port', port_id: inv.port.http.id }, { id: stolen.bindings[0].id, type: 'Port', port_id: inv.port.ssh.id }],
    }), 400, 'validation_failed');
    // Nothing of the refused writes happened.
    expect(expectOk(await inv.api.get(`/api/v1/services?host_id=${inv.host.id}`))).to.have.length(2);
    expectError(await inv.api.post('/api/v1/services', { host_id: inv.host.id, name: '', service_definition: 'X' }), 400, 'validation_failed');
    expectError(await inv.api.put(`/api/v1/services/${inv.svc.nginx.id}`, { host_id: other.host.id, name: 'n', service_definition: 'N' }), 400, 'validation_failed');
  });

  it('deleting a service removes it and its bindings from dependencies', async () => {
    const byService = expectOk(await inv.api.post('/api/v1/dependencies', {
      name: 's', network_id: inv.t.defaultNetworkId, color: 'Red', members: { type: 'Services', service_ids: [inv.svc.snmpd.id, inv.svc.nginx.id] },
    }), 201);
    const byBinding = expectOk(await inv.api.post('/api/v1/dependencies', {
      name: 'b', network_id: inv.t.defaultNetworkId, color: 'Red', members: { type: 'Bindings', binding_ids: [inv.svc.nginx.bindings[0].id] },
    }), 201);
    expectOk(await inv.api.del(`/api/v1/services/${inv.svc.nginx.id}`));
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${byService.id}`)).members).to.deep.equal({ type: 'Services', service_ids: [inv.svc.snmpd.id] });
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${byBinding.id}`)).members).to.deep.equal({ type: 'Bindings', binding_ids: [] });
  });

  it('404 for another organization, 403 outside the scope; `at` shows the service and its bindings as they were; history', async () => {
    const other = await otherTenant(inv);
    const path = `/api/v1/services/${inv.svc.nginx.id}`;
    expectError(await inv.api.get(path, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.del(path, other.tenant.owner), 404, 'entity_not_found');
    const corner = await privateCorner(inv);
    const hidden = corner.host.services[0];
    expectError(await inv.api.get(`/api/v1/services/${hidden.id}`, corner.member.auth), 403, 'entity_access_denied');
    const post = await inv.api.post('/api/v1/services', { host_id: corner.host.id, name: 'x', service_definition: 'X' }, corner.member.auth);
    expectError(post, 403, 'entity_access_denied');
    expect(post.body.params).to.deep.equal({ entity: 'Host', id: corner.host.id });
    expectError(await inv.api.del(path, corner.viewer.auth), 403, 'auth_permission_denied');

    const changed = expectOk(await inv.api.put(path, { name: 'nginx 2', service_definition: 'Nginx', bindings: [] }, corner.member.auth));
    const before = expectOk(await inv.api.get(`${path}?${q(inv.svc.nginx.updated_at)}`, corner.viewer.auth));
    expect(before.name).to.equal('nginx');
    expect(before.bindings.map((b: any) => b.id)).to.deep.equal([inv.svc.nginx.bindings[0].id]);
    expect(before.bindings[0].valid_to).to.equal(changed.updated_at);
    const history = expectOk(await inv.api.get(`${path}/history`, corner.viewer.auth));
    expect(history.map((h: any) => h.name)).to.deep.equal(['nginx 2', 'nginx']);
    expectError(await inv.api.put(path, { name: 'n3', service_definition: 'Nginx', expected_updated_at: inv.svc.nginx.updated_at }), 409, 'entity_modified');
  });
});
