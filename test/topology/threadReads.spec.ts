// Issue 22: a topology task bound for a thread reads its rows there, on a connection of its own, in
// the snapshot of the request's transaction: the event loop that serves the request never holds
// them (they were megabytes of JSON text whose collection paused it for every organization).
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { CpuPool, cpuPoolOptionsFromEnv, INLINE_BELOW } from '../../src/modules/topology/pool.js';
import { pooledDatabases, readSnapshotHere } from '../../src/modules/topology/threadReads.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { buildNetwork } from '../support/network.js';
import { waitFor } from '../workers/support.js';

describe('topology: a thread reads its own rows', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'threadreads');
  });
  afterEach(() => app.close());

  it('in the snapshot it is given: a host committed after the export is not in its rows, nor in the same transaction\'s', async () => {
    await buildNetwork(app, t.owner, t.defaultNetworkId);
    const reads: Array<[string, string, unknown[]]> = [['hosts', 'select id, name from hosts where organization_id = ? and network_id = ?', [t.orgId, t.defaultNetworkId]]];
    const db = new Db(app.services.orm.em.fork());
    const url = String(db.em.config.get('clientUrl'));
    const before = (await db.one<{ n: number }>('select count(*)::int as n from hosts where network_id = ?', [t.defaultNetworkId]))!.n;
    const seen = await db.transaction(async (tx) => {
      const { id } = (await tx.one<{ id: string }>('select pg_export_snapshot() as id'))!;
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'after-the-snapshot' } }), 201);
      return readSnapshotHere({ url, snapshot: id, reads });
    }, { snapshot: true });
    expect(seen.hosts!.n).to.equal(before);
    expect(JSON.parse(seen.hosts!.rows).map((h: { name: string }) => h.name)).to.not.include('after-the-snapshot');
    // Read afresh, the host is there (the snapshot, not the statement, kept it out).
    const fresh = await db.transaction(async (tx) => {
      const { id } = (await tx.one<{ id: string }>('select pg_export_snapshot() as id'))!;
      return readSnapshotHere({ url, snapshot: id, reads });
    }, { snapshot: true });
    expect(fresh.hosts!.n).to.equal(before + 1);
    // Only a snapshot id reaches SET TRANSACTION SNAPSHOT (it takes no bind parameter).
    let refused: Error | undefined;
    await readSnapshotHere({ url, snapshot: "1'; drop table hosts; --", reads }).catch((err: Error) => { refused = err; });
    expect(refused?.message).to.match(/not a snapshot id/);
    // A connection that failed is closed, and with its last connection the pool goes: nothing is kept of a database.
    expect(pooledDatabases()).to.include(url);
    await readSnapshotHere({ url, snapshot: 'FFFFFFF0-FFFFFFF0-1', reads }).catch(() => undefined);
    await waitFor('the pool of a database whose last connection closed to go', async () => !pooledDatabases().includes(url));
  });

  it('so the event loop sends none of a threaded drawing\'s row reads, and the answers equal the inline ones', async function () {
    this.timeout(60_000);
    await buildNetwork(app, t.owner, t.defaultNetworkId);
    const q = `network_id=${t.defaultNetworkId}`;
    const to = (expectOk(await call(app.url, 'GET', `/api/v1/topology?${q}`, { auth: t.owner })) as { as_of: string }).as_of;
    const paths = [`/api/v1/topology?${q}&view=workloads&at=${encodeURIComponent(to)}`, `/api/v1/topology/diff?${q}&last_changes=5&to=${encodeURIComponent(to)}`,
      `/api/v1/topology/timeline?${q}&from=2000-01-01T00:00:00Z&to=${encodeURIComponent(to)}`];
    // Every statement the API's event loop sends (the test app runs in this process).
    const sent: string[] = [];
    const query = Db.prototype.query;
    Db.prototype.query = function (this: Db, sql: string, params?: unknown[]) {
      sent.push(sql);
      return query.call(this, sql, params);
    } as typeof query;
    const rowReads = () => sent.filter((sql) => sql.includes('json_agg')).length;
    // The map's `max_nodes` apart (nothing collapses in this small network): the map drawn inline is not served to the threaded read from the graph cache.
    const read = (maxNodes: number) => Promise.all(paths.map(async (path, i) =>
      ({ ...(expectOk(await call(app.url, 'GET', i === 0 ? `${path}&max_nodes=${maxNodes}` : path, { auth: t.owner })) as object), layout: undefined })));
    const saved = { ...INLINE_BELOW };
    try {
      const inline = await read(1000);
      expect(rowReads(), 'inline: the event loop reads the rows').to.be.above(0);
      sent.length = 0;
      for (const k of Object.keys(INLINE_BELOW) as Array<keyof typeof INLINE_BELOW>) INLINE_BELOW[k] = 0;
      const threaded = await read(1001);
      expect(rowReads(), 'threaded: the thread reads the rows').to.equal(0);
      expect(sent.filter((sql) => sql.includes('pg_export_snapshot')).length).to.equal(paths.length);
      paths.forEach((path, i) => expect(threaded[i], path).to.deep.equal(inline[i]));
    } finally {
      Db.prototype.query = query;
      Object.assign(INLINE_BELOW, saved);
    }
  });

  it('a failed read on a thread reaches the request with PostgreSQL\'s code (a standby\'s failure is then run again on the primary)', async function () {
    this.timeout(30_000);
    const pool = new CpuPool({ ...cpuPoolOptionsFromEnv(), threads: 1 });
    const url = String(app.services.orm.em.config.get('clientUrl'));
    try {
      // A well-formed id of no snapshot: PostgreSQL refuses it (22023 invalid_parameter_value).
      const rows = { url, snapshot: 'FFFFFFF0-FFFFFFF0-1', reads: [] };
      const err = await pool.run(t.orgId, 'draw', { rows, view: 'l3', options: { includeHidden: false, maxNodes: 10 } }, 1e9).then(() => undefined, (e: Error & { code?: string }) => e);
      expect(err?.message).to.match(/snapshot/);
      expect(err?.code).to.equal('22023');
    } finally {
      await pool.close();
    }
  });
});
