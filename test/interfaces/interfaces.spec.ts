import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { otherTenant, privateCorner, q, startInventory, type Inventory } from '../ipAddresses/inventory.js';

describe('interfaces', () => {
  let inv: Inventory;
  beforeEach(async () => {
    inv = await startInventory();
  });
  afterEach(() => inv.app.close());

  const full = () => ({
    host_id: inv.host.id, ip_address_id: inv.ip.a.id, if_index: 3, if_type: 6, if_name: 'eth0', if_descr: 'Intel NIC', if_alias: 'uplink',
    mac_address: 'aa:bb:cc:00:00:03', speed_bps: 10_000_000_000, admin_status: 'Up', oper_status: 'LowerLayerDown',
    lldp_sys_name: 'core-sw1', lldp_port_id: 'Gi1/0/1', cdp_device_id: null,
  });

  it('creates (neighbor is read-only), reads, lists, replaces (neighbor kept) and deletes', async () => {
    const iface = expectOk(await inv.api.post('/api/v1/interfaces', { ...full(), neighbor: { host_id: randomUUID() }, network_id: randomUUID() }), 201);
    expect(iface).to.include({
      host_id: inv.host.id, network_id: inv.t.defaultNetworkId, organization_id: inv.t.orgId, ip_address_id: inv.ip.a.id, if_index: 3, if_type: 6,
      if_name: 'eth0', if_descr: 'Intel NIC', if_alias: 'uplink', mac_address: 'AA:BB:CC:00:00:03', speed_bps: 10_000_000_000,
      admin_status: 'Up', oper_status: 'LowerLayerDown', lldp_sys_name: 'core-sw1', cdp_device_id: null, neighbor: null, valid_to: null,
    });
    expect(expectOk(await inv.api.get(`/api/v1/interfaces/${iface.id}`))).to.deep.equal(iface);
    const minimal = expectOk(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 1 }), 201);
    expect(minimal).to.include({ if_type: 1, if_descr: '', if_name: null, admin_status: 'Up', oper_status: 'Up', ip_address_id: null, speed_bps: null });

    expect(expectOk(await inv.api.get(`/api/v1/interfaces?host_id=${inv.host.id}&order_by=if_index`)).map((i: any) => i.if_index)).to.deep.equal([1, 3]);
    expect(expectOk(await inv.api.get('/api/v1/interfaces?oper_status=LowerLayerDown')).map((i: any) => i.id)).to.deep.equal([iface.id]);

    // Discovery sets neighbor; a PUT (full replace) keeps it and cannot set it.
    const neighbor = { host_id: inv.host.id, port: 'Gi1/0/1' };
    await inv.app.services.orm.em.fork().execute(`update interfaces set neighbor = ?::jsonb where id = ?`, [JSON.stringify(neighbor), iface.id]);
    const put = expectOk(await inv.api.put(`/api/v1/interfaces/${iface.id}`, { if_index: 3, admin_status: 'Down', oper_status: 'Dormant', neighbor: null }));
    expect(put).to.include({ admin_status: 'Down', oper_status: 'Dormant', if_name: null, ip_address_id: null, lldp_sys_name: null, speed_bps: null, created_at: iface.created_at });
    expect(put.neighbor).to.deep.equal(neighbor);

    expectOk(await inv.api.del(`/api/v1/interfaces/${iface.id}`));
    expectError(await inv.api.get(`/api/v1/interfaces/${iface.id}`), 404, 'entity_not_found');
    expect(expectOk(await inv.api.get(`/api/v1/hosts/${inv.host.id}`)).interfaces.map((i: any) => i.id)).to.deep.equal([minimal.id]);
  });

  it('statuses, the address of the same host, if_index unique per host, unknown host', async () => {
    expectError(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 4, admin_status: 'Dormant' }), 400, 'validation_failed');
    expectError(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 4, oper_status: 'Sideways' }), 400, 'validation_failed');
    expectError(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 4, mac_address: 'not-a-mac' }), 400, 'validation_failed');
    expectError(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id }), 400, 'validation_failed');
    const statuses = ['Up', 'Down', 'Testing', 'Unknown', 'Dormant', 'NotPresent', 'LowerLayerDown'];
    for (const [i, status] of statuses.entries()) {
      expectOk(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 100 + i, oper_status: status, admin_status: statuses[i % 3] }), 201);
    }
    const corner = await privateCorner(inv);
    const foreignIp = corner.host.ip_addresses[0].id;
    const res = await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 5, ip_address_id: foreignIp });
    expectError(res, 400, 'entity_reference_invalid');
    expect(res.body.params).to.deep.equal({ entity: 'IPAddress', id: foreignIp, field: 'ip_address_id' });
    const first = expectOk(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 5 }), 201);
    const dup = await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 5 });
    expectError(dup, 409, 'entity_already_exists');
    expect(dup.body.params).to.deep.equal({ entity: 'Interface', field: 'if_index', value: '5' });
    expectOk(await inv.api.post('/api/v1/interfaces', { host_id: corner.host.id, if_index: 5 }), 201);
    expectError(await inv.api.put(`/api/v1/interfaces/${first.id}`, { if_index: 5, ip_address_id: foreignIp }), 400, 'entity_reference_invalid');
    expectError(await inv.api.put(`/api/v1/interfaces/${first.id}`, { host_id: corner.host.id, if_index: 5 }), 400, 'validation_failed');
    const unknown = randomUUID();
    const noHost = await inv.api.post('/api/v1/interfaces', { host_id: unknown, if_index: 1 });
    expectError(noHost, 400, 'entity_reference_invalid');
    expect(noHost.body.params).to.deep.equal({ entity: 'Host', id: unknown, field: 'host_id' });
  });

  it('404 for another organization, 403 outside the scope; `at` and history', async () => {
    const iface = expectOk(await inv.api.post('/api/v1/interfaces', full()), 201);
    const other = await otherTenant(inv);
    const path = `/api/v1/interfaces/${iface.id}`;
    expectError(await inv.api.get(path, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.put(path, { if_index: 3 }, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.post('/api/v1/interfaces', { host_id: inv.host.id, if_index: 9 }, other.tenant.owner), 400, 'entity_reference_invalid');
    const corner = await privateCorner(inv);
    const hidden = expectOk(await inv.api.post('/api/v1/interfaces', { host_id: corner.host.id, if_index: 1 }), 201);
    expectError(await inv.api.get(`/api/v1/interfaces/${hidden.id}`, corner.member.auth), 403, 'entity_access_denied');
    expectError(await inv.api.get(`/api/v1/interfaces/${hidden.id}/history`, corner.member.auth), 403, 'entity_access_denied');
    expectError(await inv.api.post('/api/v1/interfaces', { host_id: corner.host.id, if_index: 2 }, corner.member.auth), 403, 'entity_access_denied');
    expectError(await inv.api.del(path, corner.viewer.auth), 403, 'auth_permission_denied');
    expect(expectOk(await inv.api.get('/api/v1/interfaces', corner.viewer.auth)).map((i: any) => i.id)).to.deep.equal([iface.id]);

    const changed = expectOk(await inv.api.put(path, { ...full(), oper_status: 'Up' }, corner.member.auth));
    expect(expectOk(await inv.api.get(`${path}?${q(iface.updated_at)}`)).oper_status).to.equal('LowerLayerDown');
    expect(expectOk(await inv.api.get(`${path}?${q(changed.updated_at)}`)).oper_status).to.equal('Up');
    expect(expectOk(await inv.api.get(`${path}/history`)).map((h: any) => h.oper_status)).to.deep.equal(['Up', 'LowerLayerDown']);
    expectError(await inv.api.put(path, { if_index: 3, expected_updated_at: iface.updated_at }), 409, 'entity_modified');
  });
});
