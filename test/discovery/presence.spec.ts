// Online, offline, stale, ignored (issue 39.2) through the daemon protocol and the hosts API: a
// completed Network session of a subnet marks the hosts it did not see offline (one state, one event
// each), the ones it saw again online; a failed or cancelled run proves nothing missing; an ignored
// host is never marked and stays ignored (and hidden) whatever discovery finds; a host offline for
// longer than its network's host_expiry_days is stale; the hosts list filters by status, and the
// SQL filter agrees with the derived status.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { hostStatus, HOST_STATUSES } from '../../src/modules/hosts/presence.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from './reports.js';

describe('discovery: online, offline, stale and ignored hosts', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  let other: any;
  const ids = { a: randomUUID(), b: randomUUID(), elsewhere: randomUUID() };

  const networkType = (subnetIds: string[] | null) => ({
    type: 'Network', subnet_ids: subnetIds, host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false,
  });
  const report = (hostId: string, ip: string, subnet = lan) => hostReport(d, net, {
    hostId, hostname: null, interfaces: [{ id: randomUUID(), subnet_id: subnet.id, ip_address: ip }], ports: [{ number: 22 }],
    services: [{ name: 'SSH', ports: [22] }],
  });
  /** One session of the daemon over `subnetIds` that reports `hosts` and ends in `phase`. */
  const run = async (subnetIds: string[], hosts: Array<[string, string, any?]>, phase = 'Complete') => {
    const id = randomUUID();
    const update = { session_id: id, daemon_id: d.id, network_id: net, phase: 'Scanning', discovery_type: networkType(subnetIds), progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
    expectOk(await d.post(`/api/v1/discovery/${id}/update`, update));
    for (const [hostId, ip, subnet] of hosts) await postHost(d, report(hostId, ip, subnet));
    expectOk(await d.post(`/api/v1/discovery/${id}/update`, { ...update, phase, progress: 100, error: phase === 'Failed' ? 'boom' : null, finished_at: new Date().toISOString() }));
  };
  const host = async (id: string) => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${id}`, { auth: t.owner }));
  const listed = async (status: string) => (expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${net}&status=${status}`, { auth: t.owner })) as any[]).map((h) => h.id).sort();
  // The feed is sequenced after the write's commit, by the writer's process: sequence it here so the count does not race it.
  const offlineEvents = async (id: string) => (await sql(app, 'select events_sequence(1000000)'), await sql(app, `select changes from events where organization_id = ? and type = 'host.updated' and entity_id = ? order by id`, [t.orgId, id]))
    .filter((e) => 'offline_at' in e.changes).length;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'presence');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key, randomUUID());
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.39.1.0/24');
    other = await postSubnet(d, net, '10.39.2.0/24');
    await run([lan.id, other.id], [[ids.a, '10.39.1.5'], [ids.b, '10.39.1.6'], [ids.elsewhere, '10.39.2.7', other]]);
  });
  afterEach(() => app.close());

  it('a completed scan that misses a host marks it offline (a state and an event); the next that sees it, online again', async () => {
    expect((await host(ids.a)).status).to.equal('online');
    const graph = async () => expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}&view=l3`, { auth: t.owner }));
    const marked = (g: any, id: string) => g.nodes.filter((n: any) => n.host_id === id || (n.kind === 'host' && n.entity_id === id));
    // The first scan found every host new: the map marks them.
    expect(marked(await graph(), ids.a).every((n: any) => n.new === true)).to.equal(true);
    await run([lan.id], [[ids.a, '10.39.1.5']]); // b missed; the other subnet not scanned
    expect(marked(await graph(), ids.a).some((n: any) => n.new), 'the last scan found nothing new').to.equal(false);
    const b = await host(ids.b);
    expect(b).to.include({ status: 'offline' });
    expect(Date.parse(b.offline_at)).to.be.closeTo(Date.now(), 120_000);
    expect((await host(ids.a)).status).to.equal('online');
    expect((await host(ids.elsewhere)).status, 'a host of a subnet the scan did not cover').to.equal('online');
    expect(await offlineEvents(ids.b)).to.equal(1);
    expect(await listed('offline')).to.deep.equal([ids.b]);
    // The map greys its nodes (every view that draws the host).
    for (const view of ['l3', 'workloads']) {
      const graph = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}&view=${view}`, { auth: t.owner }));
      const nodesOf = (id: string) => graph.nodes.filter((n: any) => n.host_id === id || (n.kind === 'host' && n.entity_id === id));
      expect(nodesOf(ids.b).length, view).to.be.above(0);
      expect(nodesOf(ids.b).every((n: any) => n.offline === true), view).to.equal(true);
      expect(nodesOf(ids.a).some((n: any) => n.offline), view).to.equal(false);
    }
    expect(await listed('online')).to.include.members([ids.a, ids.elsewhere]).and.not.include(ids.b); // and the daemon's own host
    const states = (await sql(app, `select count(*)::int as n from hosts_history where id = ?`, [ids.b]))[0]!.n;
    await run([lan.id], [[ids.a, '10.39.1.5']]); // missed again: still offline since the first miss, nothing written
    expect((await host(ids.b)).offline_at).to.equal(b.offline_at);
    expect((await sql(app, `select count(*)::int as n from hosts_history where id = ?`, [ids.b]))[0]!.n).to.equal(states);

    await run([lan.id], [[ids.a, '10.39.1.5'], [ids.b, '10.39.1.6']]); // back
    expect(await host(ids.b)).to.include({ status: 'online', offline_at: null });
    expect(await offlineEvents(ids.b)).to.equal(2); // offline, then back online
    const past = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.b}/history`, { auth: t.owner })) as any[];
    expect(past.map((s) => s.offline_at === null)).to.include.members([true, false]); // the offline state is kept
  });

  it('an address a completed scan of its subnet did not see is offline, its host answering elsewhere; seen again, online', async () => {
    const c = randomUUID();
    const twoAddresses = (addresses: Array<[string, any]>) => hostReport(d, net, {
      hostId: c, hostname: null, interfaces: addresses.map(([ip, subnet]) => ({ id: randomUUID(), subnet_id: subnet.id, ip_address: ip })), ports: [{ number: 22 }],
      services: [{ name: 'SSH', ports: [22] }],
    });
    const runWith = async (addresses: Array<[string, any]>) => {
      const id = randomUUID();
      const update = { session_id: id, daemon_id: d.id, network_id: net, phase: 'Scanning', discovery_type: networkType([lan.id, other.id]), progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
      expectOk(await d.post(`/api/v1/discovery/${id}/update`, update));
      await postHost(d, twoAddresses(addresses));
      expectOk(await d.post(`/api/v1/discovery/${id}/update`, { ...update, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    };
    const presence = async () => Object.fromEntries((await host(c)).ip_addresses.map((i: any) => [i.ip_address, i.offline_at === null ? 'online' : 'offline']));
    await runWith([['10.39.1.9', lan], ['10.39.2.9', other]]);
    expect(await presence()).to.deep.equal({ '10.39.1.9': 'online', '10.39.2.9': 'online' });
    await runWith([['10.39.1.9', lan]]);
    expect(await presence()).to.deep.equal({ '10.39.1.9': 'online', '10.39.2.9': 'offline' });
    expect((await host(c)).status).to.equal('online');
    const graph = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}&view=l3`, { auth: t.owner }));
    const offlineNodes = graph.nodes.filter((n: any) => n.host_id === c && n.offline).map((n: any) => n.ip_address);
    expect(offlineNodes, 'the map greys the address, not the host').to.deep.equal(['10.39.2.9']);
    await runWith([['10.39.1.9', lan], ['10.39.2.9', other]]);
    expect(await presence()).to.deep.equal({ '10.39.1.9': 'online', '10.39.2.9': 'online' });
  });

  it('a failed or cancelled scan proves nothing missing', async () => {
    await run([lan.id], [[ids.a, '10.39.1.5']], 'Failed');
    await run([lan.id], [[ids.a, '10.39.1.5']], 'Cancelled');
    expect((await host(ids.b)).status).to.equal('online');
    expect(await offlineEvents(ids.b)).to.equal(0);
  });

  it('an ignored host is hidden, never marked offline, and stays ignored when discovery finds it again', async () => {
    const before = await host(ids.b);
    const ignored = expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${ids.b}`, { auth: t.owner, body: { ignored: true } }));
    expect(ignored).to.include({ ignored: true, hidden: true, status: 'ignored' });
    await run([lan.id], [[ids.a, '10.39.1.5']]);
    expect(await host(ids.b)).to.include({ status: 'ignored', offline_at: null });
    await run([lan.id], [[ids.a, '10.39.1.5'], [ids.b, '10.39.1.6']]);
    expect(await host(ids.b)).to.include({ status: 'ignored', ignored: true, hidden: true });
    expect(await listed('ignored')).to.deep.equal([ids.b]);
    // A PUT without the field keeps it; one that says false un-ignores.
    const body = { id: ids.b, name: before.name, hidden: false, tags: [] };
    expect(expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${ids.b}`, { auth: t.owner, body }))).to.include({ ignored: true });
    expect(expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${ids.b}`, { auth: t.owner, body: { ...body, ignored: false } }))).to.include({ ignored: false, status: 'online' });
  });

  it('offline for longer than the network\'s host_expiry_days is stale; the status filter and the derived status agree', async () => {
    await run([lan.id], [[ids.a, '10.39.1.5']]);
    expectError(await call(app.url, 'PUT', `/api/v1/networks/${net}`, { auth: t.owner, body: { name: 'Default', tags: [], host_expiry_days: 0 } }), 400, 'validation_failed');
    const changed = expectOk(await call(app.url, 'PUT', `/api/v1/networks/${net}`, { auth: t.owner, body: { name: 'Default', tags: [], host_expiry_days: 2 } }));
    expect(changed.host_expiry_days).to.equal(2);
    // Offline for 3 days (set in the past, as time would).
    await sql(app, `update hosts set offline_at = now() - interval '3 days' where id = ?`, [ids.b]);
    expect((await host(ids.b)).status).to.equal('stale');
    expect(await listed('stale')).to.deep.equal([ids.b]);
    expect(await listed('offline')).to.deep.equal([]);
    // Every host's status, derived, equals the filter that lists it.
    const all = expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${net}`, { auth: t.owner })) as any[];
    for (const status of HOST_STATUSES) expect(await listed(status), status).to.deep.equal(all.filter((h) => h.status === status).map((h) => h.id).sort());
    expectError(await call(app.url, 'GET', `/api/v1/hosts?status=gone`, { auth: t.owner }), 400, 'validation_failed');
  });

  it('the derived status at its edges', () => {
    const now = new Date('2026-12-02T00:00:00Z');
    expect(hostStatus({ offline_at: null, ignored: false }, 30, now)).to.equal('online');
    expect(hostStatus({ offline_at: '2026-11-02T00:00:00Z', ignored: false }, 30, now)).to.equal('offline'); // exactly 30 days: not yet stale
    expect(hostStatus({ offline_at: '2026-11-01T23:59:59Z', ignored: false }, 30, now)).to.equal('stale');
    expect(hostStatus({ offline_at: '2026-11-01T00:00:00Z', ignored: true }, 30, now)).to.equal('ignored');
  });
});
