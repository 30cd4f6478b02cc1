// Token buckets shared through Redis, with an in-process fallback while Redis is down: the one store
// behind the rate limiter (src/http/rateLimiter.ts) and the heavy-read CPU budget
// (src/modules/topology/heavyReadBudget.ts); the math is spendBucket() in tokenBucket.ts.
//
// One Lua script per call = one round trip, atomic across any number of API processes, on ONE key
// (on a Redis Cluster a script's keys must share a slot; each bucket in its own slot spreads them
// over the masters), with Redis's own TIME as the clock so processes with skewed clocks agree. Each
// bucket is a small hash {u, t} that PEXPIREs when it would be full anyway (a missing key *is* a
// full bucket), so memory does not grow per request.
//
// A test clock (RATE_LIMIT_TEST_CLOCK): a ms count a test sets and advances in Redis under
// `clockKey`, read before each call (a second round trip, tests only: read inside the script it
// would be a second key, in another slot than the bucket on a cluster). Unset, Redis TIME is used.
import type { RedisClient } from './redis.js';
import { withTimeout } from './timeout.js';
import { spendBucket, type BucketShape, type BucketSpend, type BucketUnits } from './tokenBucket.js';

/**
 * Lua port of spendBucket() in tokenBucket.ts. THE TWO MUST STAY IN STEP (same units, same order
 * of operations; test/core/bucketStore.spec.ts compares them).
 * KEYS[1] = the bucket; ARGV = capUnits, refillUnitsPerMs, debtUnits, nowMs ('' for Redis TIME),
 * '1' when nowMs is the test clock, cost, need, '1' to force. Hash fields: u = units, t = updatedAt ms.
 * Returns {allowed 0|1, units after, updatedAt}: what follows from them (remaining tokens,
 * Retry-After) is computed in JS, from the same numbers.
 */
export const BUCKET_LUA = `
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local debt = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local testClock = ARGV[5] == '1'
local cost = tonumber(ARGV[6])
local need = tonumber(ARGV[7])
local force = ARGV[8] == '1'
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
now = math.floor(now)
local h = redis.call('HMGET', KEYS[1], 'u', 't')
local units = tonumber(h[1])
local updated = tonumber(h[2])
if not units or not updated then
  units = cap
  updated = now
end
units = math.min(cap, units + math.max(0, now - updated) * rate)
updated = math.max(updated, now)
local allowed = 0
if units >= need then allowed = 1 end
if allowed == 1 or force then units = math.max(0 - debt, units - cost) end
redis.call('HSET', KEYS[1], 'u', units, 't', updated)
-- gone once it would be full anyway (a missing key reads as full); not under the test clock, which
-- real time does not move (the tests delete their keys)
if not testClock then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((cap - units) / rate))) end
return {allowed, units, updated}
`;

type BucketCommand = (key: string, cap: number, rate: number, debt: number, nowMs: string, testClock: string, cost: number, need: number, force: string) => Promise<[number, number, number]>;

/** Registers the script on a client (idempotent) and returns it; `nowMs` undefined means Redis TIME. */
export function defineBucketCommand(redis: RedisClient) {
  const command = 'bucketSpend';
  const r = redis as unknown as Record<string, BucketCommand>;
  if (typeof r[command] !== 'function') redis.defineCommand(command, { lua: BUCKET_LUA, numberOfKeys: 1 });
  return async (key: string, shape: BucketShape, spend: BucketSpend, nowMs?: number, testClock = false): Promise<{ allowed: boolean; state: BucketUnits }> => {
    const [allowed, units, updatedAtMs] = await r[command](key, shape.capUnits, shape.refillUnitsPerMs, shape.debtUnits,
      nowMs === undefined ? '' : String(nowMs), testClock ? '1' : '0', spend.cost, spend.need, spend.force ? '1' : '0');
    return { allowed: allowed === 1, state: { units, updatedAtMs } };
  };
}

// Fallback map housekeeping: sweep full buckets at most this often, and never keep more than
// MAX_LOCAL entries (oldest first out: a dropped bucket just reads as full, i.e. slightly lenient
// while degraded).
const SWEEP_EVERY_MS = 5_000;
const MAX_LOCAL = 50_000;

export interface BucketStoreOptions {
  /** Prepended to every bucket's key (the project's Redis prefix). */
  keyPrefix?: string;
  /** A Redis slower than this is treated as down for that call (default 100 ms). */
  redisTimeoutMs?: number;
  /** The test clock's full key; unset, Redis TIME. */
  clockKey?: string;
}

export class BucketStore {
  private readonly spend_: ReturnType<typeof defineBucketCommand>;
  private readonly local = new Map<string, BucketUnits & { fullAtMs: number }>();
  private lastSweepMs = 0;
  private degraded_ = false;

  constructor(private readonly redis: RedisClient, private readonly opts: BucketStoreOptions = {}) {
    this.spend_ = defineBucketCommand(redis);
  }

  /** True while the last answer came from the in-process fallback. */
  get degraded(): boolean {
    return this.degraded_;
  }

  async spend(key: string, shape: BucketShape, spend: BucketSpend): Promise<{ allowed: boolean; state: BucketUnits }> {
    // Not connected: don't queue or wait, answer locally right away.
    if (this.redis.status === 'ready') {
      try {
        // A timed-out script may still run in Redis later; counting that call in both buckets is
        // harmless (it only errs on the strict side, once).
        const answer = await withTimeout((async () => {
          const clock = this.opts.clockKey ? await this.redis.get(this.opts.clockKey) : null;
          return this.spend_(`${this.opts.keyPrefix ?? ''}${key}`, shape, spend, clock === null ? undefined : Number(clock), clock !== null);
        })(), this.opts.redisTimeoutMs ?? 100, 'token bucket: redis timeout');
        this.degraded_ = false;
        return answer;
      } catch {
        // fall through: errors and timeouts are treated like an outage
      }
    }
    this.degraded_ = true;
    return this.spendLocal(key, shape, spend);
  }

  private spendLocal(key: string, shape: BucketShape, spend: BucketSpend) {
    const now = Date.now();
    this.sweep(now);
    const answer = spendBucket(this.local.get(key), now, shape, spend);
    // Re-inserted so the Map's order is least-recently-used first (for the MAX_LOCAL cap).
    this.local.delete(key);
    this.local.set(key, { ...answer.state, fullAtMs: answer.state.updatedAtMs + (shape.capUnits - answer.state.units) / shape.refillUnitsPerMs });
    return answer;
  }

  private sweep(now: number): void {
    if (now - this.lastSweepMs >= SWEEP_EVERY_MS) {
      this.lastSweepMs = now;
      for (const [k, v] of this.local) if (v.fullAtMs <= now) this.local.delete(k);
    }
    for (const k of this.local.keys()) {
      if (this.local.size < MAX_LOCAL) break;
      this.local.delete(k);
    }
  }
}
