// Issue 37: a revocation closes the credential's event streams on every API process before the
// revoking request answers, so an event committed after that answer never goes out on them. Two
// API processes over one database: A (this process's test app) takes the revocations and the
// writes, B (the server bundle, spawned) serves the streams. Both re-check credentials only every
// 10 minutes here (EVENT_RECHECK_MS), so what ends the streams is the revocation notice, not the poll.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk, type Credential } from '../support/client.js';
import { readSse, type SseFrame } from '../support/sse.js';
import { createKey, createUser, login, registerTenant, type Tenant } from '../support/world.js';
import { spawnBundle, waitFor, type WorkerProcess } from '../workers/support.js';

const RARELY = 600_000;

/** A stream of tag events, read as it comes; `finished` once the server closed it. */
async function openStream(url: string, auth: Credential) {
  const controller = new AbortController();
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  if (auth.cookie) headers.Cookie = auth.cookie;
  if (auth.bearer) headers.Authorization = `Bearer ${auth.bearer}`;
  const res = await fetch(`${url}/api/v1/events/stream?types=tag.*`, { headers, signal: controller.signal });
  expect(res.status).to.equal(200);
  const frames: SseFrame[] = [];
  let finished = false;
  void readSse(res.body, (frame) => frames.push(frame)).then(() => { finished = true; });
  const names = () => frames.filter((f) => f.id && f.data).map((f) => f.data.data.name as string);
  return {
    frames,
    names,
    finished: () => finished,
    /** Until `name` arrived. */
    sees: (name: string) => waitFor(`the tag ${name} on the stream`, async () => names().includes(name), 10_000, 20),
    close: () => controller.abort(),
  };
}
type Stream = Awaited<ReturnType<typeof openStream>>;

describe('events: a revocation closes the credential\'s streams on every API process before it answers', function () {
  this.timeout(90_000);
  let a: TestApp;
  let b: WorkerProcess;
  let onB: string;
  let t: Tenant;
  const open: Stream[] = [];
  const stream = async (auth: Credential) => {
    const s = await openStream(onB, auth);
    open.push(s);
    return s;
  };
  const tag = async (name: string) => expectOk(await call(a.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name, color: 'Blue' } }), 201);

  /**
   * `revoked` ended by the server without `later`, an event committed after the revocation answered,
   * while `witness` (another credential's stream on the same process) received it. Waits for either
   * outcome (the stream ends, or the event reaches it), so a stream that was not closed fails here.
   */
  async function expectEndedBefore(revoked: Stream, later: string, witness: Stream) {
    await witness.sees(later);
    await waitFor('the revoked stream closed, or the later event on it', async () => revoked.finished() || revoked.names().includes(later), 10_000, 20);
    expect(revoked.names(), 'events on the revoked stream').to.not.include(later);
    expect(revoked.finished(), 'the revoked stream closed').to.equal(true);
    const ended = revoked.frames.find((f) => f.event === 'ended');
    expect(ended?.data.reason).to.match(/no longer accepted/);
  }

  before(async function () {
    a = await startTestApp({ eventRecheckMs: RARELY, eventHeartbeatMs: RARELY });
    b = spawnBundle('server', a, { HOST: '127.0.0.1', PORT: '0', EVENT_RECHECK_MS: String(RARELY), EVENT_HEARTBEAT_MS: String(RARELY) });
    const line = await waitFor('process B listening', async () => {
      if (b.child.exitCode !== null) throw new Error(`process B exited: ${b.output()}`);
      return b.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => /api listening/.test(l.msg));
    }, 30_000);
    onB = `http://127.0.0.1:${line.port}`;
  });

  beforeEach(async () => {
    t = await registerTenant(a.url);
  });

  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });

  after(async () => {
    b?.child.kill('SIGTERM');
    await b?.exited;
    await a?.close();
  });

  it('an API key deleted through A: its stream on B is closed and never gets the event committed after A answered', async () => {
    const key = await createKey(a.url, t.owner);
    const byKey = await stream({ bearer: key.key });
    const witness = await stream(t.owner);
    await tag('before');
    await byKey.sees('before');
    await witness.sees('before');
    expectOk(await call(a.url, 'DELETE', `/api/v1/auth/keys/${key.id}`, { auth: t.owner }));
    await tag('after-delete');
    await expectEndedBefore(byKey, 'after-delete', witness);
    expect(byKey.names()).to.deep.equal(['before']);
  });

  it('a session signed out through A: its stream on B is closed and never gets the event committed after A answered', async () => {
    const email = expectOk(await call(a.url, 'GET', '/api/auth/me', { auth: t.owner })).email as string;
    const session = await login(a.url, email);
    const bySession = await stream(session);
    const witness = await stream(t.owner); // the same user's other session goes on
    await tag('before');
    await bySession.sees('before');
    await witness.sees('before');
    expectOk(await call(a.url, 'POST', '/api/auth/logout', { auth: session }));
    await tag('after-logout');
    await expectEndedBefore(bySession, 'after-logout', witness);
    expect(witness.finished()).to.equal(false);
  });

  it('a key disabled, a key rotated and a user removed through A: their streams on B are closed before each answer', async () => {
    const [disabled, rotated] = [await createKey(a.url, t.owner), await createKey(a.url, t.owner)];
    const member = await createUser(a.url, t.owner, 'Member', [t.defaultNetworkId]);
    const byDisabled = await stream({ bearer: disabled.key });
    const byRotated = await stream({ bearer: rotated.key });
    const byMember = await stream(member.auth);
    const witness = await stream(t.owner);
    await tag('before');
    for (const s of [byDisabled, byRotated, byMember, witness]) await s.sees('before');
    expectOk(await call(a.url, 'PUT', `/api/v1/auth/keys/${disabled.id}`, { auth: t.owner, body: { is_enabled: false } }));
    const renewed = expectOk(await call(a.url, 'POST', `/api/v1/auth/keys/${rotated.id}/rotate`, { auth: t.owner }));
    expectOk(await call(a.url, 'DELETE', `/api/v1/users/${member.id}`, { auth: t.owner }));
    await tag('after-changes');
    for (const s of [byDisabled, byRotated, byMember]) await expectEndedBefore(s, 'after-changes', witness);
    // The rotated key's new secret streams as before.
    const byRenewed = await stream({ bearer: renewed.key });
    await tag('with-the-new-secret');
    await byRenewed.sees('with-the-new-secret');
  });

  it('API access turned off through A: the organization\'s key streams on B are closed before it answers', async () => {
    const key = await createKey(a.url, t.owner);
    const byKey = await stream({ bearer: key.key });
    const witness = await stream(t.owner);
    await tag('before');
    await byKey.sees('before');
    await witness.sees('before');
    expectOk(await call(a.url, 'PUT', '/api/v1/organizations/current', { auth: t.owner, body: { name: 'Org owner', api_access_enabled: false } }));
    await tag('after-access-off');
    await expectEndedBefore(byKey, 'after-access-off', witness);
  });
});
