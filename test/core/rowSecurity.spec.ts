// Row security (DATABASE_ROW_SECURITY, migration RowSecurity, src/core/db.ts): with it on, an API
// request's statements run as the role netinv_tenant with the request's organization, and the
// policy on every tenant table shows and accepts only that organization's rows. Two organizations,
// each with a subnet and a host with children: the API answers as with it off, and real statements
// of the service with their organization predicate taken out see and change nothing of the other
// organization through a Db with an organization.
import { expect } from 'chai';
import pg from 'pg';
import { ACROSS_ORGANIZATIONS, Db, setRowSecurity as switchRowSecurity, TENANT_ROLE } from '../../src/core/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';
import { CpuPool, INLINE_BELOW } from '../../src/modules/topology/pool.js';
import { readSnapshotHere } from '../../src/modules/topology/threadReads.js';

interface World { t: Tenant; subnet: any; host: any }

describe('core/row security', () => {
  let app: TestApp;
  let a: World;
  let b: World;
  const owner = () => new Db(app.services.orm.em.fork());
  const tenantDb = (organizationId: string) => new Db(app.services.orm.em.fork(), { organizationId });
  const setRowSecurity = (on: boolean) => { switchRowSecurity(app.services.orm.em, on); };

  before(async () => {
    app = await startTestApp({ databaseRowSecurity: true });
    const world = async (label: string): Promise<World> => {
      const t = await registerTenant(app.url, label);
      const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
      return { t, subnet, host: await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id) };
    };
    a = await world('a');
    b = await world('b');
  });
  after(() => app.close());
  afterEach(() => setRowSecurity(true));

  it('an API request takes the tenant role with its organization (a trigger records who wrote)', async () => {
    await owner().query(`create table rls_probe (who text, org text)`);
    await owner().query(`create function rls_probe() returns trigger language plpgsql as $$
      begin insert into rls_probe values (current_user, nullif(current_setting('netinv.organization_id', true), '')); return null; end $$`);
    await owner().query(`create trigger rls_probe after insert on tags for each statement execute function rls_probe()`);
    try {
      await owner().query(`grant insert on rls_probe to ${TENANT_ROLE}`);
      expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: a.t.owner, body: { name: 'probe on', color: 'Blue' } }), 201);
      setRowSecurity(false);
      expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: a.t.owner, body: { name: 'probe off', color: 'Blue' } }), 201);
      const rows = await owner().query<{ who: string; org: string | null }>(`select who, org from rls_probe`);
      const loginRole = (await owner().one<{ u: string }>(`select current_user as u`))!.u;
      expect(rows).to.deep.equal([{ who: TENANT_ROLE, org: a.t.orgId }, { who: loginRole, org: null }]);
    } finally {
      await owner().query(`drop trigger rls_probe on tags`);
      await owner().query(`drop function rls_probe()`);
      await owner().query(`drop table rls_probe`);
    }
  });

  it('hosts CRUD, a list, an `at` list and a PUT with children answer as with row security off', async () => {
    const auth = a.t.owner;
    const at = a.host.updated_at;
    // Writes under row security: create, PUT with children (one changed, one added, one dropped), delete.
    const created = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth, body: { name: 'second', network_id: a.t.defaultNetworkId } }), 201);
    const [kept, dropped] = a.host.ip_addresses;
    const put = expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${a.host.id}`, {
      auth,
      body: {
        id: a.host.id, name: 'web', hostname: 'web.lan', hidden: false, tags: [], description: 'changed under row security',
        ip_addresses: [{ ...kept, name: 'renamed' }, { subnet_id: a.subnet.id, ip_address: '10.0.0.60' }],
        ports: a.host.ports.slice(0, 2), services: a.host.services.slice(0, 1),
      },
    }));
    expect(put.ip_addresses.map((i: any) => i.ip_address)).to.deep.equal([kept.ip_address, '10.0.0.60']);
    expect(put.ip_addresses.map((i: any) => i.id)).not.to.include(dropped.id);
    expect(put.ports).to.have.length(2);
    expect(put.services).to.have.length(1);
    expect(put.description).to.equal('changed under row security');
    expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${created.id}`, { auth }));

    const reads = [
      '/api/v1/hosts?limit=50', `/api/v1/hosts?limit=50&at=${encodeURIComponent(at)}`, `/api/v1/hosts/${a.host.id}`,
      `/api/v1/hosts/${a.host.id}?at=${encodeURIComponent(at)}`, `/api/v1/hosts/${created.id}/history`, `/api/v1/hosts?limit=50&q=10.0.0`,
      `/api/v1/hosts/${b.host.id}`, // another organization's host: 404 either way
    ];
    const answers = async () => Promise.all(reads.map(async (path) => {
      const res = await call(app.url, 'GET', path, { auth });
      const { meta: _meta, ...rest } = res.body;
      return { path, status: res.status, body: rest };
    }));
    const on = await answers();
    setRowSecurity(false);
    const off = await answers();
    expect(on).to.deep.equal(off);
    expect(on.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 200, 404]);
    expect(on[0]!.body.data.map((h: any) => h.id)).to.deep.equal([a.host.id]); // the deleted one gone, B's never there
    expect(on[1]!.body.data.map((h: any) => h.description)).to.deep.equal([a.host.description]);
  });

  it('a list, a get and a history read their statements in one transaction: the role and organization set once, with its begin', async () => {
    // Every statement any connection of this process sends (the test app runs here).
    const query = pg.Client.prototype.query;
    const sent: string[] = [];
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      if (typeof args[0] === 'string') sent.push(args[0]);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      for (const path of ['/api/v1/hosts?limit=50', `/api/v1/hosts/${a.host.id}`, `/api/v1/hosts/${a.host.id}/history`, '/api/v1/ip-addresses?limit=50', `/api/v1/subnets/${a.subnet.id}`]) {
        sent.length = 0;
        expectOk(await call(app.url, 'GET', path, { auth: a.t.owner }));
        const settings = sent.filter((sql) => sql.includes(`set_config('role'`));
        expect(settings, path).to.have.length(1);
        expect(settings[0], path).to.match(/^start transaction isolation level repeatable read read only; select set_config\('role'/);
      }
    } finally {
      pg.Client.prototype.query = query;
    }
  });

  // Statements of the service (source in the comment) with their `organization_id = ?` taken out:
  // through a Db with organization A they must return no row of B (the policy alone holds them),
  // while as the owner they do (else the check would prove nothing).
  const reads: Array<[source: string, sql: string, params: (w: World) => unknown[]]> = [
    ['hosts/children.ts parentHost', `select id, organization_id, network_id from hosts where id = ?`, (w) => [w.host.id]],
    ['hosts list (HistoryTable)', `select h.id, h.organization_id from hosts h where h.network_id = any(?::uuid[]) order by h.name, h.id limit 50`, (w) => [[a.t.defaultNetworkId, w.t.defaultNetworkId]]],
    ['hosts/children.ts child ids', `select id, organization_id from ip_addresses where host_id = ? order by position, id`, (w) => [w.host.id]],
    ['csvImportService.ts holders', `select a.id, a.organization_id from ip_addresses a where a.network_id = ? and a.ip_address = any(?::inet[])`, (w) => [w.t.defaultNetworkId, ['10.0.0.10', '10.0.0.11']]],
    ['hosts/consolidate.ts ports', `select o.id, o.organization_id from ports o join ports d on d.host_id = o.host_id and d.number = o.number and d.protocol = o.protocol where o.host_id = ?`, (w) => [w.host.id]],
    ['hosts/children.ts service', `select id, organization_id, network_id, host_id from services where host_id = ?`, (w) => [w.host.id]],
    ['bindings of a service', `select b.id, b.organization_id from bindings b join services s on s.id = b.service_id where s.host_id = ?`, (w) => [w.host.id]],
    ['historyWithChildren.ts instants', `select valid_from, valid_to, organization_id from hosts_history where id = ?
       union all select valid_from, valid_to, organization_id from ip_addresses_history where host_id = ?
       union all select valid_from, valid_to, organization_id from ports_history where host_id = ?
       union all select valid_from, valid_to, organization_id from services_history where host_id = ?`, (w) => [w.host.id, w.host.id, w.host.id, w.host.id]],
    ['an `at` read', `select id, organization_id from hosts_history where tstzrange(valid_from, valid_to) @> now()`, () => []],
    ['csvImportService.ts subnets', `select id, organization_id, cidr::text as cidr from subnets where network_id = any(?::uuid[]) order by cidr`, (w) => [[a.t.defaultNetworkId, w.t.defaultNetworkId]]],
    ['networks history', `select id, organization_id from networks_history where id = any(?::uuid[])`, (w) => [[a.t.defaultNetworkId, w.t.defaultNetworkId]]],
    ['networks/hostView.ts', `select id, organization_id, host_expiry_days from networks where id = any(?::uuid[])`, (w) => [[a.t.defaultNetworkId, w.t.defaultNetworkId]]],
  ];

  it('statements without their organization predicate, through a Db with organization A, read no row of B', async () => {
    for (const [source, sql, params] of reads) {
      const asOwner = await owner().query<{ organization_id: string }>(sql, params(b));
      expect(asOwner.some((r) => r.organization_id === b.t.orgId), `${source}: the owner reads B's rows`).to.equal(true);
      const held = await tenantDb(a.t.orgId).query<{ organization_id: string }>(sql, params(b));
      expect(held.filter((r) => r.organization_id !== a.t.orgId), `${source}: B's rows through A's Db`).to.deep.equal([]);
      // In a transaction (a snapshot one too, as the readers' use) the same.
      const inTx = await tenantDb(a.t.orgId).transaction((tx) => tx.query<{ organization_id: string }>(sql, params(b)), { snapshot: true });
      expect(inTx.filter((r) => r.organization_id !== a.t.orgId), `${source}: B's rows in A's transaction`).to.deep.equal([]);
    }
  });

  it('writes without their organization predicate change no row of B, and a row of B cannot be written', async () => {
    const db = tenantDb(a.t.orgId);
    // hosts/consolidate.ts, hosts service: updates and deletes by id only.
    expect(await db.query(`update hosts set description = 'taken' where id = ? returning id`, [b.host.id])).to.deep.equal([]);
    expect(await db.query(`update ports set host_id = host_id where host_id = ? returning id`, [b.host.id])).to.deep.equal([]);
    expect(await db.query(`delete from services where host_id = ? returning id`, [b.host.id])).to.deep.equal([]);
    expect(await db.query(`delete from ip_addresses_history where host_id = ? returning id`, [b.host.id])).to.deep.equal([]);
    const still = await owner().one<{ description: string | null; services: number }>(
      `select h.description, (select count(*)::int from services s where s.organization_id = h.organization_id and s.host_id = h.id) as services from hosts h where h.organization_id = ? and h.id = ?`, [b.t.orgId, b.host.id]);
    expect(still).to.deep.equal({ description: b.host.description, services: b.host.services.length });
    // A row naming B (WITH CHECK), inserted or moved there.
    const err = await db.query(`insert into tags (organization_id, name) values (?, 'intruder')`, [b.t.orgId]).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/row-level security/);
    const moved = await db.query(`update tags set organization_id = ? where organization_id = ?`, [b.t.orgId, a.t.orgId]).then(() => undefined, (e: Error) => e);
    expect(moved?.message ?? 'A has no tag: nothing to move').to.match(/row-level security|nothing to move/);
  });

  it('a Db with an organization runs the statements marked ACROSS_ORGANIZATIONS as the owner, in and out of its transaction', async () => {
    const sql = `${ACROSS_ORGANIZATIONS} select distinct organization_id from hosts where id = any(?::uuid[])`;
    const both = [a.t.orgId, b.t.orgId].sort();
    const orgs = (rows: Array<{ organization_id: string }>) => rows.map((r) => r.organization_id).sort();
    expect(orgs(await tenantDb(a.t.orgId).query(sql, [[a.host.id, b.host.id]]))).to.deep.equal(both);
    await tenantDb(a.t.orgId).transaction(async (tx) => {
      expect(orgs(await tx.query(sql, [[a.host.id, b.host.id]]))).to.deep.equal(both);
      // …and the transaction is held to A again after it.
      expect((await tx.one<{ u: string }>(`select current_user as u`))!.u).to.equal(TENANT_ROLE);
      expect(orgs(await tx.query(`select distinct organization_id from hosts where id = any(?::uuid[])`, [[a.host.id, b.host.id]]))).to.deep.equal([a.t.orgId]);
    });
  });

  it('a topology thread\'s read takes the organization of the transaction whose snapshot it imports', async () => {
    const url = String(app.services.orm.em.config.get('clientUrl'));
    const reads: Array<[string, string, unknown[]]> = [['hosts', `select distinct organization_id from hosts`, []]];
    const seen = (organizationId?: string) => tenantDb(a.t.orgId).transaction(async (tx) => {
      const { id } = (await tx.one<{ id: string }>('select pg_export_snapshot() as id'))!;
      const rows = await readSnapshotHere({ url, snapshot: id, reads, organizationId });
      return (JSON.parse(rows.hosts!.rows) as Array<{ organization_id: string }>).map((r) => r.organization_id).sort();
    }, { snapshot: true });
    expect(await seen(), 'without an organization the thread reads as the owner').to.deep.equal([a.t.orgId, b.t.orgId].sort());
    expect(await seen(a.t.orgId)).to.deep.equal([a.t.orgId]);
    const refused = await seen(`${a.t.orgId}'); select 1; --`).then(() => undefined, (e: Error) => e);
    expect(refused?.message).to.match(/not an organization id/);
  });

  it('a drawing read on a thread answers as inline under row security, and the request hands the thread its organization', async function () {
    this.timeout(60_000);
    const now = (expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${a.t.defaultNetworkId}`, { auth: a.t.owner })) as { as_of: string }).as_of;
    const path = `/api/v1/topology?network_id=${a.t.defaultNetworkId}&view=l3&at=${encodeURIComponent(now)}`;
    const inline = expectOk(await call(app.url, 'GET', `${path}&max_nodes=1000`, { auth: a.t.owner }));
    const handed: Array<string | undefined> = [];
    const saved = { ...INLINE_BELOW };
    const run = CpuPool.prototype.run;
    CpuPool.prototype.run = function (this: CpuPool, organizationId, task, input, size) {
      const rows = (input as { rows?: { snapshot?: string; organizationId?: string } }).rows;
      if (rows?.snapshot) handed.push(rows.organizationId);
      return run.call(this, organizationId, task, input, size);
    } as typeof run;
    try {
      for (const k of Object.keys(INLINE_BELOW) as Array<keyof typeof INLINE_BELOW>) INLINE_BELOW[k] = 0;
      const threaded = expectOk(await call(app.url, 'GET', `${path}&max_nodes=1001`, { auth: a.t.owner }));
      expect({ ...threaded, layout: undefined }).to.deep.equal({ ...inline, layout: undefined });
    } finally {
      CpuPool.prototype.run = run;
      Object.assign(INLINE_BELOW, saved);
    }
    expect(handed.length).to.be.above(0);
    expect(new Set(handed)).to.deep.equal(new Set([a.t.orgId]));
  });

  it('a Db with an organization refuses to join a transaction not set for it', async () => {
    const err = await owner().transaction((tx) => new Db(tx.em, { organizationId: a.t.orgId }).query(`select 1`)).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/joined a transaction set for no organization/);
  });
});
