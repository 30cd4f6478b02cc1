import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';

describe('system: envelope, errors, version, health', () => {
  let app: TestApp;
  let tenant: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    tenant = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('GET /api/version answers the versions in data and meta, without credentials', async () => {
    const res = await call(app.url, 'GET', '/api/version');
    const data = expectOk(res);
    expect(data.api_version).to.equal(1);
    expect(data.server_version).to.match(/^\d+\.\d+\.\d+(-[\w.]+)?$/);
    expect(res.body.meta.server_version).to.equal(data.server_version);
  });

  it('health is free and ready reports database, redis and migrations', async () => {
    expectOk(await call(app.url, 'GET', '/api/health'));
    const ready = expectOk(await call(app.url, 'GET', '/api/ready'));
    expect(ready).to.include({ database: 'ok', redis: 'ok', pending_migrations: 0 });
  });

  it('every response carries X-Request-Id, echoing a sane one and replacing a garbage one', async () => {
    const echoed = await call(app.url, 'GET', '/api/version', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(echoed.headers.get('x-request-id')).to.equal('abc-123');
    const replaced = await call(app.url, 'GET', '/api/nope', { headers: { 'X-Request-Id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('unknown route is 404 route_not_found and wrong method is 405 method_not_allowed', async () => {
    expectError(await call(app.url, 'GET', '/api/v1/nothing-here', { auth: tenant.owner }), 404, 'route_not_found');
    const res = await call(app.url, 'PATCH', '/api/v1/tags', { auth: tenant.owner });
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).to.include('GET');
  });

  it('malformed JSON is 400 malformed_json', async () => {
    const res = await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, rawBody: '{"name": "x",', headers: { 'Content-Type': 'application/json' } });
    expectError(res, 400, 'malformed_json');
  });

  it('a wrong content type is 415 unsupported_media_type', async () => {
    const res = await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, rawBody: 'name=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expectError(res, 415, 'unsupported_media_type');
  });

  it('a body over 1 MiB is 413 payload_too_large and stores nothing', async () => {
    const big = JSON.stringify({ name: 'big', color: 'Green', description: 'x'.repeat(1024 * 1024) });
    const res = await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, rawBody: big, headers: { 'Content-Type': 'application/json' } });
    expectError(res, 413, 'payload_too_large');
    const list = await call(app.url, 'GET', '/api/v1/tags', { auth: tenant.owner });
    expect(expectOk(list)).to.have.length(0);
  });

  it('a missing body on a write is 400 validation_failed, an unknown field 400 validation_unknown_field', async () => {
    expectError(await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner }), 400, 'validation_failed');
    const res = await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, body: { name: 'a', color: 'Green', colour: 'Red' } });
    expectError(res, 400, 'validation_unknown_field');
    expect(res.body.params).to.include({ field: 'colour', did_you_mean: 'color' });
  });

  it('every error of a body at once, an unknown field first with the closest known one', async () => {
    // A host with a misspelt network_id, a name too long and a bad address: today's first complaint
    // would be "network_id is required".
    const res = await call(app.url, 'POST', '/api/v1/hosts', { auth: tenant.owner, body: {
      name: 'x'.repeat(300), network: tenant.defaultNetworkId, hidden: 'maybe',
      ip_addresses: [{ subnet_id: tenant.defaultNetworkId, ip_address: '10.0.0.300', mac: 'AA:BB:CC:DD:EE:FF' }],
    } });
    expectError(res, 400, 'validation_unknown_field');
    expect(res.body.error).to.match(/^Unknown field `network`; did you mean `network_id`\? \(and \d+ more: see params.errors\)$/);
    expect(res.body.params).to.include({ field: 'network', did_you_mean: 'network_id' });
    const errors = res.body.params.errors as Array<{ field: string; code: string; message: string }>;
    const byField = Object.fromEntries(errors.map((e) => [e.field, e]));
    expect(Object.keys(byField)).to.include.members(['network', 'ip_addresses.0.mac', 'name', 'network_id', 'hidden', 'ip_addresses.0.ip_address']);
    expect(byField['ip_addresses.0.mac']!.message).to.equal('unknown field `ip_addresses.0.mac`; did you mean `mac_address`?');
    expect(byField.network_id!.code).to.equal('required');
    for (const e of errors) expect(e).to.have.all.keys('field', 'code', 'message');
    expect(errors.slice(0, 2).every((e) => e.code === 'unknown_field')).to.equal(true);
    // A query too, and a single error keeps the old shape with a one-item list.
    const q = await call(app.url, 'GET', '/api/v1/hosts?limit=-1&offset=x', { auth: tenant.owner });
    expectError(q, 400, 'validation_failed');
    expect(q.body.params.errors.map((e: any) => e.field)).to.have.members(['query.limit', 'query.offset']);
    const one = await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, body: { color: 'Green' } });
    expect(one.body.params).to.deep.equal({ field: 'name', reason: 'name is required', errors: [{ field: 'name', code: 'required', message: 'name is required' }] });
    // Far from every known field: no guess.
    const far = await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, body: { name: 'a', color: 'Green', zzzzzz: 1 } });
    expect(far.body.params).to.not.have.property('did_you_mean');
    expect(far.body.error).to.equal('Unknown field `zzzzzz`');
  });

  it('a NUL character (which PostgreSQL cannot store) in a query, a string or JSON is 400 validation_failed, not a 500', async () => {
    const net = tenant.defaultNetworkId;
    expectError(await call(app.url, 'GET', '/api/v1/hosts?q=%00', { auth: tenant.owner }), 400, 'validation_failed');
    expectError(await call(app.url, 'POST', '/api/v1/tags', { auth: tenant.owner, body: { name: 'a\u0000b', color: 'Blue' } }), 400, 'validation_failed');
    expectError(await call(app.url, 'POST', '/api/v1/hosts', {
      auth: tenant.owner, body: { name: 'h', network_id: net, virtualization: { type: 'Docker', details: { note: '\u0000' } } },
    }), 400, 'validation_failed');
    expect(expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: tenant.owner }))).to.deep.equal([]);
  });

  it('a bad path id is 400 validation_failed naming the field', async () => {
    const res = await call(app.url, 'GET', '/api/v1/tags/not-a-uuid', { auth: tenant.owner });
    expectError(res, 400, 'validation_failed');
    expect(res.body.params.field).to.equal('params.id');
  });

  it('serves the OpenAPI 3.1 document and a docs page generated from the routes', async () => {
    const res = await call(app.url, 'GET', '/api/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body.openapi).to.equal('3.1.0');
    expect(res.body.paths['/api/v1/tags'].get.parameters.map((p: { name: string }) => p.name)).to.include.members(['limit', 'offset', 'at', 'group_by', 'order_by', 'order_direction']);
    expect(res.body.paths['/api/v1/tags/{id}'].put.requestBody.content['application/json'].schema.required).to.include.members(['name', 'color']);
    expect(res.body.components.schemas.Error.properties.code.enum).to.include('entity_modified');
    // Routes daemons call too say so, with what a daemon sends.
    const subnets = res.body.paths['/api/v1/subnets'];
    expect(subnets.post.security).to.deep.include({ daemon: [] });
    expect(subnets.post['x-daemon-variant'].requestBody.required).to.include.members(['cidr', 'network_id']);
    expect(subnets.get['x-daemon-variant']).to.be.an('object');
    expect(res.body.paths['/api/v1/tags'].get.security).not.to.deep.include({ daemon: [] });
    const page = await fetch(`${app.url}/api/docs`);
    expect(page.headers.get('content-type')).to.match(/text\/html/);
    const bundle = /src="(\/api\/docs\/assets\/[\d.]+\/swagger-ui-bundle\.js)"/.exec(await page.text())?.[1];
    const asset = await fetch(`${app.url}${bundle}`);
    expect(asset.status).to.equal(200);
    expect(asset.headers.get('cache-control')).to.include('immutable');
  });
});
