// Issue 37: each organization has its own heavy-read budget, so one person signing up many
// organizations from one address multiplied it. A heavy read is now paid from its client address's
// budget as well (HEAVY_READ_BUDGET_PER_ADDRESS_*): it runs only while both allow it. The test app
// does not trust a proxy (TRUST_PROXY unset), so each client binds its own loopback source address.
// Each heavy read is charged a fixed 400 ms (the budget's charge wrapped) and the budgets' clock is
// the test clock, so nothing here depends on how fast the machine runs.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { budgetClockKey, type HeavyReadPayer } from '../../src/modules/topology/heavyReadBudget.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { callFrom, freshLoopbackIp, registerTenant, type Tenant } from '../support/world.js';

// An organization affords five reads of 400 ms (2 s), an address three (1 s: 600, 200, then -200).
const BUDGETS = {
  heavyReadBudget: { burstMs: 2000, refillMsPerSecond: 100 },
  heavyReadBudgetPerAddress: { burstMs: 1000, refillMsPerSecond: 100 },
  rateLimitTestClock: true, rateLimitRedisTimeoutMs: 60_000,
};
const COST_MS = 400;

describe('heavy topology reads: charged to the client address as well as to the organization', () => {
  let app: TestApp;
  let a: Tenant;
  let b: Tenant;
  let c: Tenant;

  beforeEach(async () => {
    app = await startTestApp(BUDGETS);
    await app.services.redis.set(budgetClockKey(app.redisPrefix), 1_700_000_000_000); // frozen: nothing refills
    const budget = app.services.heavyReadBudget;
    const charge = budget.charge.bind(budget);
    budget.charge = (payer: HeavyReadPayer | string) => charge(payer, COST_MS);
    [a, b, c] = [await registerTenant(app.url, 'addr-a'), await registerTenant(app.url, 'addr-b'), await registerTenant(app.url, 'addr-c')];
  });
  afterEach(() => app.close());

  const exportOf = (t: Tenant, from: string, headers: Record<string, string> = {}) =>
    callFrom(from, app.url, 'GET', `/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=mermaid`, { auth: t.owner, headers });
  /** What is left of an organization's budget, in ms (a missing bucket is a full one). */
  const orgBalanceMs = async (t: Tenant) => Number(await app.services.redis.hget(`${app.redisPrefix}hrb:${t.orgId}`, 'u') ?? BUDGETS.heavyReadBudget.burstMs * 1000) / 1000;

  it('HEAVY_READ_BUDGET_PER_ADDRESS_*: twice the organization\'s budget by default (off with it), each settable, 0 = off', () => {
    expect(loadConfig({}, {}).heavyReadBudgetPerAddress).to.deep.equal({ burstMs: 20_000, refillMsPerSecond: 800 });
    expect(loadConfig({}, { HEAVY_READ_BUDGET_MS_PER_SECOND: '100', HEAVY_READ_BUDGET_BURST_MS: '2000' }).heavyReadBudgetPerAddress).to.deep.equal({ burstMs: 4000, refillMsPerSecond: 200 });
    expect(loadConfig({ heavyReadBudget: { burstMs: 0, refillMsPerSecond: 0 } }, {}).heavyReadBudgetPerAddress).to.deep.equal({ burstMs: 0, refillMsPerSecond: 0 });
    expect(loadConfig({}, { HEAVY_READ_BUDGET_PER_ADDRESS_MS_PER_SECOND: '50', HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS: '0' }).heavyReadBudgetPerAddress).to.deep.equal({ burstMs: 0, refillMsPerSecond: 50 });
    expect(() => loadConfig({}, { HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS: '-1' })).to.throw(/HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS/);
  });

  it('two organizations from one address spend its budget before either spends its own: 429 + Retry-After for both there; a third organization from another address goes on', async () => {
    const shared = freshLoopbackIp();
    const elsewhere = freshLoopbackIp();
    // Three reads of 400 ms from the shared address, by both organizations: the address is 200 ms in debt.
    expect((await exportOf(a, shared)).status).to.equal(200);
    expect((await exportOf(b, shared)).status).to.equal(200);
    expect((await exportOf(a, shared)).status).to.equal(200);
    for (const t of [b, a]) {
      const res = await exportOf(t, shared);
      expect(res.status, JSON.stringify(res.body)).to.equal(429);
      expect(res.body).to.include({ success: false, code: 'rate_limit_exceeded' });
      expect(res.body.error).to.match(/client address .*CPU time for large topology computations/);
      // Until the address covers its median read (400 ms) from 200 ms in debt, at 100 ms per second.
      expect(res.headers.get('retry-after')).to.equal('6');
      expect(res.body.params.retry_after).to.equal(6);
    }
    // Neither organization's own budget is spent (a: 800 ms of 2 s, b: 400 ms).
    expect(await orgBalanceMs(a)).to.equal(1200);
    expect(await orgBalanceMs(b)).to.equal(1600);
    // A claimed X-Forwarded-For is not the address: no proxy is trusted here.
    expect((await exportOf(b, shared, { 'X-Forwarded-For': elsewhere })).status).to.equal(429);
    // Another address: a third organization, and one of the two, read on.
    expect((await exportOf(c, elsewhere)).status).to.equal(200);
    expect((await exportOf(a, elsewhere)).status).to.equal(200);
  });
});
