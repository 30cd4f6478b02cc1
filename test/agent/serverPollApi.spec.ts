// The agent's server_poll API on its own (no server): what a poll hands out and when, what waits for
// the server's confirmation, and the pairing gate of POST /api/initialize (the server's check of a
// key is a hook here; test/agent/pairing.spec.ts has the real one). Listens on 127.0.0.1 only.
import { expect } from 'chai';
import { normalisePairingCode, PAIRING_ALPHABET } from '../../agent/config.js';
import type { WorkPayload } from '../../agent/protocol/client.js';
import { subnetBody, networkDiscoveryType } from '../../agent/protocol/entities.js';
import { generatePairingCode, PAIRING_ATTEMPTS, PairingRefused, ServerPollApi, type ServerPollHooks } from '../../agent/protocol/serverPollApi.js';

const NETWORK = '6a1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d';
const DAEMON = '0b9a8c7d-6e5f-4a3b-9c1d-2e3f4a5b6c7d';

describe('agent: the server_poll API', () => {
  let api: ServerPollApi;
  let url: string;
  beforeEach(async () => {
    api = new ServerPollApi({
      key: () => 'scp_d_k',
      initialize: async () => undefined,
      firstContact() {},
      initiate: async () => undefined,
      status: () => ({ name: 'a', mode: 'server_poll', version: '0.14.13', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } }),
    });
    url = `http://127.0.0.1:${await api.listen('127.0.0.1', 0)}`;
  });
  afterEach(() => api.close());

  const poll = async () => (await (await fetch(`${url}/api/poll`, { headers: { Authorization: 'Bearer scp_d_k' } })).json()).data;
  const confirm = (body: unknown) => fetch(`${url}/api/discovery/entities-created`, { method: 'POST', headers: { Authorization: 'Bearer scp_d_k' }, body: JSON.stringify(body) });
  const progress = (phase: WorkPayload['phase']): WorkPayload => ({
    session_id: 's1', daemon_id: DAEMON, network_id: NETWORK, phase, discovery_type: { type: 'SelfReport', host_id: null }, progress: 0, error: null, started_at: null, finished_at: null,
  });

  it('a session’s end is handed out once, and a late progress report of that session does not replace it', async () => {
    const t = api.transport({ listSubnets: async () => [] }, () => {});
    await t.update(progress('Scanning'));
    expect((await poll()).progress.phase).to.equal('Scanning');
    expect((await poll()).progress.phase).to.equal('Scanning'); // still running: shown at every poll
    await t.update(progress('Complete'));
    await t.update(progress('Scanning')); // a keep-alive that was on its way
    expect((await poll()).progress.phase).to.equal('Complete');
    expect((await poll()).progress).to.equal(null);
  });

  it('an entity is offered at every poll until confirmed, and its sender waits for the confirmation (the stored subnet)', async () => {
    const t = api.transport({ listSubnets: async () => [] }, () => {});
    const subnet = subnetBody({ cidr: '198.18.10.0/24', networkId: NETWORK, daemonId: DAEMON, discoveryType: networkDiscoveryType(null), date: '2026-11-25T00:00:00.000Z' });
    let stored: { id: string } | undefined;
    const posting = t.postSubnet(subnet).then((s) => { stored = s; });
    expect((await poll()).entities.subnets.map((s: any) => s.id)).to.deep.equal([subnet.id]);
    expect((await poll()).entities.subnets).to.have.length(1);
    expect(stored).to.equal(undefined);
    // The server's answer may be an existing subnet with another id: that id is the one used.
    await confirm({ subnets: [[subnet.id, { ...subnet, id: 'existing-id' }]], hosts: [] });
    await posting;
    expect(stored!.id).to.equal('existing-id');
    expect((await poll()).entities).to.deep.equal({ hosts: [], subnets: [] });
  });

  it('a cancelled session stops waiting for confirmations', async () => {
    const controller = new AbortController();
    const t = api.transport({ listSubnets: async () => [] }, () => {}, controller.signal);
    const subnet = subnetBody({ cidr: '198.18.10.0/24', networkId: NETWORK, daemonId: DAEMON, discoveryType: networkDiscoveryType(null), date: '2026-11-25T00:00:00.000Z' });
    const posting = t.postSubnet(subnet).then(() => 'confirmed', (err: Error) => err.message);
    controller.abort();
    expect(await posting).to.equal('session cancelled');
  });
});

describe('agent: the pairing gate of POST /api/initialize', () => {
  const CODE = 'ABCD-EFGH-JKLM';
  const KEY = 'scp_d_operator0000000000000000000000';
  let api: ServerPollApi;
  let url: string;
  let key: string | null;
  /** What the hook was asked to check and keep, in order. */
  let checked: Array<{ apiKey: string; replacing: boolean }>;
  /** The hook's check: a key it refuses is PairingRefused, as the server's 401 makes it. */
  let refuse: (apiKey: string) => PairingRefused | null;
  let release: (() => void) | null;
  const logged: string[] = [];

  beforeEach(async () => {
    key = null;
    checked = [];
    refuse = () => null;
    release = null;
    logged.length = 0;
    const hooks: ServerPollHooks = {
      key: () => key,
      async initialize(_networkId, apiKey, replacing) {
        checked.push({ apiKey, replacing });
        if (release === null) await Promise.resolve();
        else await new Promise<void>((resolve) => { release = resolve; });
        const refusal = refuse(apiKey);
        if (refusal) throw refusal;
        key = apiKey;
      },
      firstContact() {},
      initiate: async () => undefined,
      status: () => ({ name: 'a', mode: 'server_poll', version: '0.14.13', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } }),
    };
    const log = { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) };
    api = new ServerPollApi(hooks, { pairingCode: CODE, log });
    url = `http://127.0.0.1:${await api.listen('127.0.0.1', 0)}`;
  });
  afterEach(() => api.close());

  const initialize = async (body: Record<string, unknown>, bearer?: string) => {
    const res = await fetch(`${url}/api/initialize`, {
      method: 'POST', body: JSON.stringify({ network_id: '6a1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d', api_key: KEY, ...body }),
      headers: { 'Content-Type': 'application/json', ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) },
    });
    return { status: res.status, body: await res.json() as { success: boolean; data?: string; error?: string; code?: string } };
  };

  it('a made-up code is 12 characters of the unambiguous alphabet in groups of four (60 bits), and the code is typed in any case, with or without dashes', async () => {
    const codes = Array.from({ length: 50 }, generatePairingCode);
    for (const c of codes) expect(c).to.match(new RegExp(`^[${PAIRING_ALPHABET}]{4}-[${PAIRING_ALPHABET}]{4}-[${PAIRING_ALPHABET}]{4}$`));
    expect(PAIRING_ALPHABET).to.have.length(32);
    expect(PAIRING_ALPHABET).not.to.match(/[01IO]/);
    expect(new Set(codes).size).to.equal(50);
    expect(normalisePairingCode('abcd efgh-jklm')).to.equal('ABCDEFGHJKLM');
    expect((await initialize({ pairing_code: 'abcd efgh jklm' })).status).to.equal(200);
  });

  it('without the code, or with a wrong one, the key is not even checked; the fifth wrong code locks pairing until a restart', async () => {
    const missing = await initialize({});
    expect(missing.status).to.equal(403);
    expect(missing.body).to.include({ success: false, code: 'pairing_code_required' });
    expect(missing.body.error).to.match(/pairing code is needed.*logs it at start.*--pairing-code/);
    for (let i = 1; i < PAIRING_ATTEMPTS; i++) {
      const wrong = await initialize({ pairing_code: 'ZZZZ-ZZZZ-ZZZZ' });
      expect(wrong.status).to.equal(403);
      expect(wrong.body).to.include({ code: 'pairing_code_wrong' });
      expect(wrong.body.error).to.include(`${PAIRING_ATTEMPTS - i} more tries`);
    }
    const last = await initialize({ pairing_code: 'ZZZZ-ZZZZ-ZZZZ' });
    expect(last.body).to.include({ code: 'pairing_locked' });
    expect(logged.some((m) => /pairing locked after 5 wrong pairing codes: restart the agent/.test(m))).to.equal(true);
    // Locked: the right code too.
    const right = await initialize({ pairing_code: CODE });
    expect(right.status).to.equal(403);
    expect(right.body.error).to.match(/locked.*restart the agent/);
    expect(checked).to.deep.equal([]);
    expect(key).to.equal(null);
  });

  it('a key the hook refuses is not kept and the code stays good; a kept key uses the code up', async () => {
    refuse = (k) => (k === 'scp_d_refused' ? new PairingRefused(422, 'The server refused this API key', 'key_refused') : null);
    const refused = await initialize({ api_key: 'scp_d_refused', pairing_code: CODE });
    expect(refused.status).to.equal(422);
    expect(refused.body).to.include({ code: 'key_refused', error: 'The server refused this API key' });
    expect(key).to.equal(null);
    const paired = await initialize({ pairing_code: CODE });
    expect(paired).to.deep.include({ status: 200 });
    expect(paired.body.data).to.equal('Daemon initialized successfully');
    expect(key).to.equal(KEY);
    expect(checked).to.deep.equal([{ apiKey: 'scp_d_refused', replacing: false }, { apiKey: KEY, replacing: false }]);
  });

  it('paired, initialize is 409 with the code too; with the current key as Bearer it replaces the key', async () => {
    expect((await initialize({ pairing_code: CODE })).status).to.equal(200);
    for (const bearer of [undefined, 'scp_d_guess']) {
      const again = await initialize({ api_key: 'scp_d_other', pairing_code: CODE }, bearer);
      expect(again.status).to.equal(409);
      expect(again.body).to.include({ code: 'already_initialized' });
      expect(again.body.error).to.include('Authorization: Bearer <its current key>');
    }
    expect(key).to.equal(KEY);
    const rotated = await initialize({ api_key: 'scp_d_rotated' }, KEY);
    expect(rotated).to.deep.include({ status: 200 });
    expect(rotated.body.data).to.equal('Daemon API key replaced');
    expect(key).to.equal('scp_d_rotated');
    expect(checked.map((c) => c.replacing)).to.deep.equal([false, true]);
  });

  it('one initialize at a time: another one while a key is being checked is 409', async () => {
    release = () => {};
    const first = initialize({ pairing_code: CODE });
    while (!checked.length) await new Promise((r) => setTimeout(r, 5));
    const second = await initialize({ api_key: 'scp_d_second', pairing_code: CODE });
    expect(second.status).to.equal(409);
    expect(second.body).to.include({ code: 'initialize_in_progress' });
    release!();
    expect((await first).status).to.equal(200);
    expect(key).to.equal(KEY);
  });

  it('a body without a UUID network_id or an api_key is 400', async () => {
    expect((await initialize({ network_id: 'x', pairing_code: CODE })).status).to.equal(400);
    expect((await initialize({ api_key: '', pairing_code: CODE })).status).to.equal(400);
  });
});
