// Daemons for users (spec §2.9, §4.5; decisions §7): provision, read with version_status, list,
// update, retry-connection, delete, history and `at`, and tenancy.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { DAEMON_SERVER_KEY, open } from '../../src/core/secretBox.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createKey, createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from './world.js';

const DAEMON_FIELDS = [
  'id', 'name', 'host_id', 'suggested_host_id', 'network_id', 'user_id', 'api_key_id', 'mode', 'url', 'tags', 'is_unreachable', 'consecutive_failures', 'last_error', 'last_error_at', 'standby', 'standby_cleared_at',
  'last_seen', 'is_stale', 'version', 'capabilities', 'interfaced_subnet_ids', 'created_at', 'updated_at', 'lineage_id', 'valid_from', 'valid_to', 'version_status',
];
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('daemons: the user API', () => {
  let app: TestApp;
  let t: Tenant;
  const provision = (body: Record<string, unknown> = {}, auth = t.owner) =>
    call(app.url, 'POST', '/api/v1/daemons/provision', { auth, body: { name: 'poller', network_id: t.defaultNetworkId, url: 'http://10.0.0.9:60073', ...body } });
  const get = (id: string, query = '') => call(app.url, 'GET', `/api/v1/daemons/${id}${query}`, { auth: t.owner });
  /** A daemon_poll daemon that registered itself, at `version`. */
  const polling = async (version = '0.14.13', networkId = t.defaultNetworkId) => {
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, networkId)).key);
    await registerDaemon(d, networkId, { version });
    return d.id;
  };

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'daemons');
  });
  afterEach(() => app.close());

  it('provision answers the daemon and its key once; the key, its host (source System) and the daemon exist', async () => {
    const res = await provision();
    const data = expectOk(res, 201);
    expect(data.daemon_api_key).to.match(/^scp_d_[0-9A-Za-z]{32}$/);
    expect(Object.keys(data.daemon).sort()).to.deep.equal([...DAEMON_FIELDS].sort());
    expect(data.daemon).to.include({ name: 'poller', mode: 'server_poll', url: 'http://10.0.0.9:60073', network_id: t.defaultNetworkId, user_id: t.ownerId, last_seen: null, version: null, is_unreachable: false, standby: false });
    expect(data.daemon.version_status).to.include({ status: 'Unknown', version: null });

    const [keyRow] = await sql(app, `select name, key_hash, server_key from daemon_api_keys where id = ?`, [data.daemon.api_key_id]);
    expect(keyRow).to.include({ name: 'poller API Key', key_hash: sha256(data.daemon_api_key) });
    // The server's copy, to call the daemon with, is stored sealed (src/core/secretBox.ts).
    expect(keyRow!.server_key).to.match(/^enc:v1:/).and.not.include(data.daemon_api_key.slice(6));
    expect(open(keyRow!.server_key, DAEMON_SERVER_KEY)).to.equal(data.daemon_api_key);
    const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${data.daemon.host_id}`, { auth: t.owner }));
    expect(host).to.include({ name: 'poller' });
    expect(host.source).to.deep.equal({ type: 'System' });

    // Never again: not in GET, list, the key's own view, nor the daemon's history.
    const reads = [
      await get(data.daemon.id), await call(app.url, 'GET', '/api/v1/daemons', { auth: t.owner }),
      await call(app.url, 'GET', `/api/v1/auth/daemon/${data.daemon.api_key_id}`, { auth: t.owner }), await get(data.daemon.id, '/history'),
    ];
    for (const r of reads) expect(JSON.stringify(expectOk(r))).to.not.include(data.daemon_api_key.slice(6));
    // and it works for the daemon
    const d = daemonClient(app.url, data.daemon_api_key, data.daemon.id);
    expectOk(await d.post(`/api/daemons/${d.id}/startup`, { daemon_version: '0.14.13' }));
  });

  it('GET shows the spec’s fields with version_status computed from the version', async () => {
    const cases: Array<[string, string, string[]]> = [
      ['0.14.13', 'Current', []],
      ['0.13.2', 'Outdated', ['Warning']],
      ['0.11.4', 'Unsupported', ['Critical']],
    ];
    for (const [version, status, severities] of cases) {
      const daemon = expectOk(await get(await polling(version)));
      expect(Object.keys(daemon).sort()).to.deep.equal([...DAEMON_FIELDS].sort());
      expect(daemon.version).to.equal(version);
      expect(daemon.version_status).to.include({ status, version, supports_unified_discovery: false, has_correct_docker_volume_mount: false });
      expect(daemon.version_status.warnings.map((w: any) => w.severity)).to.deep.equal(severities);
      expect(daemon.last_seen).to.match(/^\d{4}-\d\d-\d\dT/);
    }
  });

  it('lists with pagination, the network_id filter and `at`', async () => {
    const other = await createNetwork(app.url, t.owner, 'Other');
    const a = await polling('0.14.13');
    const b = expectOk(await provision(), 201).daemon.id;
    const c = await polling('0.14.13', other);
    const page = await call(app.url, 'GET', '/api/v1/daemons?limit=2', { auth: t.owner });
    expect(expectOk(page).map((x: any) => x.id)).to.deep.equal([a, b]);
    expect(page.body.meta.pagination).to.deep.equal({ total_count: 3, limit: 2, offset: 0, has_more: true });
    const filtered = expectOk(await call(app.url, 'GET', `/api/v1/daemons?network_id=${other}`, { auth: t.owner }));
    expect(filtered.map((x: any) => x.id)).to.deep.equal([c]);
    expect(filtered[0].version_status.status).to.equal('Current');

    const before = new Date().toISOString();
    expectOk(await call(app.url, 'DELETE', `/api/v1/daemons/${b}`, { auth: t.owner }));
    const then = expectOk(await call(app.url, 'GET', `/api/v1/daemons?at=${encodeURIComponent(before)}`, { auth: t.owner }));
    expect(then.map((x: any) => x.id)).to.have.members([a, b, c]);
    expect(expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: t.owner })).map((x: any) => x.id)).to.have.members([a, c]);
  });

  it('PUT changes name, url and tags (a new state); the history lists both, newest first; `at` reads the old one', async () => {
    const daemon = expectOk(await provision(), 201).daemon;
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'edge', color: 'Blue' } }), 201);
    const before = new Date().toISOString();
    // What a client read, sent back with changes: response-only fields are accepted and ignored.
    const put = expectOk(await call(app.url, 'PUT', `/api/v1/daemons/${daemon.id}`, {
      auth: t.owner, body: { ...daemon, name: 'poller-2', url: 'https://10.0.0.10:60073', tags: [tag.id], mode: 'daemon_poll', expected_updated_at: daemon.updated_at },
    }));
    expect(put).to.include({ name: 'poller-2', url: 'https://10.0.0.10:60073', mode: 'server_poll' });
    expect(put.tags).to.deep.equal([tag.id]);
    const history = expectOk(await get(daemon.id, '/history'));
    expect(history.map((h: any) => h.name)).to.deep.equal(['poller-2', 'poller']);
    expect(history[1].valid_to).to.equal(history[0].valid_from);
    expect(expectOk(await get(daemon.id, `?at=${encodeURIComponent(before)}`)).name).to.equal('poller');

    const stale = await call(app.url, 'PUT', `/api/v1/daemons/${daemon.id}`, { auth: t.owner, body: { name: 'x', expected_updated_at: daemon.updated_at } });
    expectError(stale, 409, 'entity_modified');
    expectError(await call(app.url, 'PUT', `/api/v1/daemons/${daemon.id}`, { auth: t.owner, body: { name: 'x', tags: ['00000000-0000-4000-8000-000000000000'] } }), 400, 'entity_reference_invalid');
    expectError(await call(app.url, 'PUT', `/api/v1/daemons/${daemon.id}`, { auth: t.owner, body: { name: 'x', colour: 'red' } }), 400, 'validation_unknown_field');
  });

  it('retry-connection clears is_unreachable and the failure count; a daemon_poll daemon is 400 daemon_mode_mismatch', async () => {
    const daemon = expectOk(await provision(), 201).daemon;
    await sql(app, `update daemons set is_unreachable = true, consecutive_failures = 5 where id = ?`, [daemon.id]);
    expect(expectOk(await get(daemon.id)).is_unreachable).to.equal(true);
    const retried = expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemon.id}/retry-connection`, { auth: t.owner }));
    expect(retried.is_unreachable).to.equal(false);
    expect((await sql(app, `select consecutive_failures from daemons where id = ?`, [daemon.id]))[0]).to.deep.equal({ consecutive_failures: 0 });

    const poller = await polling();
    const res = await call(app.url, 'POST', `/api/v1/daemons/${poller}/retry-connection`, { auth: t.owner });
    expectError(res, 400, 'daemon_mode_mismatch');
    expect(res.body.params).to.deep.equal({ id: poller, mode: 'daemon_poll', required: 'server_poll' });
  });

  it('DELETE removes the daemon and its sessions; its host stays (and can then be deleted), the history stays readable', async () => {
    const id = await polling();
    const daemon = expectOk(await get(id));
    expectError(await call(app.url, 'DELETE', `/api/v1/hosts/${daemon.host_id}`, { auth: t.owner }), 409, 'entity_in_use');
    expectOk(await call(app.url, 'DELETE', `/api/v1/daemons/${id}`, { auth: t.owner }));
    expectError(await get(id), 404, 'entity_not_found');
    expect(await sql(app, `select id from discovery_sessions where daemon_id = ?`, [id])).to.deep.equal([]);
    expect(expectOk(await get(id, '/history'))[0].valid_to).to.be.a('string');
    expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${daemon.host_id}`, { auth: t.owner }));
  });

  it('tenancy: another organization’s daemon is 404; a network outside the caller’s is 403; roles: Viewer reads, Admin manages', async () => {
    const id = expectOk(await provision(), 201).daemon.id;
    const b = await registerTenant(app.url, 'other');
    for (const [method, path, body] of [
      ['GET', `/api/v1/daemons/${id}`], ['GET', `/api/v1/daemons/${id}/history`], ['PUT', `/api/v1/daemons/${id}`, { name: 'x' }],
      ['DELETE', `/api/v1/daemons/${id}`], ['POST', `/api/v1/daemons/${id}/retry-connection`],
    ] as Array<[string, string, unknown?]>) {
      const res = await call(app.url, method, path, { auth: b.owner, body });
      expectError(res, 404, 'entity_not_found');
      expect(res.body.params).to.deep.equal({ entity: 'Daemon', id });
    }
    expect(expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: b.owner }))).to.deep.equal([]);
    expectError(await call(app.url, 'GET', `/api/v1/daemons?network_id=${t.defaultNetworkId}`, { auth: b.owner }), 404, 'entity_not_found');
    expectError(await provision({}, b.owner), 400, 'entity_reference_invalid');

    const privateNet = await createNetwork(app.url, t.owner, 'Private');
    const hidden = expectOk(await provision({ network_id: privateNet }), 201).daemon.id;
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    const res = await call(app.url, 'GET', `/api/v1/daemons/${hidden}`, { auth: viewer.auth });
    expectError(res, 403, 'entity_access_denied');
    expect(res.body.params).to.deep.equal({ entity: 'Daemon', id: hidden });
    expect(expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: viewer.auth })).map((x: any) => x.id)).to.deep.equal([id]);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/daemons/${id}`, { auth: viewer.auth })).id).to.equal(id);
    const scoped = await createKey(app.url, t.owner, { name: 'scoped', network_ids: [t.defaultNetworkId] });
    expectError(await call(app.url, 'GET', `/api/v1/daemons/${hidden}`, { auth: { bearer: scoped.key } }), 403, 'entity_access_denied');

    expectError(await call(app.url, 'PUT', `/api/v1/daemons/${id}`, { auth: member.auth, body: { name: 'x' } }), 403, 'auth_permission_denied');
    expectError(await call(app.url, 'POST', `/api/v1/daemons/${id}/retry-connection`, { auth: member.auth }), 403, 'auth_permission_denied');
    expectError(await provision({}, member.auth), 403, 'auth_permission_denied');
    // An Admin's API key may provision (not session-only), within its networks.
    const adminKey = await createKey(app.url, t.owner, { name: 'admin', permissions: 'Admin' });
    expectOk(await provision({ name: 'by-key' }, { bearer: adminKey.key } as any), 201);
  });
});
