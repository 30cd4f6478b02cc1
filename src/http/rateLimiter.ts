// The request rate limiter (product decisions §4): one token per request from the principal's
// bucket, shared by every API process through Redis (src/core/bucketStore.ts: one Lua script on one
// key, Redis TIME, an in-process fallback while Redis is down; the math in src/core/tokenBucket.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RedisClient } from '../core/redis.js';
import { BucketStore } from '../core/bucketStore.js';
import { hourlyBucket, rateBucket, rateDecision, secondsUntil, TAKE_ONE_HOURLY_TOKEN, TAKE_ONE_TOKEN, UNITS_PER_HOURLY_TOKEN, type BucketPolicy, type RateDecision } from '../core/tokenBucket.js';

/**
 * The client address of the request being handled: ctx.ip (with TRUST_PROXY=true, the first
 * X-Forwarded-For address), set by the limiter's middleware (authenticate.ts) around the rest of
 * the request. Budgets charged per address as well as per organization read it (the heavy-read
 * budget, src/modules/topology/heavyReadBudget.ts), so no route passes it along.
 */
export const clientAddress = new AsyncLocalStorage<string>();

/** The Redis key of the test clock (ms) of the buckets under `keyPrefix` (RATE_LIMIT_TEST_CLOCK). */
export const testClockKey = (keyPrefix: string) => `${keyPrefix}rl:clock`;

export class RateLimiter {
  private readonly store: BucketStore;

  constructor(redis: RedisClient, opts: { keyPrefix?: string; redisTimeoutMs?: number; testClock?: boolean } = {}) {
    this.store = new BucketStore(redis, { keyPrefix: opts.keyPrefix, redisTimeoutMs: opts.redisTimeoutMs, clockKey: opts.testClock ? testClockKey(opts.keyPrefix ?? '') : undefined });
  }

  /** True while the last decision came from the in-process fallback. */
  get degraded(): boolean {
    return this.store.degraded;
  }

  async take(key: string, policy: BucketPolicy): Promise<RateDecision> {
    const { allowed, state } = await this.store.spend(`rl:${key}`, rateBucket(policy), TAKE_ONE_TOKEN);
    return rateDecision(allowed, state.units, policy);
  }

  /** One token of the hourly bucket `key` (`perHour` an hour, as many at once): refused, the seconds until the next. */
  async takeHourly(key: string, perHour: number): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    const shape = hourlyBucket(perHour);
    const { allowed, state } = await this.store.spend(`rl:${key}`, shape, TAKE_ONE_HOURLY_TOKEN);
    return { allowed, retryAfterSeconds: allowed ? 0 : secondsUntil(state.units, UNITS_PER_HOURLY_TOKEN, shape) };
  }
}
