// Share links: a read-only link to one network's map. Red-teamed: the token opens that map and
// nothing else (no other network, no inventory route, not as a credential), every refusal of a
// link looks the same (no oracle), management follows the roles, and the page may be framed only
// by the configured ancestors.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import { readSse, type SseFrame } from '../support/sse.js';
import { callFrom, createKey, createNetwork, createUser, freshLoopbackIp, registerTenant, type Tenant } from '../support/world.js';

const TOKEN = /^scp_s_[0-9A-Za-z]{32}$/;
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();
/** Anonymous: each from its own address, so the per-address limit (10 at once) never answers instead. */
const anon = (app: TestApp, path: string, opts: { auth?: Credential; headers?: Record<string, string> } = {}) => callFrom(freshLoopbackIp(), app.url, 'GET', path, opts);

async function share(app: TestApp, auth: Credential, networkId: string, body: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const data = expectOk(await call(app.url, 'POST', `/api/v1/networks/${networkId}/share-links`, { auth, body: { expires_at: inDays(7), ...body } }), 201);
  return { id: data.share_link.id, token: data.token };
}

const nodeIds = (topology: { nodes: Array<{ id: string }> }) => topology.nodes.map((n) => n.id).sort();

/** A refusal of a link: 404 entity_not_found, the same words whatever the reason. */
function expectClosed(res: ApiResponse): string {
  expectError(res, 404, 'entity_not_found');
  return `${res.body.code} ${res.body.error} ${JSON.stringify(res.body.params)}`;
}

describe('share links', () => {
  let app: TestApp;
  let a: Tenant;
  let b: Tenant;
  let otherNet: string;
  let hostA: string;
  let hostOther: string;

  beforeEach(async () => {
    app = await startTestApp();
    [a, b] = await Promise.all([registerTenant(app.url, 'share-a'), registerTenant(app.url, 'share-b')]);
    otherNet = await createNetwork(app.url, a.owner, 'Other');
    hostA = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: a.owner, body: { name: 'shared-host', network_id: a.defaultNetworkId } }), 201).id;
    hostOther = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: a.owner, body: { name: 'secret-host', network_id: otherNet } }), 201).id;
  });
  afterEach(() => app.close());

  it('opens its network’s map: the same graph as the map API, without signing in', async () => {
    const created = expectOk(await call(app.url, 'POST', `/api/v1/networks/${a.defaultNetworkId}/share-links`, {
      auth: a.owner, body: { view: 'l3', expires_at: inDays(30), label: 'wall screen' },
    }), 201);
    expect(created.token).to.match(TOKEN);
    expect(created.share_link).to.include({ network_id: a.defaultNetworkId, view: 'l3', at: null, status: 'active', label: 'wall screen', created_by: a.ownerId });
    expect(JSON.stringify(created.share_link)).not.to.contain(created.token);

    const map = expectOk(await anon(app, `/api/share/${created.token}/topology`));
    const own = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${a.defaultNetworkId}`, { auth: a.owner }));
    expect(map.network_id).to.equal(a.defaultNetworkId);
    expect(nodeIds(map)).to.deep.equal(nodeIds(own));
    expect(map.nodes.map((n: { entity_id: string }) => n.entity_id)).to.include(hostA).and.not.include(hostOther);
    expect(map.share).to.deep.include({ network_name: 'Default', label: 'wall screen', view: 'l3', at: null });
    // Its use is recorded (at most once a minute).
    const [listed] = expectOk(await call(app.url, 'GET', `/api/v1/networks/${a.defaultNetworkId}/share-links`, { auth: a.owner }));
    expect(listed.last_used_at).to.be.a('string');
  });

  it('the token is no credential anywhere else: 401 on the inventory API as a Bearer key or a query parameter', async () => {
    const { token } = await share(app, a.owner, a.defaultNetworkId);
    const paths = ['/api/v1/hosts', `/api/v1/topology?network_id=${otherNet}`, `/api/v1/topology?network_id=${a.defaultNetworkId}`, '/api/v1/networks',
      `/api/v1/hosts/${hostA}`, `/api/v1/events?network_id=${a.defaultNetworkId}`, '/api/auth/me'];
    for (const path of paths) {
      const bearer = await anon(app, path, { auth: { bearer: token } });
      expect(bearer.status, `${path} with the token as Bearer: ${JSON.stringify(bearer.body)}`).to.equal(401);
      for (const param of ['token', 'access_token', 'share_token', 'key']) {
        const res = await anon(app, `${path}${path.includes('?') ? '&' : '?'}${param}=${token}`);
        expect(res.status, `${path} with ?${param}=<token>: ${JSON.stringify(res.body)}`).to.be.oneOf([400, 401]);
      }
    }
    // Nor on the event stream of the network it shares.
    const stream = await fetch(`${app.url}/api/v1/events/stream?network_id=${a.defaultNetworkId}`, { headers: { Authorization: `Bearer ${token}` } });
    expect(stream.status).to.equal(401);
    await stream.body?.cancel();
  });

  it('cannot be widened: another network, view, instant or hidden hosts in the query are refused; a token of one network never reads another', async () => {
    const { token } = await share(app, a.owner, a.defaultNetworkId);
    const other = await share(app, a.owner, otherNet);
    for (const extra of [`network_id=${otherNet}`, 'view=l2', `at=${encodeURIComponent(new Date().toISOString())}`, 'include_hidden=true', `tag_ids=${hostA}`, 'max_nodes=5']) {
      const res = await anon(app, `/api/share/${token}/topology?${extra}`);
      expect(res.status, `?${extra}: ${JSON.stringify(res.body)}`).to.equal(400);
      expect(res.body.code).to.be.oneOf(['validation_unknown_field', 'validation_failed']);
    }
    const mapA = expectOk(await anon(app, `/api/share/${token}/topology`));
    const mapOther = expectOk(await anon(app, `/api/share/${other.token}/topology`));
    expect(mapA.network_id).to.equal(a.defaultNetworkId);
    expect(mapOther.network_id).to.equal(otherNet);
    expect(mapA.nodes.map((n: { entity_id: string }) => n.entity_id)).not.to.include(hostOther);
    expect(mapOther.nodes.map((n: { entity_id: string }) => n.entity_id)).not.to.include(hostA);
    // Hidden hosts stay hidden.
    expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${hostA}`, { auth: a.owner, body: { hidden: true } }));
    expect(expectOk(await anon(app, `/api/share/${token}/topology`)).nodes.map((n: { entity_id: string }) => n.entity_id)).not.to.include(hostA);
  });

  it('unknown, malformed, expired, revoked, of a deleted network or of a demoted creator: the same 404', async () => {
    const expired = await share(app, a.owner, a.defaultNetworkId);
    const revoked = await share(app, a.owner, a.defaultNetworkId);
    const doomedNet = await createNetwork(app.url, a.owner, 'Doomed');
    const deleted = await share(app, a.owner, doomedNet);
    const admin = await createUser(app.url, a.owner, 'Admin');
    const demoted = await share(app, admin.auth, a.defaultNetworkId);
    for (const link of [expired, revoked, deleted, demoted]) expectOk(await anon(app, `/api/share/${link.token}/topology`));

    await app.services.orm.em.fork().execute(`update share_links set expires_at = now() - interval '1 second' where id = ?`, [expired.id]);
    const gone = expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${a.defaultNetworkId}/share-links/${revoked.id}`, { auth: a.owner }));
    expect(gone).to.include({ id: revoked.id, status: 'revoked' });
    expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${doomedNet}`, { auth: a.owner }));
    expectOk(await call(app.url, 'PUT', `/api/v1/users/${admin.id}`, { auth: a.owner, body: { permissions: 'Member', network_ids: [a.defaultNetworkId] } }));

    const answers = new Set<string>();
    const tokens = [expired.token, revoked.token, deleted.token, demoted.token, `scp_s_${'A'.repeat(32)}`, 'scp_s_short', 'not-a-token', 'scp_u_' + 'a'.repeat(32)];
    for (const token of tokens) {
      answers.add(expectClosed(await anon(app, `/api/share/${encodeURIComponent(token)}/topology`)));
      answers.add(expectClosed(await anon(app, `/api/share/${encodeURIComponent(token)}/stream`)));
    }
    expect([...answers]).to.have.length(1);
    // The list says which is which to those who manage them.
    const all = expectOk(await call(app.url, 'GET', `/api/v1/networks/${a.defaultNetworkId}/share-links?include_inactive=true`, { auth: a.owner }));
    const status = Object.fromEntries(all.map((l: { id: string; status: string }) => [l.id, l.status]));
    expect(status).to.deep.include({ [expired.id]: 'expired', [revoked.id]: 'revoked', [demoted.id]: 'active' });
    expect(expectOk(await call(app.url, 'GET', `/api/v1/networks/${a.defaultNetworkId}/share-links`, { auth: a.owner })).map((l: { id: string }) => l.id))
      .to.deep.equal([demoted.id]);
  });

  it('listing shows no token; roles: Admins create (signed in) and revoke, readers of the network list, others get 403 / 404', async () => {
    const { id, token } = await share(app, a.owner, a.defaultNetworkId);
    const viewer = await createUser(app.url, a.owner, 'Viewer', [a.defaultNetworkId]);
    const member = await createUser(app.url, a.owner, 'Member', [a.defaultNetworkId]);
    const path = `/api/v1/networks/${a.defaultNetworkId}/share-links`;
    const listed = await call(app.url, 'GET', path, { auth: viewer.auth });
    expect(expectOk(listed).map((l: { id: string }) => l.id)).to.deep.equal([id]);
    const text = JSON.stringify(listed.body);
    expect(text).not.to.contain(token);
    expect(text).not.to.match(/scp_s_|token/);
    // A Viewer of another network only: 403 on this one.
    const outsider = await createUser(app.url, a.owner, 'Viewer', [otherNet]);
    expectError(await call(app.url, 'GET', path, { auth: outsider.auth }), 403, 'entity_access_denied');
    expectError(await call(app.url, 'POST', path, { auth: member.auth, body: { expires_at: inDays(1) } }), 403, 'auth_permission_denied');
    expectError(await call(app.url, 'DELETE', `${path}/${id}`, { auth: member.auth }), 403, 'auth_permission_denied');
    // An Admin key: not a creator of credentials (session only); it may revoke.
    const key = await createKey(app.url, a.owner);
    expectError(await call(app.url, 'POST', path, { auth: { bearer: key.key }, body: { expires_at: inDays(1) } }), 403, 'auth_permission_denied');
    // Another organization: the network and the link do not exist for it.
    for (const auth of [b.owner, { bearer: (await createKey(app.url, b.owner)).key }]) {
      expectError(await call(app.url, 'GET', path, { auth }), 404, 'entity_not_found');
      expectError(await call(app.url, 'DELETE', `${path}/${id}`, { auth }), 404, 'entity_not_found');
    }
    expectError(await call(app.url, 'POST', path, { auth: b.owner, body: { expires_at: inDays(1) } }), 404, 'entity_not_found');
    // Its own network in the path, the other organization's link id: 404 too.
    expectError(await call(app.url, 'DELETE', `/api/v1/networks/${b.defaultNetworkId}/share-links/${id}`, { auth: b.owner }), 404, 'entity_not_found');
    // A link id under another network of the same organization: 404.
    expectError(await call(app.url, 'DELETE', `/api/v1/networks/${otherNet}/share-links/${id}`, { auth: a.owner }), 404, 'entity_not_found');
    expectOk(await anon(app, `/api/share/${token}/topology`));
    expectOk(await call(app.url, 'DELETE', `${path}/${id}`, { auth: { bearer: key.key } }));
    expectClosed(await anon(app, `/api/share/${token}/topology`));
  });

  it('expires within 90 days, in the future; a fixed instant shows the map as of then, and has no stream', async () => {
    const path = `/api/v1/networks/${a.defaultNetworkId}/share-links`;
    for (const expires_at of [inDays(-1), inDays(91)]) {
      expectError(await call(app.url, 'POST', path, { auth: a.owner, body: { expires_at } }), 400, 'validation_failed');
    }
    expectError(await call(app.url, 'POST', path, { auth: a.owner, body: {} }), 400, 'validation_failed');
    const before = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    const later = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: a.owner, body: { name: 'later-host', network_id: a.defaultNetworkId } }), 201).id;
    const fixed = await share(app, a.owner, a.defaultNetworkId, { at: before });
    const map = expectOk(await anon(app, `/api/share/${fixed.token}/topology`));
    const entities = map.nodes.map((n: { entity_id: string }) => n.entity_id);
    expect(entities).to.include(hostA).and.not.include(later);
    expect(map.share.at).to.be.a('string');
    expectClosed(await anon(app, `/api/share/${fixed.token}/stream`));
    // Replaying its creation never shows the token again.
    const headers = { 'Idempotency-Key': 'share-once' };
    const body = { expires_at: inDays(1) };
    expectOk(await call(app.url, 'POST', path, { auth: a.owner, body, headers }), 201);
    expectError(await call(app.url, 'POST', path, { auth: a.owner, body, headers }), 409, 'idempotency_secret_not_replayed');
  });

  it('the stream of a live link says "changed" for its network only, with no data or ids, and ends when the link is revoked', async () => {
    const { id, token } = await share(app, a.owner, a.defaultNetworkId);
    const frames: SseFrame[] = [];
    const controller = new AbortController();
    const res = await fetch(`${app.url}/api/share/${token}/stream`, { signal: controller.signal });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    let finished = false;
    void readSse(res.body, (f) => frames.push(f)).then(() => { finished = true; });
    const waitFor = async (what: string, ok: () => boolean) => {
      for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
      expect(ok(), `${what}: ${JSON.stringify(frames)}`).to.equal(true);
    };
    try {
      await new Promise((r) => setTimeout(r, 300)); // caught up, live
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: a.owner, body: { name: 'elsewhere', network_id: otherNet } }), 201);
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: b.owner, body: { name: 'other-org', network_id: b.defaultNetworkId } }), 201);
      await new Promise((r) => setTimeout(r, 700));
      expect(frames.filter((f) => f.event === 'changed'), 'no change of another network').to.deep.equal([]);
      expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${hostA}`, { auth: a.owner, body: { description: 'changed' } }));
      await waitFor('a changed frame', () => frames.some((f) => f.event === 'changed'));
      for (const f of frames) {
        expect(f.id, 'no event ids').to.equal(undefined);
        if (f.data !== undefined) expect(JSON.stringify(f.data)).not.to.match(/shared-host|changed"|last_event_id/);
      }
      expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${a.defaultNetworkId}/share-links/${id}`, { auth: a.owner }));
      await waitFor('the stream ended', () => finished);
      const ended = frames.find((f) => f.event === 'ended');
      expect(ended?.data).to.have.property('reason').that.is.a('string');
      expect(ended?.data).not.to.have.property('last_event_id');
    } finally {
      controller.abort();
    }
  });

  it('the page /share/<token>: frame-ancestors from SHARE_FRAME_ANCESTORS and no X-Frame-Options; every other page keeps DENY', async () => {
    const { token } = await share(app, a.owner, a.defaultNetworkId);
    const page = await fetch(`${app.url}/share/${token}`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.headers.get('content-security-policy')).to.contain("frame-ancestors 'none'");
    expect(page.headers.get('x-robots-tag')).to.contain('noindex');
    await page.text();

    const framed = await startTestApp({ shareFrameAncestors: "'self' https://wiki.example.com" });
    try {
      const owner = (await registerTenant(framed.url, 'framed')).owner;
      const link = expectOk(await call(framed.url, 'POST', `/api/v1/networks/${(await call(framed.url, 'GET', '/api/v1/networks', { auth: owner })).body.data[0].id}/share-links`, { auth: owner, body: { expires_at: inDays(1) } }), 201);
      const res = await fetch(`${framed.url}/share/${link.token}`);
      expect(res.status).to.equal(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).to.contain("frame-ancestors 'self' https://wiki.example.com");
      expect(csp).to.contain("script-src 'self'");
      expect(res.headers.get('x-frame-options')).to.equal(null);
      await res.text();
      for (const other of ['/hosts', '/networks', '/signin', '/share/a/b']) {
        const r = await fetch(`${framed.url}${other}`);
        await r.text();
        if (!r.headers.get('content-type')?.startsWith('text/html')) continue;
        expect(r.headers.get('content-security-policy'), other).to.contain("frame-ancestors 'none'");
        expect(r.headers.get('x-frame-options'), other).to.equal('DENY');
      }
    } finally {
      await framed.close();
    }
  });

  it('SHARE_FRAME_ANCESTORS takes only source expressions (no way to inject a directive)', () => {
    expect(loadConfig({}, {}).shareFrameAncestors).to.equal("'none'");
    expect(loadConfig({}, { SHARE_FRAME_ANCESTORS: "'self' https://*.example.com http://localhost:8080" }).shareFrameAncestors).to.equal("'self' https://*.example.com http://localhost:8080");
    for (const bad of ["'self'; script-src *", 'https://example.com/path', '*', "'none' 'self'", 'javascript:alert(1)', "https://a.example\nX-Evil: 1"]) {
      expect(() => loadConfig({}, { SHARE_FRAME_ANCESTORS: bad }), bad).to.throw(/SHARE_FRAME_ANCESTORS/);
    }
  });
});
