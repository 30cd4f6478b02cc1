// Login lockout (decisions §2): five failures for one email within 15 minutes lock that email
// for 15 minutes. Kept in Redis so that every API process sees the same count.
import type { Redis } from 'ioredis';
import { AppError } from '../../core/errors.js';

const WINDOW_MS = 15 * 60 * 1000;
const MAX_FAILURES = 5;

// Counts one failure; on the fifth, replaces the counter by a lock. One atomic script.
const RECORD_FAILURE = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n >= tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
  redis.call('DEL', KEYS[1])
end
return n`;

export class LoginGuard {
  constructor(private readonly redis: Redis, private readonly prefix: string) {}

  private keys(email: string) {
    const e = email.toLowerCase();
    return [`${this.prefix}login:fail:${e}`, `${this.prefix}login:lock:${e}`] as const;
  }

  /** Throws 429 while the email is locked. A Redis outage must not lock everybody out: it lets the attempt through. */
  async assertNotLocked(email: string): Promise<void> {
    if (this.redis.status !== 'ready') return;
    const ttl = await this.redis.pttl(this.keys(email)[1]).catch(() => -2);
    if (ttl > 0) throw new AppError('auth_login_locked', { retry_after: Math.ceil(ttl / 1000) });
  }

  async recordFailure(email: string): Promise<void> {
    if (this.redis.status !== 'ready') return;
    await this.redis.eval(RECORD_FAILURE, 2, ...this.keys(email), WINDOW_MS, MAX_FAILURES).catch(() => undefined);
  }

  async clear(email: string): Promise<void> {
    if (this.redis.status !== 'ready') return;
    await this.redis.del(...this.keys(email)).catch(() => undefined);
  }
}
