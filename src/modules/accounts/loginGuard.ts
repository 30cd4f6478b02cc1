// Login throttling (OWASP Authentication cheat sheet; decisions §2 kept per address):
// - per (account, client address): the fifth failed attempt within 15 minutes stops that address
//   from trying that account for 15 minutes (429 auth_login_locked). Somebody else's address is
//   not affected, so nobody can lock an account out by failing on purpose.
// - per account, from every address together: after 10 failures within 15 minutes the account is
//   slowed, not locked: one attempt per 10 s (429 with the seconds to wait). An address that has
//   signed in to the account before (within 30 days) is exempt, so its owner is not slowed by a
//   spray from elsewhere.
// An attempt is counted before the password is checked (and taken back when it was right), in one
// atomic script, so parallel guesses cannot slip past the count. Kept in Redis so that every API
// process agrees; while Redis is down the same rules run in process memory rather than not at all.
import { slotTag, type RedisClient } from '../../core/redis.js';
import { AppError, waitInWords } from '../../core/errors.js';
import { withTimeout } from '../../core/timeout.js';

export const LOGIN_POLICY = {
  windowMs: 15 * 60_000,
  maxFailuresPerAddress: 5,
  slowAfterFailures: 10,
  slowGapMs: 10_000,
  knownAddressMs: 30 * 24 * 3600_000,
} as const;

/** Counters of one (account, address): what the decision is made from. */
export interface AttemptState {
  pairFailures: number;
  pairExpiresAt: number;
  accountFailures: number;
  accountLastFailureAt: number;
  knownAddress: boolean;
}

/** Milliseconds to wait before this attempt may be made, or 0 (pure: the Lua script below is its port). */
export function waitBeforeAttempt(s: AttemptState, now: number, p = LOGIN_POLICY): number {
  if (s.pairFailures >= p.maxFailuresPerAddress) return Math.max(1, s.pairExpiresAt - now);
  if (!s.knownAddress && s.accountFailures >= p.slowAfterFailures && now - s.accountLastFailureAt < p.slowGapMs) {
    return p.slowGapMs - (now - s.accountLastFailureAt);
  }
  return 0;
}

// KEYS: pair counter, account hash {n, t}, known-address flag. ARGV: windowMs, maxPerAddress,
// slowAfter, slowGapMs. Returns the ms to wait (0: the attempt is counted and may go ahead).
const BEGIN_ATTEMPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, maxPair, slowAfter, gap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local pair = tonumber(redis.call('GET', KEYS[1]) or '0')
if pair >= maxPair then return math.max(1, redis.call('PTTL', KEYS[1])) end
local acct = redis.call('HMGET', KEYS[2], 'n', 't')
local n, last = tonumber(acct[1] or '0'), tonumber(acct[2] or '0')
if redis.call('EXISTS', KEYS[3]) == 0 and n >= slowAfter and now - last < gap then return gap - (now - last) end
if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], window) end
redis.call('HINCRBY', KEYS[2], 'n', 1)
redis.call('HSET', KEYS[2], 't', now)
redis.call('PEXPIRE', KEYS[2], window)
return 0`;

// The attempt was right: this address's attempts were its owner's (typos), so they leave the
// account's count and the address's count starts over; the address is known from now on.
const SUCCEEDED = `
local mine = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('DEL', KEYS[1])
local n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
if n > 0 then redis.call('HSET', KEYS[2], 'n', math.max(0, n - mine)) end
redis.call('SET', KEYS[3], '1', 'PX', ARGV[1])
return 0`;

const MAX_LOCAL = 100_000;

export class LoginGuard {
  // The fallback's memory: one entry per key, with its expiry.
  private readonly local = new Map<string, { value: number; at: number; expiresAt: number }>();

  constructor(private readonly redis: RedisClient, private readonly prefix: string, private readonly redisTimeoutMs = 200) {}

  /** The account's three keys share one hash tag (its email's): the scripts below touch all three, which a Redis Cluster allows only within one slot. */
  private keys(email: string, address: string) {
    const e = email.trim().toLowerCase();
    const at = `${this.prefix}login:${slotTag(e)}`;
    return [`${at}:pair:${e}:${address}`, `${at}:acct:${e}`, `${at}:known:${e}:${address}`] as const;
  }

  /** Counts an attempt, or throws 429 auth_login_locked (with retry_after) when it must wait. */
  async beginAttempt(email: string, address: string): Promise<void> {
    const keys = this.keys(email, address);
    const p = LOGIN_POLICY;
    const redisWait = await this.viaRedis(() => this.redis.eval(BEGIN_ATTEMPT, 3, ...keys, p.windowMs, p.maxFailuresPerAddress, p.slowAfterFailures, p.slowGapMs));
    const waitMs = redisWait === undefined ? this.beginLocally(keys) : Number(redisWait);
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      throw new AppError('auth_login_locked', { retry_after: seconds, retry_in: waitInWords(seconds) });
    }
  }

  /** The password was right. */
  async succeeded(email: string, address: string): Promise<void> {
    const keys = this.keys(email, address);
    const done = await this.viaRedis(() => this.redis.eval(SUCCEEDED, 3, ...keys, LOGIN_POLICY.knownAddressMs));
    if (done === undefined) this.succeededLocally(keys);
  }

  /** The Redis answer, or undefined while Redis is down or slow (the caller then decides locally). */
  private async viaRedis(run: () => Promise<unknown>): Promise<unknown> {
    if (this.redis.status !== 'ready') return undefined;
    return withTimeout(run(), this.redisTimeoutMs, 'login guard: redis timeout').catch(() => undefined);
  }

  private read(key: string, now: number) {
    const entry = this.local.get(key);
    if (entry && entry.expiresAt <= now) this.local.delete(key);
    return entry && entry.expiresAt > now ? entry : undefined;
  }

  private write(key: string, value: number, at: number, expiresAt: number) {
    this.local.delete(key); // re-inserted last: the map's order is oldest first for the size cap
    this.local.set(key, { value, at, expiresAt });
    for (const k of this.local.keys()) {
      if (this.local.size <= MAX_LOCAL) break;
      this.local.delete(k);
    }
  }

  private beginLocally([pairKey, acctKey, knownKey]: readonly string[]): number {
    const now = Date.now();
    const p = LOGIN_POLICY;
    const pair = this.read(pairKey!, now);
    const acct = this.read(acctKey!, now);
    const wait = waitBeforeAttempt({
      pairFailures: pair?.value ?? 0, pairExpiresAt: pair?.expiresAt ?? 0,
      accountFailures: acct?.value ?? 0, accountLastFailureAt: acct?.at ?? 0, knownAddress: !!this.read(knownKey!, now),
    }, now);
    if (wait > 0) return wait;
    this.write(pairKey!, (pair?.value ?? 0) + 1, now, pair?.expiresAt ?? now + p.windowMs);
    this.write(acctKey!, (acct?.value ?? 0) + 1, now, now + p.windowMs);
    return 0;
  }

  private succeededLocally([pairKey, acctKey, knownKey]: readonly string[]): void {
    const now = Date.now();
    const mine = this.read(pairKey!, now)?.value ?? 0;
    this.local.delete(pairKey!);
    const acct = this.read(acctKey!, now);
    if (acct) acct.value = Math.max(0, acct.value - mine);
    this.write(knownKey!, 1, now, now + LOGIN_POLICY.knownAddressMs);
  }
}
