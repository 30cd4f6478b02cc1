// A stopped service is offline after the next run: a host reported in a Network session has the
// services the report no longer lists that only this daemon's network scans ever found go offline
// (kept, with their history; their bindings deleted), and the ports it no longer lists that no other
// service holds; a Manual service, one another daemon also found, and anything reported in a Docker
// session stay online. Listed again, they are online again.
// Through HTTP as daemons (sessions are queued in the table, as the scheduler queues them).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet, type ReportOptions } from './reports.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
const NETWORK = { type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false };

describe('discovery: a stopped service is offline after the next run', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let e: DaemonClient;
  let lan: any;
  let running = new Map<string, any>();

  /** Ends the daemon's running session (if any), queues one of `type` and has the daemon take it. */
  const startSession = async (daemon: DaemonClient, type: 'Network' | 'Docker') => {
    const current = running.get(daemon.id);
    if (current) expectOk(await daemon.post(`/api/v1/discovery/${current.session_id}/update`, { ...current, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    const discoveryType = type === 'Network' ? NETWORK : { type: 'Docker', host_id: randomUUID(), host_naming_fallback: 'BestService' };
    await sql(app, `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type) values (?, ?, ?, ?, ?::jsonb)`,
      [randomUUID(), t.orgId, net, daemon.id, JSON.stringify(discoveryType)]);
    const [work] = expectOk(await daemon.post(`/api/daemons/${daemon.id}/request-work`, STATUS));
    expect(work.discovery_type.type).to.equal(type);
    running.set(daemon.id, work);
  };
  /** One run's metadata entry (each run dates its own). */
  const run = (daemon: DaemonClient, type = 'Network') => [{ ...(type === 'Network' ? NETWORK : { type, host_id: randomUUID() }), daemon_id: daemon.id, date: new Date().toISOString() }];
  const report = (daemon: DaemonClient, services: NonNullable<ReportOptions['services']>, metadata = run(daemon)) => hostReport(daemon, net, {
    interfaces: [{ subnet_id: lan.id, ip_address: '198.18.1.5', mac_address: 'AA:BB:CC:00:00:05' }],
    ports: [{ number: 22 }, { number: 80 }, { number: 6379 }],
    services, metadata,
  });
  const REDIS = { name: 'Redis', ports: [6379] };
  const SSH = { name: 'OpenSSH', ports: [22] };
  const NGINX = { name: 'Nginx', ports: [80] };
  /** The host's services that are online. */
  const services = async (hostId: string) => (expectOk(await call(app.url, 'GET', `/api/v1/services?host_id=${hostId}`, { auth: t.owner })) as any[])
    .filter((s) => s.offline_at === null).map((s) => s.name).sort();
  const states = async () => (await sql(app, `select (select count(*)::int from services_history) as services, (select count(*)::int from bindings_history) as bindings`))[0];

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'stopped');
    net = t.defaultNetworkId;
    running = new Map();
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
    e = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
    await registerDaemon(d, net);
    await registerDaemon(e, net);
    // Their default sessions are done: each test queues the sessions it needs.
    await sql(app, `update discovery_sessions set phase = 'Complete', finished_at = now()`);
    lan = await postSubnet(d, net, '198.18.1.0/24');
  });
  afterEach(() => app.close());

  it('Redis not reported in the next Network run is offline (a history state, binding gone, port kept); a Manual service stays; the same report again changes nothing; listed again, it is back', async () => {
    await startSession(d, 'Network');
    const host = await postHost(d, report(d, [REDIS, SSH]));
    const redis = host.services.find((s: any) => s.name === 'Redis');
    const manual = expectOk(await call(app.url, 'POST', '/api/v1/services', { auth: t.owner, body: { host_id: host.id, name: 'Backup job', service_definition: 'Custom' } }), 201);
    expect(await services(host.id)).to.deep.equal(['Backup job', 'OpenSSH', 'Redis']);

    await startSession(d, 'Network');
    const sshOnly = report(d, [SSH]);
    const answer = await postHost(d, sshOnly);
    expect(answer.id).to.equal(host.id);
    expect(await services(host.id)).to.deep.equal(['Backup job', 'OpenSSH']);
    const history = expectOk(await call(app.url, 'GET', `/api/v1/services/${redis.id}/history`, { auth: t.owner }));
    expect(history.map((s: any) => [s.valid_to === null, s.offline_at === null]), 'Redis kept, offline since this run').to.deep.equal([[true, false], [false, true]]);
    expect((await sql(app, `select count(*)::int as n from bindings where service_id = ?`, [redis.id]))[0]!.n).to.equal(0);
    const ports = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner })).ports.map((p: any) => p.number);
    expect(ports).to.include(6379);
    expectOk(await call(app.url, 'GET', `/api/v1/services/${manual.id}`, { auth: t.owner }));

    // The same report once more (the unchanged-host path): nothing more is deleted, no new state.
    const before = await states();
    expect(await postHost(d, sshOnly)).to.deep.equal(answer);
    expect(await states()).to.deep.equal(before);
    expect(await services(host.id)).to.deep.equal(['Backup job', 'OpenSSH']);

    // Redis answers again: the same service, online, bound to its port again.
    await startSession(d, 'Network');
    await postHost(d, report(d, [REDIS, SSH]));
    expect(await services(host.id)).to.deep.equal(['Backup job', 'OpenSSH', 'Redis']);
    expect((await sql(app, `select count(*)::int as n from bindings where service_id = ?`, [redis.id]))[0]!.n).to.equal(1);
  });

  it('a port no longer listed is offline unless a service that stays holds it; listed again, it is back', async () => {
    await startSession(d, 'Network');
    const host = await postHost(d, report(d, [REDIS, SSH]));
    const portsOf = async () => Object.fromEntries((expectOk(await call(app.url, 'GET', `/api/v1/ports?host_id=${host.id}`, { auth: t.owner })) as any[])
      .map((p) => [p.number, p.offline_at === null ? 'online' : 'offline']));
    await startSession(d, 'Network');
    await postHost(d, hostReport(d, net, { interfaces: [{ subnet_id: lan.id, ip_address: '198.18.1.5', mac_address: 'AA:BB:CC:00:00:05' }], ports: [{ number: 22 }], services: [SSH], metadata: run(d) }));
    // 6379: its service stopped; 80: bound to nothing.
    expect(await portsOf()).to.deep.equal({ 22: 'online', 80: 'offline', 6379: 'offline' });
    await startSession(d, 'Network');
    await postHost(d, report(d, [REDIS, SSH]));
    expect(await portsOf()).to.deep.equal({ 22: 'online', 80: 'online', 6379: 'online' });
  });

  it('a service another daemon also found (or found alone) stays when this daemon no longer reports it', async () => {
    await startSession(e, 'Network');
    const host = await postHost(e, report(e, [NGINX, REDIS]));
    await startSession(d, 'Network');
    await postHost(d, report(d, [NGINX, SSH])); // Nginx: found by both; Redis: by e alone
    expect(await services(host.id)).to.deep.equal(['Nginx', 'OpenSSH', 'Redis']);

    await startSession(d, 'Network');
    await postHost(d, report(d, [SSH]));
    expect(await services(host.id)).to.deep.equal(['Nginx', 'OpenSSH', 'Redis']);
    // e's next run without Redis: Redis was only ever e's.
    await startSession(e, 'Network');
    await postHost(e, report(e, [NGINX]));
    expect(await services(host.id)).to.deep.equal(['Nginx', 'OpenSSH']);
  });

  it('a Docker session’s reports never delete; the same report in a Network session afterwards does (not answered from the Docker run’s digest)', async () => {
    await startSession(d, 'Network');
    const host = await postHost(d, report(d, [REDIS, SSH]));
    await startSession(d, 'Docker');
    await postHost(d, report(d, [], run(d, 'Docker'))); // a payload of the same host with none of them
    // A network scan's host re-sent during the Docker session (a server_poll daemon re-sends what
    // was not confirmed): the session decides, nothing is deleted.
    const sshOnly = report(d, [SSH]);
    await postHost(d, sshOnly); // the last report applied to the host: its digest is kept
    expect(await services(host.id)).to.deep.equal(['OpenSSH', 'Redis']);

    await startSession(d, 'Network');
    await postHost(d, sshOnly);
    expect(await services(host.id)).to.deep.equal(['OpenSSH']);

    // A Docker payload in a Network session: the report says what it is, nothing is deleted.
    await postHost(d, report(d, [REDIS, SSH]));
    await postHost(d, report(d, [SSH], run(d, 'Docker')));
    expect(await services(host.id)).to.deep.equal(['OpenSSH', 'Redis']);
  });
});
