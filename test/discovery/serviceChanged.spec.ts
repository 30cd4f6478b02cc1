// A port whose service changed between two Network runs of a daemon (HTTP, then a product's or a
// custom definition's name for the same port): the old service is gone as stopped (issue 24.7) and
// the new one is bound to the port. The port's old binding belongs to a service the report shows
// stopped: it must not keep the port from the new service (a port is bound by one service of a host).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from './reports.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
const NETWORK = { type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false };

describe('discovery: a port whose service changed between runs', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let lan: any;
  let running: any = null;

  /** Ends the running session (if any), queues a Network one and has the daemon take it. */
  const startNetworkSession = async () => {
    if (running) expectOk(await d.post(`/api/v1/discovery/${running.session_id}/update`, { ...running, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    await sql(app, `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type) values (?, ?, ?, ?, ?::jsonb)`,
      [randomUUID(), t.orgId, t.defaultNetworkId, d.id, JSON.stringify(NETWORK)]);
    [running] = expectOk(await d.post(`/api/daemons/${d.id}/request-work`, STATUS));
    expect(running.discovery_type.type).to.equal('Network');
  };
  const report = (services: Array<{ name: string; ports: number[] }>) => hostReport(d, t.defaultNetworkId, {
    interfaces: [{ subnet_id: lan.id, ip_address: '198.18.1.7', mac_address: 'AA:BB:CC:00:00:07' }],
    ports: [{ number: 22 }, { number: 8088 }],
    services,
    metadata: [{ ...NETWORK, daemon_id: d.id, date: new Date().toISOString() }],
  });

  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'changed');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    await sql(app, `update discovery_sessions set phase = 'Complete', finished_at = now()`);
    lan = await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
  });
  after(() => app.close());

  it('the new service is bound to the port; the old one is offline, bound to nothing', async () => {
    await startNetworkSession();
    const first = await postHost(d, report([{ name: 'HTTP', ports: [8088] }, { name: 'OpenSSH', ports: [22] }]));
    await startNetworkSession();
    const answer = await postHost(d, report([{ name: 'Acme console', ports: [8088] }, { name: 'OpenSSH', ports: [22] }]));
    expect(answer.id).to.equal(first.id);
    const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${first.id}`, { auth: t.owner }));
    const portOf = new Map<string, number>(host.ports.map((p: any) => [p.id, p.number]));
    const bound = Object.fromEntries(host.services.map((s: any) => [s.name, [s.offline_at === null ? 'online' : 'offline', ...s.bindings.map((b: any) => portOf.get(b.port_id))]]));
    expect(bound).to.deep.equal({ 'Acme console': ['online', 8088], OpenSSH: ['online', 22], HTTP: ['offline'] });
    // The daemon's answer says the same (its service bound to the port it reported).
    const acme = answer.services.find((s: any) => s.name === 'Acme console');
    expect(acme.bindings.map((b: any) => answer.ports.find((p: any) => p.id === b.port_id)?.number)).to.deep.equal([8088]);
  });
});
