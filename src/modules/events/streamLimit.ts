// At most STREAMS_PER_CREDENTIAL open event streams per credential (an API key, or one session),
// counted across every API process: a sorted set per credential in Redis, one member per open
// stream scored with its lease's expiry (Redis's clock). A stream's process refreshes its lease at
// every heartbeat and removes it when the stream closes; a process that died leaves leases that
// expire on their own. With Redis unreachable the count is this process's own streams.
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../core/redis.js';
import { AppError } from '../../core/errors.js';
import type { StreamLease } from './hub.js';

export const STREAMS_PER_CREDENTIAL = 10;

// KEYS[1] the credential's set; ARGV: member, lease ms, limit (0: refresh only if present).
const LEASE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[3])
if limit == 0 then
  if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
elseif redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return 1`;

/** This process's open streams per credential: the count while Redis is unreachable. */
const local = new Map<string, number>();

/**
 * A lease for one more stream of `credential`, or 429 `event_streams_exceeded`. `leaseMs` must
 * outlast a heartbeat (the refresh) by a margin.
 */
export async function acquireStreamLease(redis: RedisClient, prefix: string, credential: string, leaseMs: number): Promise<StreamLease> {
  const key = `${prefix}event-streams:${credential}`;
  const member = randomUUID();
  let shared = true;
  try {
    const granted = Number(await redis.eval(LEASE_SCRIPT, 1, key, member, String(leaseMs), String(STREAMS_PER_CREDENTIAL)));
    if (!granted) throw new AppError('event_streams_exceeded', { limit: STREAMS_PER_CREDENTIAL });
  } catch (err) {
    if (err instanceof AppError) throw err;
    shared = false;
    if ((local.get(credential) ?? 0) >= STREAMS_PER_CREDENTIAL) throw new AppError('event_streams_exceeded', { limit: STREAMS_PER_CREDENTIAL });
  }
  local.set(credential, (local.get(credential) ?? 0) + 1);
  let released = false;
  return {
    refresh: async () => {
      if (shared && !released) await redis.eval(LEASE_SCRIPT, 1, key, member, String(leaseMs), '0');
    },
    release: async () => {
      if (released) return;
      released = true;
      const n = (local.get(credential) ?? 1) - 1;
      if (n > 0) local.set(credential, n);
      else local.delete(credential);
      if (shared) await redis.zrem(key, member);
    },
  };
}
