// The server's side of pairing (POST /api/v1/daemons/provision with pairing_code): the server calls
// a real agent's POST /api/initialize (the agent in-process on 127.0.0.1, server_poll mode, a fake
// scanner) with the new key; the daemon is kept only when the agent took the key. Over https the
// agent's certificate is pinned, and the poller refuses another one afterwards.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer as createTlsServer } from 'node:tls';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseConfig, type AgentConfig } from '../../agent/config.js';
import { runAgent } from '../../agent/main.js';
import type { Log } from '../../agent/runner.js';
import type { ScanNetwork } from '../../agent/scan/types.js';
import { certificateFingerprint, selfSignedCertificate } from '../../agent/protocol/serverPollApi.js';
import { loadState } from '../../agent/state.js';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { sql } from './world.js';
import { workerServicesFor } from '../workers/support.js';

const CODE = 'PAIR-WITH-ME42';
const silent: Log = { info() {}, warn() {}, error() {} };
const emptyScan: ScanNetwork = async () => ({ addressesTried: 0, aliveByEvidence: {}, hosts: [], warnings: [], probesSent: 0, cancelled: false });
const hasOpenssl = (() => ['/usr/bin/openssl', '/usr/local/bin/openssl', '/bin/openssl'].some(existsSync))();

describe('daemons: provision with a pairing code', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let dir: string;
  let stops: AbortController[];
  let running: Promise<number>[];
  let services: ReturnType<typeof workerServicesFor>;

  before(async () => {
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url, 'pairing');
    services = workerServicesFor(app, { serverPollTimeoutMs: 5000 });
  });
  after(async () => {
    await services.close();
    await app.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'provision-pairing-'));
    stops = [];
    running = [];
  });
  afterEach(async () => {
    for (const s of stops) s.abort();
    await Promise.all(running);
    rmSync(dir, { recursive: true, force: true });
  });

  /** A server_poll agent without a key, waiting for CODE; `name` keeps its state (and certificate) apart. */
  async function startAgent(name: string, extra: Partial<AgentConfig> = {}) {
    const statePath = join(dir, name, 'state.json');
    const config: AgentConfig = {
      ...parseConfig(['--server', app.url, '--mode', 'server_poll', '--listen', '127.0.0.1:0', '--state', statePath, '--docker', 'none', '--pairing-code', CODE], {}),
      ...extra,
    };
    const stop = new AbortController();
    stops.push(stop);
    const port = await new Promise<number>((resolve, reject) => {
      const run = runAgent(config, { log: silent, stop: stop.signal, backoffScale: 0, scanNetwork: emptyScan, onListening: resolve });
      running.push(run);
      run.catch(reject);
    });
    return { port, stop, statePath, stored: () => loadState(statePath).apiKey ?? null };
  }

  const provision = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, headers, body: { name: 'paired', network_id: t.defaultNetworkId, ...body } });
  /** Daemons and keys of the tenant's organization, to see that a refusal keeps nothing. */
  const counts = async () => (await sql<{ daemons: number; keys: number }>(app,
    `select (select count(*)::int from daemons where organization_id = ?) as daemons, (select count(*)::int from daemon_api_keys where organization_id = ?) as keys`,
    [t.orgId, t.orgId]))[0]!;

  it('the server gives the agent its key: 201 with the outcome, and the daemon is polled with that key', async () => {
    const agent = await startAgent('a');
    const before = await counts();
    const url = `http://127.0.0.1:${agent.port}`;
    // A wrong code: the agent says no, and nothing is kept.
    const wrong = await provision({ url, pairing_code: 'WRONG-CODE-123' });
    expectError(wrong, 422, 'daemon_pairing_refused');
    expect(wrong.body.error).to.match(new RegExp(`^The agent at ${url} refused to pair: Wrong pairing code \\(4 more tries.*Nothing was kept \\(no daemon, no key\\)$`));
    expect(wrong.body.params).to.include({ url, agent_status: 403 });
    expect(await counts()).to.deep.equal(before);
    expect(agent.stored()).to.equal(null);

    const res = expectOk(await provision({ url, pairing_code: CODE.toLowerCase() }), 201);
    expect(res.pairing).to.deep.equal({ paired: true, message: 'Daemon initialized successfully', tls_fingerprint: null });
    expect(agent.stored()).to.equal(res.daemon_api_key);
    expect(loadState(agent.statePath).networkId).to.equal(t.defaultNetworkId);
    expect(await counts()).to.deep.equal({ daemons: before.daemons + 1, keys: before.keys + 1 });
    const polled = await pollDaemon(services, res.daemon.id);
    expect(polled, JSON.stringify(polled)).to.include({ result: 'ok' });
    expect(expectOk(await call(app.url, 'GET', `/api/v1/daemons/${res.daemon.id}`, { auth: t.owner })).last_seen).to.be.a('string');

    // Paired: another provision with the same code is refused by the agent (409 there), nothing kept.
    const again = await provision({ url, pairing_code: CODE });
    expectError(again, 422, 'daemon_pairing_refused');
    expect(again.body.error).to.include('Daemon already initialized');
    expect(agent.stored()).to.equal(res.daemon_api_key);
    expect(await counts()).to.deep.equal({ daemons: before.daemons + 1, keys: before.keys + 1 });
  });

  it('an agent that does not answer is 502 daemon_pairing_failed, and nothing is kept; the outbound policy still applies', async () => {
    const agent = await startAgent('gone');
    agent.stop.abort();
    await Promise.all(running);
    const before = await counts();
    const gone = await provision({ url: `http://127.0.0.1:${agent.port}`, pairing_code: CODE });
    expect(gone.status).to.equal(502);
    expect(gone.body).to.include({ success: false, code: 'daemon_pairing_failed' });
    expect(gone.body.error).to.match(/^Pairing with the agent at http:\/\/127\.0\.0\.1:\d+ failed: .*ECONNREFUSED.*Nothing was kept/);
    expect(await counts()).to.deep.equal(before);
    // Refused when saved, before any connection (link-local: the cloud metadata address).
    expectError(await provision({ url: 'http://169.254.169.254:60073', pairing_code: CODE }), 400, 'outbound_address_refused');
    expectError(await provision({ url: 'http://127.0.0.1:1', pairing_code: CODE, tls_fingerprint: 'AB'.repeat(32) }), 400, 'validation_failed');
    expectError(await provision({ url: 'https://127.0.0.1:1', tls_fingerprint: 'AB'.repeat(32) }), 400, 'validation_failed'); // needs pairing_code
    expect(await counts()).to.deep.equal(before);
  });

  it('with an Idempotency-Key too (the key is committed before the agent checks it with the server)', async () => {
    const agent = await startAgent('idem');
    const res = expectOk(await provision({ url: `http://127.0.0.1:${agent.port}`, pairing_code: CODE }, { 'Idempotency-Key': 'pair-once-1' }), 201);
    expect(res.pairing.paired).to.equal(true);
    expect(agent.stored()).to.equal(res.daemon_api_key);
  });

  (hasOpenssl ? describe : describe.skip)('over https (--tls-self-signed: openssl)', () => {
    it('the certificate the agent presents at pairing is pinned; another one afterwards fails the poll with a clear last_error, as does a plain-http url', async () => {
      const agent = await startAgent('tls', { tls: 'self-signed' });
      const fingerprint = certificateFingerprint(readFileSync(join(dir, 'tls', 'agent-tls-cert.pem')));
      const url = `https://127.0.0.1:${agent.port}`;
      const res = expectOk(await provision({ url, pairing_code: CODE }), 201);
      expect(res.pairing.tls_fingerprint).to.equal(fingerprint);
      expect((await sql(app, `select tls_fingerprint from daemon_api_keys where id = ?`, [res.daemon.api_key_id]))[0]!.tls_fingerprint).to.equal(fingerprint);
      expect(await pollDaemon(services, res.daemon.id)).to.include({ result: 'ok' });

      // Something else at the same address, with another self-signed certificate: it receives not a byte.
      agent.stop.abort();
      await Promise.all(running);
      const other = selfSignedCertificate(join(dir, 'impostor'));
      const received: Buffer[] = [];
      const impostor = createTlsServer({ cert: readFileSync(other.cert), key: readFileSync(other.key) }, (socket) => {
        socket.on('data', (chunk: Buffer) => received.push(chunk));
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => impostor.listen(agent.port, '127.0.0.1', resolve));
      try {
        expect(await pollDaemon(services, res.daemon.id)).to.include({ result: 'failed' });
      } finally {
        await new Promise((resolve) => impostor.close(resolve));
      }
      expect(Buffer.concat(received).length).to.equal(0);
      const daemon = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${res.daemon.id}`, { auth: t.owner }));
      expect(daemon.last_error).to.include(`the daemon presented TLS certificate ${certificateFingerprint(readFileSync(other.cert))}, not the expected ${fingerprint}`);
      expect(daemon.last_error).to.include('nothing was sent to it');

      // Nor does a url changed to plain http carry the key.
      expectOk(await call(app.url, 'PUT', `/api/v1/daemons/${res.daemon.id}`, { auth: t.owner, body: { name: 'paired', url: `http://127.0.0.1:${agent.port}`, tags: [] } }));
      expect((await pollDaemon(services, res.daemon.id)).reason).to.include('its url must stay https');
    });

    it('a tls_fingerprint given at provision is checked before the key is sent', async () => {
      const agent = await startAgent('tls2', { tls: 'self-signed' });
      const before = await counts();
      const wrong = await provision({ url: `https://127.0.0.1:${agent.port}`, pairing_code: CODE, tls_fingerprint: 'ab'.repeat(32) });
      expect(wrong.status).to.equal(502);
      expect(wrong.body.error).to.include(`not the expected ${'AB:'.repeat(31)}AB`);
      expect(agent.stored()).to.equal(null);
      expect(await counts()).to.deep.equal(before);
      const fingerprint = certificateFingerprint(readFileSync(join(dir, 'tls2', 'agent-tls-cert.pem')));
      const res = expectOk(await provision({ url: `https://127.0.0.1:${agent.port}`, pairing_code: CODE, tls_fingerprint: fingerprint.replace(/:/g, '').toLowerCase() }), 201);
      expect(res.pairing.tls_fingerprint).to.equal(fingerprint);
    });
  });
});
