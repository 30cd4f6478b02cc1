// The HTTP client the server uses to call a server_poll daemon (src/modules/serverPoll/client.ts).
import { expect } from 'chai';
import { OutboundPolicy } from '../../src/core/outboundPolicy.js';
import { DaemonClient, DaemonRequestError } from '../../src/modules/serverPoll/client.js';
import { envelope, startStandInDaemon, type StandInDaemon } from '../workers/support.js';

describe('server-poll daemon client', () => {
  let daemon: StandInDaemon;
  beforeEach(async () => {
    daemon = await startStandInDaemon(() => undefined);
  });
  afterEach(() => daemon.close());

  // The stand-in daemon runs on this machine: loopback is allowed here, as DAEMON_ALLOWED_NETWORKS would.
  const policy = new OutboundPolicy(['127.0.0.0/8']);
  const client = (opts: Partial<ConstructorParameters<typeof DaemonClient>[0]> = {}) =>
    new DaemonClient({ baseUrl: daemon.url, apiKey: 'scp_d_key', timeoutMs: 300, policy, ...opts });

  async function failure(promise: Promise<unknown>): Promise<DaemonRequestError> {
    try {
      await promise;
    } catch (err) {
      expect(err).to.be.instanceOf(DaemonRequestError);
      return err as DaemonRequestError;
    }
    throw new Error('expected a DaemonRequestError');
  }

  it('sends the key, JSON bodies, and unwraps the envelope', async () => {
    daemon.respond = (req) => (req.path === '/api/first-contact' ? { status: 200, body: envelope({ name: 'd', version: '0.14.3' }) } : undefined);
    const status = await client().firstContact('5f0e9fd6-f7c8-4954-b5ed-c7e8a7365496', { server_version: '0.1.0', minimum_daemon_version: '0.12.0' });
    expect(status).to.deep.equal({ name: 'd', version: '0.14.3' });
    expect(daemon.requests[0]).to.deep.include({
      method: 'POST', path: '/api/first-contact', authorization: 'Bearer scp_d_key', contentType: 'application/json',
      body: { daemon_id: '5f0e9fd6-f7c8-4954-b5ed-c7e8a7365496', server_capabilities: { server_version: '0.1.0', minimum_daemon_version: '0.12.0' } },
    });
  });

  it('appends paths to a url with a path prefix', async () => {
    daemon.respond = (req) => (req.path === '/daemon/api/status' ? { status: 200, body: envelope({ version: '0.14.3' }) } : undefined);
    expect(await client({ baseUrl: `${daemon.url}/daemon/` }).status()).to.deep.equal({ version: '0.14.3' });
  });

  it('tells a timeout, a refused connection, an HTTP error and a non-envelope apart', async () => {
    daemon.respond = () => 'hang';
    expect((await failure(client().status())).reason).to.equal('timeout');
    const refused = await failure(client({ baseUrl: 'http://127.0.0.1:1' }).status());
    expect(refused.reason).to.equal('network');
    daemon.respond = () => ({ status: 401, body: 'Invalid API key' });
    const http = await failure(client().status());
    expect(http).to.include({ reason: 'http', status: 401 });
    expect(http.message).to.include('Invalid API key');
    daemon.respond = () => ({ status: 200, body: { success: false, error: 'x', meta: {} } });
    expect((await failure(client().poll())).reason).to.equal('invalid_response');
    expect((await failure(client({ baseUrl: 'not a url' }).status())).reason).to.equal('network');
  });

  it('maps the daemon 409s of initiate and cancel; pre-0.14 daemons get them without Authorization', async () => {
    daemon.respond = () => ({ status: 409, body: { success: false, error: 'busy', meta: { api_version: 1, server_version: '0.14.3' } } });
    expect(await client().initiate('s', { type: 'SelfReport' })).to.equal('busy');
    expect(await client().cancel('s')).to.equal('not_running');
    daemon.respond = (req) => ({ status: 200, body: envelope(req.path.endsWith('cancel') ? req.body : { session_id: 's' }) });
    expect(await client({ legacy: true }).initiate('s', { type: 'SelfReport' })).to.equal('started');
    expect(await client({ legacy: true }).cancel('s')).to.equal('cancelling');
    expect(daemon.requests.map((r) => r.authorization)).to.deep.equal(['Bearer scp_d_key', 'Bearer scp_d_key', undefined, undefined]);
    expect(daemon.requests[1]!.body).to.equal('s'); // cancel: a bare JSON string
  });

  it('reads a poll leniently (missing parts are empty)', async () => {
    daemon.respond = () => ({ status: 200, body: envelope({ progress: null }) });
    expect(await client().poll()).to.deep.equal({ progress: null, entities: { hosts: [], subnets: [] } });
  });
});
