// The live stream (issue 13.3): Server-Sent Events that resume after Last-Event-ID with no gap,
// carry a heartbeat, see only the caller's events, and work across API processes.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { expect } from 'chai';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk, type Credential } from '../support/client.js';
import { createKey, createNetwork, createUser, login, registerTenant, type Tenant } from '../support/world.js';
import { db, NODE, ROOT, waitFor } from '../workers/support.js';
import { recordEvent } from '../../src/modules/events/service.js';
import { bundlePath } from '../../scripts/build.js';
import { readSse, type SseFrame } from '../support/sse.js';


/** An SSE client over fetch: frames as they arrive. */
async function openStream(url: string, auth: Credential, opts: { query?: string; lastEventId?: string } = {}) {
  const controller = new AbortController();
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  if (auth.cookie) headers.Cookie = auth.cookie;
  if (auth.bearer) headers.Authorization = `Bearer ${auth.bearer}`;
  if (opts.lastEventId) headers['Last-Event-ID'] = opts.lastEventId;
  const res = await fetch(`${url}/api/v1/events/stream${opts.query ?? ''}`, { headers, signal: controller.signal });
  expect(res.status).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
  const frames: SseFrame[] = [];
  let waiting: (() => void) | undefined;
  void readSse(res.body, (frame) => {
    frames.push(frame);
    waiting?.();
  });
  const events = () => frames.filter((f) => f.id && f.data);
  return {
    frames,
    events,
    /** Waits until `n` events have arrived (or fails after `ms`). */
    async until(n: number, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (events().length < n) {
        if (Date.now() > deadline) throw new Error(`${events().length} events after ${ms} ms, expected ${n}`);
        await new Promise<void>((resolve) => { waiting = resolve; setTimeout(resolve, 50); });
      }
      return events().map((f) => f.data);
    },
    close: () => controller.abort(),
  };
}

describe('events: the live stream', () => {
  let app: TestApp;
  let t: Tenant;
  const tag = async (name: string, base = app.url) => expectOk(await call(base, 'POST', '/api/v1/tags', { auth: t.owner, body: { name, color: 'Blue' } }), 201);

  beforeEach(async () => {
    app = await startTestApp({ eventHeartbeatMs: 300 });
    t = await registerTenant(app.url);
  });
  afterEach(async function () {
    this.timeout(120_000); // the drop test leaves a client that read nothing for a while: closing may wait on a loaded machine
    await app.close();
  });

  it('streams changes as they commit, resumes after Last-Event-ID with no gap, and sends a heartbeat', async () => {
    const stranger = await registerTenant(app.url, 'stranger');
    const theirs = await openStream(app.url, stranger.owner);
    const s1 = await openStream(app.url, t.owner, { query: '?types=tag.*' });
    await tag('a');
    const [a] = await s1.until(1);
    expect(a).to.include({ type: 'tag.created', organization_id: t.orgId });
    expect(a.data.name).to.equal('a');
    s1.close();
    await tag('b');
    await tag('c');
    const s2 = await openStream(app.url, t.owner, { query: '?types=tag.*', lastEventId: a.id });
    const resumed = await s2.until(2);
    expect(resumed.map((e) => e.data.name)).to.deep.equal(['b', 'c']);
    await tag('d');
    expect((await s2.until(3)).map((e) => e.data.name)).to.deep.equal(['b', 'c', 'd']);
    const ids = s2.events().map((f) => BigInt(f.id!));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).to.equal(true);
    await waitFor('a heartbeat', async () => s2.frames.some((f) => f.comment === 'heartbeat') || undefined, 5000);
    s2.close();
    // `after` resumes as Last-Event-ID does; the other organization saw none of it.
    const s3 = await openStream(app.url, t.owner, { query: `?types=tag.created&after=${a.id}` });
    expect((await s3.until(3)).map((e) => e.data.name)).to.deep.equal(['b', 'c', 'd']);
    s3.close();
    expect(theirs.events()).to.deep.equal([]);
    theirs.close();
  });

  it('ends a stream when its session signs out, its key is revoked or its user loses the network it follows', async () => {
    const ended = async (stream: Awaited<ReturnType<typeof openStream>>) =>
      (await waitFor('the stream ended', async () => stream.frames.find((f) => f.event === 'ended'), 5000)).data;
    // A second session of the owner, kept; the first one's stream ends when it signs out.
    const owner = await login(app.url, expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).email);
    const session = await openStream(app.url, t.owner);
    await tag('before-sign-out');
    await session.until(1);
    expectOk(await call(app.url, 'POST', '/api/auth/logout', { auth: t.owner }));
    expect((await ended(session)).reason).to.match(/no longer accepted/);
    expect((await ended(session)).last_event_id).to.equal(session.events()[0]!.id);
    // An API key revoked; another key's stream goes on.
    const [revoked, kept] = [await createKey(app.url, owner), await createKey(app.url, owner)];
    const byRevoked = await openStream(app.url, { bearer: revoked.key });
    const byKept = await openStream(app.url, { bearer: kept.key });
    expectOk(await call(app.url, 'DELETE', `/api/v1/auth/keys/${revoked.id}`, { auth: owner }));
    expect((await ended(byRevoked)).reason).to.match(/no longer accepted/);
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: owner, body: { name: 'after-revocation', color: 'Blue' } }), 201);
    expect((await byKept.until(1)).map((e) => e.data.name)).to.deep.equal(['after-revocation']);
    expect(byKept.frames.some((f) => f.event === 'ended')).to.equal(false);
    byKept.close();
    // A Member following one network, then no longer granted it.
    const member = await createUser(app.url, owner, 'Member', [t.defaultNetworkId]);
    const followed = await openStream(app.url, member.auth, { query: `?network_id=${t.defaultNetworkId}` });
    expectOk(await call(app.url, 'PUT', `/api/v1/users/${member.id}`, { auth: owner, body: { permissions: 'Member', network_ids: [] } }));
    expect((await ended(followed)).reason).to.match(/no longer visible/);
  });

  const host = (name: string, networkId: string, auth: Credential = t.owner) =>
    call(app.url, 'POST', '/api/v1/hosts', { auth, body: { name, network_id: networkId } }).then((r) => expectOk(r, 201));
  const names = (events: any[]) => events.map((e) => e.data.name);

  it('ends a revoked key\'s or a signed-out session\'s stream at the next credential check (every second), not at the next heartbeat', async () => {
    await app.close();
    app = await startTestApp({ eventHeartbeatMs: 600_000 });
    t = await registerTenant(app.url);
    const key = await createKey(app.url, t.owner);
    const byKey = await openStream(app.url, { bearer: key.key });
    const bySession = await openStream(app.url, t.owner);
    expectOk(await call(app.url, 'DELETE', `/api/v1/auth/keys/${key.id}`, { auth: t.owner }));
    expectOk(await call(app.url, 'POST', '/api/auth/logout', { auth: t.owner }));
    for (const stream of [byKey, bySession]) {
      const ended = await waitFor('the stream ended', async () => stream.frames.find((f) => f.event === 'ended'), 10_000);
      expect(ended.data.reason).to.match(/no longer accepted/);
    }
    expect(app.services.events.size).to.equal(0);
  });

  it('a key or a user limited to some networks gets no event of another network, live or catching up', async () => {
    const lab = await createNetwork(app.url, t.owner, 'Lab');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    const limited = await createKey(app.url, t.owner, { name: 'default only', network_ids: [t.defaultNetworkId] });
    const start = expectOk(await call(app.url, 'GET', '/api/v1/events?after=0&limit=1000', { auth: t.owner })).at(-1).id;
    const callers: Credential[] = [member.auth, { bearer: limited.key }];
    const live = await Promise.all(callers.map((auth) => openStream(app.url, auth, { query: '?types=host.*' })));
    await host('in-lab', lab);
    await host('in-default', t.defaultNetworkId);
    const caughtUp = await Promise.all(callers.map((auth) => openStream(app.url, auth, { query: `?types=host.*&after=${start}` })));
    for (const stream of [...live, ...caughtUp]) {
      expect(names(await stream.until(1))).to.deep.equal(['in-default']);
      stream.close();
    }
  });

  it('a user\'s grants shrinking while a stream is open: the lost network\'s events stop', async () => {
    const lab = await createNetwork(app.url, t.owner, 'Lab');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId, lab]);
    const stream = await openStream(app.url, member.auth, { query: '?types=host.*' });
    await host('lab-1', lab);
    expect(names(await stream.until(1))).to.deep.equal(['lab-1']);
    expectOk(await call(app.url, 'PUT', `/api/v1/users/${member.id}`, { auth: t.owner, body: { permissions: 'Member', network_ids: [t.defaultNetworkId] } }));
    // A whole round of credential checks that started after the change.
    const seen = app.services.events.rechecks;
    await waitFor('two rounds of credential checks', async () => app.services.events.rechecks >= seen + 2 || undefined, 10_000);
    await host('lab-2', lab);
    await host('default-1', t.defaultNetworkId);
    expect(names(await stream.until(2))).to.deep.equal(['lab-1', 'default-1']);
    expect(stream.frames.some((f) => f.event === 'ended')).to.equal(false);
    stream.close();
  });

  it('carries a resource\'s events only to who may read it: a Viewer\'s stream gets no webhook event', async () => {
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const [byViewer, byOwner] = [await openStream(app.url, viewer.auth), await openStream(app.url, t.owner)];
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'chat', url: 'https://chat.example.com/hooks/s3cr3t' } }), 201);
    await recordEvent(db(app), {
      type: 'webhook.disabled', organizationId: t.orgId, networkId: null, entityType: 'webhook', entityId: hook.id,
      changes: { enabled: [true, false] }, data: { id: hook.id, name: 'chat', url: 'https://chat.example.com/hooks/s3cr3t', disabled_reason: 'gone', last_status_code: 410 },
    });
    await tag('after-the-webhook');
    expect((await byViewer.until(1)).map((e) => e.type)).to.deep.equal(['tag.created']);
    const ownerSaw = await byOwner.until(2);
    expect(ownerSaw.map((e) => e.type)).to.deep.equal(['webhook.disabled', 'tag.created']);
    expect(ownerSaw[0].data.url).to.equal('https://chat.example.com');
    byViewer.close();
    byOwner.close();
  });

  it('at most 10 open streams per credential: the 11th is 429 event_streams_exceeded; closing one frees its place; other credentials are not counted', async () => {
    const key = await createKey(app.url, t.owner);
    const open = await Promise.all(Array.from({ length: 10 }, () => openStream(app.url, { bearer: key.key })));
    // Read as a stream might answer: its headers first (an accepted one would never end).
    const controller = new AbortController();
    const refused = await fetch(`${app.url}/api/v1/events/stream`, { headers: { Authorization: `Bearer ${key.key}` }, signal: controller.signal });
    if (refused.status === 200) controller.abort();
    expect(refused.status).to.equal(429);
    expect(await refused.json()).to.deep.include({ success: false, code: 'event_streams_exceeded', params: { limit: 10 } });
    const other = await openStream(app.url, t.owner);
    open[0]!.close();
    await waitFor('the closed stream gone', async () => app.services.events.size === 10 || undefined, 10_000);
    const again = await openStream(app.url, { bearer: key.key });
    for (const stream of [...open, other, again]) stream.close();
  });

  it('works across two API processes: a change made through one reaches a stream on the other', async function () {
    this.timeout(60_000);
    const child = spawn(NODE, ['--enable-source-maps', bundlePath('server')], {
      cwd: ROOT, env: { ...process.env, DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, PORT: '0', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      const line = await waitFor('the second API', async () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => /api listening/.test(l.msg)), 30_000);
      const second = `http://127.0.0.1:${line.port}`;
      const onSecond = await openStream(second, t.owner, { query: '?types=tag.created' });
      const onFirst = await openStream(app.url, t.owner, { query: '?types=tag.created' });
      await tag('through-first', app.url);
      await tag('through-second', second);
      expect((await onSecond.until(2)).map((e) => e.data.name)).to.deep.equal(['through-first', 'through-second']);
      expect((await onFirst.until(2)).map((e) => e.data.name)).to.deep.equal(['through-first', 'through-second']);
      onSecond.close();
      onFirst.close();
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
  it('drops a client that does not read, telling it the last id it was sent, from which it resumes with no gap', async function () {
    this.timeout(240_000);
    await app.close();
    // Its many PUTs are not what is tested: no user rate limit in their way (a loaded machine needs more of them).
    app = await startTestApp({ eventStreamBufferBytes: 64 * 1024, ...FIXTURE_BUILDING });
    t = await registerTenant(app.url);
    const networkId = t.defaultNetworkId;
    const host = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: networkId, name: 'churn' } }), 201);
    // A client that reads nothing: once the socket buffers are full, what waits for it is ours.
    let received = '';
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${app.url}/api/v1/events/stream?types=port.*`, { headers: { Cookie: t.owner.cookie!, Accept: 'text/event-stream' } }, resolve).on('error', reject);
    });
    expect(response.statusCode).to.equal(200);
    response.pause();
    await waitFor('the stream open', async () => app.services.events.size === 1 || undefined, 5000);
    // Each PUT replaces 100 ports (200 events) until the server gives up on the client. How much the
    // kernel holds for a client that does not read depends on its TCP buffers (tcp_rmem's maximum is
    // 32 MiB here), so the bound is in bytes sent: more than both buffers'
    // maximums and the hub's own 64 KiB, the stream must have been dropped.
    const bound = 3 * 32 * 1024 * 1024;
    let puts = 0;
    while (app.services.events.size > 0) {
      const [state] = app.services.events.describe();
      const where = `${puts} PUTs; the stream: ${JSON.stringify(state)}`;
      expect(state?.bytesSent ?? 0, `bytes sent before the drop (${where})`).to.be.below(bound);
      expect(puts, `PUTs before the drop (${where})`).to.be.below(2000);
      const ports = Array.from({ length: 100 }, (_, i) => ({ number: 1000 + (puts % 2) * 100 + i, protocol: 'Tcp' }));
      expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: t.owner, body: { id: host.id, name: 'churn', hidden: false, tags: [], ip_addresses: [], ports, services: [] } }));
      puts++;
    }
    console.log(`    dropped after ${puts} PUTs`);
    // Read what was sent: events, then the `dropped` frame naming the last one; then the end.
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => { received += chunk; });
    response.resume();
    await new Promise<void>((resolve) => response.on('end', resolve));
    const blocks = received.split('\n\n').filter(Boolean);
    const ids = blocks.filter((b) => b.startsWith('id: ')).map((b) => b.slice(4, b.indexOf('\n')));
    const dropped = blocks.at(-1)!;
    expect(dropped).to.match(/^event: dropped\ndata: /);
    const notice = JSON.parse(dropped.split('\ndata: ')[1]!);
    expect(notice.reason).to.equal('client too slow');
    expect(ids.length).to.be.above(0);
    expect(notice.last_event_id).to.equal(ids.at(-1));
    // What it got is the feed's first events, in order; resuming after last_event_id gives the next ones
    // (one more change makes sure there are some).
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: t.owner, body: { id: host.id, name: 'churn', hidden: false, tags: [], ip_addresses: [], ports: [], services: [] } }));
    const feed = expectOk(await call(app.url, 'GET', `/api/v1/events?types=port.*&after=0&limit=${Math.min(ids.length + 5, 1000)}`, { auth: t.owner }));
    expect(feed.slice(0, Math.min(ids.length, 1000)).map((e: { id: string }) => e.id)).to.deep.equal(ids.slice(0, 1000));
    const resumed = await openStream(app.url, t.owner, { query: '?types=port.*', lastEventId: notice.last_event_id });
    const next = await resumed.until(1);
    const after = expectOk(await call(app.url, 'GET', `/api/v1/events?types=port.*&after=${notice.last_event_id}&limit=1`, { auth: t.owner }));
    expect(next[0].id).to.equal(after[0].id);
    resumed.close();
  });
});
