// Token-bucket rate limiting: pure math, no I/O (product decisions §4).
//
// The Lua script in src/http/rateLimiter.ts (TAKE_TOKEN_LUA) is a line-by-line
// port of takeToken() below. THE TWO MUST STAY IN STEP: any change here must be
// made there too (test/http/rateLimiter.spec.ts compares them on many inputs).
//
// Exactness: a bucket refills refillPerMinute tokens per 60 000 ms, so we count
// in "units" of 1/60 000 token. One ms then adds exactly `refillPerMinute` units
// and every quantity is an integer-valued double (< 2^53), so the arithmetic is
// exact and identical in JS and in Redis's Lua (both IEEE doubles) — no drift
// such as 4.9999 tokens where 5 are due.

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

/**
 * Refill the bucket up to nowMs, then try to take one token.
 * A missing state is a full bucket; a denied request consumes nothing.
 */
export function takeToken(
  state: BucketState | undefined,
  nowMs: number,
  policy: BucketPolicy,
): { decision: RateDecision; state: BucketState } {
  const now = Math.floor(nowMs); // integer ms keeps units integral (Redis TIME is floored the same way)
  const rate = policy.refillPerMinute; // units per ms
  const cap = policy.capacity * UNITS_PER_TOKEN;
  // Math.round recovers the exact integer units from tokens = units / 60000.
  let units = state ? Math.round(state.tokens * UNITS_PER_TOKEN) : cap;
  let updated = state ? state.updatedAtMs : now;

  // A clock going backwards must neither refill nor move updatedAt back.
  const elapsed = Math.max(0, now - updated);
  units = Math.min(cap, units + elapsed * rate);
  updated = Math.max(updated, now);

  const allowed = units >= UNITS_PER_TOKEN;
  if (allowed) units -= UNITS_PER_TOKEN;

  const missing = cap - units;
  const decision: RateDecision = {
    allowed,
    remaining: Math.floor(units / UNITS_PER_TOKEN),
    resetSeconds: Math.ceil(missing / (rate * 1000)),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((UNITS_PER_TOKEN - units) / (rate * 1000))),
    limit: rate,
  };
  return { decision, state: { tokens: units / UNITS_PER_TOKEN, updatedAtMs: updated } };
}

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
