// History of volatile columns (last_seen_at): a change of them alone makes no new state and writes
// the live row only; a read as of now or the history shows it (the open state is read from the live
// row), and a state that closes keeps the values its row had then.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';

describe('history: volatile columns, on the live row while a state is open', () => {
  let app: TestApp;
  let t: Tenant;
  const get = async (path: string) => expectOk(await call(app.url, 'GET', path, { auth: t.owner }));
  const asOf = (path: string, at: string) => get(`${path}?at=${encodeURIComponent(at)}`);
  const now = async () => (await sql<{ now: string }>(app, `select to_char(clock_timestamp() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`))[0]!.now;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'history');
  });
  afterEach(() => app.close());

  it('last_seen_at moved by discovery (host) and behind the API (port): the same in the live row, as of now and in the history, with no new state', async () => {
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    const lan = await postSubnet(d, t.defaultNetworkId, '10.1.0.0/24');
    const report = hostReport(d, t.defaultNetworkId, { interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.5' }], ports: [{ number: 22 }] });
    const first = await postHost(d, report);
    const seenFirst = (await get(`/api/v1/hosts/${first.id}`)).last_seen_at;
    await postHost(d, report); // the same report again: only last_seen_at moves
    const host = await get(`/api/v1/hosts/${first.id}`);
    expect(Date.parse(host.last_seen_at)).to.be.greaterThan(Date.parse(seenFirst));

    const portId = first.ports[0].id;
    const openState = async (table: string, id: string) => (await sql(app, `select xmin::text || ctid::text as version from ${table}_history where id = ? and valid_to is null`, [id]))[0]!.version;
    const portVersion = await openState('ports', portId);
    await sql(app, `update ports set last_seen_at = '2030-01-02T03:04:05Z' where id = ?`, [portId]); // as ingestion moves it
    expect(await openState('ports', portId), 'the history is not written').to.equal(portVersion);

    const at = await now();
    expect((await asOf(`/api/v1/hosts/${first.id}`, at)).last_seen_at).to.equal(host.last_seen_at);
    const hostStates = await get(`/api/v1/hosts/${first.id}/history`);
    expect(hostStates.map((s: any) => [s.valid_to, s.last_seen_at])).to.deep.equal([[null, host.last_seen_at]]);
    expect((await get(`/api/v1/ports/${portId}`)).last_seen_at).to.equal('2030-01-02T03:04:05.000000Z');
    expect((await asOf(`/api/v1/ports/${portId}`, at)).last_seen_at).to.equal('2030-01-02T03:04:05.000000Z');
    const portStates = await get(`/api/v1/ports/${portId}/history`);
    expect(portStates.map((s: any) => [s.valid_to, s.last_seen_at])).to.deep.equal([[null, '2030-01-02T03:04:05.000000Z']]);
  });

  it('a state that closes (a change, a delete) keeps the volatile values its row had; the open one is the live row’s', async () => {
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    const lan = await postSubnet(d, t.defaultNetworkId, '10.1.0.0/24');
    const first = await postHost(d, hostReport(d, t.defaultNetworkId, { interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.5' }], ports: [{ number: 22 }, { number: 80 }] }));
    const [kept, removed] = first.ports.map((p: any) => p.id);
    const hostVersion = (await sql(app, `select xmin::text || ctid::text as v from hosts_history where id = ? and valid_to is null`, [first.id]))[0]!.v;
    await sql(app, `update hosts set last_seen_at = '2030-01-01T00:00:00Z' where id = ?`, [first.id]);
    expect((await sql(app, `select xmin::text || ctid::text as v from hosts_history where id = ? and valid_to is null`, [first.id]))[0]!.v).to.equal(hostVersion);
    await sql(app, `update ports set last_seen_at = '2030-01-02T03:04:05Z' where id in (?, ?)`, [kept, removed]);
    await sql(app, `update ports set number = 2222, last_seen_at = '2030-02-02T00:00:00Z' where id = ?`, [kept]); // a new state
    await sql(app, `delete from ports where id = ?`, [removed]);
    await sql(app, `update hosts set description = 'changed' where id = ?`, [first.id]);

    const states = async (path: string) => (await get(path)).map((s: any) => [s.valid_to === null ? 'open' : 'closed', s.last_seen_at]);
    expect(await states(`/api/v1/ports/${kept}/history`)).to.deep.equal([['open', '2030-02-02T00:00:00.000000Z'], ['closed', '2030-01-02T03:04:05.000000Z']]);
    expect(await states(`/api/v1/ports/${removed}/history`)).to.deep.equal([['closed', '2030-01-02T03:04:05.000000Z']]);
    const hostClosed = await sql(app, `select to_char(last_seen_at at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as seen from hosts_history where id = ? and valid_to is not null`, [first.id]);
    expect(hostClosed.map((r) => r.seen)).to.deep.equal(['2030-01-01T00:00:00Z']);
    expect((await get(`/api/v1/hosts/${first.id}`)).last_seen_at).to.equal('2030-01-01T00:00:00.000000Z');
    // As of an instant inside the closed state, its values; as of now, the live row's.
    const closedFrom = (await get(`/api/v1/ports/${kept}/history`))[1].valid_from;
    expect((await asOf(`/api/v1/ports/${kept}`, closedFrom)).last_seen_at).to.equal('2030-01-02T03:04:05.000000Z');
    expect((await asOf(`/api/v1/hosts/${first.id}`, await now())).ports.map((p: any) => [p.number, p.last_seen_at])).to.deep.equal([[2222, '2030-02-02T00:00:00.000000Z']]);
  });
});
