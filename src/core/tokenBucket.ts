// Token buckets: pure math, no I/O (product decisions §4).
//
// One bucket mechanism serves both the rate limiter (src/http/rateLimiter.ts: one token per request)
// and the heavy-read CPU budget (src/modules/topology/heavyReadBudget.ts: a measured cost charged
// afterwards, the balance allowed into debt). spendBucket() is that mechanism; the Lua script in
// src/core/bucketStore.ts (BUCKET_LUA) is a line-by-line port of it. THE TWO MUST STAY IN STEP
// (test/core/bucketStore.spec.ts compares them on many inputs).
//
// Exactness: every quantity is an integer count of "units" (for the limiter 1/60 000 token, so one
// ms adds exactly `refillPerMinute` units) and an integer-valued double (< 2^53), so the arithmetic
// is exact and identical in JS and in Redis's Lua (both IEEE doubles): no drift such as 4.9999
// tokens where 5 are due.

/** A bucket's shape in units: it holds at most capUnits, gains refillUnitsPerMs per ms, and may go debtUnits below zero. */
export interface BucketShape {
  capUnits: number;
  refillUnitsPerMs: number;
  debtUnits: number;
}

/** What one call asks: allowed when the refilled balance is at least `need`; then `cost` is taken (always, when `force`). */
export interface BucketSpend {
  cost: number;
  need: number;
  force?: boolean;
}

export interface BucketUnits {
  units: number;
  updatedAtMs: number;
}

/**
 * Refill up to nowMs, then spend. A missing state is a full bucket; a clock going backwards neither
 * refills nor moves updatedAt back; a refused spend takes nothing (unless forced).
 * BUCKET_LUA (src/core/bucketStore.ts) IS A PORT OF THIS: keep them in step.
 */
export function spendBucket(state: BucketUnits | undefined, nowMs: number, shape: BucketShape, spend: BucketSpend): { allowed: boolean; state: BucketUnits } {
  const now = Math.floor(nowMs); // integer ms keeps units integral (Redis TIME is floored the same way)
  let units = state ? state.units : shape.capUnits;
  let updated = state ? state.updatedAtMs : now;
  units = Math.min(shape.capUnits, units + Math.max(0, now - updated) * shape.refillUnitsPerMs);
  updated = Math.max(updated, now);
  const allowed = units >= spend.need;
  if (allowed || spend.force) units = Math.max(0 - shape.debtUnits, units - spend.cost); // 0 - x: never -0 (Lua would store "-0")
  return { allowed, state: { units, updatedAtMs: updated } };
}

/** Whole seconds until the bucket holds `needUnits` again (at least 1). */
export const secondsUntil = (units: number, needUnits: number, shape: BucketShape) =>
  Math.max(1, Math.ceil((needUnits - units) / (shape.refillUnitsPerMs * 1000)));

export interface BucketPolicy {
  capacity: number; // burst size, whole tokens
  refillPerMinute: number; // whole tokens per minute
}

export const RATE_POLICIES = {
  user: { capacity: 150, refillPerMinute: 300 },
  anonymous: { capacity: 10, refillPerMinute: 40 },
  daemon: { capacity: 300, refillPerMinute: 600 },
} as const satisfies Record<string, BucketPolicy>;

export interface BucketState {
  tokens: number; // fractional tokens left at updatedAtMs
  updatedAtMs: number;
}

export interface RateDecision {
  allowed: boolean;
  remaining: number; // whole tokens left after this request
  resetSeconds: number; // until the bucket is full again, rounded up
  retryAfterSeconds: number; // until one token is available (>= 1) when denied; 0 when allowed
  limit: number; // refillPerMinute
}

/** Units per token (see header): one minute in ms. */
export const UNITS_PER_TOKEN = 60_000;

/** A request-rate policy as a bucket: one token is UNITS_PER_TOKEN units; no debt. */
export const rateBucket = (policy: BucketPolicy): BucketShape => ({ capUnits: policy.capacity * UNITS_PER_TOKEN, refillUnitsPerMs: policy.refillPerMinute, debtUnits: 0 });
export const TAKE_ONE_TOKEN: BucketSpend = { cost: UNITS_PER_TOKEN, need: UNITS_PER_TOKEN };

/** The limiter's answer (and its headers) from a take's outcome: the units left after it. */
export function rateDecision(allowed: boolean, units: number, policy: BucketPolicy): RateDecision {
  const shape = rateBucket(policy);
  const fullInSeconds = Math.ceil((shape.capUnits - units) / (shape.refillUnitsPerMs * 1000));
  return {
    allowed,
    remaining: Math.floor(units / UNITS_PER_TOKEN),
    resetSeconds: fullInSeconds,
    retryAfterSeconds: allowed ? 0 : secondsUntil(units, UNITS_PER_TOKEN, shape),
    limit: policy.refillPerMinute,
  };
}

/**
 * Refill the bucket up to nowMs, then try to take one token.
 * A missing state is a full bucket; a denied request consumes nothing.
 */
export function takeToken(
  state: BucketState | undefined,
  nowMs: number,
  policy: BucketPolicy,
): { decision: RateDecision; state: BucketState } {
  // Math.round recovers the exact integer units from tokens = units / 60000.
  const units = state ? { units: Math.round(state.tokens * UNITS_PER_TOKEN), updatedAtMs: state.updatedAtMs } : undefined;
  const { allowed, state: next } = spendBucket(units, nowMs, rateBucket(policy), TAKE_ONE_TOKEN);
  return { decision: rateDecision(allowed, next.units, policy), state: { tokens: next.units / UNITS_PER_TOKEN, updatedAtMs: next.updatedAtMs } };
}

/** Sign-ups per client address per hour unless SIGNUP_LIMIT_PER_HOUR says otherwise (src/config.ts). */
export const DEFAULT_SIGNUP_LIMIT_PER_HOUR = 5;

/** Units per token of an hourly bucket: one hour in ms, so one ms adds exactly `perHour` units (exact, as above). */
export const UNITS_PER_HOURLY_TOKEN = 3_600_000;

/** `perHour` tokens an hour, a burst of as many: one token is UNITS_PER_HOURLY_TOKEN units; no debt. */
export const hourlyBucket = (perHour: number): BucketShape => ({ capUnits: perHour * UNITS_PER_HOURLY_TOKEN, refillUnitsPerMs: perHour, debtUnits: 0 });
export const TAKE_ONE_HOURLY_TOKEN: BucketSpend = { cost: UNITS_PER_HOURLY_TOKEN, need: UNITS_PER_HOURLY_TOKEN };

/** Response headers for a rate-limited request (Retry-After only on a 429). */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  const h: Record<string, string> = {
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': String(d.resetSeconds),
  };
  if (!d.allowed) h['Retry-After'] = String(Math.max(1, d.retryAfterSeconds));
  return h;
}
