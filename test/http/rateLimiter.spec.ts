import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { RATE_POLICIES, takeToken, type BucketPolicy, type BucketState } from '../../src/core/tokenBucket.js';
import { RateLimiter, testClockKey } from '../../src/http/rateLimiter.js';

// Read when used, not when the file loads: mocha's global setup chooses the Redis (scripts/services.ts)
// after the spec files are loaded, and it need not be the one on 6379.
const redisUrl = () => process.env.REDIS_URL!;

describe('http/rateLimiter (real Redis)', () => {
  let redis: Redis;
  let prefix: string;

  before(async () => {
    redis = new Redis(redisUrl());
    await redis.ping();
  });
  beforeEach(() => {
    prefix = `test:${randomUUID()}:`;
  });
  afterEach(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
  });
  after(() => redis.disconnect());

  // Counts that must be exact run on the test clock (time stands still), and wait for a Redis slowed
  // by a loaded machine instead of answering from the in-process bucket after 100 ms.
  const patient = { redisTimeoutMs: 60_000 };
  async function clocked(client = redis) {
    await client.set(testClockKey(prefix), 1_700_000_000_000);
    return new RateLimiter(client, { keyPrefix: prefix, testClock: true, ...patient });
  }

  /** Records the commands sent to Redis through `client`. */
  function commandsSent(client: Redis): string[] {
    const sent: string[] = [];
    const send = client.sendCommand.bind(client);
    client.sendCommand = (command, stream) => {
      sent.push(command.name);
      return send(command, stream);
    };
    return sent;
  }

  async function takeN(rl: RateLimiter, key: string, policy: BucketPolicy, n: number) {
    const out = [];
    for (let i = 0; i < n; i++) out.push(await rl.take(key, policy));
    return out;
  }

  it('allows 150 immediate takes for a user, denies the 151st with Retry-After >= 1', async () => {
    const rl = await clocked();
    const ds = await Promise.all(Array.from({ length: 151 }, () => rl.take('user:1', RATE_POLICIES.user)));
    expect(ds.filter((d) => d.allowed).length).to.equal(150);
    const last = ds[150];
    expect(last.allowed).to.equal(false);
    expect(last.retryAfterSeconds).to.be.at.least(1);
    expect(last).to.include({ remaining: 0, limit: 300 });
    expect(rl.degraded).to.equal(false);
  });

  it('two limiters on two connections (two API processes) share one bucket', async () => {
    const other = new Redis(redisUrl());
    try {
      await other.ping();
      const a = await clocked();
      const b = await clocked(other);
      const ds = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).take('ip:10.0.0.1', RATE_POLICIES.anonymous)),
      );
      expect(ds.filter((d) => d.allowed).length).to.equal(10);
      // and a different key is a different bucket
      expect((await b.take('ip:10.0.0.2', RATE_POLICIES.anonymous)).remaining).to.equal(9);
    } finally {
      other.disconnect();
    }
  });

  it('the Lua script agrees with takeToken for a sequence of takes (real TIME)', async () => {
    // 1 token/min: the few ms this test takes cannot move any whole-token value,
    // so Redis's decisions must equal the pure ones exactly.
    const policy = { capacity: 5, refillPerMinute: 1 };
    const rl = new RateLimiter(redis, { keyPrefix: prefix, ...patient });
    const got = await takeN(rl, 'seq', policy, 8);
    let state: BucketState | undefined;
    const want = [];
    for (let i = 0; i < 8; i++) {
      const r = takeToken(state, 0, policy);
      want.push(r.decision);
      state = r.state;
    }
    expect(got.map((d) => d.remaining)).to.deep.equal([4, 3, 2, 1, 0, 0, 0, 0]);
    expect(got).to.deep.equal(want);
  });

  it('keeps one small hash per bucket with a TTL of about the time to refill fully', async () => {
    const rl = new RateLimiter(redis, { keyPrefix: prefix, ...patient });
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 300 }, () => rl.take('user:ttl', RATE_POLICIES.user)));
    expect(await redis.keys(`${prefix}*`)).to.deep.equal([`${prefix}rl:user:ttl`]);
    expect(await redis.hlen(`${prefix}rl:user:ttl`)).to.equal(2);
    // An empty user bucket (less than one token left) is full in (149, 150] tokens at 5/s, i.e. over
    // 29.8 s after the last take; the TTL has run since, for at most the time measured around it.
    const ttl = await redis.pttl(`${prefix}rl:user:ttl`);
    expect(ttl).to.be.within(29_800 - (Date.now() - t0), 30_000);
    // A single take from full expires once that token is back: a minute at one token per minute.
    const t1 = Date.now();
    await rl.take('one', { capacity: 5, refillPerMinute: 1 });
    expect(await redis.pttl(`${prefix}rl:one`)).to.be.within(60_000 - (Date.now() - t1), 60_000);
  });

  describe('fallback when Redis is unavailable', () => {
    it('answers in-process (same math) without asking Redis and reports degraded', async () => {
      const dead = new Redis('redis://127.0.0.1:1', {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      const rl = new RateLimiter(dead, { keyPrefix: prefix });
      const sent = commandsSent(dead);
      const ds = await takeN(rl, 'user:fb', RATE_POLICIES.user, 151);
      expect(sent, 'nothing waits for a Redis that is not connected').to.deep.equal([]);
      expect(ds.slice(0, 150).every((d) => d.allowed)).to.equal(true);
      expect(ds[0]).to.include({ remaining: 149, limit: 300 });
      expect(ds[150].allowed).to.equal(false);
      expect(ds[150].retryAfterSeconds).to.be.at.least(1);
      expect(rl.degraded).to.equal(true);
      dead.disconnect();
    });

    it('a disconnected client falls back; degraded clears after the next successful Redis call', async () => {
      const client = new Redis(redisUrl());
      await client.ping();
      const rl = new RateLimiter(client, { keyPrefix: prefix, ...patient });
      expect((await rl.take('k', RATE_POLICIES.anonymous)).allowed).to.equal(true);
      expect(rl.degraded).to.equal(false);
      client.disconnect();
      const d = await rl.take('k', RATE_POLICIES.anonymous); // at once: the closed connection's error, not the (60 s) timeout
      expect(d.allowed).to.equal(true);
      expect(rl.degraded).to.equal(true);
      await client.connect();
      await client.ping();
      expect((await rl.take('k', RATE_POLICIES.anonymous)).remaining).to.equal(8); // the Redis bucket again
      expect(rl.degraded).to.equal(false);
      client.disconnect();
    });

    it('keeps the in-process map small: buckets that would be full are dropped', async () => {
      const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, retryStrategy: () => null });
      const rl = new RateLimiter(dead);
      const local = (rl as unknown as { store: { local: Map<string, unknown> } }).store.local;
      const realNow = Date.now;
      let now = realNow();
      Date.now = () => now;
      try {
        for (let i = 0; i < 1000; i++) await rl.take(`ip:${i}`, RATE_POLICIES.anonymous);
        expect(local.size).to.equal(1000);
        now += 6_000; // > 1.5 s to refill one anonymous token, > the 5 s sweep interval
        await rl.take('ip:new', RATE_POLICIES.anonymous);
        expect(local.size).to.equal(1);
      } finally {
        Date.now = realNow;
        dead.disconnect();
      }
    });

    it('a Redis that stops answering is abandoned after redisTimeoutMs', async () => {
      // TCP proxy to the real Redis that we can freeze (stop forwarding), so the
      // client stays 'ready' but its commands hang.
      let frozen = false;
      const sockets: Socket[] = [];
      const url = new URL(redisUrl());
      const server: Server = createServer((client) => {
        const upstream = connect(Number(url.port || 6379), url.hostname);
        sockets.push(client, upstream);
        client.on('data', (d) => frozen || upstream.write(d));
        upstream.on('data', (d) => frozen || client.write(d));
        client.on('error', () => {});
        upstream.on('error', () => {});
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      const viaProxy = new Redis({ port, host: '127.0.0.1', password: url.password || undefined });
      try {
        await viaProxy.ping();
        const rl = new RateLimiter(viaProxy, { keyPrefix: prefix, redisTimeoutMs: 50 });
        expect((await rl.take('k', RATE_POLICIES.daemon)).remaining).to.equal(299);
        expect(rl.degraded).to.equal(false);
        frozen = true;
        const t0 = performance.now();
        const d = await rl.take('k', RATE_POLICIES.daemon);
        // Not before the timeout; and not never, or this would hang: the answer is the fresh local bucket.
        expect(performance.now() - t0).to.be.at.least(45);
        expect(d).to.include({ allowed: true, remaining: 299, limit: 600 });
        expect(rl.degraded).to.equal(true);
      } finally {
        viaProxy.disconnect();
        sockets.forEach((s) => s.destroy());
        await new Promise((r) => server.close(r));
      }
    });
  });
});
