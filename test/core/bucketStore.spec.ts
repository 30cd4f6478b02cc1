// The one token-bucket script (src/core/bucketStore.ts) is a port of spendBucket() (src/core/tokenBucket.ts):
// both the rate limiter and the heavy-read budget depend on the two agreeing exactly, on real Redis.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { BucketStore, defineBucketCommand } from '../../src/core/bucketStore.js';
import { RATE_POLICIES, rateBucket, spendBucket, TAKE_ONE_TOKEN, type BucketShape, type BucketSpend, type BucketUnits } from '../../src/core/tokenBucket.js';
import { budgetBucket } from '../../src/modules/topology/heavyReadBudget.js';

describe('core/bucketStore: one token-bucket script for the rate limiter and the heavy-read budget (real Redis)', () => {
  let redis: Redis;
  let prefix: string;
  before(async () => {
    redis = new Redis(process.env.REDIS_URL!);
    await redis.ping();
  });
  beforeEach(() => { prefix = `test:${randomUUID()}:`; });
  afterEach(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
  });
  after(() => redis.disconnect());

  let seed = 42;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);

  /** Runs the same random walk through the script (explicit clock) and spendBucket(), comparing every step. */
  async function agree(name: string, shape: BucketShape, nextSpend: () => BucketSpend, steps = 300) {
    const spend = defineBucketCommand(redis);
    const key = `${prefix}agree:${name}`;
    let state: BucketUnits | undefined;
    let now = 1_700_000_000_000;
    for (let i = 0; i < steps; i++) {
      now += [0, 0, 1, 7, 33, 199, 1499, 9000][rand(8)];
      if (rand(20) === 0) now -= 50; // a clock going backwards
      const op = nextSpend();
      const js = spendBucket(state, now, shape, op);
      state = js.state;
      const lua = await spend(key, shape, op, now, true);
      expect(lua, `${name} step ${i} ${JSON.stringify(op)}`).to.deep.equal(js);
      const [u, t] = await redis.hmget(key, 'u', 't');
      expect([Number(u), Number(t)]).to.deep.equal([state.units, state.updatedAtMs]);
    }
  }

  it('agrees with spendBucket() on the limiter\'s takes, including fractional refills', async () => {
    for (const [i, policy] of [...Object.values(RATE_POLICIES), { capacity: 3, refillPerMinute: 7 }].entries()) {
      await agree(`rate${i}`, rateBucket(policy), () => TAKE_ONE_TOKEN);
    }
  });

  it('agrees with spendBucket() on the budget\'s admits and forced charges into debt', async () => {
    for (let i = 0; i < 4; i++) {
      const shape = budgetBucket({ burstMs: 1 + rand(5000), refillMsPerSecond: 1 + rand(1000) });
      await agree(`budget${i}`, shape, () => rand(3) === 0
        ? { cost: 0, need: 1 }
        : { cost: rand(4_000_000) + rand(1000), need: 0, force: true });
    }
  });

  it('a refused take takes nothing; a forced charge stops one debt deep', async () => {
    const store = new BucketStore(redis, { keyPrefix: prefix, redisTimeoutMs: 60_000 });
    const shape: BucketShape = { capUnits: 10, refillUnitsPerMs: 1e-9, debtUnits: 10 }; // no refill to speak of
    expect((await store.spend('b', shape, { cost: 8, need: 8 })).state.units).to.equal(2);
    const refused = await store.spend('b', shape, { cost: 8, need: 8 });
    expect(refused.allowed).to.equal(false);
    expect(refused.state.units).to.equal(2);
    expect((await store.spend('b', shape, { cost: 100, need: 0, force: true })).state.units).to.equal(-10);
    expect(store.degraded).to.equal(false);
  });
});
