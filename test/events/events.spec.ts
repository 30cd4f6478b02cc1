// The change feed (issue 13): every entity's changes appear after they commit, never for a change
// that rolled back, in commit order, filtered to what the caller may see.
import { expect } from 'chai';
import pg from 'pg';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { buildNetwork } from '../support/network.js';
import { createKey, createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { seedDaemon, workerServicesFor, db } from '../workers/support.js';
import { evaluateVersionStatuses } from '../../workers/versionStatus.js';
import { pruneEvents, recordEvent } from '../../src/modules/events/service.js';

describe('events: the change feed', () => {
  let app: TestApp;
  let t: Tenant;
  const feed = async (query = '', auth: Credential = t.owner) => {
    const all: any[] = [];
    let after = '0';
    for (;;) {
      const res = await call(app.url, 'GET', `/api/v1/events?after=${after}&limit=1000${query}`, { auth });
      const page = expectOk(res);
      all.push(...page);
      if (!res.body.meta.cursor.has_more) return all;
      after = res.body.meta.cursor.next;
    }
  };
  const typesOf = (events: any[]) => new Set(events.map((e) => e.type));

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('every entity type is created, updated and deleted in the feed, with the actor, the changes and the data', async () => {
    const net = await buildNetwork(app, t.owner, t.defaultNetworkId);
    const networkId = await createNetwork(app.url, t.owner, 'Second');
    const put = async (path: string, body: unknown) => expectOk(await call(app.url, 'PUT', path, { auth: t.owner, body }));
    const del = async (path: string) => expectOk(await call(app.url, 'DELETE', path, { auth: t.owner }));
    await put(`/api/v1/hosts/${net.bare.id}`, { id: net.bare.id, name: 'bare-renamed', hidden: false, tags: [] });
    await put(`/api/v1/subnets/${net.subnetB.id}`, { network_id: t.defaultNetworkId, cidr: '10.2.0.0/24', name: 'servers-2', tags: [] });
    await put(`/api/v1/dependencies/${net.deps.hub.id}`, { name: 'db users', network_id: t.defaultNetworkId, color: 'Green', dependency_type: 'HubAndSpoke', edge_style: 'Straight', members: net.deps.hub.members, tags: [] });
    await put(`/api/v1/tags/${net.app.id}`, { name: 'shop', color: 'Red', is_application: true });
    await put(`/api/v1/networks/${networkId}`, { name: 'Second network' });
    const daemon = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: 'http://127.0.0.1:9', version: '0.14.13' });
    await db(app).query('update daemons set is_unreachable = true where id = ?', [daemon.id]);
    await db(app).query('update daemons set is_unreachable = false where id = ?', [daemon.id]);
    const workers = workerServicesFor(app);
    await evaluateVersionStatuses(workers); // remembers the status
    await evaluateVersionStatuses({ ...workers, versionPolicy: { minimumSupported: '0.15.0', recommended: '0.15.0' } });
    await workers.close();
    await del(`/api/v1/hosts/${net.web.id}`); // its addresses, ports, services, bindings and interfaces go with it
    await del(`/api/v1/dependencies/${net.deps.path.id}`);
    await del(`/api/v1/tags/${net.app.id}`);
    await db(app).query('delete from daemons where id = ?', [daemon.id]);
    await del(`/api/v1/subnets/${net.subnetB.id}`);
    await del(`/api/v1/networks/${networkId}`);

    const events = await feed();
    const types = typesOf(events);
    for (const entity of ['host', 'ip_address', 'port', 'service', 'binding', 'interface', 'subnet', 'dependency', 'tag', 'network', 'daemon']) {
      for (const action of ['created', 'deleted']) expect(types, `${entity}.${action}`).to.include(`${entity}.${action}`);
    }
    for (const type of ['host.updated', 'service.updated', 'subnet.updated', 'dependency.updated', 'tag.updated', 'network.updated', 'daemon.updated',
      'daemon.unreachable', 'daemon.reachable', 'daemon.version_status_changed']) {
      expect(types, type).to.include(type);
    }
    // Ids strictly increase; the rename carries its change, the actor is the signed-in user.
    expect(events.map((e) => BigInt(e.id))).to.deep.equal(events.map((e) => BigInt(e.id)).sort((a, b) => (a < b ? -1 : 1)));
    const rename = events.find((e) => e.type === 'host.updated' && e.entity_id === net.bare.id);
    expect(rename.changes).to.deep.equal({ name: ['bare', 'bare-renamed'] });
    expect(rename).to.include({ organization_id: t.orgId, network_id: t.defaultNetworkId, entity_type: 'host' });
    expect(rename.actor).to.deep.equal({ type: 'user', id: t.ownerId });
    expect(rename.data).to.include({ id: net.bare.id, name: 'bare-renamed' });
    expect(rename.data.updated_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const recolour = events.find((e) => e.type === 'dependency.updated' && e.entity_id === net.deps.hub.id && e.changes.color);
    expect(recolour.changes.color).to.deep.equal(['Red', 'Green']);
    const unreachable = events.find((e) => e.type === 'daemon.unreachable');
    expect(unreachable.actor).to.deep.equal({ type: 'system', id: null });
    expect(events.find((e) => e.type === 'daemon.version_status_changed').changes.version_status).to.deep.equal(['Current', 'Unsupported']);
    // A host deleted with its children: one batch.
    const hostDeleted = events.find((e) => e.type === 'host.deleted' && e.entity_id === net.web.id);
    const sameBatch = events.filter((e) => e.batch_id === hostDeleted.batch_id);
    expect(typesOf(sameBatch)).to.include.members(['host.deleted', 'ip_address.deleted', 'port.deleted', 'service.deleted', 'binding.deleted', 'interface.deleted']);
  });

  it('one PUT with children is one batch; a failed PUT emits nothing; an API key is the actor of its writes', async () => {
    const net = await buildNetwork(app, t.owner, t.defaultNetworkId);
    const before = await feed();
    const last = before.at(-1).id;
    // A port referring to nothing: refused after the host row was already written, so rolled back.
    const bad = await call(app.url, 'PUT', `/api/v1/hosts/${net.db.id}`, {
      auth: t.owner,
      body: { id: net.db.id, name: 'db-renamed', hidden: false, tags: [], ip_addresses: [{ subnet_id: '00000000-0000-4000-8000-000000000001', ip_address: '10.9.0.1' }] },
    });
    expect(bad.status).to.equal(400);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/events?after=${last}`, { auth: t.owner }))).to.deep.equal([]);

    const key = await createKey(app.url, t.owner, { permissions: 'Admin' });
    const ok = expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${net.db.id}`, {
      auth: { bearer: key.key },
      body: { id: net.db.id, name: 'db-2', hidden: false, tags: [], ip_addresses: [{ subnet_id: net.subnetB.id, ip_address: '10.2.0.20' }], ports: [{ number: 22, protocol: 'Tcp' }], services: [] },
    }));
    expect(ok.name).to.equal('db-2');
    const events = expectOk(await call(app.url, 'GET', `/api/v1/events?after=${last}`, { auth: t.owner }));
    expect(typesOf(events)).to.include.members(['host.updated', 'ip_address.created', 'ip_address.deleted', 'port.created', 'service.deleted']);
    expect(new Set(events.map((e: any) => e.batch_id)).size).to.equal(1);
    for (const e of events) expect(e.actor).to.deep.equal({ type: 'api_key', id: key.id });
  });

  it('filters by type pattern, entity and network; another organization and a key of another network see nothing', async () => {
    const net = await buildNetwork(app, t.owner, t.defaultNetworkId);
    const other = await createNetwork(app.url, t.owner, 'Other');
    const hostsOnly = await feed('&types=host.*');
    expect(hostsOnly.length).to.be.greaterThan(0);
    expect(hostsOnly.every((e) => e.type.startsWith('host.'))).to.equal(true);
    const two = await feed('&types=tag.created,dependency.created');
    expect(typesOf(two)).to.deep.equal(new Set(['tag.created', 'dependency.created']));
    const ofWeb = await feed(`&entity_id=${net.web.id}`);
    expect(ofWeb.length).to.be.greaterThan(0);
    expect(ofWeb.every((e) => e.entity_id === net.web.id)).to.equal(true);
    expect(await feed(`&network_id=${other}`)).to.have.length(1); // network.created of itself
    expectError(await call(app.url, 'GET', '/api/v1/events?types=host.whatever.x', { auth: t.owner }), 400, 'validation_failed');

    const stranger = await registerTenant(app.url, 'stranger');
    const theirs = await feed('', stranger.owner);
    expect(theirs.every((e) => e.organization_id === stranger.orgId)).to.equal(true);
    expect(theirs.some((e) => e.entity_id === net.web.id)).to.equal(false);
    expectError(await call(app.url, 'GET', `/api/v1/events?network_id=${t.defaultNetworkId}`, { auth: stranger.owner }), 404, 'entity_not_found');

    const scoped = await createKey(app.url, t.owner, { permissions: 'Admin', network_ids: [other] });
    const seen = await feed('', { bearer: scoped.key });
    expect(seen.map((e) => e.network_id)).to.deep.equal([other]); // only its network's creation: no host, no tag
  });

  it('events of a resource are read by who may read it: a webhook\'s by an Admin (not a Viewer, not a network-limited key), its URL cut to its origin', async () => {
    const url = 'https://chat.example.com/services/T0001/B0002/s3cr3tpath';
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'chat', url } }), 201);
    // As the delivery worker records it when the endpoint answers 410 (src/modules/webhooks/delivery.ts).
    await recordEvent(db(app), {
      type: 'webhook.disabled', organizationId: t.orgId, networkId: null, entityType: 'webhook', entityId: hook.id,
      changes: { enabled: [true, false] }, data: { id: hook.id, name: 'chat', url, disabled_reason: 'gone', last_status_code: 410 },
    });
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'for-everyone', color: 'Blue' } }), 201);
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const admin = await createUser(app.url, t.owner, 'Admin');
    const limited = await createKey(app.url, t.owner, { name: 'default only', network_ids: [t.defaultNetworkId] });
    expectError(await call(app.url, 'GET', `/api/v1/webhooks/${hook.id}`, { auth: viewer.auth }), 403, 'auth_permission_denied');
    const viewerSees = await feed('', viewer.auth);
    expect(typesOf(viewerSees)).to.include('tag.created').and.not.include('webhook.disabled');
    expect(typesOf(await feed('&types=webhook.*', viewer.auth)).size).to.equal(0);
    expect(typesOf(await feed('', { bearer: limited.key }))).to.not.include('webhook.disabled');
    for (const who of [admin.auth, t.owner, { bearer: (await createKey(app.url, t.owner, { name: 'full' })).key }]) {
      const [disabled] = (await feed('&types=webhook.*', who)).filter((e) => e.type === 'webhook.disabled');
      expect(disabled.data).to.include({ id: hook.id, url: 'https://chat.example.com', disabled_reason: 'gone' });
      expect(JSON.stringify(disabled)).to.not.match(/s3cr3t/);
    }
    const stored = await db(app).query<{ data: unknown }>(`select data from events where type = 'webhook.disabled'`);
    expect(JSON.stringify(stored)).to.not.match(/s3cr3t/);
  });

  it('ids follow commit order: a transaction that started first but commits last comes after', async () => {
    const client = new pg.Client({ connectionString: app.databaseUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query(`insert into tags (id, organization_id, name, color) values (gen_random_uuid(), $1, 'slow', 'Blue')`, [t.orgId]);
      // Committed while the first is still open: in the feed at once.
      expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'fast', color: 'Red' } }), 201);
      const first = (await feed('&types=tag.created')).map((e) => e.data.name);
      expect(first).to.deep.equal(['fast']);
      const cursor = (await feed()).at(-1).id;
      await client.query('commit');
      const after = expectOk(await call(app.url, 'GET', `/api/v1/events?after=${cursor}`, { auth: t.owner }));
      expect(after.map((e: any) => e.data.name)).to.deep.equal(['slow']);
    } finally {
      await client.end();
    }
  });

  it('retention deletes old events; a cursor older than retention is 410 with a code', async () => {
    await buildNetwork(app, t.owner, t.defaultNetworkId);
    const events = await feed();
    await db(app).query(`update events set occurred_at = now() - interval '91 days' where id <= ?::bigint`, [events[4].id]);
    expect(await pruneEvents(db(app), 90)).to.be.greaterThan(4);
    const res = await call(app.url, 'GET', '/api/v1/events?after=1', { auth: t.owner });
    expectError(res, 410, 'event_cursor_expired');
    const kept = expectOk(await call(app.url, 'GET', `/api/v1/events?after=${events[4].id}`, { auth: t.owner }));
    expect(kept[0].id).to.equal(events[5].id);
  });

  it('a stream without a cursor opens for an organization whose every event retention deleted (it starts at the watermark, not 410)', async () => {
    const quiet = await registerTenant(app.url, 'quiet');
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: quiet.owner, body: { name: 'old', color: 'Blue' } }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'later', color: 'Blue' } }), 201);
    await feed(); // sequenced
    const org = (await db(app).one<{ o: string }>(`select organization_id as o from networks where id = ?`, [quiet.defaultNetworkId]))!.o;
    await db(app).query(`update events set occurred_at = now() - interval '91 days' where organization_id = ?`, [org]);
    expect(await pruneEvents(db(app), 90)).to.be.greaterThan(0);
    expect(await db(app).one(`select 1 from events where organization_id = ?`, [org])).to.equal(undefined);
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    if (quiet.owner.cookie) headers.Cookie = quiet.owner.cookie;
    if (quiet.owner.bearer) headers.Authorization = `Bearer ${quiet.owner.bearer}`;
    const stop = new AbortController();
    const res = await fetch(`${app.url}/api/v1/events/stream`, { headers, signal: stop.signal });
    try {
      expect(res.status, await (res.status === 200 ? Promise.resolve('') : res.text())).to.equal(200);
    } finally {
      stop.abort();
    }
  });
});
