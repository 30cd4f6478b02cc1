// A per-organization budget of CPU time for heavy topology reads (issue 22): the fair scheduler and
// PerKeyGate let an organization run one heavy read at a time, but back to back those still take
// most of a core on a 2-core machine, which another organization's cheap requests then wait for.
// So each heavy read's time is charged to its organization in a bucket of CPU-milliseconds that
// refills at a steady rate (HEAVY_READ_BUDGET_MS_PER_SECOND, 400 = 40 % of one core) up to a burst
// (HEAVY_READ_BUDGET_BURST_MS, 10 s worth). An organization whose bucket is empty gets 429
// rate_limit_exceeded before any work is done; cached and light reads never touch the bucket.
//
// The cost is known only after the read, so the limiter's take-one-token script (src/http/
// rateLimiter.ts) cannot be reused as is: this one charges a measured amount afterwards (the bucket
// may go into debt, at most one burst deep) and admits while the balance is positive. Same design
// otherwise: one Lua script on ONE key per organization (Redis-Cluster-safe), Redis TIME or, with
// RATE_LIMIT_TEST_CLOCK, a test clock of its own (budgetClockKey; unset, Redis TIME: bench/isolation.ts
// runs the limiter's clock fast, which must not refill this budget), integer units so JS and Lua
// agree exactly, an in-process bucket while Redis is down.
import type { RedisClient } from '../../core/redis.js';
import { AppError } from '../../core/errors.js';
import { withTimeout } from '../../core/timeout.js';

export interface HeavyReadBudgetPolicy {
  /** HEAVY_READ_BUDGET_BURST_MS (10 000): the most CPU-ms an idle organization may spend at once; 0 turns the budget off. */
  burstMs: number;
  /** HEAVY_READ_BUDGET_MS_PER_SECOND (400): CPU-ms added per second; 0 turns the budget off. */
  refillMsPerSecond: number;
}

export const DEFAULT_HEAVY_READ_BUDGET: HeavyReadBudgetPolicy = { burstMs: 10_000, refillMsPerSecond: 400 };

/** Units of 1/1000 CPU-ms: one elapsed ms then adds exactly refillMsPerSecond units (integers, exact in Lua too). */
const UNITS_PER_MS = 1000;

export interface BudgetState { units: number; updatedAtMs: number }

/**
 * Refill up to nowMs, then take `costMs` (0: only look). Admitted while the balance is positive;
 * denied: the whole seconds until the balance covers `needMs` (the organization's median cost).
 * A missing state is a full bucket. THE LUA BELOW IS A PORT OF THIS: keep them in step.
 */
export function spendBudget(state: BudgetState | undefined, nowMs: number, policy: HeavyReadBudgetPolicy, costMs: number, needMs: number) {
  const now = Math.floor(nowMs);
  const rate = policy.refillMsPerSecond;
  const cap = policy.burstMs * UNITS_PER_MS;
  let units = state ? state.units : cap;
  let updated = state ? state.updatedAtMs : now;
  units = Math.min(cap, units + Math.max(0, now - updated) * rate);
  updated = Math.max(updated, now);
  units = Math.max(-cap, units - Math.round(costMs * UNITS_PER_MS));
  const allowed = units > 0;
  const retryAfterSeconds = allowed ? 0 : Math.max(1, Math.ceil((Math.round(needMs * UNITS_PER_MS) - units) / (rate * 1000)));
  return { allowed, retryAfterSeconds, state: { units, updatedAtMs: updated } };
}

/** KEYS[1] = the organization's bucket; ARGV = burstMs, refillMsPerSecond, nowMs ('' for TIME), '1' under the test clock, cost units, need units. */
export const SPEND_BUDGET_LUA = `
local rate = tonumber(ARGV[2])
local cap = tonumber(ARGV[1]) * ${UNITS_PER_MS}
local now = tonumber(ARGV[3])
local testClock = ARGV[4] == '1'
local cost = tonumber(ARGV[5])
local need = tonumber(ARGV[6])
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
units = math.min(cap, units + math.max(0, now - updated) * rate)
updated = math.max(updated, now)
units = math.max(-cap, units - cost)
if cost > 0 then
  redis.call('HSET', KEYS[1], 'u', units, 't', updated)
  -- gone once it would be full anyway (a missing key reads as full); not under the test clock
  if not testClock then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((cap - units) / rate))) end
end
local allowed = 0
local retry = 0
if units > 0 then allowed = 1 else retry = math.max(1, math.ceil((need - units) / (rate * 1000))) end
return {allowed, retry}
`;

type SpendCommand = (key: string, burstMs: number, refillMsPerSecond: number, nowMs: string, testClock: string, cost: number, need: number) => Promise<[number, number]>;

/** The Redis key of the budgets' test clock (ms), read when RATE_LIMIT_TEST_CLOCK is on. */
export const budgetClockKey = (keyPrefix: string) => `${keyPrefix}hrb:clock`;

const RECENT_COSTS = 15; // per organization, for the median that Retry-After waits for
const MAX_ORGS_TRACKED = 10_000; // in-process maps: oldest organization out first
const DEFAULT_COST_MS = 100; // the median before any read was measured

export class HeavyReadBudget {
  private readonly spend_: SpendCommand;
  private readonly local = new Map<string, BudgetState>();
  private readonly costs = new Map<string, number[]>();

  constructor(
    private readonly redis: RedisClient,
    readonly policy: HeavyReadBudgetPolicy,
    private readonly opts: { keyPrefix?: string; redisTimeoutMs?: number; testClock?: boolean } = {},
  ) {
    const command = 'heavyReadSpend';
    const r = redis as unknown as Record<string, SpendCommand>;
    if (typeof r[command] !== 'function') redis.defineCommand(command, { lua: SPEND_BUDGET_LUA, numberOfKeys: 1 });
    this.spend_ = (...args) => r[command](...args);
  }

  get enabled(): boolean {
    return this.policy.refillMsPerSecond > 0 && this.policy.burstMs > 0; // a bucket of 0 would refuse every heavy read
  }

  /** Throws 429 rate_limit_exceeded when the organization's budget is spent (before any work). */
  async admit(organizationId: string): Promise<void> {
    if (!this.enabled) return;
    const { allowed, retryAfterSeconds } = await this.spend(organizationId, 0);
    if (!allowed) {
      throw new AppError('rate_limit_exceeded', { retry_after: retryAfterSeconds },
        `Your organization has used its CPU time for large topology computations (views, exports, timelines); try again in ${retryAfterSeconds} seconds`);
    }
  }

  /** Charges `costMs` of CPU time (a heavy read's measured duration) to the organization. */
  async charge(organizationId: string, costMs: number): Promise<void> {
    if (!this.enabled || !(costMs > 0)) return;
    const recent = this.costs.get(organizationId) ?? [];
    this.costs.delete(organizationId);
    recent.push(costMs);
    if (recent.length > RECENT_COSTS) recent.shift();
    this.costs.set(organizationId, recent);
    if (this.costs.size > MAX_ORGS_TRACKED) this.costs.delete(this.costs.keys().next().value!);
    await this.spend(organizationId, costMs);
  }

  /** The median of the organization's recent heavy reads in this process (what a retry should be able to afford). */
  medianMs(organizationId: string): number {
    const recent = [...(this.costs.get(organizationId) ?? [])].sort((a, b) => a - b);
    return recent.length ? recent[Math.floor(recent.length / 2)] : DEFAULT_COST_MS;
  }

  private async spend(organizationId: string, costMs: number): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    const need = this.medianMs(organizationId);
    if (this.redis.status === 'ready') {
      try {
        const prefix = this.opts.keyPrefix ?? '';
        const clock = this.opts.testClock ? await this.redis.get(budgetClockKey(prefix)) : null;
        const [allowed, retry] = await withTimeout(this.spend_(`${prefix}hrb:${organizationId}`, this.policy.burstMs, this.policy.refillMsPerSecond,
          clock ?? '', clock === null ? '0' : '1', Math.round(costMs * UNITS_PER_MS), Math.round(need * UNITS_PER_MS)), this.opts.redisTimeoutMs ?? 100, 'heavy read budget: redis timeout');
        return { allowed: allowed === 1, retryAfterSeconds: retry };
      } catch {
        // an outage or a timeout: account in this process
      }
    }
    const { allowed, retryAfterSeconds, state } = spendBudget(this.local.get(organizationId), Date.now(), this.policy, costMs, need);
    this.local.delete(organizationId);
    this.local.set(organizationId, state);
    if (this.local.size > MAX_ORGS_TRACKED) this.local.delete(this.local.keys().next().value!);
    return { allowed, retryAfterSeconds };
  }
}
