// The daemon lifecycle of the Scanopy protocol (daemon-protocol.md §1.1): startup → register
// fallback, register, request-work (work, cancel, standby), update-capabilities, legacy heartbeat,
// session updates, and what a daemon key may and may not do.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { sweepStalledSessions } from '../../src/modules/discovery/sessions.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { callFrom, createNetwork, createUser, freshLoopbackIp, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerBody, registerDaemon, sql, type DaemonClient } from './world.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const unknownKey = () => `scp_d_${[...randomBytes(32)].map((b) => BASE62[b % 62]).join('')}`;
const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };

describe('daemons: the daemon protocol', () => {
  let app: TestApp;
  let t: Tenant;
  let key: string;
  let d: DaemonClient;

  const getDaemon = async (id: string) => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${id}`, { auth: t.owner }));
  /** A subnet approved for the daemon: its first, so a Network session is queued. Answers the subnet. */
  const approveASubnet = async () => {
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.1.0/24', name: 'lab', network_id: t.defaultNetworkId } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: subnet.id } }));
    return subnet;
  };
  const requestWork = (body: unknown = STATUS) => d.post(`/api/daemons/${d.id}/request-work`, body);
  const update = (session: any, phase: string, extra: Record<string, unknown> = {}) => d.post(`/api/v1/discovery/${randomUUID()}/update`, {
    session_id: session.session_id, daemon_id: d.id, network_id: t.defaultNetworkId, phase, discovery_type: session.discovery_type,
    progress: phase === 'Complete' ? 100 : 0, error: null, started_at: '2026-11-22T10:00:00.123456789Z', finished_at: null, ...extra,
  });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'protocol');
    key = (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key;
    d = daemonClient(app.url, key);
  });
  afterEach(() => app.close());

  describe('startup → register fallback', () => {
    it('an unknown daemon’s startup is 404 entity_not_found {entity: Daemon}; after register, startup answers the server capabilities', async () => {
      const res = await d.post(`/api/daemons/${d.id}/startup`, { daemon_version: '0.14.13' });
      expectError(res, 404, 'entity_not_found');
      expect(res.body.params).to.deep.equal({ entity: 'Daemon', id: d.id });
      await registerDaemon(d, t.defaultNetworkId);
      const caps = expectOk(await d.post(`/api/daemons/${d.id}/startup`, { daemon_version: '0.14.13' }));
      expect(caps).to.deep.equal({ server_version: '0.14.13', minimum_daemon_version: '0.12.0' });
      // An older daemon hears why it should update.
      const old = expectOk(await d.post(`/api/daemons/${d.id}/startup`, { daemon_version: '0.13.1' }));
      expect(old.deprecation_warnings).to.deep.equal([{ message: 'Daemon 0.13.1 is outdated. Update to 0.14.13 for the latest features.', severity: 'Warning' }]);
      expect((await getDaemon(d.id)).version).to.equal('0.13.1');
    });

    it('an unknown key is 401 auth_daemon_key_not_created while no daemon has that id (retry registering), else auth_not_authenticated', async () => {
      const stranger = randomUUID();
      const res = await callFrom(freshLoopbackIp(), app.url, 'POST', '/api/daemons/register', {
        auth: { bearer: unknownKey() }, headers: { 'X-Daemon-ID': stranger }, body: registerBody(daemonClient(app.url, 'x', stranger), t.defaultNetworkId),
      });
      expectError(res, 401, 'auth_daemon_key_not_created');
      await registerDaemon(d, t.defaultNetworkId);
      const known = await callFrom(freshLoopbackIp(), app.url, 'POST', `/api/daemons/${d.id}/startup`, {
        auth: { bearer: unknownKey() }, headers: { 'X-Daemon-ID': d.id }, body: { daemon_version: '0.14.13' },
      });
      expectError(known, 401, 'auth_not_authenticated');
      // A daemon key without X-Daemon-ID is no daemon.
      expectError(await callFrom(freshLoopbackIp(), app.url, 'POST', `/api/daemons/${d.id}/startup`, { auth: { bearer: key }, body: {} }), 401, 'auth_daemon_id_required');
    });
  });

  describe('register', () => {
    it('creates the daemon with its id, a placeholder host and its default session (SelfReport: no Network one before a subnet is approved)', async () => {
      const data = await registerDaemon(d, t.defaultNetworkId, { name: 'edge-1', version: '0.14.10' });
      expect(data.daemon).to.include({ id: d.id, name: 'edge-1', mode: 'daemon_poll', url: '', network_id: t.defaultNetworkId, user_id: t.ownerId, is_unreachable: false, standby: false, version: '0.14.10' });
      expect(data.daemon.capabilities).to.deep.equal({ has_docker_socket: false, interfaced_subnet_ids: [] });
      expect(data.server_capabilities).to.include({ minimum_daemon_version: '0.12.0' });
      const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${data.host_id}`, { auth: t.owner }));
      expect(host).to.include({ name: 'edge-1', network_id: t.defaultNetworkId });
      expect(host.source).to.deep.equal({ type: 'Discovery', metadata: [] });
      expect([...host.ip_addresses, ...host.ports, ...host.services]).to.deep.equal([]);
      const sessions = await sql(app, `select discovery_type, phase from discovery_sessions where daemon_id = ? order by created_at, id`, [d.id]);
      expect(sessions.map((s) => s.discovery_type.type)).to.deep.equal(['SelfReport']);
      expect(sessions[0]!.discovery_type.host_id).to.equal(data.host_id);
      expect(sessions.map((s) => s.phase)).to.deep.equal(['Pending']);
    });

    it('with a Docker socket, a Docker session comes between; Push is server_poll (pre-0.14 spelling); no version, no server_capabilities', async () => {
      const data = await registerDaemon(d, t.defaultNetworkId, { mode: 'Push', version: null, capabilities: { has_docker_socket: true, interfaced_subnet_ids: [] } });
      expect(data).to.not.have.property('server_capabilities'); // only for a version that parses
      expect(data.daemon).to.not.have.property('version');
      expect((await getDaemon(d.id)).mode).to.equal('server_poll');
      const sessions = await sql(app, `select discovery_type->>'type' as type from discovery_sessions where daemon_id = ? order by created_at, id`, [d.id]);
      expect(sessions.map((s) => s.type)).to.deep.equal(['SelfReport', 'Docker']);
    });

    it('a known daemon is updated (name, mode, version, capabilities), with no new host and no new sessions', async () => {
      const first = await registerDaemon(d, t.defaultNetworkId);
      const again = await registerDaemon(d, t.defaultNetworkId, { name: 'renamed', version: '0.14.12', capabilities: { has_docker_socket: true, interfaced_subnet_ids: [] } });
      expect(again.host_id).to.equal(first.host_id);
      expect(again.daemon).to.include({ id: d.id, name: 'renamed', version: '0.14.12' });
      expect(again.daemon.capabilities.has_docker_socket).to.equal(true);
      expect((await sql(app, `select count(*)::int as n from discovery_sessions where daemon_id = ?`, [d.id]))[0]!.n).to.equal(1);
      expect((await sql(app, `select count(*)::int as n from hosts`))[0]!.n).to.equal(1);
    });

    it('must name the caller itself and its key’s network (403 daemon_identity_mismatch / daemon_network_mismatch)', async () => {
      expectError(await d.post('/api/daemons/register', { ...registerBody(d, t.defaultNetworkId), daemon_id: randomUUID() }), 403, 'daemon_identity_mismatch');
      const other = await createNetwork(app.url, t.owner, 'Other');
      expectError(await d.post('/api/daemons/register', registerBody(d, other)), 403, 'daemon_network_mismatch');
      expect(await sql(app, `select id from daemons`)).to.deep.equal([]);
    });

    it('a key without a user (its creator removed) registers for the organization’s first Owner', async () => {
      const admin = await createUser(app.url, t.owner, 'Admin');
      const adminKey = (await createDaemonKey(app.url, admin.auth, t.defaultNetworkId)).key;
      expectOk(await call(app.url, 'DELETE', `/api/v1/users/${admin.id}`, { auth: t.owner }));
      const data = await registerDaemon(daemonClient(app.url, adminKey), t.defaultNetworkId);
      expect(data.daemon.user_id).to.equal(t.ownerId);
    });

    it('an id used by a daemon of another network is refused (403), never taken over', async () => {
      await registerDaemon(d, t.defaultNetworkId);
      const other = await createNetwork(app.url, t.owner, 'Other');
      const otherKey = (await createDaemonKey(app.url, t.owner, other)).key;
      const impostor = daemonClient(app.url, otherKey, d.id);
      expectError(await impostor.post('/api/daemons/register', registerBody(impostor, other)), 403, 'entity_access_denied');
      expectError(await impostor.post(`/api/daemons/${d.id}/startup`, { daemon_version: '0.14.13' }), 403, 'entity_access_denied');
      expectError(await impostor.post(`/api/daemons/${d.id}/request-work`, STATUS), 403, 'entity_access_denied');
      expect((await getDaemon(d.id)).network_id).to.equal(t.defaultNetworkId);
    });
  });

  describe('an id another organization’s daemon has (issue 10.6)', () => {
    it('answers exactly as an unused id: the daemon registers, starts up and polls with it; the other daemon is untouched', async () => {
      const b = await registerTenant(app.url, 'other-org');
      const theirs = daemonClient(app.url, (await createDaemonKey(app.url, b.owner, b.defaultNetworkId)).key);
      await registerDaemon(theirs, b.defaultNetworkId);
      const theirsBefore = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${theirs.id}`, { auth: b.owner }));

      // The same steps with a fresh id and with the other organization's id: the same answers.
      const answers = [];
      for (const id of [randomUUID(), theirs.id]) {
        const mine = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key, id);
        const startup = await mine.post(`/api/daemons/${id}/startup`, { daemon_version: '0.14.13' });
        expectError(startup, 404, 'entity_not_found');
        const registered = await mine.post('/api/daemons/register', registerBody(mine, t.defaultNetworkId));
        const data = expectOk(registered);
        expect(data.daemon.id).to.equal(id);
        expectOk(await mine.post(`/api/daemons/${id}/startup`, { daemon_version: '0.14.13' }));
        const [work] = expectOk(await mine.post(`/api/daemons/${id}/request-work`, STATUS));
        expect(work.daemon_id).to.equal(id);
        expectOk(await mine.post('/api/daemons/register', registerBody(mine, t.defaultNetworkId)));
        answers.push({ status: registered.status, keys: Object.keys(data).sort(), daemon: Object.keys(data.daemon).sort(), phase: work.phase, type: work.discovery_type.type });
      }
      expect(answers[1]).to.deep.equal(answers[0]);
      // The other organization's daemon is as it was, and this organization sees two daemons of its own.
      const theirsAfter = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${theirs.id}`, { auth: b.owner }));
      expect(theirsAfter).to.include({ id: theirs.id, network_id: b.defaultNetworkId, name: theirsBefore.name });
      const mineListed = expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: t.owner }));
      expect(mineListed).to.have.length(2);
      expect(mineListed.every((x: any) => x.network_id === t.defaultNetworkId)).to.equal(true);
    });
  });

  describe('request-work (the heartbeat)', () => {
    beforeEach(async () => {
      await registerDaemon(d, t.defaultNetworkId);
    });

    it('hands out the oldest Pending session while none runs, moving it to Starting; [null, false] while one runs', async () => {
      const [work, cancel] = expectOk(await requestWork());
      expect(cancel).to.equal(false);
      expect(work).to.include({ daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Pending', progress: 0, error: null, started_at: null, finished_at: null });
      expect(work.discovery_type.type).to.equal('SelfReport');
      expect((await sql(app, `select phase from discovery_sessions where id = ?`, [work.session_id]))[0]!.phase).to.equal('Starting');
      expect(expectOk(await requestWork())).to.deep.equal([null, false]);

      expectOk(await update(work, 'Started'));
      expectOk(await update(work, 'Scanning', { progress: 40 }));
      expect(expectOk(await requestWork())).to.deep.equal([null, false]);
      expectOk(await update(work, 'Complete', { finished_at: '2026-11-22T10:05:00Z' }));
      expect(expectOk(await requestWork())).to.deep.equal([null, false]); // no subnet approved: no Network session
      const subnet = await approveASubnet();
      const [next] = expectOk(await requestWork());
      expect(next.discovery_type).to.deep.include({ type: 'Network', subnet_ids: [subnet.id] });
      expectOk(await update(next, 'Failed', { error: 'no route' }));
      expect(expectOk(await requestWork())).to.deep.equal([null, false]);
    });

    it('answers true while the running session has a cancellation requested', async () => {
      const [work] = expectOk(await requestWork());
      await sql(app, `update discovery_sessions set cancel_requested = true where id = ?`, [work.session_id]);
      expect(expectOk(await requestWork())).to.deep.equal([null, true]);
      expectOk(await update(work, 'Cancelled'));
      expect(expectOk(await requestWork())[1]).to.equal(false);
    });

    it('a session the daemon stops reporting on: cancellation requested after 5 min, Failed 5 min later, and the daemon gets the next work', async () => {
      const [work] = expectOk(await requestWork());
      await approveASubnet(); // queues the next work
      const db = new Db(app.services.orm.em.fork());
      const age = (minutes: number) => sql(app, `update discovery_sessions set updated_at = now() - make_interval(mins => ?) where id = ?`, [minutes, work.session_id]);
      await age(4);
      expect(await sweepStalledSessions(db)).to.deep.equal({ cancelRequested: 0, failed: 0 });
      await age(6);
      expect(await sweepStalledSessions(db)).to.deep.equal({ cancelRequested: 1, failed: 0 });
      expect(expectOk(await requestWork())).to.deep.equal([null, true]);
      await age(6); // the daemon never answered the cancellation (it restarted, say)
      expect(await sweepStalledSessions(db)).to.deep.equal({ cancelRequested: 0, failed: 1 });
      expect((await sql(app, `select phase from discovery_sessions where id = ?`, [work.session_id]))[0]!.phase).to.equal('Failed');
      const [next] = expectOk(await requestWork());
      expect(next.session_id).to.not.equal(work.session_id);
    });

    it('records last_seen, name, mode and version; a daemon in standby gets 403 daemon_standby', async () => {
      await sql(app, `update daemons set last_seen = null where id = ?`, [d.id]);
      expectOk(await requestWork({ name: 'edge-2', mode: 'daemon_poll', version: '0.14.12' }));
      const daemon = await getDaemon(d.id);
      expect(daemon).to.include({ name: 'edge-2', version: '0.14.12' });
      expect(daemon.last_seen).to.be.a('string');
      expect(daemon.version_status.status).to.equal('Outdated');

      await sql(app, `update daemons set standby = true where id = ?`, [d.id]);
      expectError(await requestWork(), 403, 'daemon_standby');
      expectError(await d.post(`/api/daemons/${d.id}/heartbeat`, { name: 'x', mode: 'daemon_poll', url: '' }), 403, 'daemon_standby');
    });

    it('only for itself: another daemon’s id in the path is 403 daemon_identity_mismatch; a deleted daemon 404', async () => {
      expectError(await d.post(`/api/daemons/${randomUUID()}/request-work`, STATUS), 403, 'daemon_identity_mismatch');
      expectOk(await call(app.url, 'DELETE', `/api/v1/daemons/${d.id}`, { auth: t.owner }));
      expectError(await requestWork(), 404, 'entity_not_found');
    });
  });

  describe('update-capabilities, legacy heartbeat', () => {
    beforeEach(async () => {
      await registerDaemon(d, t.defaultNetworkId);
    });

    it('update-capabilities stores what the daemon sends (data null); users see interfaced_subnet_ids', async () => {
      const subnet = randomUUID();
      expect(expectOk(await d.post(`/api/daemons/${d.id}/update-capabilities`, { has_docker_socket: true, interfaced_subnet_ids: [subnet] }))).to.equal(null);
      const daemon = await getDaemon(d.id);
      expect(daemon.capabilities).to.deep.equal({ has_docker_socket: true, interfaced_subnet_ids: [subnet] });
      expect(daemon.interfaced_subnet_ids).to.deep.equal([subnet]);
    });

    it('the legacy heartbeat records the contact and answers null', async () => {
      await sql(app, `update daemons set last_seen = null where id = ?`, [d.id]);
      expect(expectOk(await d.post(`/api/daemons/${d.id}/heartbeat`, { name: 'old-daemon', mode: 'Pull', url: 'http://10.0.0.2:60073' }))).to.equal(null);
      expect(await getDaemon(d.id)).to.include({ name: 'old-daemon', mode: 'daemon_poll' });
      expect((await getDaemon(d.id)).last_seen).to.be.a('string');
    });
  });

  describe('discovery session updates', () => {
    beforeEach(async () => {
      await registerDaemon(d, t.defaultNetworkId);
    });
    const payload = (extra: Record<string, unknown> = {}) => ({
      session_id: randomUUID(), daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Started',
      discovery_type: { type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' }, progress: 0, error: null,
      started_at: '2026-11-22T10:00:00Z', finished_at: null, ...extra,
    });
    const session = async (id: string) => (await sql(app, `select phase, progress, daemon_id, finished_at from discovery_sessions where id = ?`, [id]))[0];

    it('an unknown session is created from the report (the path id is ignored); a finished one stays finished', async () => {
      const p = payload();
      expect(expectOk(await d.post(`/api/v1/discovery/${d.id}/update`, p))).to.equal(null);
      expect(await session(p.session_id)).to.include({ phase: 'Started', daemon_id: d.id });
      expectOk(await d.post(`/api/v1/discovery/${randomUUID()}/update`, { ...p, phase: 'Scanning', progress: 50 }));
      expect(await session(p.session_id)).to.include({ phase: 'Scanning', progress: 50 });
      expectOk(await d.post(`/api/v1/discovery/${p.session_id}/update`, { ...p, phase: 'Complete', progress: 100, finished_at: '2026-11-22T10:10:00.5Z' }));
      expectOk(await d.post(`/api/v1/discovery/${p.session_id}/update`, { ...p, phase: 'Started' }));
      expect(await session(p.session_id)).to.include({ phase: 'Complete', progress: 100 });
    });

    it('403 daemon_network_mismatch for another network, 403 daemon_identity_mismatch for another daemon id', async () => {
      const other = await createNetwork(app.url, t.owner, 'Other');
      expectError(await d.post(`/api/v1/discovery/${d.id}/update`, payload({ network_id: other })), 403, 'daemon_network_mismatch');
      expectError(await d.post(`/api/v1/discovery/${d.id}/update`, payload({ daemon_id: randomUUID() })), 403, 'daemon_identity_mismatch');
    });

    it('another daemon’s session is left alone (the report is dropped)', async () => {
      const p = payload();
      expectOk(await d.post(`/api/v1/discovery/${d.id}/update`, p));
      const other = daemonClient(app.url, key);
      await registerDaemon(other, t.defaultNetworkId);
      expectOk(await other.post(`/api/v1/discovery/${other.id}/update`, { ...p, daemon_id: other.id, phase: 'Failed', error: 'hijack' }));
      expect(await session(p.session_id)).to.include({ phase: 'Started', daemon_id: d.id });
    });
  });

  describe('what a daemon key may do', () => {
    beforeEach(async () => {
      await registerDaemon(d, t.defaultNetworkId);
    });

    it('user routes without a daemon variant are 403 for a daemon; daemon routes are 403 for users', async () => {
      expectError(await d.get('/api/v1/hosts'), 403, 'auth_user_context_required');
      expectError(await d.post('/api/v1/tags', { name: 'x', color: 'Blue' }), 403, 'auth_user_context_required');
      expectError(await d.get(`/api/v1/daemons/${d.id}`), 403, 'auth_user_context_required');
      expectError(await call(app.url, 'POST', `/api/daemons/${d.id}/request-work`, { auth: t.owner, body: STATUS }), 403, 'auth_daemon_required');
      expectError(await call(app.url, 'POST', '/api/v1/hosts/discovery', { auth: t.owner, body: {} }), 403, 'auth_daemon_required');
    });

    it('a disabled, expired or deleted key is 401 for its daemon; re-enabled it works again', async () => {
      const keys = expectOk(await call(app.url, 'GET', '/api/v1/auth/daemon', { auth: t.owner }));
      const id = keys[0].id;
      expectOk(await call(app.url, 'PUT', `/api/v1/auth/daemon/${id}`, { auth: t.owner, body: { is_enabled: false } }));
      expectError(await callFrom(freshLoopbackIp(), app.url, 'POST', `/api/daemons/${d.id}/request-work`, { auth: { bearer: key }, headers: { 'X-Daemon-ID': d.id }, body: STATUS }), 401, 'auth_key_revoked');
      expectOk(await call(app.url, 'PUT', `/api/v1/auth/daemon/${id}`, { auth: t.owner, body: { is_enabled: true } }));
      expectOk(await requestWork());
      await sql(app, `update daemon_api_keys set expires_at = now() - interval '1 minute' where id = ?`, [id]);
      expectError(await callFrom(freshLoopbackIp(), app.url, 'POST', `/api/daemons/${d.id}/request-work`, { auth: { bearer: key }, headers: { 'X-Daemon-ID': d.id }, body: STATUS }), 401, 'auth_key_expired');
      expectOk(await call(app.url, 'DELETE', `/api/v1/auth/daemon/${id}`, { auth: t.owner }));
      expectError(await callFrom(freshLoopbackIp(), app.url, 'POST', `/api/daemons/${d.id}/request-work`, { auth: { bearer: key }, headers: { 'X-Daemon-ID': d.id }, body: STATUS }), 401, 'auth_not_authenticated');
      expect((await getDaemon(d.id)).api_key_id).to.equal(null);
    });

    it('records the key’s last use (batched: once the usage recorder is flushed)', async () => {
      await app.services.keyUsage.flush();
      await sql(app, `update daemon_api_keys set last_used_at = null`);
      expectOk(await requestWork());
      await app.services.keyUsage.flush();
      const [k] = expectOk(await call(app.url, 'GET', '/api/v1/auth/daemon', { auth: t.owner }));
      expect(k.last_used_at).to.be.a('string');
    });
  });
});
