// A daemon's own host (src/modules/discovery/selfReport.ts): a self-report naming another host than
// the placeholder register made leaves no empty placeholder behind, and the daemon points at it.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from './reports.js';

describe('discovery: a daemon’s self-reported host', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let placeholder: string;
  let subnetId: string;

  const selfReport = (hostId: string, ip: string) => hostReport(d, t.defaultNetworkId, {
    hostId, name: 'agent-host', interfaces: [{ subnet_id: subnetId, ip_address: ip, mac_address: '00:1B:21:00:00:01' }],
    metadata: [{ type: 'SelfReport', host_id: placeholder, daemon_id: d.id, date: '2026-11-25T10:00:00Z' }],
  });
  const daemonHost = async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}`, { auth: t.owner })).host_id;
  const hostExists = async (id: string) => (await call(app.url, 'GET', `/api/v1/hosts/${id}`, { auth: t.owner })).status === 200;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'selfreport');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    placeholder = (await registerDaemon(d, t.defaultNetworkId)).host_id;
    subnetId = (await postSubnet(d, t.defaultNetworkId, '198.18.10.0/24')).id;
  });
  afterEach(() => app.close());

  it('a self-report under another host id: the daemon adopts that host and the empty placeholder is deleted', async () => {
    const own = randomUUID();
    const stored = await postHost(d, selfReport(own, '198.18.10.2'));
    expect(stored.id).to.equal(own);
    expect(await daemonHost()).to.equal(own);
    expect(await hostExists(placeholder)).to.equal(false);
    const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts', { auth: t.owner }));
    expect(hosts.map((h: any) => h.id)).to.deep.equal([own]);
  });

  it('a self-report naming a host a person created does not adopt it: the daemon stays on its placeholder, the host is suggested', async () => {
    const mine = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: {
      network_id: t.defaultNetworkId, name: 'my server',
      ip_addresses: [{ subnet_id: subnetId, ip_address: '198.18.10.2', mac_address: '00:1B:21:00:00:01' }],
    } }), 201);
    const stored = await postHost(d, selfReport(randomUUID(), '198.18.10.2'));
    expect(stored.id).to.equal(mine.id); // matched by address and MAC
    const daemon = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}`, { auth: t.owner }));
    expect(daemon.host_id).to.equal(placeholder);
    expect(daemon.suggested_host_id).to.equal(mine.id);
    expect(await hostExists(placeholder)).to.equal(true);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${mine.id}`, { auth: t.owner })).source.type).to.equal('Manual');
  });

  it('a person accepts the suggestion: the daemon moves to their host, the untouched placeholder goes; nothing suggested is 404', async () => {
    const mine = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: {
      network_id: t.defaultNetworkId, name: 'my server',
      ip_addresses: [{ subnet_id: subnetId, ip_address: '198.18.10.2', mac_address: '00:1B:21:00:00:01' }],
    } }), 201);
    await postHost(d, selfReport(randomUUID(), '198.18.10.2'));
    const accepted = expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/accept-suggested-host`, { auth: t.owner }));
    expect(accepted.host_id).to.equal(mine.id);
    expect(accepted.suggested_host_id).to.equal(null);
    expect(await daemonHost()).to.equal(mine.id);
    expect(await hostExists(placeholder)).to.equal(false);
    expect(await hostExists(mine.id)).to.equal(true);
    expect((await call(app.url, 'POST', `/api/v1/daemons/${d.id}/accept-suggested-host`, { auth: t.owner })).status).to.equal(404);
  });

  // The delete's guard (selfReport.ts), one case each at its edge: exactly one thing on the placeholder, the rest untouched.
  const adoptElsewhere = async () => {
    const own = randomUUID();
    await postHost(d, selfReport(own, '198.18.10.2'));
    expect(await daemonHost()).to.equal(own);
  };
  it('a placeholder a person gave one address is kept when the daemon adopts another host', async () => {
    expectOk(await call(app.url, 'POST', '/api/v1/ip-addresses', { auth: t.owner, body: { host_id: placeholder, subnet_id: subnetId, ip_address: '198.18.10.9' } }), 201);
    await adoptElsewhere();
    expect(await hostExists(placeholder)).to.equal(true);
  });
  it('a placeholder a person gave one service is kept when the daemon adopts another host', async () => {
    expectOk(await call(app.url, 'POST', '/api/v1/services', { auth: t.owner, body: { host_id: placeholder, name: 'ssh', service_definition: 'SSH' } }), 201);
    await adoptElsewhere();
    expect(await hostExists(placeholder)).to.equal(true);
  });
  it('a placeholder a person gave one interface is kept when the daemon adopts another host', async () => {
    expectOk(await call(app.url, 'POST', '/api/v1/interfaces', { auth: t.owner, body: { host_id: placeholder, if_index: 1 } }), 201);
    await adoptElsewhere();
    expect(await hostExists(placeholder)).to.equal(true);
  });
  for (const [what, change] of [['renamed', { name: 'rack 3, slot 2' }], ['described', { description: 'the build box' }], ['hidden', { hidden: true }]] as const) {
    it(`a placeholder a person ${what} (nothing added) is kept when the daemon adopts another host`, async () => {
      const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${placeholder}`, { auth: t.owner }));
      expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${placeholder}`, { auth: t.owner, body: { ...host, ...change } }));
      await adoptElsewhere();
      expect(await hostExists(placeholder)).to.equal(true);
    });
  }
  it('a placeholder a person tagged (nothing added) is kept when the daemon adopts another host', async () => {
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'lab', color: 'Blue' } }), 201);
    const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${placeholder}`, { auth: t.owner }));
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${placeholder}`, { auth: t.owner, body: { ...host, tags: [tag.id] } }));
    await adoptElsewhere();
    expect(await hostExists(placeholder)).to.equal(true);
  });
  it('a placeholder another daemon runs on is kept when its first daemon adopts another host', async () => {
    const e = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(e, t.defaultNetworkId);
    // No route moves a daemon (host_id is read-only): set it as an adoption would, and nothing else.
    const client = new pg.Client({ connectionString: app.databaseUrl });
    await client.connect();
    try {
      await client.query('update daemons set host_id = $1 where id = $2', [placeholder, e.id]);
    } finally {
      await client.end();
    }
    await adoptElsewhere();
    expect(await hostExists(placeholder)).to.equal(true);
  });
  it('a placeholder another daemon reported (its source no longer the empty one register gave) is kept', async () => {
    const e = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(e, t.defaultNetworkId);
    await postHost(e, hostReport(e, t.defaultNetworkId, { hostId: placeholder, name: 'seen' }));
    await adoptElsewhere();
    expect(await hostExists(placeholder)).to.equal(true);
  });

  it('a self-report under the placeholder’s id (Scanopy’s way) keeps it; a placeholder someone added to is never deleted', async () => {
    await postHost(d, selfReport(placeholder, '198.18.10.2'));
    expect(await daemonHost()).to.equal(placeholder);
    expect(await hostExists(placeholder)).to.equal(true);

    // A second daemon whose placeholder an operator gave a port before its self-report named another host.
    const e = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    const second = (await registerDaemon(e, t.defaultNetworkId)).host_id;
    expectOk(await call(app.url, 'POST', '/api/v1/ports', { auth: t.owner, body: { host_id: second, number: 22, protocol: 'Tcp' } }), 201);
    const other = randomUUID();
    await postHost(e, hostReport(e, t.defaultNetworkId, {
      hostId: other, name: 'second', interfaces: [{ subnet_id: subnetId, ip_address: '198.18.10.3' }],
      metadata: [{ type: 'SelfReport', host_id: second, daemon_id: e.id, date: '2026-11-25T10:00:00Z' }],
    }));
    expect(expectOk(await call(app.url, 'GET', `/api/v1/daemons/${e.id}`, { auth: t.owner })).host_id).to.equal(other);
    expect(await hostExists(second)).to.equal(true);
  });
});
