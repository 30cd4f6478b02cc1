// Shared token buckets in Redis, with an in-process fallback when Redis is down.
//
// One Lua script per request = one round trip, atomic across any number of API
// processes, and the clock is Redis's own TIME so processes with skewed clocks
// still agree. Each bucket is a single small hash {u, t} that PEXPIREs when it
// would be full anyway (a missing key *is* a full bucket), so memory does not
// grow per request.
import type { RedisClient } from '../core/redis.js';
import { withTimeout } from '../core/timeout.js';
import { takeToken, UNITS_PER_TOKEN, type BucketPolicy, type BucketState, type RateDecision } from '../core/tokenBucket.js';

/**
 * Lua port of takeToken() in src/core/tokenBucket.ts. THE TWO MUST STAY IN STEP
 * (same units, same order of operations); test/http/rateLimiter.spec.ts checks it.
 * KEYS[1] = bucket hash (the only key: on a Redis Cluster a script's keys must share a slot, and
 * every bucket in its own slot spreads them over the masters); ARGV = capacity, refillPerMinute,
 * nowMs ('' for Redis TIME), '1' when nowMs is the test clock.
 * The test clock (RATE_LIMIT_TEST_CLOCK) is a ms count a test sets and advances, so its assertions
 * do not depend on how fast a loaded machine runs; unset, Redis TIME is used.
 * Hash fields: u = tokens in units of 1/60000 token (integer), t = updatedAt ms.
 * Returns {allowed 0|1, remaining, resetSeconds, retryAfterSeconds}.
 */
export const TAKE_TOKEN_LUA = `
local UNIT = ${UNITS_PER_TOKEN}
local rate = tonumber(ARGV[2])
local cap = tonumber(ARGV[1]) * UNIT
local now = tonumber(ARGV[3])
local testClock = ARGV[4] == '1'
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local h = redis.call('HMGET', KEYS[1], 'u', 't')
local units = tonumber(h[1])
local updated = tonumber(h[2])
if not units or not updated then
  units = cap
  updated = now
end
local elapsed = math.max(0, now - updated)
units = math.min(cap, units + elapsed * rate)
updated = math.max(updated, now)
local allowed = 0
if units >= UNIT then
  units = units - UNIT
  allowed = 1
end
local missing = cap - units
redis.call('HSET', KEYS[1], 'u', units, 't', updated)
-- expire once it would be full anyway: the missing key then reads as full (not under a test
-- clock, which real time does not move; the test deletes its keys)
if not testClock then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(missing / rate))) end
local retry = 0
if allowed == 0 then
  retry = math.max(1, math.ceil((UNIT - units) / (rate * 1000)))
end
return {allowed, math.floor(units / UNIT), math.ceil(missing / (rate * 1000)), retry}
`;

type TakeCommand = (key: string, capacity: number, refillPerMinute: number, nowMs?: number) => Promise<[number, number, number, number]>;

/** The Redis key of the test clock (ms) of the buckets under `keyPrefix`. */
export const testClockKey = (keyPrefix: string) => `${keyPrefix}rl:clock`;

/**
 * Register the script on a client (idempotent); exported for the agreement test. `clockKey`: the
 * test clock's key, read before each take (a second round trip, tests only: read inside the script
 * it would be a second key, in another slot than the bucket on a cluster).
 */
export function defineTakeCommand(redis: RedisClient, clockKey?: string): TakeCommand {
  const command = 'rateLimitTake';
  const r = redis as unknown as Record<string, (...args: Array<string | number>) => ReturnType<TakeCommand>>;
  if (typeof r[command] !== 'function') redis.defineCommand(command, { lua: TAKE_TOKEN_LUA, numberOfKeys: 1 });
  if (!clockKey) return (key, capacity, refillPerMinute, nowMs) => r[command](key, capacity, refillPerMinute, nowMs ?? '', '0');
  return async (key, capacity, refillPerMinute) => {
    const clock = await redis.get(clockKey);
    return clock === null ? r[command](key, capacity, refillPerMinute, '', '0') : r[command](key, capacity, refillPerMinute, clock, '1');
  };
}

// Fallback map housekeeping: sweep full buckets at most this often, and never
// keep more than MAX_LOCAL entries (oldest first out: a dropped bucket just
// reads as full, i.e. slightly lenient while degraded).
const SWEEP_EVERY_MS = 5_000;
const MAX_LOCAL = 50_000;

export class RateLimiter {
  private readonly take_: TakeCommand;
  private readonly keyPrefix: string;
  private readonly redisTimeoutMs: number;
  private readonly local = new Map<string, { state: BucketState; fullAtMs: number }>();
  private lastSweepMs = 0;
  private degraded_ = false;

  constructor(
    private readonly redis: RedisClient,
    opts: { keyPrefix?: string; redisTimeoutMs?: number; testClock?: boolean } = {},
  ) {
    this.keyPrefix = opts.keyPrefix ?? '';
    this.redisTimeoutMs = opts.redisTimeoutMs ?? 100;
    this.take_ = defineTakeCommand(redis, opts.testClock ? testClockKey(this.keyPrefix) : undefined);
  }

  /** True while the last decision came from the in-process fallback. */
  get degraded(): boolean {
    return this.degraded_;
  }

  async take(key: string, policy: BucketPolicy): Promise<RateDecision> {
    // Not connected: don't queue or wait, answer locally right away.
    if (this.redis.status === 'ready') {
      try {
        // A timed-out script may still run in Redis later; counting that request in both buckets
        // is harmless (it only errs on the strict side, once).
        const [allowed, remaining, resetSeconds, retryAfterSeconds] = await withTimeout(
          this.take_(`${this.keyPrefix}rl:${key}`, policy.capacity, policy.refillPerMinute), this.redisTimeoutMs, 'rate limiter: redis timeout',
        );
        this.degraded_ = false;
        return { allowed: allowed === 1, remaining, resetSeconds, retryAfterSeconds, limit: policy.refillPerMinute };
      } catch {
        // fall through: errors and timeouts are treated like an outage
      }
    }
    this.degraded_ = true;
    return this.takeLocal(key, policy);
  }

  private takeLocal(key: string, policy: BucketPolicy): RateDecision {
    const now = Date.now();
    this.sweep(now);
    const { decision, state } = takeToken(this.local.get(key)?.state, now, policy);
    // Re-insert so Map order is least-recently-used first (for the MAX_LOCAL cap).
    this.local.delete(key);
    const missingMs = ((policy.capacity - state.tokens) * 60_000) / policy.refillPerMinute;
    this.local.set(key, { state, fullAtMs: state.updatedAtMs + missingMs });
    return decision;
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
