// Issue 22: each organization's heavy topology reads (exports, timelines, uncached views) are paid
// from a CPU-time budget shared by every API process through Redis; spent, they answer 429 before
// any work, while the organization's cached reads and other organizations' heavy reads go on.
// The budget's clock is its test clock (RATE_LIMIT_TEST_CLOCK), and the spending is charged explicitly, so
// nothing here depends on how fast the machine runs.
import { expect } from 'chai';
import pg from 'pg';
import { budgetClockKey } from '../../src/modules/topology/heavyReadBudget.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { startTopologyLayout } from '../../workers/topologyLayout.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { registerTenant, type Tenant } from '../support/world.js';

// 1 s of CPU at most, 100 ms added per second.
const SMALL_BUDGET = { heavyReadBudget: { burstMs: 1000, refillMsPerSecond: 100 }, rateLimitTestClock: true, rateLimitRedisTimeoutMs: 60_000 };
const START = 1_700_000_000_000;

describe('heavy topology reads: a CPU-time budget per organization, shared through Redis', () => {
  let app: TestApp;
  let a: Tenant;
  let b: Tenant;
  const advance = async (ms: number) => { await app.services.redis.incrby(budgetClockKey(app.redisPrefix), ms); };
  const get = (t: Tenant, path: string, on = app) => fetch(`${on.url}${path}`, { headers: { Cookie: t.owner.cookie! } });
  const exportOf = (t: Tenant, on = app) => get(t, `/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=mermaid`, on);
  const timelineOf = (t: Tenant) => get(t, `/api/v1/topology/timeline?network_id=${t.defaultNetworkId}&from=2026-01-01T00:00:00Z`);

  beforeEach(async () => {
    app = await startTestApp(SMALL_BUDGET);
    await app.services.redis.set(budgetClockKey(app.redisPrefix), START);
    [a, b] = [await registerTenant(app.url, 'budget-a'), await registerTenant(app.url, 'budget-b')];
  });
  afterEach(() => app.close());

  it('an organization that spent its budget gets 429 + Retry-After on heavy reads; its cached map and another organization still answer', async () => {
    const map = `/api/v1/topology?network_id=${a.defaultNetworkId}`;
    expect((await get(a, map)).status).to.equal(200); // drawn (a heavy read), now cached
    // Twice five seconds of CPU charged: the bucket bottoms out one burst in debt (-1 s), and the
    // organization's median cost is 5 s.
    await app.services.heavyReadBudget.charge(a.orgId, 5000);
    await app.services.heavyReadBudget.charge(a.orgId, 5000);

    for (const res of [await exportOf(a), await timelineOf(a)]) {
      expect(res.status).to.equal(429);
      const body = await res.json() as { code: string; error: string };
      expect(body.code).to.equal('rate_limit_exceeded');
      expect(body.error).to.match(/CPU time for large topology computations/);
      // Until the bucket covers the median cost (5 s): (5 s + 1 s debt) / 100 ms per s.
      expect(res.headers.get('retry-after')).to.equal('60');
    }
    expect((await get(a, map)).status, 'the cached map is no heavy read').to.equal(200);
    expect((await exportOf(b)).status, 'another organization').to.equal(200);
    expect((await timelineOf(b)).status, 'another organization').to.equal(200);
  });

  it('the budget refills with time (the test clock): 10 s pays the 1 s debt, a positive balance admits again', async () => {
    await app.services.heavyReadBudget.charge(a.orgId, 5000);
    expect((await exportOf(a)).status).to.equal(429);
    await advance(10_000); // balance exactly 0: still refused
    expect((await exportOf(a)).status).to.equal(429);
    await advance(10); // 1 ms of CPU in the bucket
    expect((await exportOf(a)).status).to.equal(200);
  });

  it('two API instances on one Redis share an organization\'s budget', async () => {
    const second = await startTestApp({ ...SMALL_BUDGET, databaseUrl: app.databaseUrl, redisPrefix: app.redisPrefix });
    try {
      expect((await exportOf(a, second)).status).to.equal(200);
      await app.services.heavyReadBudget.charge(a.orgId, 5000); // spent through the first
      expect((await exportOf(a, second)).status, 'refused by the second').to.equal(429);
      expect((await exportOf(b, second)).status).to.equal(200);
    } finally {
      await second.close();
    }
  });

  /** Holds an exclusive lock on `hosts` (every drawing reads it) until the returned release is called, once a reader waits on it. */
  async function holdHosts(): Promise<{ waiting(n?: number): Promise<void>; release(): Promise<void> }> {
    const locker = new pg.Client({ connectionString: app.databaseUrl });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table hosts in access exclusive mode');
    return {
      async waiting() {
        for (let i = 0; ; i++) {
          const { rows } = await locker.query(`select count(*)::int as n from pg_locks where relation = 'hosts'::regclass and not granted`);
          if (rows[0].n > 0) return;
          if (i > 600) throw new Error('no reader waited on hosts');
          await new Promise((r) => setTimeout(r, 50));
        }
      },
      async release() {
        await locker.query('commit');
        await locker.end();
      },
    };
  }

  it('a heavy read is charged the CPU time of its work, not its wait (here a table lock held 1.5 s, more than the 1 s burst)', async () => {
    const lock = await holdHosts();
    const held = exportOf(a);
    await lock.waiting();
    await new Promise((r) => setTimeout(r, 1500));
    await lock.release();
    expect((await held).status).to.equal(200);
    // Charged its wall time (≥ 1.5 s), the bucket would be half a second in debt and this a 429.
    expect((await exportOf(a)).status).to.equal(200);
  });

  it('requests for the same map at the same version share one draw: none is refused topology_busy', async () => {
    // One organization's heavy reads run one at a time with 4 waiting (TOPOLOGY_QUEUE_PER_ORG); six
    // separate draws would refuse the sixth.
    const lock = await holdHosts();
    const answers = Promise.all(Array.from({ length: 6 }, () => get(a, `/api/v1/topology?network_id=${a.defaultNetworkId}`)));
    await lock.waiting();
    await new Promise((r) => setTimeout(r, 1000)); // the other five arrive meanwhile
    await lock.release();
    expect((await answers).map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
  });

  it('a layout job\'s CPU time (in the worker) is charged to its organization\'s budget, not to another\'s', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${app.url}/api/v1/hosts`, { method: 'POST', headers: { Cookie: a.owner.cookie!, 'Content-Type': 'application/json' }, body: JSON.stringify({ network_id: a.defaultNetworkId, name: `host-${i}` }) });
      expect(res.status).to.equal(201);
    }
    const map = `/api/v1/topology?network_id=${a.defaultNetworkId}`;
    expect(((await (await get(a, map)).json()) as any).data.layout.status).to.equal('pending');
    const balance = async (t: Tenant) => Number(await app.services.redis.hget(`${app.redisPrefix}hrb:${t.orgId}`, 'u') ?? 1000 * 1000);
    const [aBefore, bBefore] = [await balance(a), await balance(b)];
    const services = workerServicesFor(app);
    const worker = await startTopologyLayout(services);
    try {
      await waitFor('layout ready', async () => ((await (await get(a, map)).json()) as any).data.layout.status === 'ready');
      expect(await balance(a)).to.be.below(aBefore);
      expect(await balance(b)).to.equal(bBefore);
    } finally {
      await worker.close();
      await services.close();
    }
  });
});
