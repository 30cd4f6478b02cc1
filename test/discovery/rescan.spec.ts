// Rescans that change nothing write nothing (issue 39.3): an unchanged host, address, port or service
// found again by another path (the agent's own run, then "Scan now" on the approved targets: another
// session with another discovery type in its source metadata; or another daemon) moves last_seen_at
// only: no history state, no event, no webhook delivery. The `source` of a record is provenance, not
// a change. A real change still makes one state and one event.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { db } from '../workers/support.js';
import { sequenceEvents } from '../../src/modules/events/service.js';
import { dispatchEvents } from '../../src/modules/webhooks/delivery.js';
import { hostReport, postHost, postSubnet } from './reports.js';

const MAC = '00:16:3E:00:00:39';
const FOUND = '2026-11-22T10:00:00Z'; // our agent dates an entry by when it first found the address: the same on every run

describe('discovery: a rescan that changes nothing writes nothing', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  // The agent's entities have stable ids (derived from what identifies them): the same on every run.
  const ids = { host: randomUUID(), ip: randomUUID(), p22: randomUUID(), p80: randomUUID(), nginx: randomUUID(), ssh: randomUUID(), b80: randomUUID(), b22: randomUUID() };

  const networkType = (daemon: DaemonClient, subnetIds: string[] | null) => ({
    type: 'Network', subnet_ids: subnetIds, host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] },
    probe_raw_socket_ports: false, daemon_id: daemon.id, date: FOUND,
  });
  /** The lab's host as one run reports it, its source metadata that of the run. */
  const report = (daemon: DaemonClient, metadata: Record<string, unknown>, facts: Record<string, string> = { os_name: 'Debian Linux', os_version: '12', os_confidence: 'Medium' }) => {
    const r = hostReport(daemon, net, {
      hostId: ids.host, hostname: 'web.lan',
      interfaces: [{ id: ids.ip, subnet_id: lan.id, ip_address: '10.39.0.5', mac_address: MAC }],
      ports: [{ id: ids.p22, number: 22 }, { id: ids.p80, number: 80 }],
      services: [{ id: ids.nginx, name: 'Nginx', ports: [80], bindingIds: [ids.b80] }, { id: ids.ssh, name: 'OpenSSH', ports: [22], bindingIds: [ids.b22] }],
      metadata: [metadata],
    });
    Object.assign(r.host, facts);
    return r;
  };
  /** A session of `daemon` running (its reports carry its id), as the daemon announces it. */
  const startSession = async (daemon: DaemonClient, discoveryType: Record<string, unknown>) => {
    const id = randomUUID();
    const update = { session_id: id, daemon_id: daemon.id, network_id: net, phase: 'Scanning', discovery_type: discoveryType, progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
    expectOk(await daemon.post(`/api/v1/discovery/${id}/update`, update));
    return { id, end: async () => expectOk(await daemon.post(`/api/v1/discovery/${id}/update`, { ...update, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() })) };
  };
  /** One run: a session, the host reported in it, the session's end; answers the session's summary. */
  const run = async (daemon: DaemonClient, discoveryType: Record<string, unknown>, facts?: Record<string, string>) => {
    const session = await startSession(daemon, discoveryType);
    await postHost(daemon, report(daemon, { ...discoveryType }, facts));
    await session.end();
    return (await sql(app, `select summary from discovery_sessions where id = ?`, [session.id]))[0]!.summary;
  };

  /** What the inventory wrote: history states per table, update events per entity, webhook deliveries queued, and when the host and its children were last seen. */
  const written = async () => {
    const q = db(app);
    await sequenceEvents(q);
    await dispatchEvents(q);
    const [row] = await sql(app, `
      select (select count(*)::int from hosts_history where id = ?) as host, (select count(*)::int from ip_addresses_history where host_id = ?) as ips,
             (select count(*)::int from ports_history where host_id = ?) as ports, (select count(*)::int from services_history where host_id = ?) as services,
             (select count(*)::int from bindings_history b where b.service_id in (?, ?)) as bindings,
             (select count(*)::int from events where organization_id = ? and type like '%.updated') as updated_events,
             (select count(*)::int from events where organization_id = ?) as events,
             (select count(*)::int from webhook_deliveries where organization_id = ?) as deliveries`,
    [ids.host, ids.host, ids.host, ids.host, ids.nginx, ids.ssh, t.orgId, t.orgId, t.orgId]);
    return row!;
  };
  const hostSeen = async () => Date.parse(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}`, { auth: t.owner })).last_seen_at);
  /** When the host's address, ports and services were last seen: the earliest of them. */
  const childrenSeen = async () => {
    const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}`, { auth: t.owner }));
    return Math.min(...[...host.ip_addresses, ...host.ports, ...host.services].map((c: any) => Date.parse(c.last_seen_at)));
  };
  const updates = async () => (await sql(app, `select type, changes from events where organization_id = ? and type like '%.updated' order by id`, [t.orgId]))
    .map((e) => `${e.type}: ${Object.keys(e.changes).sort().join(', ')}`);

  beforeEach(async () => {
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'] }); // an endpoint on loopback (nothing answers: deliveries are only counted)
    t = await registerTenant(app.url, 'rescan');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key, randomUUID());
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.39.0.0/24');
    expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'everything', url: 'http://127.0.0.1:9/hook', event_types: ['*'] } }), 201);
  });
  afterEach(() => app.close());

  it('the agent\'s own run, then "Scan now" on the approved targets (another session, another discovery type in the source): last_seen_at moves, nothing else', async () => {
    const first = await run(d, networkType(d, null)); // the agent's own run (--once): no subnets named
    expect(first).to.include({ hosts_found: 1, hosts_new: 1 });
    const before = await written();
    expect(before).to.include({ host: 1, ips: 1, ports: 2, services: 2, bindings: 2, updated_events: 0 });
    expect(before.deliveries).to.be.greaterThan(0); // the endpoint gets the events (those since it was made)
    const seen = await hostSeen();
    const childSeen = await childrenSeen();

    const second = await run(d, networkType(d, [lan.id])); // "Scan now": the approved targets named
    expect(second).to.include({ hosts_found: 1, hosts_new: 0, hosts_changed: 0, hosts_unchanged: 1 });
    expect(await updates()).to.deep.equal([]);
    expect(await written()).to.deep.equal(before);
    expect(await hostSeen()).to.be.greaterThan(seen);
    expect(await childrenSeen(), 'its address, ports and services seen too').to.be.greaterThan(childSeen);
    // The source still says who found it (a stopped service is deleted only when its own daemon's scans alone found it).
    const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}`, { auth: t.owner }));
    expect(host.source.metadata.map((m: any) => m.subnet_ids)).to.deep.equal([[lan.id], null]);
    expect(host.services.map((s: any) => s.source.metadata.length)).to.deep.equal([2, 2]);
    // …as of now too: the open state is the live row (no state of its own).
    const at = new Date(Date.now() + 1000).toISOString();
    const asOfNow = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}?at=${encodeURIComponent(at)}`, { auth: t.owner }));
    expect(asOfNow.source.metadata).to.have.length(2);
  });

  it('the same report again (answered from its digest): the host, its address, ports and services are seen, nothing else is written', async () => {
    // The same request each time (a daemon re-sending its report as it was): answered from the digest.
    const same = report(d, { ...networkType(d, null) });
    const runSame = async () => {
      const session = await startSession(d, networkType(d, null));
      await postHost(d, same);
      await session.end();
      return (await sql(app, `select summary from discovery_sessions where id = ?`, [session.id]))[0]!.summary;
    };
    await runSame();
    await runSame();
    const before = await written();
    const [seen, childSeen] = [await hostSeen(), await childrenSeen()];
    const digest = async () => (await sql(app, `select digest from host_discovery_digests where host_id = ?`, [ids.host]))[0]?.digest;
    const kept = await digest();
    expect(kept).to.be.a('string');
    expect(await runSame()).to.include({ hosts_found: 1, hosts_unchanged: 1 });
    expect(await written()).to.deep.equal(before);
    expect(await hostSeen()).to.be.greaterThan(seen);
    expect(await childrenSeen()).to.be.greaterThan(childSeen);
    expect(await digest(), 'moving last_seen_at keeps the digest').to.equal(kept);
  });

  it('another daemon finding the same host: no state, no event, no delivery', async () => {
    const other = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key, randomUUID());
    await registerDaemon(other, net);
    await run(d, networkType(d, null));
    const before = await written();
    const summary = await run(other, networkType(other, [lan.id]));
    expect(summary).to.include({ hosts_found: 1, hosts_new: 0, hosts_changed: 0 });
    expect(await updates()).to.deep.equal([]);
    expect(await written()).to.deep.equal(before);
  });

  it('a real change in a rescan (the OS version) is one state and one event, a delivery with it; the source alone is not in its changes', async () => {
    await run(d, networkType(d, null));
    const before = await written();
    const summary = await run(d, networkType(d, [lan.id]), { os_name: 'Debian Linux', os_version: '13', os_confidence: 'Medium' });
    expect(summary).to.include({ hosts_found: 1, hosts_changed: 1 });
    expect(await updates()).to.deep.equal(['host.updated: os_version, source']);
    const after = await written();
    expect(after).to.deep.equal({ ...before, host: before.host + 1, updated_events: 1, events: before.events + 1, deliveries: before.deliveries + 1 });
    const history = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}/history`, { auth: t.owner }));
    expect(history.map((h: any) => h.os_version)).to.deep.equal(['13', '12']);
  });
});
