// SNMP secrets (a v2c community, a v3 user's auth and priv passwords) travel in plaintext only in
// the work handed to the daemon that needs them: the sessions list, the event feed and a host's
// history show them masked, to an Admin as to a Viewer, whoever set them (the server's queued
// session, or a daemon's own session and its entities' source metadata). Unique markers are
// planted and searched for in the whole raw text of every answer, not in one field.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { SECRET_MASK } from '../../src/core/secretFields.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from './reports.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
const marker = (what: string) => `mark-${what}-${randomUUID()}`;
const v3 = (auth: string, priv: string) => ({ version: 'V3', user: 'ops', auth_protocol: 'sha', auth_password: auth, priv_protocol: 'aes', priv_password: priv });

describe('discovery: SNMP secrets are shown masked', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let viewer: Credential;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'secrets');
    viewer = (await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId])).auth;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    const lan = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.7.0/24', name: 'lab', network_id: t.defaultNetworkId } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
  });
  afterEach(() => app.close());

  it('queued by the server, sent by a daemon in its session and its entities: no marker in sessions, events or history, for a Viewer or an Admin', async () => {
    // The server's queued Network session (what an Admin sets): v3 by default, v2c and v3 per address.
    const server = { auth: marker('srv-auth'), priv: marker('srv-priv'), community: marker('srv-community'), oAuth: marker('srv-o-auth'), oPriv: marker('srv-o-priv') };
    await sql(app, `update discovery_sessions set discovery_type = jsonb_set(discovery_type, '{snmp_credentials}', ?::jsonb) where daemon_id = ? and discovery_type->>'type' = 'Network'`, [
      JSON.stringify({
        default_credential: v3(server.auth, server.priv),
        ip_overrides: [{ ip: '198.18.7.5', credential: { version: 'V2c', community: server.community } }, { ip: '198.18.7.6', credential: v3(server.oAuth, server.oPriv) }],
      }), d.id]);
    const requestWork = () => d.post(`/api/daemons/${d.id}/request-work`, STATUS);
    const [selfReport] = expectOk(await requestWork());
    expectOk(await d.post(`/api/v1/discovery/${selfReport.session_id}/update`, { ...selfReport, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    const [work] = expectOk(await requestWork());
    // The daemon needs them: its work carries every one in plaintext.
    const workText = JSON.stringify(work);
    for (const m of Object.values(server)) expect(workText).to.include(m);
    expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, phase: 'Scanning', progress: 10, started_at: new Date().toISOString() }));

    // A daemon's own session (as --once starts) and its entities' source metadata carrying its discovery type.
    const daemon = { auth: marker('d-auth'), priv: marker('d-priv'), community: marker('d-community'), mAuth: marker('m-auth'), mPriv: marker('m-priv'), mCommunity: marker('m-community') };
    const own = {
      type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', probe_raw_socket_ports: false,
      snmp_credentials: { default_credential: v3(daemon.auth, daemon.priv), ip_overrides: [{ ip: '198.18.9.5', credential: { version: 'V2c', community: daemon.community } }] },
    };
    const ownId = randomUUID();
    expectOk(await d.post(`/api/v1/discovery/${ownId}/update`, {
      session_id: ownId, daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Complete', discovery_type: own, progress: 100, error: null,
      started_at: new Date().toISOString(), finished_at: new Date().toISOString(),
    }));
    const metadata = [{
      ...own, daemon_id: d.id, date: '2026-11-22T10:00:00Z',
      snmp_credentials: { default_credential: v3(daemon.mAuth, daemon.mPriv), ip_overrides: [{ ip: '198.18.9.5', credential: { version: 'V2c', community: daemon.mCommunity } }] },
    }];
    const subnet = await postSubnet(d, t.defaultNetworkId, '198.18.9.0/24', { source: { type: 'Discovery', metadata } });
    const host = await postHost(d, hostReport(d, t.defaultNetworkId, { interfaces: [{ subnet_id: subnet.id, ip_address: '198.18.9.5' }], ports: [{ number: 22 }], services: [{ name: 'OpenSSH', ports: [22] }], metadata }));
    // A second report of the same host: its metadata merged with the stored (masked) one.
    await postHost(d, hostReport(d, t.defaultNetworkId, { hostId: host.id, interfaces: [{ subnet_id: subnet.id, ip_address: '198.18.9.5' }], ports: [{ number: 22 }], services: [{ name: 'OpenSSH', ports: [22] }], metadata }));
    const markers = [...Object.values(server), ...Object.values(daemon)];

    for (const auth of [viewer, t.owner]) {
      const answers = [
        await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth }),
        await call(app.url, 'GET', `/api/v1/events?network_id=${t.defaultNetworkId}&limit=1000`, { auth }),
        await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth }),
        await call(app.url, 'GET', `/api/v1/hosts/${host.id}/history`, { auth }),
        await call(app.url, 'GET', `/api/v1/subnets/${subnet.id}`, { auth }),
      ];
      const sessions = expectOk(answers[0]!);
      expect(sessions.map((s: any) => s.id)).to.include.members([work.session_id, ownId]);
      const text = answers.map((a) => { expect(a.status, JSON.stringify(a.body)).to.equal(200); return JSON.stringify(a.body); }).join('\n');
      expect(text).to.include(SECRET_MASK);
      for (const m of markers) expect(text, m).to.not.include(m);
      // The user name and protocols stay: what a credential is, without what opens it.
      const shown = sessions.find((s: any) => s.id === work.session_id).discovery_type.snmp_credentials;
      expect(shown.default_credential).to.deep.equal({ version: 'V3', user: 'ops', auth_protocol: 'sha', auth_password: SECRET_MASK, priv_protocol: 'aes', priv_password: SECRET_MASK });
      expect(shown.ip_overrides[0].credential).to.deep.equal({ version: 'V2c', community: SECRET_MASK });
    }
    // Nor stored anywhere a daemon's report put them (hosts, subnets, their history, the feed): only the queued work keeps its own.
    await sql(app, 'select events_sequence(1000000)'); // the feed is sequenced after the commit: all of it, before it is read
    const stored = await sql(app, `select (select json_agg(h)::text from hosts h) || (select json_agg(s)::text from subnets s) || (select json_agg(e)::text from events e)
      || (select json_agg(x)::text from hosts_history x) || (select json_agg(x)::text from discovery_sessions x where x.id <> ?) as text`, [work.session_id]);
    for (const m of markers) expect(stored[0]!.text, m).to.not.include(m);
  });
});
