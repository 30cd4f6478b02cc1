// Consolidating a duplicate host (issue 14.5): children move to the destination, an address or port
// it already has is not duplicated (bindings re-pointed), dependencies stay whole, the duplicate is
// deleted, and both histories are kept.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';

describe('hosts: consolidate', () => {
  let app: TestApp;
  let t: Tenant;
  const req = async (method: string, path: string, body?: unknown, auth = t.owner) => call(app.url, method, path, { auth, body });
  const ok = async (method: string, path: string, body?: unknown, status = 200) => expectOk(await req(method, path, body), status);

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('moves the other host’s children, re-points what the destination already has, keeps dependencies and both histories', async () => {
    const net = t.defaultNetworkId;
    const subnet = await ok('POST', '/api/v1/subnets', { network_id: net, cidr: '10.0.0.0/24', name: 'lan' }, 201);
    const red = await ok('POST', '/api/v1/tags', { name: 'red', color: 'Red' }, 201);
    const dest = await ok('POST', '/api/v1/hosts', {
      network_id: net, name: 'server', ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.5' }], ports: [{ number: 22, protocol: 'Tcp' }],
    }, 201);
    const other = await ok('POST', '/api/v1/hosts', {
      network_id: net, name: 'server (dup)', hostname: 'server.lan', tags: [red.id],
      ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.7' }, { subnet_id: subnet.id, ip_address: '10.0.0.6' }],
      ports: [{ number: 22, protocol: 'Tcp' }, { number: 80, protocol: 'Tcp' }],
    }, 201);
    // The API refuses a second host with 10.0.0.5 (issue 28.4: 409 ip_address_duplicate); data from before that rule can hold one.
    await app.services.orm.em.fork().execute(`update ip_addresses set ip_address = '10.0.0.5' where id = ?`, [other.ip_addresses[0].id]);
    const port = (n: number) => other.ports.find((p: { number: number }) => p.number === n).id;
    const ssh = await ok('POST', '/api/v1/services', { host_id: other.id, name: 'ssh', service_definition: 'Ssh', bindings: [{ type: 'Port', port_id: port(22) }] }, 201);
    const web = await ok('POST', '/api/v1/services', {
      host_id: other.id, name: 'web', service_definition: 'Nginx',
      bindings: [{ type: 'Port', port_id: port(80) }],
    }, 201);
    await ok('POST', '/api/v1/services', { host_id: other.id, name: 'dns', service_definition: 'Dns', bindings: [{ type: 'IPAddress', ip_address_id: other.ip_addresses[0].id }] }, 201);
    const dep = await ok('POST', '/api/v1/dependencies', { network_id: net, name: 'path', color: 'Blue', members: { type: 'Bindings', binding_ids: [web.bindings[0].id, ssh.bindings[0].id] } }, 201);
    const before = (await ok('GET', `/api/v1/hosts/${other.id}`)).updated_at;

    const merged = await ok('PUT', `/api/v1/hosts/${dest.id}/consolidate/${other.id}`);
    expect(merged.id).to.equal(dest.id);
    expect(merged.ip_addresses.map((a: { ip_address: string; position: number }) => [a.ip_address, a.position])).to.deep.equal([['10.0.0.5', 0], ['10.0.0.6', 1]]);
    expect(merged.ports.map((p: { number: number }) => p.number).sort()).to.deep.equal([22, 80]);
    expect(merged.services.map((s: { name: string }) => s.name).sort()).to.deep.equal(['dns', 'ssh', 'web']);
    expect(merged).to.include({ hostname: 'server.lan' });
    expect(merged.tags).to.deep.equal([red.id]);
    // The bindings on the duplicate's port 22 and address 10.0.0.5 now use the destination's.
    const bindingsOf = (name: string) => merged.services.find((s: { name: string }) => s.name === name).bindings;
    expect(bindingsOf('ssh')[0].port_id).to.equal(dest.ports[0].id);
    expect(bindingsOf('dns')[0].ip_address_id).to.equal(dest.ip_addresses[0].id);
    // The dependency is whole, its members unchanged.
    expect((await ok('GET', `/api/v1/dependencies/${dep.id}`)).members).to.deep.equal(dep.members);
    // The duplicate is gone now, and readable as it was.
    expectError(await req('GET', `/api/v1/hosts/${other.id}`), 404, 'entity_not_found');
    const past = await ok('GET', `/api/v1/hosts/${other.id}?at=${encodeURIComponent(before)}`);
    expect(past.name).to.equal('server (dup)');
    expect(past.ports).to.have.length(2);
    expect((await ok('GET', `/api/v1/hosts/${other.id}/history`))[0].valid_to).to.be.a('string');
    expect((await ok('GET', `/api/v1/ports/${port(80)}/history`)).map((s: { host_id: string }) => s.host_id)).to.deep.equal([dest.id, other.id]);
  });

  it('refuses the same host, another network, a host with a daemon, and another organization’s host', async () => {
    const a = await ok('POST', '/api/v1/hosts', { network_id: t.defaultNetworkId, name: 'a' }, 201);
    expectError(await req('PUT', `/api/v1/hosts/${a.id}/consolidate/${a.id}`), 400, 'validation_failed');
    const lab = await ok('POST', '/api/v1/networks', { name: 'Lab' }, 201);
    const elsewhere = await ok('POST', '/api/v1/hosts', { network_id: lab.id, name: 'b' }, 201);
    expectError(await req('PUT', `/api/v1/hosts/${a.id}/consolidate/${elsewhere.id}`), 400, 'validation_failed');
    const provisioned = await ok('POST', '/api/v1/daemons/provision', { network_id: t.defaultNetworkId, name: 'd', url: 'http://192.0.2.10:60073' }, 201);
    expectError(await req('PUT', `/api/v1/hosts/${a.id}/consolidate/${provisioned.daemon.host_id}`), 400, 'validation_failed');
    const other = await registerTenant(app.url, 'other');
    const theirs = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: other.owner, body: { network_id: other.defaultNetworkId, name: 'x' } }), 201);
    expectError(await req('PUT', `/api/v1/hosts/${a.id}/consolidate/${theirs.id}`), 404, 'entity_not_found');
    expect((await ok('GET', `/api/v1/hosts/${a.id}`)).name).to.equal('a');
  });
});
