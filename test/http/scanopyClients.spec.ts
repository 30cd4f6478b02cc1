// What Scanopy's own clients send is accepted (issue 14.4): the nil UUID as a create's id means
// "assign one" on every resource, `position: null`, Scanopy's edge-style aliases, and the fields of
// its published schemas we do not model; a field neither schema knows is still a 400.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { registerTenant, uniqueEmail, PASSWORD, type Tenant } from '../support/world.js';

const NIL = '00000000-0000-0000-0000-000000000000';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('Scanopy clients', () => {
  let app: TestApp;
  let t: Tenant;
  const post = async (path: string, body: unknown, auth: Credential = t.owner) => expectOk(await call(app.url, 'POST', path, { auth, body }), 201);
  const assigned = (entity: any) => {
    expect(entity.id).to.match(UUID);
    expect(entity.id).to.not.equal(NIL);
    return entity;
  };

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('takes the nil UUID as "assign one" on every create', async () => {
    const net = t.defaultNetworkId;
    const tag = assigned(await post('/api/v1/tags', { id: NIL, name: 'prod', color: 'Blue' }));
    assigned(await post('/api/v1/networks', { id: NIL, name: 'Second' }));
    const subnet = assigned(await post('/api/v1/subnets', { id: NIL, network_id: net, cidr: '10.1.0.0/24', name: 'lan' }));
    const host = assigned(await post('/api/v1/hosts', {
      id: NIL, network_id: net, name: 'web', tags: [tag.id],
      ip_addresses: [{ id: NIL, subnet_id: subnet.id, ip_address: '10.1.0.5', position: null }],
      ports: [{ id: NIL, number: 22, protocol: 'Tcp' }],
      services: [{ id: NIL, name: 'ssh', service_definition: 'Ssh', position: null, bindings: [] }],
    }));
    for (const child of [...host.ip_addresses, ...host.ports, ...host.services]) assigned(child);
    assigned(await post('/api/v1/ip-addresses', { id: NIL, host_id: host.id, subnet_id: subnet.id, ip_address: '10.1.0.6', position: null }));
    const port = assigned(await post('/api/v1/ports', { id: NIL, host_id: host.id, number: 80, protocol: 'Tcp' }));
    const service = assigned(await post('/api/v1/services', { id: NIL, host_id: host.id, name: 'web', service_definition: 'Nginx', position: null }));
    assigned(await post('/api/v1/bindings', { id: NIL, service_id: service.id, type: 'Port', port_id: port.id }));
    assigned(await post('/api/v1/interfaces', { id: NIL, host_id: host.id, if_index: 1 }));
    assigned(await post('/api/v1/dependencies', { id: NIL, network_id: net, name: 'path', color: 'Blue', members: { type: 'Services', service_ids: [service.id] } }));
    assigned(await post('/api/v1/users', { id: NIL, email: uniqueEmail('viewer'), password: PASSWORD, permissions: 'Viewer' }));
    assigned((await post('/api/v1/auth/keys', { id: NIL, name: 'ci' })).api_key);
    assigned((await post('/api/v1/auth/daemon', { id: NIL, name: 'd', network_id: net })).api_key);
  });

  it('stores Scanopy\'s edge-style aliases as the styles they draw', async () => {
    const dep = await post('/api/v1/dependencies', { network_id: t.defaultNetworkId, name: 'p', color: 'Red', edge_style: 'Step' });
    expect(dep.edge_style).to.equal('SmoothStep');
    const { id, organization_id: _o, source: _s, created_at: _c, updated_at: _u, valid_from: _f, valid_to: _t, lineage_id: _l, ...rest } = dep;
    const put = expectOk(await call(app.url, 'PUT', `/api/v1/dependencies/${id}`, { auth: t.owner, body: { ...rest, id, edge_style: 'SimpleBezier' } }));
    expect(put.edge_style).to.equal('Bezier');
    expectError(await call(app.url, 'POST', '/api/v1/dependencies', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'q', color: 'Red', edge_style: 'Curvy' } }), 400, 'validation_failed');
  });

  it('accepts and ignores the fields of Scanopy\'s schemas we do not model, and still refuses a field neither knows', async () => {
    const snmp = { sys_descr: 'Linux', sys_object_id: '1.3.6.1.4.1.8072', sys_location: 'rack 4', sys_contact: 'ops', management_url: 'https://10.0.0.1', chassis_id: 'aa:bb', snmp_credential_id: null };
    const host = await post('/api/v1/hosts', { network_id: t.defaultNetworkId, name: 'switch', ...snmp });
    expect(host).to.include({ sys_descr: null, chassis_id: null }); // read-only: only discovery fills them (issue 25.1)
    const network = await post('/api/v1/networks', { name: 'snmp', snmp_credential_id: '3f1c2a9e-7b1d-4c55-9a7e-0c1d2e3f4a5b' });
    expect(network).to.not.have.property('snmp_credential_id');
    const key = await post('/api/v1/auth/keys', { name: 'scanopy', key: '**********', tags: [], last_used: null });
    expect(key.api_key.name).to.equal('scanopy');
    await post('/api/v1/auth/daemon', { name: 'd', network_id: t.defaultNetworkId, key: '**********', tags: [], last_used: null });
    // A typo stays an error, naming the field.
    const typo = await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'x', sys_desc: 'Linux' } });
    expectError(typo, 400, 'validation_unknown_field');
    expect(typo.body.params.field).to.equal('sys_desc');
    expectError(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'x', colour: 'Blue' } }), 400, 'validation_unknown_field');
  });

  it('lists the ignored fields in the OpenAPI document instead of typing them', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const hostBody = doc.paths['/api/v1/hosts'].post.requestBody.content['application/json'].schema;
    expect(hostBody.properties).to.not.have.property('sys_descr');
    expect(hostBody.properties).to.not.have.property('created_at');
    expect(hostBody.description).to.include('sys_descr').and.include('created_at');
  });
});
