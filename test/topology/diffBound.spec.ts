// A diff lists at most max_changes nodes and as many edges (default 5,000, never more than
// MAX_DIFF_CHANGES: issue 22, every read bounded), added first, then removed, then changed, and
// says how many it left out.
import { expect } from 'chai';
import { MAX_DIFF_CHANGES } from '../../src/modules/topology/bounds.js';
import { firstChanges } from '../../src/modules/topology/thread.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';

describe('topology diff: bounded by max_changes', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'diff');
  });
  afterEach(() => app.close());

  it('lists the first max_changes nodes and counts the rest; by default all of a small diff', async () => {
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: t.defaultNetworkId, cidr: '10.4.0.0/24', name: 'lan' } }), 201);
    const from = new Date().toISOString();
    for (let i = 1; i <= 5; i++) {
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: `h${i}`, ip_addresses: [{ subnet_id: subnet.id, ip_address: `10.4.0.${i}` }] } }), 201);
    }
    const diff = (extra = '') => call(app.url, 'GET', `/api/v1/topology/diff?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(from)}${extra}`, { auth: t.owner });
    const all = expectOk(await diff());
    const listed = (d: any) => d.nodes.added.length + d.nodes.removed.length + d.nodes.changed.length;
    expect(listed(all)).to.be.at.least(5);
    expect(all.truncated).to.deep.equal({ nodes: 0, edges: 0 });
    const two = expectOk(await diff('&max_changes=2'));
    expect(listed(two)).to.equal(2);
    expect(two.truncated.nodes).to.equal(listed(all) - 2);
    expectError(await diff(`&max_changes=${MAX_DIFF_CHANGES + 1}`), 400, 'validation_failed');
  });

  it('keeps added, then removed, then changed (pure)', () => {
    const part = { added: ['a1', 'a2'], removed: ['r1'], changed: ['c1', 'c2'] };
    expect(firstChanges(part, 3)).to.deep.equal({ kept: { added: ['a1', 'a2'], removed: ['r1'], changed: [] }, left: 2 });
    expect(firstChanges(part, 10)).to.deep.equal({ kept: part, left: 0 });
    expect(firstChanges(part, 1)).to.deep.equal({ kept: { added: ['a1'], removed: [], changed: [] }, left: 4 });
  });
});
