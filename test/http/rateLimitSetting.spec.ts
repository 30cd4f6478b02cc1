// RATE_LIMIT_USER: an operator sets each user's bucket (burst / tokens per minute); a malformed
// value stops the start with a message naming the setting. On the test clock (rateLimit.spec.ts
// says why): counts are exact whatever the machine's load.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant } from '../support/world.js';

describe('http: the user bucket is a setting (RATE_LIMIT_USER)', () => {
  let app: TestApp;
  afterEach(() => app?.close());

  it('parses <burst>/<per minute>, defaults to 150/300, and refuses anything else', () => {
    expect(loadConfig({}, {}).userRateLimit).to.deep.equal({ capacity: 150, refillPerMinute: 300 });
    expect(loadConfig({}, { RATE_LIMIT_USER: ' 1000 / 6000 ' }).userRateLimit).to.deep.equal({ capacity: 1000, refillPerMinute: 6000 });
    for (const bad of ['1000', '0/10', '10/0', 'a/b', '10/5/1']) {
      expect(() => loadConfig({}, { RATE_LIMIT_USER: bad }), bad).to.throw(/RATE_LIMIT_USER/);
    }
  });

  it("a user's requests are limited by the configured bucket", async () => {
    app = await startTestApp({ userRateLimit: { capacity: 5, refillPerMinute: 1 }, rateLimitTestClock: true, rateLimitRedisTimeoutMs: 60_000 });
    const t = await registerTenant(app.url);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await call(app.url, 'GET', '/api/v1/tags', { auth: t.owner })).status);
    expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429, 429]);
    expectError(await call(app.url, 'GET', '/api/v1/tags', { auth: t.owner }), 429, 'rate_limit_exceeded');
    expectOk(await call(app.url, 'GET', '/api/health'));
  });
});
