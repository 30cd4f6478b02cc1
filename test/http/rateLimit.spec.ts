// Rate limiting through HTTP (decisions §4): a token bucket per user (capacity 150, 300/min, shared by
// the user's sessions and keys), per client IP for anonymous callers (capacity 10, 40/min), free
// health and version, one bucket across API processes (Redis), and an in-process fallback when
// Redis is down.
//
// Timing: the buckets' clock is the test's (RATE_LIMIT_TEST_CLOCK): frozen, and moved only by
// advance(), so every count is exact however long a loaded machine takes to send the requests. Redis
// may be slow too: no request falls back to the in-process bucket after 100 ms (the 60 s timeout).
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import { callFrom, createKey, freshLoopbackIp, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient } from '../daemons/world.js';
import { bundlePath } from '../../scripts/build.js';
import { testClockKey } from '../../src/http/rateLimiter.js';

const USER_CAPACITY = 150;
const ANON_CAPACITY = 10;
const CLOCKED = { rateLimitTestClock: true, rateLimitRedisTimeoutMs: 60_000 };
const CLOCKED_ENV = { RATE_LIMIT_TEST_CLOCK: 'true', RATE_LIMIT_REDIS_TIMEOUT_MS: '60000' };

/** n requests, `batch` at a time concurrently, in order of sending. */
async function burst(n: number, send: (i: number) => Promise<ApiResponse>, batch = 50): Promise<ApiResponse[]> {
  const out: ApiResponse[] = [];
  for (let i = 0; i < n; i += batch) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) => send(i + j)))));
  }
  return out;
}

const header = (res: ApiResponse, name: string) => res.headers.get(name);
const remaining = (res: ApiResponse) => Number(header(res, 'x-ratelimit-remaining'));

/** Every allowed response of a burst from a full bucket: Limit, Reset, and Remaining counting down to capacity - n. */
function expectCountdown(responses: ApiResponse[], capacity: number, limit: number): void {
  for (const res of responses) {
    expect(res.status, JSON.stringify(res.body)).to.be.within(200, 499);
    expect(res.status).to.not.equal(429);
    expect(header(res, 'x-ratelimit-limit')).to.equal(String(limit));
    // whole tokens missing, refilled at limit/60 per second
    expect(Number(header(res, 'x-ratelimit-reset'))).to.equal(Math.ceil(((capacity - remaining(res)) * 60) / limit));
    expect(header(res, 'retry-after')).to.equal(null);
  }
  const rem = responses.map(remaining).sort((a, b) => b - a);
  expect(rem).to.deep.equal(responses.map((_, k) => capacity - 1 - k));
}

/** A 429; Retry-After is `retryAfter` (up to `maxRetryAfter` where real time moves the bucket). */
function expectLimited(res: ApiResponse, limit: number, retryAfter: number, maxRetryAfter = retryAfter): void {
  expectError(res, 429, 'rate_limit_exceeded');
  const after = Number(header(res, 'retry-after'));
  expect(after).to.be.within(retryAfter, maxRetryAfter);
  expect(res.body.params.retry_after).to.equal(after);
  expect(header(res, 'x-ratelimit-limit')).to.equal(String(limit));
  expect(header(res, 'x-ratelimit-remaining')).to.equal('0');
}

describe('http/rateLimit: token buckets through HTTP', () => {
  let app: TestApp;
  let t: Tenant;
  let child: ChildProcess | undefined;
  /** Moves the buckets' clock (the only time they see). */
  const advance = async (ms: number) => { await app.services.redis.incrby(testClockKey(app.redisPrefix), ms); };
  beforeEach(async () => {
    app = await startTestApp(CLOCKED);
    await app.services.redis.set(testClockKey(app.redisPrefix), 1_700_000_000_000);
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
    const first = await burst(USER_CAPACITY, me(t.owner));
    for (const res of first) expectOk(res);
    expectCountdown(first, USER_CAPACITY, 300);
    // No token is left: one is back within 200 ms, the bucket is full in 150/5 = 30 s.
    const last = await me(t.owner)();
    expectLimited(last, 300, 1);
    expect(header(last, 'x-ratelimit-reset')).to.equal('30');
    expect(last.body.error).to.match(/rate limit/i);
  });

  it('refills one token per 200 ms: one second after running dry 5 more pass, then 429 again', async () => {
    await burst(USER_CAPACITY, me(t.owner));
    expectLimited(await me(t.owner)(), 300, 1);
    await advance(1000);
    const after = await Promise.all(Array.from({ length: 10 }, me(t.owner)));
    expect(after.filter((r) => r.status === 200), after.map((r) => r.status).join(',')).to.have.length(5);
    for (const res of after.filter((r) => r.status !== 200)) expectLimited(res, 300, 1);
    const tags = () => call(app.url, 'GET', '/api/v1/tags?limit=1', { auth: t.owner });
    expectLimited(await tags(), 300, 1);
    await advance(199);
    expectLimited(await tags(), 300, 1);
    await advance(1);
    expectOk(await tags());
    expectLimited(await tags(), 300, 1);
  });

  it('two API keys of one user and the user’s session share one bucket, whatever the client IP', async () => {
    const keyA = await createKey(app.url, t.owner, { name: 'A' });
    const keyB = await createKey(app.url, t.owner, { name: 'B', permissions: 'Viewer' });
    await advance(400); // the two creations' tokens are back: the bucket is full
    const viaA = await burst(100, () => call(app.url, 'GET', '/api/v1/tags?limit=1', { auth: { bearer: keyA.key } }));
    const ipB = freshLoopbackIp();
    const viaB = await burst(50, () => callFrom(ipB, app.url, 'GET', '/api/auth/me', { auth: { bearer: keyB.key } }));
    for (const res of [...viaA, ...viaB]) expectOk(res);
    // Key B starts where key A left off, not at 149.
    expect(Math.max(...viaB.map(remaining))).to.equal(49);
    expectCountdown([...viaA, ...viaB], USER_CAPACITY, 300);
    expectLimited(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/auth/me', { auth: t.owner }), 300, 1);
  });

  it('anonymous callers are limited per client IP at 10: the 11th unauthenticated request is 429', async () => {
    const ip = freshLoopbackIp();
    const res = await Promise.all(Array.from({ length: ANON_CAPACITY + 2 }, () => callFrom(ip, app.url, 'GET', '/api/v1/tags')));
    const denied = res.filter((r) => r.status === 401);
    expect(denied.length, res.map((r) => r.status).join(',')).to.equal(ANON_CAPACITY);
    for (const r of denied) expectError(r, 401, 'auth_not_authenticated');
    expectCountdown(denied, ANON_CAPACITY, 40);
    const limited = res.filter((r) => r.status === 429);
    expect(limited).to.have.length(2);
    for (const r of limited) expectLimited(r, 40, 2); // one token per 1.5 s
    // A bad credential from that IP is anonymous too; another IP has its own bucket; a user is not limited by the IP's.
    expectLimited(await callFrom(ip, app.url, 'GET', '/api/v1/tags', { auth: { bearer: 'garbage' } }), 40, 2);
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
    expectLimited(await callFrom(ip, app.url, 'GET', '/api/v1/tags'), 40, 2);
    // and the signed-in user's bucket is empty too
    await burst(USER_CAPACITY, me(t.owner));
    expectLimited(await me(t.owner)(), 300, 1);

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
      env: { ...process.env, PORT: '0', DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, LOG_LEVEL: 'info', ...CLOCKED_ENV },
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
    // The child answers from its in-process fallback until its Redis connection is up: wait for it.
    for (let tries = 0; (await call(childUrl, 'GET', '/api/ready')).status !== 200; tries++) {
      if (tries === 100) throw new Error('the second API never became ready');
      await sleep(100);
    }

    const key = await createKey(app.url, t.owner, { name: 'shared' });
    await advance(200); // the creation's token is back
    const auth = { bearer: key.key };
    const here = await burst(100, () => call(app.url, 'GET', '/api/auth/me', { auth }));
    const there = await burst(50, () => call(childUrl, 'GET', '/api/auth/me', { auth }));
    for (const res of [...here, ...there]) expectOk(res);
    expect(Math.max(...there.map(remaining)), 'the second process continues the first one’s bucket').to.equal(49);
    expectCountdown([...here, ...there], USER_CAPACITY, 300);
    expectLimited(await call(childUrl, 'GET', '/api/auth/me', { auth }), 300, 1);
    // and the first process agrees, right away
    expectLimited(await call(app.url, 'GET', '/api/auth/me', { auth }), 300, 1);
  });
});

describe('http/rateLimit: Redis unreachable', () => {
  let app: TestApp;
  beforeEach(async () => {
    // Nothing listens on port 1: one Redis, or a cluster's only seed (npm run test:cluster).
    app = await startTestApp(process.env.REDIS_CLUSTER_NODES ? { redisClusterNodes: ['127.0.0.1:1'] } : { redisUrl: 'redis://127.0.0.1:1' });
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
    expectLimited(anon.find((r) => r.status === 429)!, 40, 1, 2);

    const started = Date.now();
    const ready = await call(app.url, 'GET', '/api/ready');
    expect(Date.now() - started, '/api/ready must answer promptly while Redis is down').to.be.below(3000);
    expectError(ready, 503, 'service_unavailable');
    expect(ready.body.error).to.match(/redis/i);
    // liveness is unaffected
    expectOk(await call(app.url, 'GET', '/api/health'));
  });
});
