// POST …/bulk on the resources declared through resourceRoutes (subnets, tags, dependencies): the
// resource's own create per item, in one transaction, errors named by index, the create's access
// rules (test/hosts/bulkCreate.spec.ts covers hosts at 1,000 items).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';

describe('http: bulk create of subnets, tags and dependencies', () => {
  let app: TestApp;
  let t: Tenant;
  const post = (path: string, body: unknown, auth = t.owner) => call(app.url, 'POST', path, { auth, body });
  const names = async (path: string) => expectOk(await call(app.url, 'GET', path, { auth: t.owner })).map((x: { name: string }) => x.name).sort();

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('subnets: created in order with their overlap warnings; an invalid item names its index and nothing is stored', async () => {
    const net = t.defaultNetworkId;
    const data = expectOk(await post('/api/v1/subnets/bulk', [
      { network_id: net, cidr: '10.0.0.0/16', name: 'wide' },
      { network_id: net, cidr: '10.0.1.0/24', name: 'inner' },
    ]), 201);
    expect(data.count).to.equal(2);
    expect(data.items.map((s: { name: string }) => s.name)).to.deep.equal(['wide', 'inner']);
    // The second sees the first (same transaction): the warning the single create gives.
    expect(data.items[1].warnings.map((w: { subnet_id: string }) => w.subnet_id)).to.deep.equal([data.items[0].id]);
    expect(data.items[0].valid_from).to.equal(data.items[1].valid_from);
    const bad = await post('/api/v1/subnets/bulk', [
      { network_id: net, cidr: '10.2.0.0/24', name: 'ok' },
      { network_id: net, cidr: '10.3.0.1/24', name: 'host bits' },
    ]);
    expectError(bad, 400, 'validation_failed');
    expect(bad.body.params).to.include({ index: 1, field: 'cidr' });
    expect(await names('/api/v1/subnets')).to.deep.equal(['inner', 'wide']);
  });

  it('subnets: a daemon, which may create one subnet, is refused the bulk create (the daemon variant is not carried over)', async () => {
    const { key } = await createDaemonKey(app.url, t.owner, t.defaultNetworkId);
    const daemon = daemonClient(app.url, key);
    await registerDaemon(daemon, t.defaultNetworkId);
    const res = await daemon.post('/api/v1/subnets/bulk', [{ network_id: t.defaultNetworkId, cidr: '10.9.0.0/24', name: 'd' }]);
    expectError(res, 403, 'auth_user_context_required');
  });

  it('tags: Admin only; a name taken (by a stored tag or an earlier item) is 409 naming the item, nothing stored', async () => {
    expectOk(await post('/api/v1/tags', { name: 'prod', color: 'Red' }), 201);
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expectError(await post('/api/v1/tags/bulk', [{ name: 'x', color: 'Blue' }], member.auth), 403, 'auth_permission_denied');
    const taken = await post('/api/v1/tags/bulk', [{ name: 'a', color: 'Blue' }, { name: 'b', color: 'Blue' }, { name: 'prod', color: 'Blue' }]);
    expectError(taken, 409, 'entity_already_exists');
    expect(taken.body.params).to.include({ index: 2, entity: 'Tag' });
    const twice = await post('/api/v1/tags/bulk', [{ name: 'a', color: 'Blue' }, { name: 'a', color: 'Green' }]);
    expectError(twice, 409, 'entity_already_exists');
    expect(twice.body.params.index).to.equal(1);
    expect(await names('/api/v1/tags')).to.deep.equal(['prod']);
    const made = expectOk(await post('/api/v1/tags/bulk', [{ name: 'a', color: 'Blue' }, { name: 'b', color: 'Green' }]), 201);
    expect(made.items.map((x: { name: string }) => x.name)).to.deep.equal(['a', 'b']);
    expect(await names('/api/v1/tags')).to.deep.equal(['a', 'b', 'prod']);
  });

  it('dependencies: members checked per item (an unknown service names its index), one event batch', async () => {
    const host = expectOk(await post('/api/v1/hosts', { name: 'h', network_id: t.defaultNetworkId, services: [{ name: 'web', service_definition: 'Nginx' }, { name: 'db', service_definition: 'PostgreSQL' }] }), 201);
    const [web, db] = host.services.map((s: { id: string }) => s.id);
    const dep = (name: string, ids: string[]) => ({ name, network_id: t.defaultNetworkId, color: 'Blue', members: { type: 'Services', service_ids: ids } });
    const bad = await post('/api/v1/dependencies/bulk', [dep('ok', [web, db]), dep('ghost', [web, randomUUID()])]);
    expectError(bad, 400, 'entity_reference_invalid');
    expect(bad.body.params).to.include({ index: 1, entity: 'Service' });
    expect(await names('/api/v1/dependencies')).to.deep.equal([]);
    const made = expectOk(await post('/api/v1/dependencies/bulk', [dep('one', [web, db]), dep('two', [db, web])]), 201);
    expect(made.count).to.equal(2);
    const events = expectOk(await call(app.url, 'GET', '/api/v1/events?types=dependency.created', { auth: t.owner }));
    expect(events.map((e: { entity_id: string }) => e.entity_id).sort()).to.deep.equal(made.items.map((d: { id: string }) => d.id).sort());
    expect(new Set(events.map((e: { batch_id: string }) => e.batch_id)).size).to.equal(1);
  });
});
