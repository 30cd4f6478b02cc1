// Pairing a server_poll agent (agent/protocol/serverPollApi.ts, agent/main.ts serverPoll()) against
// the real server: the agent runs in-process on 127.0.0.1 with a fake scanner (no probe leaves the
// test). A neighbour who reaches the agent's port first cannot give it a key without the pairing
// code; a key the server refuses is never kept; a paired agent takes no other key but from a caller
// who presents its current one; and the operator's key keeps working whatever a neighbour tries.
// The neighbour here is another organization of the same server, with daemon keys of its own.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { DEFAULT_LISTEN, parseConfig, UsageError, type AgentConfig } from '../../agent/config.js';
import { runAgent, type AgentDeps } from '../../agent/main.js';
import type { Log } from '../../agent/runner.js';
import type { ScanNetwork } from '../../agent/scan/types.js';
import type { LocalHost } from '../../agent/selfReport.js';
import { loadState } from '../../agent/state.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey } from '../daemons/world.js';
import { waitFor } from '../workers/support.js';

const LOCAL: LocalHost = {
  hostname: 'agent-01', machineId: '5f1b0c8e2a7d4e6f9a3b1c2d4e5f6a7b',
  interfaces: [{ name: 'eth0', ip: '172.25.0.4', cidr: '172.25.0.0/28', mac: '8A:07:B6:08:A1:34', subnetType: 'Lan' }],
};
const CODE = 'PAIR-WITH-ME42';
/** Finds nothing, at once. */
const emptyScan: ScanNetwork = async () => ({ addressesTried: 0, aliveByEvidence: {}, hosts: [], warnings: [], probesSent: 0, cancelled: false });

describe('agent: pairing in server_poll mode', function () {
  this.timeout(60_000);
  let app: TestApp;
  let operator: Tenant;
  let neighbour: Tenant;
  let dir: string;
  let stop: AbortController;
  const running: Promise<number>[] = [];

  before(async () => {
    app = await startTestApp();
    operator = await registerTenant(app.url, 'operator');
    neighbour = await registerTenant(app.url, 'neighbour');
  });
  after(() => app.close());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-pairing-'));
    stop = new AbortController();
  });
  afterEach(async () => {
    stop.abort();
    await Promise.all(running.splice(0));
    rmSync(dir, { recursive: true, force: true });
  });

  const statePath = () => join(dir, 'state.json');
  const operatorKey = async (networkId = operator.defaultNetworkId) => (await createDaemonKey(app.url, operator.owner, networkId)).key;
  const neighbourKey = async () => (await createDaemonKey(app.url, neighbour.owner, neighbour.defaultNetworkId)).key;

  /** A server_poll agent on 127.0.0.1 (no key unless given); its URL and what it logged. */
  async function startAgent(extra: Partial<AgentConfig> = {}) {
    const logged: string[] = [];
    const line = (level: string) => (msg: string, more?: Record<string, unknown>) => { logged.push(`${level} ${msg}${more ? ` ${JSON.stringify(more)}` : ''}`); };
    const log: Log = { debug() {}, info: line('info'), warn: line('warn'), error: line('error') };
    const config: AgentConfig = {
      ...parseConfig(['--server', app.url, '--mode', 'server_poll', '--listen', '127.0.0.1:0', '--state', statePath(), '--interval', '0.1', '--docker', 'none'], {}),
      ...extra,
    };
    const port = await new Promise<number>((resolve, reject) => {
      const deps: AgentDeps = { log, stop: stop.signal, readLocal: () => LOCAL, backoffScale: 0, scanNetwork: emptyScan, onListening: resolve };
      const run = runAgent(config, deps);
      running.push(run);
      run.catch(reject);
    });
    return { url: `http://127.0.0.1:${port}`, logged };
  }

  /** A call to the agent's own API. */
  async function agent(url: string, method: string, path: string, body?: unknown, bearer?: string) {
    const res = await fetch(url + path, {
      method, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { 'Content-Type': 'application/json', ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) },
    });
    const text = await res.text();
    let parsed: any = text;
    try { parsed = JSON.parse(text); } catch { /* the 401s are plain text */ }
    return { status: res.status, body: parsed };
  }
  const initialize = (url: string, body: Record<string, unknown>, bearer?: string) => agent(url, 'POST', '/api/initialize', body, bearer);
  const storedKey = () => loadState(statePath()).apiKey ?? null;

  it('(a) a first-come initialize is refused without the pairing code, which the agent logs at start', async () => {
    const { url, logged } = await startAgent();
    const code = /pairing code ([2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4})/.exec(logged.join('\n'))?.[1];
    expect(code, logged.join('\n')).to.be.a('string');
    const theirs = await neighbourKey(); // a key this server accepts: the neighbour's own
    const missing = await initialize(url, { network_id: neighbour.defaultNetworkId, api_key: theirs });
    expect(missing.status).to.equal(403);
    expect(missing.body).to.include({ success: false, code: 'pairing_code_required' });
    expect(missing.body.error).to.include('the agent logs it at start');
    expect((await initialize(url, { network_id: neighbour.defaultNetworkId, api_key: theirs, pairing_code: 'AAAA-BBBB-CCCC' })).status).to.equal(403);
    expect(storedKey()).to.equal(null);
    expect(await agent(url, 'GET', '/api/status', undefined, theirs)).to.deep.equal({ status: 401, body: 'Daemon not configured' });
    // The operator, with the code from the log (typed in lower case, without dashes).
    const ours = await operatorKey();
    const paired = await initialize(url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: code!.replace(/-/g, '').toLowerCase() });
    expect(paired).to.deep.equal({ status: 200, body: { success: true, data: 'Daemon initialized successfully', meta: paired.body.meta } });
    expect(storedKey()).to.equal(ours);
    expect(statSync(statePath()).mode & 0o777).to.equal(0o600);
    expect((await agent(url, 'GET', '/api/status', undefined, ours)).status).to.equal(200);
  });

  it('(b) a key the server refuses, or one of another network, is never kept, and the agent stays pairable', async () => {
    const { url } = await startAgent({ pairingCode: CODE });
    const forged = `scp_d_${randomBytes(24).toString('base64url').replace(/[-_]/g, 'x').slice(0, 32)}`;
    const refused = await initialize(url, { network_id: operator.defaultNetworkId, api_key: forged, pairing_code: CODE });
    expect(refused.status).to.equal(422);
    expect(refused.body).to.include({ code: 'key_refused' });
    expect(refused.body.error).to.match(/The server \(http:\/\/127\.0\.0\.1:\d+\) refused this API key \(auth_daemon_key_not_created\): it was not kept/);
    // Neither in the state file nor in memory.
    expect(storedKey()).to.equal(null);
    expect(await agent(url, 'GET', '/api/status', undefined, forged)).to.deep.equal({ status: 401, body: 'Daemon not configured' });
    // A good key said to be for another network: the server says which it is for.
    const other = await createNetwork(app.url, operator.owner, 'other');
    const otherKey = await operatorKey(other);
    const mismatch = await initialize(url, { network_id: operator.defaultNetworkId, api_key: otherKey, pairing_code: CODE });
    expect(mismatch.status).to.equal(422);
    expect(mismatch.body).to.include({ code: 'network_mismatch' });
    expect(mismatch.body.error).to.include(`This API key is for network ${other}, not ${operator.defaultNetworkId}`);
    expect(storedKey()).to.equal(null);
    // A revoked key is refused the same way.
    const revoked = await createDaemonKey(app.url, operator.owner, operator.defaultNetworkId, { is_enabled: false });
    expect((await initialize(url, { network_id: operator.defaultNetworkId, api_key: revoked.key, pairing_code: CODE })).body).to.include({ code: 'key_refused' });
    // The code is still good.
    const ours = await operatorKey();
    expect((await initialize(url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: CODE })).status).to.equal(200);
    expect(storedKey()).to.equal(ours);
    expect(loadState(statePath()).networkId).to.equal(operator.defaultNetworkId);
  });

  it('(c) a second initialize is refused (409), with the right code too; the current key as Bearer replaces the key (checked the same way)', async () => {
    const { url } = await startAgent({ pairingCode: CODE });
    const ours = await operatorKey();
    expect((await initialize(url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: CODE })).status).to.equal(200);
    const theirs = await neighbourKey();
    for (const bearer of [undefined, theirs]) {
      const again = await initialize(url, { network_id: neighbour.defaultNetworkId, api_key: theirs, pairing_code: CODE }, bearer);
      expect(again.status).to.equal(409);
      expect(again.body).to.include({ code: 'already_initialized' });
    }
    expect(storedKey()).to.equal(ours);
    // Rotation: a forged new key is refused and changes nothing; a good one replaces the old.
    const forged = await initialize(url, { network_id: operator.defaultNetworkId, api_key: 'scp_d_00000000000000000000000000000000' }, ours);
    expect(forged.status).to.equal(422);
    expect(storedKey()).to.equal(ours);
    const next = await operatorKey();
    const rotated = await initialize(url, { network_id: operator.defaultNetworkId, api_key: next }, ours);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.data).to.equal('Daemon API key replaced');
    expect(storedKey()).to.equal(next);
    expect((await agent(url, 'GET', '/api/status', undefined, ours)).status).to.equal(401);
    expect((await agent(url, 'GET', '/api/status', undefined, next)).status).to.equal(200);
  });

  it('(d) the operator’s key keeps working after a neighbour’s attempts, before and after pairing (poll, initiate)', async () => {
    const { url } = await startAgent({ pairingCode: CODE });
    const theirs = await neighbourKey();
    const neighbourTries = (body: Record<string, unknown>, bearer?: string) => initialize(url, { network_id: neighbour.defaultNetworkId, api_key: theirs, ...body }, bearer);
    // Before the operator: without the code nothing is taken.
    for (const body of [{}, { pairing_code: 'WRONG-CODE-123' }, { pairing_code: 'WRONG-CODE-456' }]) expect((await neighbourTries(body)).status).to.equal(403);
    const ours = await operatorKey();
    expect((await initialize(url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: CODE })).status).to.equal(200);
    // After: nothing either, the code included (as if the neighbour had seen it), nor a guessed Bearer.
    for (const body of [{}, { pairing_code: 'WRONG-CODE-789' }, { pairing_code: CODE }]) expect((await neighbourTries(body)).status).to.equal(409);
    expect((await neighbourTries({ pairing_code: CODE }, 'scp_d_guessed')).status).to.equal(409);
    expect(storedKey()).to.equal(ours);
    // The operator's key polls and starts sessions; the neighbour's is refused.
    expect((await agent(url, 'GET', '/api/poll', undefined, ours)).status).to.equal(200);
    expect(await agent(url, 'GET', '/api/poll', undefined, theirs)).to.deep.equal({ status: 401, body: 'Invalid API key' });
    const work = { session_id: '0f7c6a1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b', discovery_type: { type: 'SelfReport', host_id: null } };
    expect((await agent(url, 'POST', '/api/discovery/initiate', work, theirs)).status).to.equal(401);
    const initiated = await agent(url, 'POST', '/api/discovery/initiate', work, ours);
    expect(initiated.status, JSON.stringify(initiated.body)).to.equal(200);
    // The SelfReport offers the agent's subnet, on the operator's network, for the server to confirm.
    const offered = await waitFor('the session’s subnet', async () => (await agent(url, 'GET', '/api/poll', undefined, ours)).body.data.entities.subnets[0]);
    expect(offered).to.include({ cidr: '172.25.0.0/28', network_id: operator.defaultNetworkId });
  });

  it('after 5 wrong codes pairing is locked, the right code included, until a restart (the log says so)', async () => {
    const { url, logged } = await startAgent({ pairingCode: CODE });
    const ours = await operatorKey();
    for (let i = 0; i < 5; i++) await initialize(url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: `WRONG-CODE-00${i}` });
    const locked = await initialize(url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: CODE });
    expect(locked.status).to.equal(403);
    expect(locked.body).to.include({ code: 'pairing_locked' });
    expect(logged.join('\n')).to.include('pairing locked after 5 wrong pairing codes: restart the agent to pair it');
    expect(storedKey()).to.equal(null);
    // A restart (same state file): pairing works again.
    stop.abort();
    await Promise.all(running.splice(0));
    stop = new AbortController();
    const restarted = await startAgent({ pairingCode: CODE });
    expect((await initialize(restarted.url, { network_id: operator.defaultNetworkId, api_key: ours, pairing_code: CODE })).status).to.equal(200);
  });

  it('with a key from its configuration (no --network) it learns the network from the server, and takes no other key', async () => {
    const ours = await operatorKey();
    const { url, logged } = await startAgent({ key: ours, network: null });
    expect(logged.join('\n')).not.to.include('pairing code');
    await waitFor('the network of the key', async () => loadState(statePath()).networkId === operator.defaultNetworkId);
    const theirs = await neighbourKey();
    expect((await initialize(url, { network_id: neighbour.defaultNetworkId, api_key: theirs, pairing_code: CODE })).status).to.equal(409);
    const rotate = await initialize(url, { network_id: operator.defaultNetworkId, api_key: await operatorKey() }, ours);
    expect(rotate.status).to.equal(409);
    expect(rotate.body).to.include({ code: 'key_from_configuration' });
    expect(storedKey()).to.equal(null); // a configured key is not copied into the state file
    expect((await agent(url, 'GET', '/api/status', undefined, ours)).status).to.equal(200);
  });

  describe('configuration', () => {
    const base = ['--server', 'http://127.0.0.1:9', '--mode', 'server_poll'];
    const bad = (argv: string[], env: Record<string, string>, message: RegExp) => expect(() => parseConfig(argv, env)).to.throw(UsageError, message);

    it('listens on loopback unless --listen names an address', () => {
      expect(DEFAULT_LISTEN).to.equal('127.0.0.1:60073');
      expect(parseConfig(base, {}).listen).to.deep.equal({ host: '127.0.0.1', port: 60073 });
      expect(parseConfig([...base, '--listen', '0.0.0.0:60073'], {}).listen).to.deep.equal({ host: '0.0.0.0', port: 60073 });
    });

    it('the key from --key-file (its first line) or AGENT_KEY; --key works, with a warning; a file others can read is said', () => {
      const file = join(dir, 'key');
      writeFileSync(file, 'scp_d_fromfile\nsecond line\n', { mode: 0o600 });
      const fromFile = parseConfig([...base, '--key-file', file], {});
      expect(fromFile).to.include({ key: 'scp_d_fromfile' });
      expect(fromFile.warnings).to.deep.equal([]);
      expect(parseConfig(base, { AGENT_KEY_FILE: file }).key).to.equal('scp_d_fromfile');
      expect(parseConfig(base, { AGENT_KEY: 'scp_d_env' })).to.deep.include({ key: 'scp_d_env', warnings: [] });
      expect(parseConfig([...base, '--key', 'scp_d_flag'], {}).warnings[0]).to.match(/--key shows the key to every user of this machine.*--key-file/);
      // A flag wins over a variable; two ways at one level are a mistake.
      expect(parseConfig([...base, '--key-file', file], { AGENT_KEY: 'scp_d_env' }).key).to.equal('scp_d_fromfile');
      bad([...base, '--key', 'k', '--key-file', file], {}, /give the key one way/);
      bad(base, { AGENT_KEY: 'k', AGENT_KEY_FILE: file }, /give the key one way/);
      chmodSync(file, 0o644);
      expect(parseConfig([...base, '--key-file', file], {}).warnings[0]).to.equal(`key file ${file} can be read or changed by other users (mode 0644): chmod 600 ${file}`);
      bad([...base, '--key-file', join(dir, 'missing')], {}, /--key-file .*ENOENT/);
      writeFileSync(file, '\n');
      bad([...base, '--key-file', file], {}, /first line is empty/);
      bad(['--server', 'http://s'], {}, /--key-file <file> or AGENT_KEY/);
    });

    it('--pairing-code and the TLS flags: server_poll only, checked', () => {
      expect(parseConfig([...base, '--pairing-code', 'abcd-efgh-jklm'], {}).pairingCode).to.equal('ABCDEFGHJKLM');
      expect(parseConfig(base, { AGENT_PAIRING_CODE: 'ABCD EFGH JKLM' }).pairingCode).to.equal('ABCDEFGHJKLM');
      bad([...base, '--pairing-code', '1234'], {}, /12 to 64 letters or digits/);
      bad(['--server', 'http://s', '--key', 'k', '--pairing-code', 'ABCD-EFGH-JKLM'], {}, /--pairing-code is for --mode server_poll/);
      expect(parseConfig([...base, '--tls-cert', 'c.pem', '--tls-key', 'k.pem'], {}).tls).to.deep.equal({ cert: 'c.pem', key: 'k.pem' });
      expect(parseConfig([...base, '--tls-self-signed'], {}).tls).to.equal('self-signed');
      expect(parseConfig(base, { AGENT_TLS_SELF_SIGNED: '0' }).tls).to.equal(null);
      bad([...base, '--tls-cert', 'c.pem'], {}, /go together/);
      bad([...base, '--tls-cert', 'c.pem', '--tls-key', 'k.pem', '--tls-self-signed'], {}, /not both/);
    });
  });
});
