// A per-organization budget of CPU time for heavy topology reads (issue 22): the fair scheduler and
// PerKeyGate let an organization run one heavy read at a time, but back to back those still take
// most of a core on a 2-core machine, which another organization's cheap requests then wait for.
// So each heavy read's time is charged to its organization in a bucket of CPU-milliseconds that
// refills at a steady rate (HEAVY_READ_BUDGET_MS_PER_SECOND) up to a burst (HEAVY_READ_BUDGET_BURST_MS).
// An organization whose bucket is empty gets 429 rate_limit_exceeded before any work is done;
// cached and light reads never touch the bucket.
//
// The same token bucket as the request rate limiter (src/core/bucketStore.ts: one Lua script on one
// key per organization, Redis-Cluster-safe, an in-process bucket while Redis is down), counted in
// 1/1000 CPU-ms; what differs is the spending: admitted while the balance is positive (nothing
// taken), then the read's measured cost is charged afterwards, which may take the balance into
// debt, at most one burst deep. Its test clock is its own (budgetClockKey; RATE_LIMIT_TEST_CLOCK):
// bench/isolation.ts runs the limiter's clock fast, which must not refill this budget.
import type { RedisClient } from '../../core/redis.js';
import { AppError } from '../../core/errors.js';
import { BucketStore } from '../../core/bucketStore.js';
import { secondsUntil, type BucketShape } from '../../core/tokenBucket.js';

export interface HeavyReadBudgetPolicy {
  /** HEAVY_READ_BUDGET_BURST_MS: the most CPU-ms an idle organization may spend at once; 0 turns the budget off. */
  burstMs: number;
  /** HEAVY_READ_BUDGET_MS_PER_SECOND: CPU-ms added per second; 0 turns the budget off. */
  refillMsPerSecond: number;
}

export const DEFAULT_HEAVY_READ_BUDGET: HeavyReadBudgetPolicy = { burstMs: 10_000, refillMsPerSecond: 400 };

/** Units of 1/1000 CPU-ms: one elapsed ms then adds exactly refillMsPerSecond units (integers, exact in Lua too). */
const UNITS_PER_MS = 1000;

/** The policy as a bucket: one burst deep, and as deep again in debt. */
export const budgetBucket = (policy: HeavyReadBudgetPolicy): BucketShape =>
  ({ capUnits: policy.burstMs * UNITS_PER_MS, refillUnitsPerMs: policy.refillMsPerSecond, debtUnits: policy.burstMs * UNITS_PER_MS });

/** The Redis key of the budgets' test clock (ms), read when RATE_LIMIT_TEST_CLOCK is on. */
export const budgetClockKey = (keyPrefix: string) => `${keyPrefix}hrb:clock`;

const RECENT_COSTS = 15; // per organization, for the median that Retry-After waits for
const MAX_ORGS_TRACKED = 10_000; // in-process map: oldest organization out first
const DEFAULT_COST_MS = 100; // the median before any read was measured

export class HeavyReadBudget {
  private readonly store: BucketStore;
  private readonly costs = new Map<string, number[]>();

  constructor(
    redis: RedisClient,
    readonly policy: HeavyReadBudgetPolicy,
    opts: { keyPrefix?: string; redisTimeoutMs?: number; testClock?: boolean } = {},
  ) {
    this.store = new BucketStore(redis, { keyPrefix: opts.keyPrefix, redisTimeoutMs: opts.redisTimeoutMs, clockKey: opts.testClock ? budgetClockKey(opts.keyPrefix ?? '') : undefined });
  }

  get enabled(): boolean {
    return this.policy.refillMsPerSecond > 0 && this.policy.burstMs > 0; // a bucket of 0 would refuse every heavy read
  }

  /** Throws 429 rate_limit_exceeded when the organization's budget is spent (before any work). */
  async admit(organizationId: string): Promise<void> {
    if (!this.enabled) return;
    const shape = budgetBucket(this.policy);
    const { allowed, state } = await this.store.spend(`hrb:${organizationId}`, shape, { cost: 0, need: 1 });
    if (!allowed) {
      // until the balance covers the organization's median read: what a retry should be able to afford
      const retryAfterSeconds = secondsUntil(state.units, Math.round(this.medianMs(organizationId) * UNITS_PER_MS), shape);
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
    await this.store.spend(`hrb:${organizationId}`, budgetBucket(this.policy), { cost: Math.round(costMs * UNITS_PER_MS), need: 0, force: true });
  }

  /** The median of the organization's recent heavy reads in this process (what a retry should be able to afford). */
  medianMs(organizationId: string): number {
    const recent = [...(this.costs.get(organizationId) ?? [])].sort((a, b) => a - b);
    return recent.length ? recent[Math.floor(recent.length / 2)] : DEFAULT_COST_MS;
  }
}
