// The agent's server_poll API on its own (no server): what a poll hands out and when, and what waits
// for the server's confirmation. Listens on 127.0.0.1 only.
import { expect } from 'chai';
import type { WorkPayload } from '../../agent/protocol/client.js';
import { subnetBody, networkDiscoveryType } from '../../agent/protocol/entities.js';
import { ServerPollApi } from '../../agent/protocol/serverPollApi.js';

const NETWORK = '6a1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d';
const DAEMON = '0b9a8c7d-6e5f-4a3b-9c1d-2e3f4a5b6c7d';

describe('agent: the server_poll API', () => {
  let api: ServerPollApi;
  let url: string;
  beforeEach(async () => {
    api = new ServerPollApi({
      key: () => 'scp_d_k',
      initialize: async () => 'already',
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
