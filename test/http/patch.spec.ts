// PATCH with a JSON merge patch (RFC 7396), declared once in src/http/resourceRoutes.ts: a client
// changes one field without blanking the others, on hosts, subnets, networks, tags and dependencies.
import { expect } from 'chai';
import pg from 'pg';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';
import { hostService } from '../../src/modules/hosts/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';

const MERGE_PATCH = { 'Content-Type': 'application/merge-patch+json' };
const patch = (app: TestApp, auth: Credential, path: string, body: unknown, headers: Record<string, string> = MERGE_PATCH) =>
  call(app.url, 'PATCH', path, { auth, body, headers });
const get = async (app: TestApp, auth: Credential, path: string) => expectOk(await call(app.url, 'GET', path, { auth }));
/** What a write moves by itself: compared apart. */
const withoutClock = ({ updated_at: _u, valid_from: _v, ...rest }: Record<string, unknown>) => rest;

describe('http/patch: JSON merge patch on hosts, subnets, networks, tags and dependencies', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  /** One entity of each of the five resources, every optional field set, and the one field a patch changes. */
  async function entities() {
    const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth: t.owner, body }), 201);
    const tag = await post('/api/v1/tags', { name: 'prod', color: 'Red', description: 'production', is_application: true });
    const subnet = await post('/api/v1/subnets', { network_id: t.defaultNetworkId, cidr: '10.0.0.0/24', name: 'lan', description: 'office', subnet_type: 'Lan', tags: [tag.id] });
    const network = await post('/api/v1/networks', { name: 'lab', description: 'the lab', tags: [tag.id] });
    const host = await post('/api/v1/hosts', {
      network_id: t.defaultNetworkId, name: 'nas', hostname: 'nas.lan', description: 'storage', hidden: true, tags: [tag.id],
      ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.5' }], ports: [{ number: 445, protocol: 'Tcp' }],
      services: [{ name: 'smb', service_definition: 'Samba' }],
    });
    const dependency = await post('/api/v1/dependencies', {
      network_id: t.defaultNetworkId, name: 'files', description: 'file path', color: 'Blue', dependency_type: 'HubAndSpoke',
      edge_style: 'Straight', members: { type: 'Services', service_ids: [host.services[0].id] }, tags: [tag.id],
    });
    return [
      { path: `/api/v1/tags/${tag.id}`, field: 'color', value: 'Green' },
      { path: `/api/v1/subnets/${subnet.id}`, field: 'name', value: 'lan-2' },
      { path: `/api/v1/networks/${network.id}`, field: 'name', value: 'lab-2' },
      { path: `/api/v1/hosts/${host.id}`, field: 'name', value: 'nas-2' },
      { path: `/api/v1/dependencies/${dependency.id}`, field: 'color', value: 'Teal' },
    ];
  }

  it('keeps every field not sent, on each of the five resources', async () => {
    for (const { path, field, value } of await entities()) {
      const before = await get(app, t.owner, path);
      const patched = expectOk(await patch(app, t.owner, path, { [field]: value }));
      expect(patched[field], path).to.equal(value);
      expect(withoutClock(patched), path).to.deep.equal(withoutClock({ ...before, [field]: value }));
      expect(withoutClock(await get(app, t.owner, path)), path).to.deep.equal(withoutClock(patched));
    }
  });

  it('a host: a children list sent replaces the list, the lists not sent are kept (same ids)', async () => {
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    const host = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id);
    const patched = expectOk(await patch(app, t.owner, `/api/v1/hosts/${host.id}`, { ports: [{ number: 8080, protocol: 'Tcp' }] }));
    expect(patched.ports.map((p: any) => p.number)).to.deep.equal([8080]);
    expect(patched.ip_addresses).to.deep.equal(host.ip_addresses);
    expect(patched.services.map((s: any) => [s.id, s.name])).to.deep.equal(host.services.map((s: any) => [s.id, s.name]));
    expect(patched).to.include({ name: host.name, hostname: host.hostname });
  });

  it('two PATCHes of different fields of one host at the same moment both land (the host row is locked before the read)', async () => {
    const host = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'nas', description: 'storage' } }), 201);
    const path = `/api/v1/hosts/${host.id}`;
    // The barrier, in this process (the app runs here): the first PATCH to reach the write waits
    // until the second has also read the host (it reached the write too) or is waiting on the
    // first's row lock in PostgreSQL (a tuple lock of hosts held while waiting). Without the lock
    // both read the same host, and the second write puts back what the first changed.
    const watcher = new pg.Client({ connectionString: app.databaseUrl });
    await watcher.connect();
    const originalUpdate = hostService.update;
    let arrived = 0;
    const secondWaitsOnRow = async () => Number((await watcher.query(
      `select count(*) as n from pg_locks l where l.locktype = 'tuple' and l.relation::regclass::text like 'hosts%'
         and exists (select 1 from pg_locks w where w.pid = l.pid and not w.granted)`,
    )).rows[0].n) > 0;
    hostService.update = async function (this: typeof hostService, ...args: Parameters<typeof originalUpdate>) {
      arrived += 1;
      if (arrived === 1) {
        const deadline = Date.now() + 20_000;
        while (arrived < 2 && !(await secondWaitsOnRow())) {
          if (Date.now() > deadline) throw new Error('the second PATCH neither read the host nor waited on its row');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
      return originalUpdate.apply(this, args);
    };
    try {
      const both = await Promise.all([patch(app, t.owner, path, { name: 'nas-2' }), patch(app, t.owner, path, { description: 'backups' })]);
      for (const res of both) expectOk(res);
    } finally {
      hostService.update = originalUpdate;
      await watcher.end();
    }
    expect(await get(app, t.owner, path)).to.include({ name: 'nas-2', description: 'backups' });
  });

  it('a stale expected_updated_at is 409 entity_modified and changes nothing; the current one writes', async () => {
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    const path = `/api/v1/subnets/${subnet.id}`;
    const renamed = expectOk(await patch(app, t.owner, path, { name: 'first', expected_updated_at: subnet.updated_at }));
    expectError(await patch(app, t.owner, path, { name: 'second', expected_updated_at: subnet.updated_at }), 409, 'entity_modified');
    expect(await get(app, t.owner, path)).to.include({ name: 'first', updated_at: renamed.updated_at });
  });

  it('null clears a nullable field, resets one with a default, and is 400 on a required one', async () => {
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', {
      auth: t.owner, body: { network_id: t.defaultNetworkId, cidr: '10.1.0.0/24', name: 'lan', description: 'office', subnet_type: 'Lan' },
    }), 201);
    const path = `/api/v1/subnets/${subnet.id}`;
    const cleared = expectOk(await patch(app, t.owner, path, { description: null, subnet_type: null }));
    expect(cleared).to.include({ description: null, subnet_type: 'None', name: 'lan', cidr: '10.1.0.0/24' });
    const res = await patch(app, t.owner, path, { name: null });
    expectError(res, 400, 'validation_failed');
    expect(res.body.params.field).to.equal('name');
  });

  it('takes application/merge-patch+json and application/json; any other body type is 415', async () => {
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    const path = `/api/v1/subnets/${subnet.id}`;
    expect(expectOk(await patch(app, t.owner, path, { name: 'by-merge-patch' })).name).to.equal('by-merge-patch');
    expect(expectOk(await patch(app, t.owner, path, { name: 'by-json' }, { 'Content-Type': 'application/json' })).name).to.equal('by-json');
    for (const type of ['text/plain', 'application/json-patch+json', 'application/x-www-form-urlencoded']) {
      const res = await call(app.url, 'PATCH', path, { auth: t.owner, rawBody: JSON.stringify({ name: 'nope' }), headers: { 'Content-Type': type } });
      expectError(res, 415, 'unsupported_media_type');
      expect(res.body.error, type).to.contain('application/merge-patch+json');
    }
    expect((await get(app, t.owner, path)).name).to.equal('by-json');
  });

  it('network_id is read-only on hosts, subnets and dependencies: another network is 400 naming it (PATCH and PUT), nothing moves; the stored one is accepted', async () => {
    const other = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'elsewhere' } }), 201);
    const [, subnet, , host, dependency] = await entities();
    for (const { path } of [host!, subnet!, dependency!]) {
      const before = await get(app, t.owner, path);
      const res = await patch(app, t.owner, path, { network_id: other.id });
      expectError(res, 400, 'validation_failed');
      expect(res.body.params.field).to.equal('network_id');
      if (!path.includes('dependencies')) expect(res.body.error).to.match(/network_id is read-only/);
      const put = await call(app.url, 'PUT', path, { auth: t.owner, body: { ...before, network_id: other.id } });
      expectError(put, 400, 'validation_failed');
      expect(put.body.params.field).to.equal('network_id');
      expect(withoutClock(await get(app, t.owner, path))).to.deep.equal(withoutClock(before));
      expectOk(await patch(app, t.owner, path, { network_id: t.defaultNetworkId, description: 'same network' }));
      expect(await get(app, t.owner, path)).to.include({ network_id: t.defaultNetworkId, description: 'same network' });
    }
    const schemas = JSON.stringify((await call(app.url, 'GET', '/api/openapi.json', { auth: t.owner })).body);
    expect(schemas).to.match(/Read-only: a host never moves to another network/);
    expect(schemas).to.match(/Read-only: a subnet never moves to another network/);
  });

  it('an unknown field is 400 validation_unknown_field and changes nothing', async () => {
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    const path = `/api/v1/subnets/${subnet.id}`;
    const res = await patch(app, t.owner, path, { name: 'renamed', nmae: 'typo' });
    expectError(res, 400, 'validation_unknown_field');
    expect((await get(app, t.owner, path)).name).to.equal(subnet.name);
  });

  it('tenancy from the declaration: another organization\'s id is 404, a Viewer is 403', async () => {
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    const other = await registerTenant(app.url, 'other');
    expectError(await patch(app, other.owner, `/api/v1/subnets/${subnet.id}`, { name: 'taken' }), 404, 'entity_not_found');
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    expectError(await patch(app, viewer.auth, `/api/v1/subnets/${subnet.id}`, { name: 'viewed' }), 403, 'auth_permission_denied');
    expect((await get(app, t.owner, `/api/v1/subnets/${subnet.id}`)).name).to.equal(subnet.name);
  });
});
