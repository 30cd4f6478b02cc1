// Sign-ups are limited per client address per hour (SIGNUP_LIMIT_PER_HOUR, src/config.ts): each new
// organization brings its own rate buckets and heavy-read budget, so 40 sign-ups a minute from one
// address (the per-address bucket of register and login) multiplied them about 40 times.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { DEFAULT_SIGNUP_LIMIT_PER_HOUR } from '../../src/core/tokenBucket.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError, expectOk } from '../support/client.js';
import { callFrom, freshLoopbackIp, PASSWORD, uniqueEmail } from '../support/world.js';

const register = (app: TestApp, ip: string) =>
  callFrom(ip, app.url, 'POST', '/api/auth/register', { body: { email: uniqueEmail('signup'), password: PASSWORD, organization_name: 'Org signup' } });

describe('accounts/signupLimit: sign-ups per client address per hour', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ signupLimitPerHour: DEFAULT_SIGNUP_LIMIT_PER_HOUR });
  });
  after(() => app.close());

  it('SIGNUP_LIMIT_PER_HOUR: 5 by default, 0 turns it off, anything else not a count refuses to start', () => {
    expect(DEFAULT_SIGNUP_LIMIT_PER_HOUR).to.equal(5);
    expect(loadConfig({}, {}).signupLimitPerHour).to.equal(5);
    expect(loadConfig({}, { SIGNUP_LIMIT_PER_HOUR: '20' }).signupLimitPerHour).to.equal(20);
    expect(loadConfig({}, { SIGNUP_LIMIT_PER_HOUR: '0' }).signupLimitPerHour).to.equal(0);
    expect(() => loadConfig({}, { SIGNUP_LIMIT_PER_HOUR: 'many' })).to.throw(/SIGNUP_LIMIT_PER_HOUR/);
    expect(() => loadConfig({}, { SIGNUP_LIMIT_PER_HOUR: '2.5' })).to.throw(/SIGNUP_LIMIT_PER_HOUR must be a whole number/);
  });

  it('the limit at once from one address succeeds, one more is 429 rate_limit_exceeded with Retry-After (12 min), another address is unaffected', async () => {
    const ip = freshLoopbackIp();
    // All at once: the bucket is spent atomically in Redis, so exactly the limit get through.
    const res = await Promise.all(Array.from({ length: DEFAULT_SIGNUP_LIMIT_PER_HOUR + 1 }, () => register(app, ip)));
    const created = res.filter((r) => r.status === 201);
    expect(created.length, res.map((r) => r.status).join(',')).to.equal(DEFAULT_SIGNUP_LIMIT_PER_HOUR);
    for (const r of created) expectOk(r, 201);
    const limited = res.filter((r) => r.status !== 201);
    expect(limited).to.have.length(1);
    expectError(limited[0]!, 429, 'rate_limit_exceeded');
    const retryAfter = Number(limited[0]!.headers.get('retry-after'));
    expect(retryAfter).to.be.within(700, 720); // one sign-up every 3600 / 5 s
    // Still refused a moment later; another address signs up; the limited address still logs in.
    expectError(await register(app, ip), 429, 'rate_limit_exceeded');
    expectOk(await register(app, freshLoopbackIp()), 201);
    const email = uniqueEmail('other');
    expectOk(await callFrom(freshLoopbackIp(), app.url, 'POST', '/api/auth/register', { body: { email, password: PASSWORD, organization_name: 'Org other' } }), 201);
    expectOk(await callFrom(ip, app.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } }));
  });
});
