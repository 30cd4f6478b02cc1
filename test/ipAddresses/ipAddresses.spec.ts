import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { createSubnet } from '../hosts/fixtures.js';
import { otherTenant, privateCorner, q, startInventory, type Inventory } from './inventory.js';

describe('ip-addresses', () => {
  let inv: Inventory;
  beforeEach(async () => {
    inv = await startInventory();
  });
  afterEach(() => inv.app.close());

  const create = async (body: Record<string, unknown>) =>
    expectOk(await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: inv.subnet.id, ...body }), 201);
  const positions = async () =>
    expectOk(await inv.api.get(`/api/v1/hosts/${inv.host.id}`)).ip_addresses.map((i: any) => `${i.ip_address}@${i.position}`);

  it('creates (network and organization from the host), reads, lists, replaces and deletes, keeping positions 0..n-1', async () => {
    const ip = await create({ ip_address: '10.0.0.20', mac_address: 'aa:bb:cc:dd:ee:ff', name: 'eth1', network_id: randomUUID(), organization_id: randomUUID() });
    expect(ip).to.include({
      host_id: inv.host.id, network_id: inv.t.defaultNetworkId, organization_id: inv.t.orgId, subnet_id: inv.subnet.id,
      ip_address: '10.0.0.20', mac_address: 'AA:BB:CC:DD:EE:FF', name: 'eth1', position: 2, valid_to: null, lineage_id: ip.id,
    });
    expect(expectOk(await inv.api.get(`/api/v1/ip-addresses/${ip.id}`))).to.deep.equal(ip);

    const list = await inv.api.get(`/api/v1/ip-addresses?host_id=${inv.host.id}&order_by=position&order_direction=desc`);
    expect(expectOk(list).map((i: any) => i.ip_address)).to.deep.equal(['10.0.0.20', '10.0.0.11', '10.0.0.10']);
    expect(list.body.meta.pagination).to.deep.include({ total_count: 3, has_more: false });

    // Full replace: name left out becomes null; moving to position 0 shifts the others.
    const put = expectOk(await inv.api.put(`/api/v1/ip-addresses/${ip.id}`, { ...ip, ip_address: '10.0.0.21', name: undefined, position: 0 }));
    expect(put).to.include({ ip_address: '10.0.0.21', name: null, position: 0, created_at: ip.created_at });
    expect(put.updated_at > ip.updated_at).to.equal(true);
    expect(await positions()).to.deep.equal(['10.0.0.21@0', '10.0.0.10@1', '10.0.0.11@2']);

    expectOk(await inv.api.del(`/api/v1/ip-addresses/${inv.ip.a.id}`));
    expectError(await inv.api.get(`/api/v1/ip-addresses/${inv.ip.a.id}`), 404, 'entity_not_found');
    expect(await positions()).to.deep.equal(['10.0.0.21@0', '10.0.0.11@1']);
    expectError(await inv.api.put(`/api/v1/ip-addresses/${ip.id}`, { subnet_id: inv.subnet.id, ip_address: '10.0.0.21', position: 5 }), 400, 'validation_failed');
  });

  it('an address lies inside its subnet, on its host’s network; unknown or foreign subnets and hosts are 400', async () => {
    const out = await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: inv.subnet.id, ip_address: '10.0.1.5' });
    expectError(out, 400, 'ip_address_out_of_range');
    expect(out.body.params).to.deep.equal({ ip: '10.0.1.5', subnet: '10.0.0.0/24' });

    const corner = await privateCorner(inv);
    const mismatch = await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: corner.subnet.id, ip_address: '10.0.0.30' });
    expectError(mismatch, 400, 'entity_network_mismatch');
    expect(mismatch.body.params).to.deep.equal({ entity: 'Subnet', id: corner.subnet.id });

    const unknown = randomUUID();
    const badSubnet = await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: unknown, ip_address: '10.0.0.30' });
    expectError(badSubnet, 400, 'entity_reference_invalid');
    expect(badSubnet.body.params).to.deep.equal({ entity: 'Subnet', id: unknown, field: 'subnet_id' });
    const badHost = await inv.api.post('/api/v1/ip-addresses', { host_id: unknown, subnet_id: inv.subnet.id, ip_address: '10.0.0.30' });
    expectError(badHost, 400, 'entity_reference_invalid');
    expect(badHost.body.params).to.deep.equal({ entity: 'Host', id: unknown, field: 'host_id' });

    const other = await otherTenant(inv);
    const foreignSubnet = await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: other.subnet.id, ip_address: '10.0.0.30' });
    expectError(foreignSubnet, 400, 'entity_reference_invalid');
    expect(foreignSubnet.body.params.id).to.equal(other.subnet.id);
    const foreignHost = await inv.api.post('/api/v1/ip-addresses', { host_id: other.host.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.30' });
    expectError(foreignHost, 400, 'entity_reference_invalid');
    expect(foreignHost.body.params.id).to.equal(other.host.id);

    // The same rules on PUT; an address does not move to another host.
    const path = `/api/v1/ip-addresses/${inv.ip.a.id}`;
    expectError(await inv.api.put(path, { subnet_id: inv.subnet.id, ip_address: '192.168.1.1' }), 400, 'ip_address_out_of_range');
    expectError(await inv.api.put(path, { subnet_id: corner.subnet.id, ip_address: '10.0.0.10' }), 400, 'entity_network_mismatch');
    const moved = await inv.api.put(path, { host_id: corner.host.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.10' });
    expectError(moved, 400, 'validation_failed');
    expect(moved.body.params.field).to.equal('host_id');
    expectError(await inv.api.put(path, { subnet_id: inv.subnet.id, ip_address: '10.0.0.10', colour: 'x' }), 400, 'validation_unknown_field');
    expectError(await inv.api.post('/api/v1/ip-addresses', { subnet_id: inv.subnet.id, ip_address: '10.0.0.30' }), 400, 'validation_failed');
    // A second subnet on the same network is fine, and the address must then be inside it.
    const second = await createSubnet(inv.app.url, inv.t.owner, inv.t.defaultNetworkId, '192.168.7.0/24');
    expect(expectOk(await inv.api.put(path, { subnet_id: second.id, ip_address: '192.168.7.9' }))).to.include({ subnet_id: second.id, ip_address: '192.168.7.9' });
  });

  it('a body id on create is ignored (the server assigns it); a stale expected_updated_at is 409 entity_modified', async () => {
    const created = expectOk(await inv.api.post('/api/v1/ip-addresses', { id: inv.ip.a.id, host_id: inv.host.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.40' }), 201);
    expect(created.id).to.not.equal(inv.ip.a.id);
    expect(expectOk(await inv.api.get(`/api/v1/ip-addresses/${inv.ip.a.id}`)).ip_address).to.equal('10.0.0.10');
    const path = `/api/v1/ip-addresses/${inv.ip.a.id}`;
    const first = expectOk(await inv.api.put(path, { subnet_id: inv.subnet.id, ip_address: '10.0.0.41', expected_updated_at: inv.ip.a.updated_at }));
    const stale = await inv.api.put(path, { subnet_id: inv.subnet.id, ip_address: '10.0.0.42', expected_updated_at: inv.ip.a.updated_at });
    expectError(stale, 409, 'entity_modified');
    expect(stale.body.params).to.include({ entity: 'IPAddress', id: inv.ip.a.id, actual: first.updated_at });
    expect(expectOk(await inv.api.get(path)).ip_address).to.equal('10.0.0.41');
  });

  it('another organization gets 404; a Member without a grant 403; a Viewer reads but cannot write', async () => {
    const other = await otherTenant(inv);
    const path = `/api/v1/ip-addresses/${inv.ip.a.id}`;
    for (const res of [
      await inv.api.get(path, other.tenant.owner), await inv.api.get(`${path}/history`, other.tenant.owner),
      await inv.api.put(path, { subnet_id: inv.subnet.id, ip_address: '10.0.0.10' }, other.tenant.owner), await inv.api.del(path, other.tenant.owner),
    ]) {
      expectError(res, 404, 'entity_not_found');
      expect(res.body.params).to.deep.equal({ entity: 'IPAddress', id: inv.ip.a.id });
    }
    expect(expectOk(await inv.api.get('/api/v1/ip-addresses', other.tenant.owner)).map((i: any) => i.host_id)).to.not.include(inv.host.id);

    const corner = await privateCorner(inv);
    const hidden = corner.host.ip_addresses[0];
    const denied = await inv.api.get(`/api/v1/ip-addresses/${hidden.id}`, corner.member.auth);
    expectError(denied, 403, 'entity_access_denied');
    expect(denied.body.params).to.deep.equal({ entity: 'IPAddress', id: hidden.id });
    expectError(await inv.api.del(`/api/v1/ip-addresses/${hidden.id}`, corner.member.auth), 403, 'entity_access_denied');
    const post = await inv.api.post('/api/v1/ip-addresses', { host_id: corner.host.id, subnet_id: corner.subnet.id, ip_address: '10.0.0.50' }, corner.member.auth);
    expectError(post, 403, 'entity_access_denied');
    expect(post.body.params).to.deep.equal({ entity: 'Host', id: corner.host.id });
    expectError(await inv.api.get(`/api/v1/ip-addresses?network_id=${corner.network}`, corner.member.auth), 403, 'entity_access_denied');
    const seen = expectOk(await inv.api.get('/api/v1/ip-addresses', corner.member.auth));
    expect(seen.map((i: any) => i.host_id)).to.have.members([inv.host.id, inv.host.id]);

    expect(expectOk(await inv.api.get(`/api/v1/ip-addresses/${inv.ip.a.id}`, corner.viewer.auth)).id).to.equal(inv.ip.a.id);
    expectError(await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.60' }, corner.viewer.auth), 403, 'auth_permission_denied');
    expectOk(await inv.api.post('/api/v1/ip-addresses', { host_id: inv.host.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.60' }, corner.member.auth), 201);
  });

  it('`at` returns an earlier state (and a deleted address); history is newest first', async () => {
    const path = `/api/v1/ip-addresses/${inv.ip.a.id}`;
    const changed = expectOk(await inv.api.put(path, { subnet_id: inv.subnet.id, ip_address: '10.0.0.99', name: 'renamed', position: 0 }));
    const before = expectOk(await inv.api.get(`${path}?${q(inv.ip.a.updated_at)}`));
    expect(before).to.include({ ip_address: '10.0.0.10', name: null, valid_from: inv.ip.a.valid_from, valid_to: changed.valid_from });
    const history = expectOk(await inv.api.get(`${path}/history`));
    expect(history.map((h: any) => h.ip_address)).to.deep.equal(['10.0.0.99', '10.0.0.10']);
    expect(history[0].valid_to).to.equal(null);

    expectOk(await inv.api.del(path));
    const list = expectOk(await inv.api.get(`/api/v1/ip-addresses?host_id=${inv.host.id}&${q(changed.updated_at)}`));
    expect(list.map((i: any) => i.ip_address).sort()).to.deep.equal(['10.0.0.11', '10.0.0.99']);
    expect(expectOk(await inv.api.get(`${path}?${q(changed.updated_at)}`)).ip_address).to.equal('10.0.0.99');
    expect(expectOk(await inv.api.get(`${path}/history`))[0].valid_to).to.be.a('string');
    expectError(await inv.api.get(`${path}?at=2999-01-01T00:00:00Z`), 400, 'validation_failed');
  });

  it('deleting an address deletes its bindings, removes them from dependencies and unlinks interfaces', async () => {
    const snmpBinding = inv.svc.snmpd.bindings[0];
    const httpBinding = inv.svc.nginx.bindings[0];
    const dep = expectOk(await inv.api.post('/api/v1/dependencies', {
      name: 'path', network_id: inv.t.defaultNetworkId, color: 'Blue', members: { type: 'Bindings', binding_ids: [snmpBinding.id, httpBinding.id] },
    }), 201);
    const iface = expectOk(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 2, ip_address_id: inv.ip.b.id }), 201);
    expectOk(await inv.api.del(`/api/v1/ip-addresses/${inv.ip.b.id}`));
    expectError(await inv.api.get(`/api/v1/bindings/${snmpBinding.id}`), 404, 'entity_not_found');
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`)).members).to.deep.equal({ type: 'Bindings', binding_ids: [httpBinding.id] });
    expect(expectOk(await inv.api.get(`/api/v1/interfaces/${iface.id}`)).ip_address_id).to.equal(null);
    expect(expectOk(await inv.api.get(`/api/v1/services/${inv.svc.snmpd.id}`)).bindings).to.deep.equal([]);
  });
});
