// A per-organization budget of CPU time for heavy topology reads: the fair scheduler and
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
//
// Each organization brings its own budget, so one person signing up many organizations from one
// address would multiply it: a heavy read of a request is also paid from its client
// address's budget (HEAVY_READ_BUDGET_PER_ADDRESS_*; the address is the rate limiter's,
// clientAddress), admitted only while BOTH balances are positive and charged to both. A layout job
// in the worker has no request: it is charged to its organization only.
import type { RedisClient } from '../../core/redis.js';
import { AppError } from '../../core/errors.js';
import { BucketStore } from '../../core/bucketStore.js';
import { secondsUntil, type BucketShape } from '../../core/tokenBucket.js';
import { clientAddress } from '../../http/rateLimiter.js';

export interface HeavyReadBudgetPolicy {
  /** HEAVY_READ_BUDGET_BURST_MS: the most CPU-ms an idle organization may spend at once; 0 turns the budget off. */
  burstMs: number;
  /** HEAVY_READ_BUDGET_MS_PER_SECOND: CPU-ms added per second; 0 turns the budget off. */
  refillMsPerSecond: number;
}

/** Who pays a heavy read: its organization and, for a request, the client address it came from. */
export interface HeavyReadPayer {
  organizationId: string;
  /** The request's client address (clientAddress: ctx.ip); absent outside a request (a layout job). */
  address?: string;
}

/** The payer of a heavy read starting here: read in the request's own context (not in a queued task's). */
export const payerOf = (organizationId: string): HeavyReadPayer => ({ organizationId, address: clientAddress.getStore() });

export const DEFAULT_HEAVY_READ_BUDGET: HeavyReadBudgetPolicy = { burstMs: 10_000, refillMsPerSecond: 400 };

/** Units of 1/1000 CPU-ms: one elapsed ms then adds exactly refillMsPerSecond units (integers, exact in Lua too). */
const UNITS_PER_MS = 1000;

/** The policy as a bucket: one burst deep, and as deep again in debt. */
export const budgetBucket = (policy: HeavyReadBudgetPolicy): BucketShape =>
  ({ capUnits: policy.burstMs * UNITS_PER_MS, refillUnitsPerMs: policy.refillMsPerSecond, debtUnits: policy.burstMs * UNITS_PER_MS });

/** The Redis key of the budgets' test clock (ms), read when RATE_LIMIT_TEST_CLOCK is on. */
export const budgetClockKey = (keyPrefix: string) => `${keyPrefix}hrb:clock`;

const RECENT_COSTS = 15; // per bucket, for the median that Retry-After waits for
const MAX_BUCKETS_TRACKED = 10_000; // in-process map: oldest bucket out first
const DEFAULT_COST_MS = 100; // the median before any read was measured

const on = (policy: HeavyReadBudgetPolicy | undefined): policy is HeavyReadBudgetPolicy =>
  !!policy && policy.refillMsPerSecond > 0 && policy.burstMs > 0; // a bucket of 0 would refuse every heavy read

/** One bucket a heavy read is paid from: the organization's or the client address's. */
interface Bucket { key: string; shape: BucketShape; who: string }

export class HeavyReadBudget {
  private readonly store: BucketStore;
  private readonly costs = new Map<string, number[]>();
  /** HEAVY_READ_BUDGET_PER_ADDRESS_*: each client address's budget, whatever the organization (off when absent or 0). */
  readonly perAddress: HeavyReadBudgetPolicy | undefined;

  constructor(
    redis: RedisClient,
    readonly policy: HeavyReadBudgetPolicy,
    opts: { keyPrefix?: string; redisTimeoutMs?: number; testClock?: boolean; perAddress?: HeavyReadBudgetPolicy } = {},
  ) {
    this.perAddress = opts.perAddress;
    this.store = new BucketStore(redis, { keyPrefix: opts.keyPrefix, redisTimeoutMs: opts.redisTimeoutMs, clockKey: opts.testClock ? budgetClockKey(opts.keyPrefix ?? '') : undefined });
  }

  get enabled(): boolean {
    return on(this.policy) || on(this.perAddress);
  }

  /** The buckets `payer` pays from: the organization's and the address's, each while its budget is on. */
  private buckets(payer: HeavyReadPayer | string): Bucket[] {
    const { organizationId, address } = typeof payer === 'string' ? { organizationId: payer, address: undefined } : payer;
    const out: Bucket[] = [];
    if (on(this.policy)) out.push({ key: `hrb:${organizationId}`, shape: budgetBucket(this.policy), who: 'Your organization' });
    if (address && on(this.perAddress)) out.push({ key: `hrb:ip:${address}`, shape: budgetBucket(this.perAddress), who: 'Your client address (all its organizations together)' });
    return out;
  }

  /**
   * Throws 429 rate_limit_exceeded, before any work, when the organization's budget or the client
   * address's is spent: both must allow the read. Retry-After: until every refusing bucket covers
   * its median read (what a retry should be able to afford).
   */
  async admit(payer: HeavyReadPayer | string): Promise<void> {
    const buckets = this.buckets(payer);
    const refusals: Array<{ bucket: Bucket; seconds: number }> = [];
    await Promise.all(buckets.map(async (bucket) => {
      const { allowed, state } = await this.store.spend(bucket.key, bucket.shape, { cost: 0, need: 1 });
      if (!allowed) refusals.push({ bucket, seconds: secondsUntil(state.units, Math.round(this.medianMs(bucket.key) * UNITS_PER_MS), bucket.shape) });
    }));
    if (!refusals.length) return;
    const longest = refusals.reduce((a, b) => (b.seconds > a.seconds ? b : a));
    throw new AppError('rate_limit_exceeded', { retry_after: longest.seconds },
      `${longest.bucket.who} has used its CPU time for large topology computations (views, exports, timelines); try again in ${longest.seconds} seconds`);
  }

  /** Charges `costMs` of CPU time (a heavy read's measured duration) to the organization, and to the address when given. */
  async charge(payer: HeavyReadPayer | string, costMs: number): Promise<void> {
    if (!(costMs > 0)) return;
    await Promise.all(this.buckets(payer).map((bucket) => {
      this.remember(bucket.key, costMs);
      return this.store.spend(bucket.key, bucket.shape, { cost: Math.round(costMs * UNITS_PER_MS), need: 0, force: true });
    }));
  }

  private remember(key: string, costMs: number): void {
    const recent = this.costs.get(key) ?? [];
    this.costs.delete(key);
    recent.push(costMs);
    if (recent.length > RECENT_COSTS) recent.shift();
    this.costs.set(key, recent);
    if (this.costs.size > MAX_BUCKETS_TRACKED) this.costs.delete(this.costs.keys().next().value!);
  }

  /** The median of a bucket's recent heavy reads in this process (what a retry should be able to afford). */
  private medianMs(key: string): number {
    const recent = [...(this.costs.get(key) ?? [])].sort((a, b) => a - b);
    return recent.length ? recent[Math.floor(recent.length / 2)] : DEFAULT_COST_MS;
  }
}
