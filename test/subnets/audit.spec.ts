// Optimistic concurrency an audit found no test for on subnets (issue 22): a PUT with a stale
// `expected_updated_at` is 409 entity_modified and changes nothing.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';

describe('subnets: what the audit slipped past', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('expected_updated_at: the current value writes, a stale one is 409 entity_modified and changes nothing', async () => {
    const created = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: t.defaultNetworkId, cidr: '10.5.0.0/24', name: 'office' } }), 201);
    const put = (name: string, expected: string) => call(app.url, 'PUT', `/api/v1/subnets/${created.id}`, { auth: t.owner, body: { cidr: '10.5.0.0/24', name, expected_updated_at: expected } });
    const renamed = expectOk(await put('office-1', created.updated_at));
    expect(renamed.updated_at).to.not.equal(created.updated_at);
    expectError(await put('office-2', created.updated_at), 409, 'entity_modified');
    const now = expectOk(await call(app.url, 'GET', `/api/v1/subnets/${created.id}`, { auth: t.owner }));
    expect(now).to.include({ name: 'office-1', updated_at: renamed.updated_at });
  });
});
