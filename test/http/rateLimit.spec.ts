// Rate limiting through HTTP (decisions §4): a token bucket per user (capacity 150, 300/min, shared by
// the user's sessions and keys), per client IP for anonymous callers (capacity 10, 40/min), free
// health and version, one bucket across API processes (Redis), and an in-process fallback when
// Redis is down.
//
// Timing: a user bucket gains one token every 200 ms, and a burst of 150 requests takes a few hundred
// ms here, so "the 151st is 429" is asserted as "after the 150, at most one more request per 200 ms
// elapsed passes before a 429" — exact bucket arithmetic, no slack token.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import { callFrom, createKey, freshLoopbackIp, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient } from '../daemons/world.js';
import { bundlePath } from '../../scripts/build.js';

const USER_CAPACITY = 150;
const USER_MS_PER_TOKEN = 200; // 300 per minute
const ANON_CAPACITY = 10;
const ANON_MS_PER_TOKEN = 1500; // 40 per minute

/** n requests, `batch` at a time concurrently, in order of sending. */
async function burst(n: number, send: (i: number) => Promise<ApiResponse>, batch = 50): Promise<ApiResponse[]> {
  const out: ApiResponse[] = [];
  for (let i = 0; i < n; i += batch) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) => send(i + j)))));
  }
  return out;
}

/** Sends one at a time until a 429; `extra` counts the successes before it. */
async function untilLimited(send: () => Promise<ApiResponse>, max = 100): Promise<{ extra: number; last: ApiResponse }> {
  for (let extra = 0; extra <= max; extra++) {
    const res = await send();
    if (res.status === 429) return { extra, last: res };
    expectOk(res);
  }
  throw new Error(`no 429 after ${max} further requests`);
}

/** Tokens a bucket can have regained since `t0` (the server's clock is at most 1 ms coarser). */
const refilledSince = (t0: number, msPerToken: number) => Math.floor((Date.now() - t0 + 1) / msPerToken);

const header = (res: ApiResponse, name: string) => res.headers.get(name);
const remaining = (res: ApiResponse) => Number(header(res, 'x-ratelimit-remaining'));

/** Every allowed response of a burst from a full bucket: Limit, Reset, and Remaining counting down. */
function expectCountdown(responses: ApiResponse[], capacity: number, limit: number, maxRefill: number): void {
  for (const res of responses) {
    expect(res.status, JSON.stringify(res.body)).to.be.within(200, 499);
    expect(res.status).to.not.equal(429);
    expect(header(res, 'x-ratelimit-limit')).to.equal(String(limit));
    expect(Number(header(res, 'x-ratelimit-reset'))).to.be.within(0, Math.ceil((capacity * 60) / limit));
    expect(header(res, 'retry-after')).to.equal(null);
  }
  // The k-th largest Remaining of n takes from a full bucket lies in [capacity-1-k, capacity-1-k+refill].
  const rem = responses.map(remaining).sort((a, b) => b - a);
  expect(rem[0], 'the first take from a full bucket leaves capacity - 1').to.equal(capacity - 1);
  rem.forEach((r, k) => expect(r, `Remaining #${k} of ${JSON.stringify(rem)}`).to.be.within(capacity - 1 - k, capacity - 1 - k + maxRefill));
}

function expectLimited(res: ApiResponse, limit: number, retryAfter: [number, number]): void {
  expectError(res, 429, 'rate_limit_exceeded');
  const after = Number(header(res, 'retry-after'));
  expect(after).to.be.within(retryAfter[0], retryAfter[1]);
  expect(res.body.params.retry_after).to.equal(after);
  expect(header(res, 'x-ratelimit-limit')).to.equal(String(limit));
  expect(header(res, 'x-ratelimit-remaining')).to.equal('0');
}

describe('http/rateLimit: token buckets through HTTP', () => {
  let app: TestApp;
  let t: Tenant;
  let child: ChildProcess | undefined;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'rl'); // register + login are anonymous: the user bucket is still full
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    child = undefined;
    await app.close();
  });

  const me = (auth: Credential) => () => call(app.url, 'GET', '/api/auth/me', { auth });

  it('150 immediate requests pass with X-RateLimit-Limit 300 and a falling Remaining; then 429 rate_limit_exceeded with Retry-After', async () => {
    const t0 = Date.now();
    const first = await burst(USER_CAPACITY, me(t.owner));
    for (const res of first) expectOk(res);
    const { extra, last } = await untilLimited(me(t.owner));
    const refill = refilledSince(t0, USER_MS_PER_TOKEN);
    expect(extra, `requests allowed past the 150 (≤ one per 200 ms elapsed, here ${refill})`).to.be.at.most(refill);
    expectCountdown(first, USER_CAPACITY, 300, refill);
    // Less than one token is left: one is back within 200 ms, the bucket is full in 150/5 = 30 s.
    expectLimited(last, 300, [1, 1]);
    expect(header(last, 'x-ratelimit-reset')).to.equal('30');
    expect(last.body.error).to.match(/rate limit/i);
  });

  it('refills one token per 200 ms: one second after running dry about 5 more pass, then 429 again', async () => {
    await burst(USER_CAPACITY, me(t.owner));
    await untilLimited(me(t.owner));
    const dry = Date.now(); // the bucket holds less than one token from here
    await sleep(1000);
    const after = await Promise.all(Array.from({ length: 10 }, me(t.owner)));
    const passed = after.filter((r) => r.status === 200);
    // 5 tokens in 1 s, plus the fraction left at the 429; only a heavily loaded machine (a slow sleep or
    // burst) may have let a further token in, and then the bound says how many.
    const upper = Math.max(6, refilledSince(dry, USER_MS_PER_TOKEN) + 1);
    expect(passed.length, after.map((r) => r.status).join(',')).to.be.within(4, upper);
    expect(passed.length + after.filter((r) => r.status === 429).length).to.equal(10);
    for (const res of after.filter((r) => r.status === 429)) expectLimited(res, 300, [1, 1]);
    // Dry again: a further request is refused, unless a loaded machine took 200 ms to send it.
    const batchEnd = Date.now();
    const { extra, last } = await untilLimited(() => call(app.url, 'GET', '/api/v1/tags?limit=1', { auth: t.owner }));
    expect(extra).to.be.at.most(refilledSince(batchEnd, USER_MS_PER_TOKEN) + 1);
    expectLimited(last, 300, [1, 1]);
  });

  it('two API keys of one user and the user’s session share one bucket, whatever the client IP', async () => {
    const keyA = await createKey(app.url, t.owner, { name: 'A' });
    const keyB = await createKey(app.url, t.owner, { name: 'B', permissions: 'Viewer' });
    await sleep(2 * USER_MS_PER_TOKEN + 100); // the two creations' tokens are back: the bucket is full
    const t0 = Date.now();
    const viaA = await burst(100, () => call(app.url, 'GET', '/api/v1/tags?limit=1', { auth: { bearer: keyA.key } }));
    const ipB = freshLoopbackIp();
    const viaB = await burst(50, () => callFrom(ipB, app.url, 'GET', '/api/auth/me', { auth: { bearer: keyB.key } }));
    for (const res of [...viaA, ...viaB]) expectOk(res);
    // Key B starts where key A left off, not at 149.
    expect(Math.max(...viaB.map(remaining))).to.be.at.most(49 + refilledSince(t0, USER_MS_PER_TOKEN));
    const ipS = freshLoopbackIp();
    const { extra, last } = await untilLimited(() => callFrom(ipS, app.url, 'GET', '/api/auth/me', { auth: t.owner }));
    const refill = refilledSince(t0, USER_MS_PER_TOKEN);
    expect(extra, `session requests allowed after 150 by the keys (refill ${refill})`).to.be.at.most(refill);
    expectCountdown([...viaA, ...viaB], USER_CAPACITY, 300, refill);
    expectLimited(last, 300, [1, 1]);
  });

  it('anonymous callers are limited per client IP at 10: the 11th unauthenticated request is 429', async () => {
    const ip = freshLoopbackIp();
    const t0 = Date.now();
    const res = await Promise.all(Array.from({ length: ANON_CAPACITY + 2 }, () => callFrom(ip, app.url, 'GET', '/api/v1/tags')));
    const refill = refilledSince(t0, ANON_MS_PER_TOKEN); // 0 unless the machine is very slow
    const denied = res.filter((r) => r.status === 401);
    expect(denied.length, res.map((r) => r.status).join(',')).to.be.within(ANON_CAPACITY, ANON_CAPACITY + refill);
    for (const r of denied) expectError(r, 401, 'auth_not_authenticated');
    expectCountdown(denied, ANON_CAPACITY, 40, refill);
    const limited = res.filter((r) => r.status === 429);
    expect(limited.length + denied.length).to.equal(ANON_CAPACITY + 2);
    for (const r of limited) expectLimited(r, 40, [1, 2]); // one token per 1.5 s
    // A bad credential from that IP is anonymous too; another IP has its own bucket; a user is not limited by the IP's.
    expectLimited(await callFrom(ip, app.url, 'GET', '/api/v1/tags', { auth: { bearer: 'garbage' } }), 40, [1, 2]);
    expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/v1/tags'), 401, 'auth_not_authenticated');
    const signedIn = await callFrom(ip, app.url, 'GET', '/api/v1/tags', { auth: t.owner });
    expectOk(signedIn);
    expect(header(signedIn, 'x-ratelimit-limit')).to.equal('300');
  });

  it('a daemon spends its key’s bucket (300, 600/min), whatever X-Daemon-ID it sends', async () => {
    const { key } = await createDaemonKey(app.url, t.owner, t.defaultNetworkId);
    const remainingOf = async (daemonId?: string) => {
      const res = await daemonClient(app.url, key, daemonId).get('/api/v1/subnets');
      expect(header(res, 'x-ratelimit-limit')).to.equal('600');
      return Number(header(res, 'x-ratelimit-remaining'));
    };
    const first = await remainingOf();
    // A new id on every request is no new bucket.
    const others = [await remainingOf(), await remainingOf(), await remainingOf()];
    expect(first).to.equal(299);
    expect(others).to.deep.equal([298, 297, 296]);
  });

  it('/api/health and /api/version are never limited and carry no rate-limit headers', async () => {
    const ip = freshLoopbackIp();
    await Promise.all(Array.from({ length: ANON_CAPACITY }, () => callFrom(ip, app.url, 'GET', '/api/v1/tags')));
    expectLimited(await callFrom(ip, app.url, 'GET', '/api/v1/tags'), 40, [1, 2]);
    // and the signed-in user's bucket is empty too
    await burst(USER_CAPACITY, me(t.owner));
    await untilLimited(me(t.owner));

    const free = await burst(200, (i) => callFrom(ip, app.url, 'GET', i % 2 ? '/api/health' : '/api/version'));
    const freeSignedIn = await burst(100, (i) => call(app.url, 'GET', i % 2 ? '/api/health' : '/api/version', { auth: t.owner }));
    for (const res of [...free, ...freeSignedIn]) {
      expectOk(res);
      for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) expect(header(res, h), h).to.equal(null);
    }
    expect(free.filter((r) => r.body.data.status === 'ok')).to.have.length(100);
    expect(free.filter((r) => r.body.data.api_version === 1)).to.have.length(100);
  });

  it('two API processes against one Redis share the bucket', async function () {
    this.timeout(60_000);
    const root = fileURLToPath(new URL('../..', import.meta.url));
    child = spawn(process.execPath, ['--enable-source-maps', bundlePath('server')], {
      cwd: root,
      env: { ...process.env, PORT: '0', DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
    // Keep reading stdout for the whole test (a full pipe would block the child).
    const port = await new Promise<number>((resolve, reject) => {
      let buffered = '';
      child!.stdout!.on('data', (c: Buffer) => {
        buffered += c.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          try {
            const entry = JSON.parse(line) as { msg?: string; port?: number };
            if (entry.msg?.startsWith('api listening') && typeof entry.port === 'number') resolve(entry.port);
          } catch {
            /* not a log line */
          }
        }
      });
      child!.once('exit', (code) => reject(new Error(`second API exited (${code}) before listening: ${stderr}`)));
    });
    const childUrl = `http://127.0.0.1:${port}`;
    expectOk(await call(childUrl, 'GET', '/api/health'));
    // The child answers from its in-process fallback until its Redis connection is up (or while a
    // Redis call takes over 100 ms, as on a loaded machine): one limited call with another
    // credential first, so the measured burst meets the shared bucket.
    expectOk(await call(childUrl, 'GET', '/api/auth/me', { auth: t.owner }));
    await sleep(200);

    const key = await createKey(app.url, t.owner, { name: 'shared' });
    await sleep(USER_MS_PER_TOKEN + 100); // the creation's token is back
    const auth = { bearer: key.key };
    const t0 = Date.now();
    const here = await burst(100, () => call(app.url, 'GET', '/api/auth/me', { auth }));
    const there = await burst(50, () => call(childUrl, 'GET', '/api/auth/me', { auth }));
    for (const res of [...here, ...there]) expectOk(res);
    expect(Math.max(...there.map(remaining)), 'the second process continues the first one’s bucket').to.be.at.most(49 + refilledSince(t0, USER_MS_PER_TOKEN));

    const { extra, last } = await untilLimited(() => call(childUrl, 'GET', '/api/auth/me', { auth }));
    const refill = refilledSince(t0, USER_MS_PER_TOKEN);
    expect(extra).to.be.at.most(refill);
    expectCountdown([...here, ...there], USER_CAPACITY, 300, refill);
    expectLimited(last, 300, [1, 1]);
    // and the first process agrees, right away
    const t1 = Date.now();
    const back = await untilLimited(() => call(app.url, 'GET', '/api/auth/me', { auth }));
    expect(back.extra).to.be.at.most(refilledSince(t1, USER_MS_PER_TOKEN) + 1); // +1: the fraction left at the child's 429
    expectLimited(back.last, 300, [1, 1]);
  });
});

describe('http/rateLimit: Redis unreachable', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp({ redisUrl: 'redis://127.0.0.1:1' });
  });
  afterEach(() => app.close());

  it('keeps serving with an in-process bucket (headers, limits) and /api/ready answers 503 service_unavailable', async () => {
    const t = await registerTenant(app.url, 'noredis');
    const res = await call(app.url, 'GET', '/api/v1/tags?limit=1', { auth: t.owner });
    expectOk(res);
    expect(header(res, 'x-ratelimit-limit')).to.equal('300');
    expect(remaining(res)).to.be.within(140, 149);
    expect(header(res, 'x-ratelimit-reset')).to.match(/^\d+$/);

    // The fallback still limits: an anonymous IP gets its 10, then 429.
    const ip = freshLoopbackIp();
    const anon = await Promise.all(Array.from({ length: ANON_CAPACITY + 1 }, () => callFrom(ip, app.url, 'GET', '/api/v1/tags')));
    expect(anon.filter((r) => r.status === 401)).to.have.length(ANON_CAPACITY);
    expectLimited(anon.find((r) => r.status === 429)!, 40, [1, 2]);

    const started = Date.now();
    const ready = await call(app.url, 'GET', '/api/ready');
    expect(Date.now() - started, '/api/ready must answer promptly while Redis is down').to.be.below(3000);
    expectError(ready, 503, 'service_unavailable');
    expect(ready.body.error).to.match(/redis/i);
    // liveness is unaffected
    expectOk(await call(app.url, 'GET', '/api/health'));
  });
});
