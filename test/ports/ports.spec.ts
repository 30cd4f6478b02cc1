import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { otherTenant, privateCorner, q, startInventory, type Inventory } from '../ipAddresses/inventory.js';

describe('ports', () => {
  let inv: Inventory;
  beforeEach(async () => {
    inv = await startInventory();
  });
  afterEach(() => inv.app.close());

  it('creates with a derived type (a sent type is ignored), reads, lists, replaces and deletes', async () => {
    const port = expectOk(await inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 443, protocol: 'Tcp', type: 'Custom', network_id: randomUUID() }), 201);
    expect(port).to.include({ host_id: inv.host.id, network_id: inv.t.defaultNetworkId, organization_id: inv.t.orgId, number: 443, protocol: 'Tcp', type: 'Https', valid_to: null });
    expect(expectOk(await inv.api.get(`/api/v1/ports/${port.id}`))).to.deep.equal(port);

    const list = expectOk(await inv.api.get(`/api/v1/ports?host_id=${inv.host.id}&order_by=number&order_direction=desc`));
    expect(list.map((p: any) => `${p.number}/${p.protocol}`)).to.deep.equal(['443/Tcp', '161/Udp', '80/Tcp', '22/Tcp']);
    expect(expectOk(await inv.api.get('/api/v1/ports?protocol=Udp')).map((p: any) => p.type)).to.deep.equal(['Snmp']);
    expect(expectOk(await inv.api.get(`/api/v1/ports?network_id=${inv.t.defaultNetworkId}&limit=2`))).to.have.length(2);

    const put = expectOk(await inv.api.put(`/api/v1/ports/${port.id}`, { ...port, number: 8080, type: 'Whatever' }));
    expect(put).to.include({ number: 8080, protocol: 'Tcp', type: 'HttpAlt', created_at: port.created_at });
    expect(expectOk(await inv.api.put(`/api/v1/ports/${port.id}`, { number: 4242, protocol: 'Udp' })).type).to.equal('Custom');

    expectOk(await inv.api.del(`/api/v1/ports/${port.id}`));
    expectError(await inv.api.get(`/api/v1/ports/${port.id}`), 404, 'entity_not_found');
    expectError(await inv.api.del(`/api/v1/ports/${port.id}`), 404, 'entity_not_found');
  });

  it('(number, protocol) is unique per host: 409 entity_already_exists on create and update', async () => {
    const dup = await inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 80, protocol: 'Tcp' });
    expectError(dup, 409, 'entity_already_exists');
    expect(dup.body.params).to.deep.equal({ entity: 'Port', field: 'number/protocol', value: '80/Tcp' });
    const udp = expectOk(await inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 80, protocol: 'Udp' }), 201);
    expectError(await inv.api.put(`/api/v1/ports/${udp.id}`, { number: 22, protocol: 'Tcp' }), 409, 'entity_already_exists');
    // The same number on another host is fine; re-saving a port unchanged is fine.
    const corner = await privateCorner(inv);
    expectOk(await inv.api.post('/api/v1/ports', { host_id: corner.host.id, number: 443, protocol: 'Tcp' }), 201);
    expectOk(await inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 443, protocol: 'Tcp' }), 201);
    expectOk(await inv.api.put(`/api/v1/ports/${inv.port.http.id}`, { number: 80, protocol: 'Tcp' }));
    // Concurrent creates of one (number, protocol): one wins, the others are 409 (never 500).
    const racers = await Promise.all(Array.from({ length: 5 }, () => inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 9999, protocol: 'Tcp' })));
    expect(racers.map((r) => r.status).sort()).to.deep.equal([201, 409, 409, 409, 409]);
  });

  it('validation: protocol, number range, unknown or foreign host, a port does not move', async () => {
    expectError(await inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 80, protocol: 'Sctp' }), 400, 'validation_failed');
    expectError(await inv.api.post('/api/v1/ports', { host_id: inv.host.id, number: 70000, protocol: 'Tcp' }), 400, 'validation_failed');
    const unknown = randomUUID();
    const bad = await inv.api.post('/api/v1/ports', { host_id: unknown, number: 8, protocol: 'Tcp' });
    expectError(bad, 400, 'entity_reference_invalid');
    expect(bad.body.params).to.deep.equal({ entity: 'Host', id: unknown, field: 'host_id' });
    const other = await otherTenant(inv);
    expectError(await inv.api.post('/api/v1/ports', { host_id: other.host.id, number: 8, protocol: 'Tcp' }), 400, 'entity_reference_invalid');
    expectError(await inv.api.put(`/api/v1/ports/${inv.port.ssh.id}`, { host_id: other.host.id, number: 22, protocol: 'Tcp' }), 400, 'validation_failed');
    expectOk(await inv.api.put(`/api/v1/ports/${inv.port.ssh.id}`, { host_id: inv.host.id, number: 2222, protocol: 'Tcp' }));
  });

  it('deleting a port deletes its bindings and removes them from every dependency', async () => {
    const httpBinding = inv.svc.nginx.bindings[0];
    const snmpBinding = inv.svc.snmpd.bindings[0];
    const extra = expectOk(await inv.api.post('/api/v1/bindings', { service_id: inv.svc.nginx.id, type: 'Port', port_id: inv.port.ssh.id }), 201);
    const members = { type: 'Bindings', binding_ids: [httpBinding.id, snmpBinding.id, extra.id] };
    const dep = expectOk(await inv.api.post('/api/v1/dependencies', { name: 'web path', network_id: inv.t.defaultNetworkId, color: 'Teal', members }), 201);
    const services = expectOk(await inv.api.post('/api/v1/dependencies', {
      name: 'apps', network_id: inv.t.defaultNetworkId, color: 'Teal', members: { type: 'Services', service_ids: [inv.svc.nginx.id] },
    }), 201);

    expectOk(await inv.api.del(`/api/v1/ports/${inv.port.http.id}`));
    expectError(await inv.api.get(`/api/v1/bindings/${httpBinding.id}`), 404, 'entity_not_found');
    const after = expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}`));
    expect(after.members).to.deep.equal({ type: 'Bindings', binding_ids: [snmpBinding.id, extra.id] });
    // as a new state of the dependency: the earlier one still lists the binding
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}?${q(dep.updated_at)}`)).members).to.deep.equal(members);
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${dep.id}/history`))).to.have.length(2);
    // the service stays, with its other binding, and stays in its dependency
    expect(expectOk(await inv.api.get(`/api/v1/services/${inv.svc.nginx.id}`)).bindings.map((b: any) => b.id)).to.deep.equal([extra.id]);
    expect(expectOk(await inv.api.get(`/api/v1/dependencies/${services.id}`)).members.service_ids).to.deep.equal([inv.svc.nginx.id]);
  });

  it('404 for another organization, 403 outside the scope, `at` and history', async () => {
    const other = await otherTenant(inv);
    const path = `/api/v1/ports/${inv.port.ssh.id}`;
    expectError(await inv.api.get(path, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.put(path, { number: 23, protocol: 'Tcp' }, other.tenant.owner), 404, 'entity_not_found');
    expectError(await inv.api.get(`${path}/history`, other.tenant.owner), 404, 'entity_not_found');
    const corner = await privateCorner(inv);
    const hidden = corner.host.ports[0];
    const denied = await inv.api.put(`/api/v1/ports/${hidden.id}`, { number: 23, protocol: 'Tcp' }, corner.member.auth);
    expectError(denied, 403, 'entity_access_denied');
    expect(denied.body.params).to.deep.equal({ entity: 'Port', id: hidden.id });
    expectError(await inv.api.post('/api/v1/ports', { host_id: corner.host.id, number: 23, protocol: 'Tcp' }, corner.member.auth), 403, 'entity_access_denied');
    expectError(await inv.api.put(path, { number: 23, protocol: 'Tcp' }, corner.viewer.auth), 403, 'auth_permission_denied');

    const changed = expectOk(await inv.api.put(path, { number: 23, protocol: 'Tcp' }, corner.member.auth));
    expect(changed.type).to.equal('Telnet');
    expect(expectOk(await inv.api.get(`${path}?${q(inv.port.ssh.updated_at)}`, corner.viewer.auth))).to.include({ number: 22, type: 'Ssh' });
    const history = expectOk(await inv.api.get(`${path}/history`, corner.viewer.auth));
    expect(history.map((h: any) => h.number)).to.deep.equal([23, 22]);
    const stale = await inv.api.put(path, { number: 24, protocol: 'Tcp', expected_updated_at: inv.port.ssh.updated_at });
    expectError(stale, 409, 'entity_modified');
  });
});
