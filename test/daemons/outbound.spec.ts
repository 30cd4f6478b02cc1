// Issue 10.2, replayed: any tenant could point a server_poll daemon at a service of the server's own
// machine (http://127.0.0.1:…, also spelled 2130706433, with a path chosen by ?/#) and read its JSON
// answer back through GET /api/v1/daemons/{id}.
import { expect } from 'chai';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { envelope, seedDaemon, startStandInDaemon, workerServicesFor, type StandInDaemon } from '../workers/support.js';

describe('daemons: the outbound-address policy', function () {
  this.timeout(30_000);
  let app: TestApp;
  let t: Tenant;
  let internal: StandInDaemon;
  const provision = (url: string) => call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'd', network_id: t.defaultNetworkId, url } });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    // An internal JSON service on the server's machine, which a daemon URL must not reach.
    internal = await startStandInDaemon(() => ({ status: 200, body: envelope({ version: '0.14.10', capabilities: { has_docker_socket: true, secret: 'internal-token', interfaced_subnet_ids: [] } }) }));
  });
  afterEach(async () => {
    await internal.close();
    await app.close();
  });

  it('refuses a daemon URL on loopback, link-local or with a query, in every spelling, when it is saved', async () => {
    const port = new URL(internal.url).port;
    const refused: Array<[string, string]> = [
      [`http://127.0.0.1:${port}`, 'address'], [`http://2130706433:${port}`, 'address'], [`http://0x7f.1:${port}`, 'address'],
      [`http://[::ffff:127.0.0.1]:${port}`, 'address'], [`http://localhost:${port}`, 'address'], ['http://169.254.169.254/latest', 'address'],
      [`http://10.0.0.5:${port}/api/status?x=`, 'query_or_fragment'], [`http://10.0.0.5:${port}/#x`, 'query_or_fragment'],
      ['http://admin:pw@10.0.0.5/', 'userinfo'],
    ];
    for (const [url, reason] of refused) {
      const res = await provision(url);
      expectError(res, 400, 'outbound_address_refused');
      expect(res.body.params, url).to.include({ field: 'url', reason });
    }
    expect(expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: t.owner }))).to.deep.equal([]);
    // A LAN address is fine; changing it to loopback later is refused the same way and changes nothing.
    const { daemon } = expectOk(await provision('http://10.0.0.5:60073'), 201);
    const put = await call(app.url, 'PUT', `/api/v1/daemons/${daemon.id}`, { auth: t.owner, body: { name: 'd', url: `http://2130706433:${port}`, tags: [] } });
    expectError(put, 400, 'outbound_address_refused');
    expect(expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemon.id}`, { auth: t.owner })).url).to.equal('http://10.0.0.5:60073');
    expect(internal.requests).to.deep.equal([]);
  });

  it('checks again at connect time: a name that now resolves to loopback is never dialled', async () => {
    // Saved when the name pointed elsewhere (DNS rebinding), here written straight to the database.
    const d = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: `http://localhost:${new URL(internal.url).port}` });
    const services = workerServicesFor(app);
    try {
      const strict = { ...services, config: { ...services.config, daemonAllowedNetworks: [] } };
      const outcome = await pollDaemon(strict, d.id);
      expect(outcome).to.include({ result: 'failed' });
      expect(outcome.reason).to.match(/localhost resolves to (127\.0\.0\.1|::1)/);
      expect(internal.requests).to.deep.equal([]);
      const shown = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}`, { auth: t.owner }));
      expect(shown.last_error).to.match(/refused/);
      expect(JSON.stringify(shown)).to.not.contain('internal-token');
    } finally {
      await services.close();
    }
  });

  it('keeps only the protocol fields of what a daemon answers', async () => {
    const d = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: internal.url });
    const services = workerServicesFor(app); // allows loopback, as DAEMON_ALLOWED_NETWORKS=127.0.0.0/8 would
    try {
      await pollDaemon(services, d.id);
      const shown = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}`, { auth: t.owner }));
      expect(shown.capabilities).to.deep.equal({ has_docker_socket: true, interfaced_subnet_ids: [] });
      expect(JSON.stringify(shown)).to.not.contain('internal-token');
    } finally {
      await services.close();
    }
  });
});
