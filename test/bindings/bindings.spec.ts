import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { otherTenant, privateCorner, q, startInventory, type Inventory } from '../ipAddresses/inventory.js';

describe('bindings', () => {
  let inv: Inventory;
  beforeEach(async () => {
    inv = await startInventory();
  });
  afterEach(() => inv.app.close());

  const post = (body: Record<string, unknown>) => inv.api.post('/api/v1/bindings', body);

  it('creates (network from the service), reads, lists by service/host/port, replaces and deletes', async () => {
    const b = expectOk(await post({ service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.snmp.id, ip_address_id: inv.ip.a.id, network_id: randomUUID() }), 201);
    expect(b).to.include({ service_id: inv.svc.snmpd.id, network_id: inv.t.defaultNetworkId, organization_id: inv.t.orgId, type: 'Port', port_id: inv.port.snmp.id, ip_address_id: inv.ip.a.id, valid_to: null });
    expect(expectOk(await inv.api.get(`/api/v1/bindings/${b.id}`))).to.deep.equal(b);

    expect(expectOk(await inv.api.get(`/api/v1/bindings?service_id=${inv.svc.snmpd.id}`)).map((x: any) => x.type)).to.deep.equal(['IPAddress', 'Port']);
    expect(expectOk(await inv.api.get(`/api/v1/bindings?host_id=${inv.host.id}`))).to.have.length(3);
    expect(expectOk(await inv.api.get(`/api/v1/bindings?host_id=${randomUUID()}`))).to.deep.equal([]);
    expect(expectOk(await inv.api.get(`/api/v1/bindings?port_id=${inv.port.snmp.id}`)).map((x: any) => x.id)).to.deep.equal([b.id]);
    expect(expectOk(await inv.api.get(`/api/v1/bindings?network_id=${inv.t.defaultNetworkId}&order_by=type&order_direction=desc`)).map((x: any) => x.type))
      .to.deep.equal(['Port', 'Port', 'IPAddress']);

    const put = expectOk(await inv.api.put(`/api/v1/bindings/${b.id}`, { ...b, port_id: inv.port.ssh.id }));
    expect(put).to.include({ port_id: inv.port.ssh.id, created_at: b.created_at });
    expectOk(await inv.api.del(`/api/v1/bindings/${b.id}`));
    expectError(await inv.api.get(`/api/v1/bindings/${b.id}`), 404, 'entity_not_found');
    expect(expectOk(await inv.api.get(`/api/v1/services/${inv.svc.snmpd.id}`)).bindings).to.have.length(1);
  });

  it('points at a port or address of its own service’s host, under the conflict rules', async () => {
    const other = await otherTenant(inv);
    const corner = await privateCorner(inv);
    for (const [target, entity, field] of [
      [{ type: 'Port', port_id: corner.host.ports[0].id }, 'Port', 'port_id'],
      [{ type: 'IPAddress', ip_address_id: corner.host.ip_addresses[0].id }, 'IPAddress', 'ip_address_id'],
      [{ type: 'Port', port_id: inv.port.ssh.id, ip_address_id: other.host.ip_addresses[0].id }, 'IPAddress', 'ip_address_id'],
    ] as const) {
      const res = await post({ service_id: inv.svc.snmpd.id, ...target });
      expectError(res, 400, 'entity_reference_invalid');
      expect(res.body.params).to.include({ entity, field });
    }
    const unknown = randomUUID();
    const noService = await post({ service_id: unknown, type: 'Port', port_id: inv.port.ssh.id });
    expectError(noService, 400, 'entity_reference_invalid');
    expect(noService.body.params).to.deep.equal({ entity: 'Service', id: unknown, field: 'service_id' });
    expectError(await post({ service_id: other.host.services[0].id, type: 'Port', port_id: inv.port.ssh.id }), 400, 'entity_reference_invalid');

    // A port is bound by at most one service of the host.
    const taken = await post({ service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.http.id });
    expectError(taken, 400, 'validation_failed');
    expect(taken.body.params.field).to.equal('port_id');
    // IPAddress vs Port within a service: nginx binds port 80 on all addresses.
    expectError(await post({ service_id: inv.svc.nginx.id, type: 'IPAddress', ip_address_id: inv.ip.a.id }), 400, 'validation_failed');
    // snmpd binds address .11: a port on .11, or on all addresses, conflicts; a port on .10 does not.
    expectError(await post({ service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.snmp.id, ip_address_id: inv.ip.b.id }), 400, 'validation_failed');
    expectError(await post({ service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.snmp.id }), 400, 'validation_failed');
    expectOk(await post({ service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.snmp.id, ip_address_id: inv.ip.a.id }), 201);
    // The same binding twice is a conflict.
    const twice = await post({ service_id: inv.svc.nginx.id, type: 'Port', port_id: inv.port.http.id });
    expectError(twice, 409, 'entity_already_exists');
    expect(twice.body.params).to.include({ entity: 'Binding' });
    // Shape: a Port binding needs port_id; an IPAddress binding takes no port_id.
    expectError(await post({ service_id: inv.svc.nginx.id, type: 'Port' }), 400, 'validation_failed');
    expectError(await post({ service_id: inv.svc.nginx.id, type: 'IPAddress', ip_address_id: inv.ip.a.id, port_id: inv.port.ssh.id }), 400, 'validation_failed');
    expectError(await post({ service_id: inv.svc.nginx.id, type: 'Interface', ip_address_id: inv.ip.a.id }), 400, 'validation_failed');

    // The same rules on PUT; and a binding does not move to another service.
    const nginxBinding = inv.svc.nginx.bindings[0];
    expectError(await inv.api.put(`/api/v1/bindings/${inv.svc.snmpd.bindings[0].id}`, { type: 'Port', port_id: inv.port.http.id }), 400, 'validation_failed');
    expectError(await inv.api.put(`/api/v1/bindings/${nginxBinding.id}`, { type: 'Port', port_id: corner.host.ports[0].id }), 400, 'entity_reference_invalid');
    const moved = await inv.api.put(`/api/v1/bindings/${nginxBinding.id}`, { service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.http.id });
    expectError(moved, 400, 'validation_failed');
    expect(moved.body.params.field).to.equal('service_id');
    // Re-saving unchanged is fine (it does not conflict with itself).
    expect(expectOk(await inv.api.put(`/api/v1/bindings/${nginxBinding.id}`, nginxBinding)).updated_at).to.equal(nginxBinding.updated_at);
  });

  it('a deleted binding leaves every dependency; `at` still shows it; history newest first', async () => {
    const httpBinding = inv.svc.nginx.bindings[0];
    const snmpBinding = inv.svc.snmpd.bindings[0];
    const dep = expectOk(await inv.api.post('/api/v1/dependencies', {
      name: 'd', network_id: inv.t.defaultNetworkId, color: 'Sky', dependency_type: 'HubAndSpoke',
      members: { type: 'Bindings', binding_ids: [snmpBinding.id, httpBinding.id] },
    }), 201);
    const changed = expectOk(await inv.api.put(`/api/v1/bindings/${httpBinding.id}`, { type: 'Port', port_id: inv.port.http.id, ip_address_id: inv.ip.a.id }));
    expectOk(await inv.api.del(`/api/v1/bindings/${snmpBinding.id}`));
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`)).members.binding_ids).to.deep.equal([httpBinding.id]);
    expect(expectOk(await inv.api.get(`/api/v1/bindings/${snmpBinding.id}?${q(dep.updated_at)}`)).id).to.equal(snmpBinding.id);
    expect(expectOk(await inv.api.get(`/api/v1/bindings?service_id=${inv.svc.snmpd.id}&${q(dep.updated_at)}`))).to.have.length(1);
    expect(expectOk(await inv.api.get(`/api/v1/bindings/${httpBinding.id}?${q(httpBinding.updated_at)}`)).ip_address_id).to.equal(null);
    const history = expectOk(await inv.api.get(`/api/v1/bindings/${httpBinding.id}/history`));
    expect(history.map((h: any) => h.ip_address_id)).to.deep.equal([inv.ip.a.id, null]);
    expect(history[1].valid_to).to.equal(changed.valid_from);
  });

  it('404 for another organization, 403 outside the scope or for a Viewer writing', async () => {
    const other = await otherTenant(inv);
    const id = inv.svc.nginx.bindings[0].id;
    expectError(await inv.api.get(`/api/v1/bindings/${id}`, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.del(`/api/v1/bindings/${id}`, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.post('/api/v1/bindings', { service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.ssh.id }, other.tenant.owner), 400, 'entity_reference_invalid');
    const corner = await privateCorner(inv);
    const hidden = corner.host.services[0];
    const denied = await inv.api.post('/api/v1/bindings', { service_id: hidden.id, type: 'Port', port_id: corner.host.ports[0].id }, corner.member.auth);
    expectError(denied, 403, 'entity_access_denied');
    expect(denied.body.params).to.deep.equal({ entity: 'Service', id: hidden.id });
    expectError(await inv.api.get(`/api/v1/bindings/${hidden.bindings[0].id}`, corner.member.auth), 403, 'entity_access_denied');
    expect(expectOk(await inv.api.get('/api/v1/bindings', corner.member.auth))).to.have.length(2);
    expectError(await inv.api.post('/api/v1/bindings', { service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.ssh.id, ip_address_id: inv.ip.a.id }, corner.viewer.auth), 403, 'auth_permission_denied');
    expectOk(await inv.api.post('/api/v1/bindings', { service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.ssh.id, ip_address_id: inv.ip.a.id }, corner.member.auth), 201);
  });
});
