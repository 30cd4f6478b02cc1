// History behaviour an audit found no test for (issue 22): a volatile-only change (last_seen_at)
// makes no new state but is copied into the open one, so a read as of now or the history shows it.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';

describe('history: volatile columns copied into the open state', () => {
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
    await sql(app, `update ports set last_seen_at = '2030-01-02T03:04:05Z' where id = ?`, [portId]); // as ingestion moves it

    const at = await now();
    expect((await asOf(`/api/v1/hosts/${first.id}`, at)).last_seen_at).to.equal(host.last_seen_at);
    const hostStates = await get(`/api/v1/hosts/${first.id}/history`);
    expect(hostStates.map((s: any) => [s.valid_to, s.last_seen_at])).to.deep.equal([[null, host.last_seen_at]]);
    expect((await get(`/api/v1/ports/${portId}`)).last_seen_at).to.equal('2030-01-02T03:04:05.000000Z');
    expect((await asOf(`/api/v1/ports/${portId}`, at)).last_seen_at).to.equal('2030-01-02T03:04:05.000000Z');
    const portStates = await get(`/api/v1/ports/${portId}/history`);
    expect(portStates.map((s: any) => [s.valid_to, s.last_seen_at])).to.deep.equal([[null, '2030-01-02T03:04:05.000000Z']]);
  });
});
