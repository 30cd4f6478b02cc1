// A killed agent's session ends as stalled, and the next run starts clean (issue 24.7): a daemon
// announcing its startup runs nothing, so the sessions it was running end Failed at once, saying
// why, and its next request-work hands out the next session. Through HTTP as a daemon.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { sweepStalledSessions } from '../../src/modules/discovery/sessions.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
/** What this project's agent announces (agent/config.ts AGENT_VERSION). */
const AGENT_VERSION = '0.14.13+netinventory-agent.0.1.0';
const RESTARTED = 'Stalled: the daemon restarted during the session';

describe('discovery sessions: a daemon that restarts', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let other: DaemonClient;

  const requestWork = (daemon = d, version = STATUS.version) => daemon.post(`/api/daemons/${daemon.id}/request-work`, { ...STATUS, version });
  const startup = async (daemon = d) => expectOk(await daemon.post(`/api/daemons/${daemon.id}/startup`, { daemon_version: '0.14.13' }));
  const update = async (work: any, phase: string, daemon = d) => expectOk(await daemon.post(`/api/v1/discovery/${work.session_id}/update`, {
    ...work, phase, progress: phase === 'Scanning' ? 40 : 0, started_at: new Date().toISOString(),
  }));
  const session = async (id: string) => (await sql(app, `select phase, error, finished_at, cancel_requested from discovery_sessions where id = ?`, [id]))[0]!;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'sessions');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    other = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    await registerDaemon(other, t.defaultNetworkId);
    // A subnet approved for d: its Network session is queued after its SelfReport.
    const lan = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.1.0/24', name: 'lab', network_id: t.defaultNetworkId } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
  });
  afterEach(() => app.close());

  it('a session Scanning when the daemon starts up ends Failed (stalled, finished now); the next request-work hands out the next session', async () => {
    const [work] = expectOk(await requestWork());
    await update(work, 'Started');
    await update(work, 'Scanning');
    const [othersWork] = expectOk(await requestWork(other));
    await update(othersWork, 'Scanning', other);
    await sql(app, `update discovery_sessions set cancel_requested = true where id = ?`, [work.session_id]);
    expect(expectOk(await requestWork())).to.deep.equal([null, true]); // busy until the restart

    await startup(); // the agent was killed and started again
    const failed = await session(work.session_id);
    expect(failed).to.include({ phase: 'Failed', error: RESTARTED, cancel_requested: false });
    expect(failed.finished_at).to.not.equal(null);
    // Its other (Pending) session is untouched until handed out; another daemon's running one too.
    const [next, cancel] = expectOk(await requestWork());
    expect(cancel).to.equal(false);
    expect(next.session_id).to.not.equal(work.session_id);
    expect(next.discovery_type.type).to.equal('Network');
    expect((await session(othersWork.session_id)).phase).to.equal('Scanning');
    // A late report of the killed run changes nothing (a finished session stays finished).
    await update(work, 'Complete');
    expect(await session(work.session_id)).to.include({ phase: 'Failed', error: RESTARTED });
    // Users see it on the daemon: newest first, with why it ended.
    const listed = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner }));
    expect(listed.map((s: any) => [s.discovery_type.type, s.phase])).to.deep.equal([['Network', 'Starting'], ['SelfReport', 'Failed']]);
    expect(listed[1]).to.include({ id: work.session_id, error: RESTARTED });
    expect(listed[1].finished_at).to.be.a('string');
  });

  it('a run that ends Complete with an error (a warning: no host where there were hosts) keeps it, shown on the daemon; communities masked', async () => {
    await sql(app, `update discovery_sessions set discovery_type = jsonb_set(discovery_type, '{snmp_credentials}', ?::jsonb) where daemon_id = ? and discovery_type->>'type' = 'Network'`,
      [JSON.stringify({ default_credential: { version: 'V2c', community: 'secret-community' }, ip_overrides: [] }), d.id]);
    const [selfReport] = expectOk(await requestWork());
    await update(selfReport, 'Complete');
    const [network] = expectOk(await requestWork());
    expect(network.discovery_type.snmp_credentials.default_credential.community).to.equal('secret-community'); // the daemon needs it
    const warning = 'No host found in 198.18.1.0/24, where 3 hosts were found before';
    expectOk(await d.post(`/api/v1/discovery/${network.session_id}/update`, { ...network, phase: 'Complete', progress: 100, error: warning, finished_at: new Date().toISOString() }));
    expect(await session(network.session_id)).to.include({ phase: 'Complete', error: warning });
    const [shown] = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner }));
    expect(shown).to.include({ id: network.session_id, phase: 'Complete', progress: 100, error: warning });
    expect(shown.discovery_type.snmp_credentials.default_credential.community).to.equal('********');
    // Read like the daemon: not across organizations (the tenancy matrix checks the rest).
    const other = await registerTenant(app.url, 'sessions-other');
    expectError(await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: other.owner }), 404, 'entity_not_found');
  });

  it('the NetInventory agent is named as such when its run ends on a restart or in the stalled sweep; a Scanopy daemon is "the daemon"', async () => {
    const agent = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(agent, t.defaultNetworkId, { version: AGENT_VERSION });
    const [work] = expectOk(await requestWork(agent, AGENT_VERSION));
    await update(work, 'Scanning', agent);
    expectOk(await agent.post(`/api/daemons/${agent.id}/startup`, { daemon_version: AGENT_VERSION }));
    expect((await session(work.session_id)).error).to.equal('Stalled: the NetInventory agent restarted during the session (it was stopped or killed before the run ended)');

    // The sweep: a cancellation never answered, by our agent (a run it started itself, as --once does) and by a Scanopy daemon.
    await update({ ...work, session_id: randomUUID(), finished_at: null }, 'Scanning', agent);
    const [othersWork] = expectOk(await requestWork(other));
    await update(othersWork, 'Scanning', other);
    await sql(app, `update discovery_sessions set cancel_requested = true, updated_at = now() - interval '11 minutes' where phase = 'Scanning'`);
    await sweepStalledSessions(new Db(app.services.orm.em.fork()));
    const swept = await sql(app, `select daemon_id, error from discovery_sessions where error like 'No progress%' order by daemon_id = ? desc`, [agent.id]);
    expect(swept.map((x) => x.error)).to.deep.equal(['No progress from the NetInventory agent after a cancellation request', 'No progress from the daemon after a cancellation request']);
  });

  it('a session handed out but not yet Started (Starting) ends the same way; a startup with nothing running changes nothing', async () => {
    await startup();
    expect((await sql(app, `select phase from discovery_sessions where daemon_id = ? order by created_at`, [d.id])).map((s) => s.phase)).to.deep.equal(['Pending', 'Pending']);
    const [work] = expectOk(await requestWork());
    expect((await session(work.session_id)).phase).to.equal('Starting');
    await startup();
    expect(await session(work.session_id)).to.include({ phase: 'Failed', error: RESTARTED });
    const [next] = expectOk(await requestWork());
    expect(next.discovery_type.type).to.equal('Network');
  });
});
