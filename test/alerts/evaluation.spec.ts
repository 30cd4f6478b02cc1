// Alerts (issue 39.4) from what Network sessions change, through the daemon protocol: one digest per
// session with every change a rule asks for (new host, offline, back online, service and port
// added or removed, an address answering with a new MAC, a new vendor); an ignored host gives
// nothing; an unchanged rescan gives nothing; the offline delay; acknowledging a digest.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { postSubnet } from '../discovery/reports.js';
import { db } from '../workers/support.js';
import { sweepOfflineAlerts } from '../../src/modules/alerts/sweep.js';
import { sweepStalledSessions } from '../../src/modules/discovery/sessions.js';
import { runSession, type HostSpec } from './world.js';

describe('alerts: what a scan changed, one digest per scan', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  const ids = { a: randomUUID(), b: randomUUID(), c: randomUUID(), d: randomUUID() };
  const base = (): Record<'a' | 'b' | 'c', HostSpec> => ({
    a: { id: ids.a, ip: '10.39.4.5', mac: '00:16:3E:39:04:05', vendor: 'Xensource' },
    b: { id: ids.b, ip: '10.39.4.6', mac: '00:16:3E:39:04:06', vendor: 'Xensource' },
    c: { id: ids.c, ip: '10.39.4.7', mac: '00:16:3E:39:04:07', vendor: 'Xensource' },
  });
  const run = (hosts: HostSpec[]) => runSession(d, net, lan.id, hosts);
  const rule = async (body: Record<string, unknown>) => expectOk(await call(app.url, 'POST', '/api/v1/alert_rules', { auth: t.owner, body: { network_id: net, ...body } }), 201);
  const alerts = async () => expectOk(await call(app.url, 'GET', `/api/v1/alerts?network_id=${net}`, { auth: t.owner })) as any[];
  const kinds = (alert: any) => alert.items.map((i: any) => `${i.kind} ${i.host_name}${i.service_name ? ` ${i.service_name}` : ''}${i.port ? ` ${i.port}` : ''}`).sort();

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'alerts');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key, randomUUID());
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.39.4.0/24');
    const h = base();
    await run([h.a, h.b, h.c]); // what the network was before any rule
    for (const kind of ['host_new', 'host_offline', 'host_online', 'service_added', 'service_removed', 'port_added', 'port_removed', 'mac_changed', 'vendor_new']) {
      await rule({ kind, email_to: ['ops@example.test'] });
    }
  });
  afterEach(() => app.close());

  it('a scan that adds a host, misses one, changes a MAC, adds and removes a service gives one digest with those items; the host brought back gives "back online"', async () => {
    const h = base();
    const session = await run([
      { ...h.a, ports: [22, 80], services: [{ name: 'SSH', port: 22 }, { name: 'Nginx', port: 80 }] }, // a service and a port added
      { ...h.c, mac: 'B8:27:EB:39:04:07', vendor: 'Raspberry Pi Foundation', ports: [], services: [] }, // a new MAC (a new vendor), its SSH gone
      { id: ids.d, ip: '10.39.4.8', mac: '00:16:3E:39:04:08', vendor: 'Xensource' }, // new
    ]); // b missed: offline
    const [digest, ...older] = await alerts();
    expect(older, 'one digest for the scan').to.have.length(0);
    expect(digest.session_id).to.equal(session);
    expect(kinds(digest)).to.deep.equal([
      'host_new 10.39.4.8',
      'host_offline 10.39.4.6',
      'mac_changed 10.39.4.7',
      'port_added 10.39.4.5 80',
      'port_removed 10.39.4.7 22', // closed: the previous scan saw it, this one did not (the port stays in the inventory, last seen then)
      'service_added 10.39.4.5 Nginx',
      'service_removed 10.39.4.7 SSH',
      'vendor_new 10.39.4.7',
    ]);
    const mac = digest.items.find((i: any) => i.kind === 'mac_changed');
    expect(mac).to.include({ ip: '10.39.4.7', mac: 'B8:27:EB:39:04:07', previous_mac: '00:16:3E:39:04:07' });
    expect(digest.items.find((i: any) => i.kind === 'vendor_new')).to.include({ vendor: 'Raspberry Pi Foundation' });
    expect(digest.lines).to.include('New host: 10.39.4.8');
    // One e-mail for the digest (every rule names the same address).
    expect((await sql(app, `select count(*)::int as n from alert_emails where alert_id = ?`, [digest.id]))[0]!.n).to.equal(1);

    // b back: "back online", and nothing else of the unchanged hosts.
    const back = await run([{ ...h.a, ports: [22, 80], services: [{ name: 'SSH', port: 22 }, { name: 'Nginx', port: 80 }] }, h.b,
      { ...h.c, mac: 'B8:27:EB:39:04:07', vendor: 'Raspberry Pi Foundation', ports: [], services: [] }, { id: ids.d, ip: '10.39.4.8', mac: '00:16:3E:39:04:08', vendor: 'Xensource' }]);
    const [latest] = await alerts();
    expect(latest.session_id).to.equal(back);
    expect(kinds(latest)).to.deep.equal(['host_online 10.39.4.6']);
  });

  it('an unchanged rescan gives no alert', async () => {
    const h = base();
    await run([h.a, h.b, h.c]);
    await run([h.a, h.b, h.c]);
    expect(await alerts()).to.deep.equal([]);
  });

  it('an ignored host gives nothing: not offline, not back, not its changes', async () => {
    const h = base();
    expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${ids.b}`, { auth: t.owner, body: { ignored: true } }));
    await run([h.a, h.c]); // b missed
    await run([h.a, { ...h.b, mac: 'B8:27:EB:39:04:06', vendor: 'Raspberry Pi Foundation', ports: [22, 443], services: [{ name: 'SSH', port: 22 }, { name: 'HTTPS', port: 443 }] }, h.c]);
    expect(await alerts()).to.deep.equal([]);
    // The same changes on a host that is not ignored do alert (the test sees changes at all).
    await run([h.a, h.b, { ...h.c, ports: [22, 443], services: [{ name: 'SSH', port: 22 }, { name: 'HTTPS', port: 443 }] }]);
    expect(kinds((await alerts())[0])).to.deep.equal(['port_added 10.39.4.7 443', 'service_added 10.39.4.7 HTTPS']);
  });

  it('the offline delay: a host offline for less is not reported (nor its return); one offline for longer is, once, by the sweep or the next scan', async () => {
    await sql(app, `delete from alert_rules where organization_id = ?`, [t.orgId]);
    await rule({ kind: 'host_offline', offline_delay_minutes: 10, email_to: ['ops@example.test'] });
    await rule({ kind: 'host_online', email_to: ['ops@example.test'] });
    const h = base();
    await run([h.a, h.c]); // b offline now
    expect(await alerts(), 'offline for less than the delay').to.deep.equal([]);
    expect(await sweepOfflineAlerts(db(app))).to.equal(0);
    await run([h.a, h.b, h.c]); // back within the delay: a flap, nothing
    expect(await alerts()).to.deep.equal([]);

    await run([h.a, h.c]); // b offline again…
    await sql(app, `update hosts set offline_at = now() - interval '11 minutes' where id = ?`, [ids.b]); // …for 11 minutes (as time would)
    expect(await sweepOfflineAlerts(db(app))).to.equal(1);
    const [offline] = await alerts();
    expect(offline.session_id).to.equal(null);
    expect(kinds(offline)).to.deep.equal(['host_offline 10.39.4.6']);
    expect(await sweepOfflineAlerts(db(app)), 'reported once').to.equal(0);
    await run([h.a, h.c]); // still offline: not again
    expect(await alerts()).to.have.length(1);
    await run([h.a, h.b, h.c]); // back: reported, since its going offline was
    expect(kinds((await alerts())[0])).to.deep.equal(['host_online 10.39.4.6']);
  });

  it('a session ended by its daemon’s restart or by the stalled sweep is alerted on for what it found', async () => {
    const h = base();
    const killed = await runSession(d, net, lan.id, [h.a, h.b, h.c, { id: ids.d, ip: '10.39.4.8' }], null); // a new host, then the agent is killed
    expectOk(await d.post(`/api/daemons/${d.id}/startup`, { daemon_version: '0.14.13' }));
    const [digest] = await alerts();
    expect(digest.session_id).to.equal(killed);
    expect(kinds(digest)).to.deep.equal(['host_new 10.39.4.8']);

    const stalled = await runSession(d, net, lan.id, [h.a, h.b, h.c, { id: randomUUID(), ip: '10.39.4.9' }], null);
    await sql(app, `update discovery_sessions set cancel_requested = true, updated_at = now() - interval '10 minutes' where id = ?`, [stalled]);
    expect(await sweepStalledSessions(db(app))).to.deep.include({ failed: 1 });
    const [latest] = await alerts();
    expect(latest.session_id).to.equal(stalled);
    expect(kinds(latest)).to.deep.equal(['host_new 10.39.4.9']);
  });

  it('a digest is acknowledged once, by whom', async () => {
    const h = base();
    await run([h.a, h.c]);
    const [digest] = await alerts();
    expect(digest.acknowledged_at).to.equal(null);
    const acked = expectOk(await call(app.url, 'POST', `/api/v1/alerts/${digest.id}/acknowledge`, { auth: t.owner }));
    expect(acked.acknowledged_at).to.be.a('string');
    expect(acked.acknowledged_by).to.be.a('string');
    const again = expectOk(await call(app.url, 'POST', `/api/v1/alerts/${digest.id}/acknowledge`, { auth: t.owner }));
    expect(again.acknowledged_at).to.equal(acked.acknowledged_at);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/alerts?network_id=${net}&acknowledged=false`, { auth: t.owner }))).to.deep.equal([]);
  });
});
