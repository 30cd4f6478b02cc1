// Login abuse (issue 10.4): the limits hold whatever credentials come along, one address cannot
// lock anybody else out, a spray from many addresses slows the account, and all of it keeps
// working while Redis is down. The password policy of register and user creation.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { AppError } from '../../src/core/errors.js';
import { LOGIN_POLICY, LoginGuard, waitBeforeAttempt, type AttemptState } from '../../src/modules/accounts/loginGuard.js';
import { passwordProblem } from '../../src/modules/accounts/passwordPolicy.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { callFrom, freshLoopbackIp, PASSWORD, registerTenant, uniqueEmail, type Tenant } from '../support/world.js';

async function lockedFor(guard: LoginGuard, email: string, address: string): Promise<number | undefined> {
  try {
    await guard.beginAttempt(email, address);
    return undefined;
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    expect((err as AppError).code).to.equal('auth_login_locked');
    return Number((err as AppError).params.retry_after);
  }
}

describe('accounts/login: throttling and password policy', () => {
  let app: TestApp;
  let t: Tenant;
  let email: string;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'login');
    email = expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).email;
  });
  afterEach(() => app.close());

  const attemptFrom = (ip: string, password: string, who = email) =>
    callFrom(ip, app.url, 'POST', '/api/auth/login', { body: { email: who, password } });

  it('a session cookie does not lift the per-address limit on login and register (the spray of the report)', async () => {
    const ip = freshLoopbackIp();
    const statuses: number[] = [];
    for (let i = 0; i < 24; i++) {
      const res = await callFrom(ip, app.url, 'POST', '/api/auth/login', { auth: t.owner, body: { email: uniqueEmail('victim'), password: `guess-number-${i}` } });
      statuses.push(res.status);
      if (res.status === 429) expectError(res, 429, 'rate_limit_exceeded');
    }
    // Burst of 10 per address, 40 per minute: the spray is stopped within the first dozen.
    expect(statuses.indexOf(429), statuses.join(',')).to.be.within(10, 12);
    expect(statuses.filter((s) => s === 429).length).to.be.at.least(12);
    // The same for register, and for a path spelt differently (the router ignores case and a trailing slash).
    const other = freshLoopbackIp();
    let limited = 0;
    for (let i = 0; i < 14; i++) {
      const path = i % 2 ? '/API/auth/Register/' : '/api/auth/register';
      const res = await callFrom(other, app.url, 'POST', path, { auth: t.owner, body: { email: uniqueEmail('spray'), password: 'x', organization_name: 'S' } });
      if (res.status === 429) limited += 1;
    }
    expect(limited).to.be.at.least(3);
    // Any spelling the router accepts is authenticated and limited as its route.
    expectOk(await call(app.url, 'GET', '/API/v1/Tags/', { auth: t.owner }));
  });

  it('five failures from one address stop that address for that account only: the owner signs in from another', async () => {
    // Below five, a success starts the count over.
    const a = freshLoopbackIp();
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 4; i++) expectError(await attemptFrom(a, `wrong-password-${i}`), 401, 'auth_invalid_credentials');
      expectOk(await attemptFrom(a, PASSWORD));
    }
    const attacker = freshLoopbackIp();
    for (let i = 0; i < 5; i++) expectError(await attemptFrom(attacker, `wrong-password-${i}`), 401, 'auth_invalid_credentials');
    const locked = await attemptFrom(attacker, PASSWORD);
    expectError(locked, 429, 'auth_login_locked');
    expect(Number(locked.headers.get('retry-after'))).to.be.within(14 * 60, 15 * 60);
    // Said in words a person reads (it said "Try again in 899 seconds"); retry_after stays in seconds.
    expect(locked.body.error).to.match(/^Too many failed login attempts\. Try again in 1[45] minutes\.$/);
    expect(locked.body.params.retry_after).to.be.within(14 * 60, 15 * 60);
    expect(locked.headers.get('set-cookie')).to.equal(null);
    // The attacker's address may still try other accounts; the owner is not locked out anywhere else.
    expectError(await attemptFrom(attacker, 'wrong-password-x', uniqueEmail('other')), 401, 'auth_invalid_credentials');
    expectOk(await attemptFrom(freshLoopbackIp(), PASSWORD));
    expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner }));
  });

  it('a spray from many addresses slows the account (one try per 10 s) instead of locking it; an address that signed in before is not slowed', async () => {
    const known = freshLoopbackIp();
    expectOk(await attemptFrom(known, PASSWORD));
    for (let i = 0; i < LOGIN_POLICY.slowAfterFailures; i++) {
      expectError(await attemptFrom(freshLoopbackIp(), `wrong-password-${i}`), 401, 'auth_invalid_credentials');
    }
    const slowed = await attemptFrom(freshLoopbackIp(), PASSWORD);
    expectError(slowed, 429, 'auth_login_locked');
    expect(Number(slowed.headers.get('retry-after'))).to.be.within(1, 10);
    expect(slowed.body.error).to.match(/Try again in (1|[2-9]|10) seconds?\.$/);
    expectOk(await attemptFrom(known, PASSWORD));
  });

  it('concurrent guesses from one address cannot slip past the count (one atomic script)', async () => {
    const guard = new LoginGuard(app.services.redis, app.redisPrefix);
    const address = '203.0.113.7';
    const results = await Promise.all(Array.from({ length: 20 }, () => lockedFor(guard, email, address)));
    expect(results.filter((r) => r === undefined)).to.have.length(LOGIN_POLICY.maxFailuresPerAddress);
  });

  it('while Redis is down the same limits hold in process memory (no lockout switched off)', async () => {
    const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, retryStrategy: () => null, enableOfflineQueue: false });
    try {
      const guard = new LoginGuard(dead, 'down:');
      const victim = `${randomBytes(4).toString('hex')}@example.test`;
      for (let i = 0; i < LOGIN_POLICY.maxFailuresPerAddress; i++) expect(await lockedFor(guard, victim, '198.51.100.1')).to.equal(undefined);
      expect(await lockedFor(guard, victim, '198.51.100.1')).to.be.within(14 * 60, 15 * 60);
      // Another address is not locked, and a success there makes it known.
      expect(await lockedFor(guard, victim, '198.51.100.2')).to.equal(undefined);
      await guard.succeeded(victim, '198.51.100.2');
      for (let i = 3; i < 3 + LOGIN_POLICY.slowAfterFailures; i++) await lockedFor(guard, victim, `198.51.100.${i}`);
      expect(await lockedFor(guard, victim, '198.51.100.250')).to.be.within(1, 10);
      expect(await lockedFor(guard, victim, '198.51.100.2')).to.equal(undefined);
    } finally {
      dead.disconnect();
    }
  });

  it('refuses common, trivial and email-named passwords at register and user creation, each with its code', async () => {
    const ip = freshLoopbackIp();
    const cases: Array<[string, string, string]> = [
      ['password123', 'password_common', 'ada@example.test'],
      ['1q2w3e4r5t', 'password_common', 'ada@example.test'],
      ['qwertyuiop', 'password_trivial', 'ada@example.test'],
      ['aaaaaaaaaaaa', 'password_trivial', 'ada@example.test'],
      ['1234567890', 'password_trivial', 'ada@example.test'],
      ['lovelace-2024', 'password_contains_email', 'lovelace@example.test'],
    ];
    for (const [password, code, who] of cases) {
      const res = await callFrom(ip, app.url, 'POST', '/api/auth/register', { body: { email: who, password, organization_name: 'Weak' } });
      expectError(res, 400, 'validation_failed');
      expect(res.body.params.errors, password).to.deep.include.members([{ field: 'password', code, message: res.body.params.errors[0].message }]);
    }
    const weakUser = await call(app.url, 'POST', '/api/v1/users', { auth: t.owner, body: { email: uniqueEmail('u'), password: 'iloveyou123', permissions: 'Viewer' } });
    expectError(weakUser, 400, 'validation_failed');
    expect(weakUser.body.params.errors[0]).to.include({ field: 'password', code: 'password_common' });
    // Nothing was created; a long passphrase with no composition rules passes.
    expectOk(await call(app.url, 'POST', '/api/v1/users', { auth: t.owner, body: { email: uniqueEmail('u'), password: 'plum harbor lantern', permissions: 'Viewer' } }), 201);
  });
});

describe('accounts/loginGuard and passwordPolicy (pure)', () => {
  const base: AttemptState = { pairFailures: 0, pairExpiresAt: 0, accountFailures: 0, accountLastFailureAt: 0, knownAddress: false };
  it('waits out the pair lock; slows the account for 10 s after its last failure, never for a known address', () => {
    expect(waitBeforeAttempt({ ...base, pairFailures: 4 }, 1000)).to.equal(0);
    expect(waitBeforeAttempt({ ...base, pairFailures: 5, pairExpiresAt: 61_000 }, 1000)).to.equal(60_000);
    expect(waitBeforeAttempt({ ...base, accountFailures: 9, accountLastFailureAt: 1000 }, 1000)).to.equal(0);
    expect(waitBeforeAttempt({ ...base, accountFailures: 10, accountLastFailureAt: 1000 }, 4000)).to.equal(7000);
    expect(waitBeforeAttempt({ ...base, accountFailures: 10, accountLastFailureAt: 1000 }, 11_000)).to.equal(0);
    expect(waitBeforeAttempt({ ...base, accountFailures: 50, accountLastFailureAt: 1000, knownAddress: true }, 1000)).to.equal(0);
  });
  it('names the problem of a password, case-insensitively', () => {
    expect(passwordProblem('Password123')).to.equal('common');
    expect(passwordProblem('zzzzzzzzzz')).to.equal('trivial');
    expect(passwordProblem('abcdefghijk')).to.equal('trivial');
    expect(passwordProblem('MaryJones!!', 'mary.jones@example.test')).to.equal('contains_email');
    expect(passwordProblem('a-b@x.io-long', 'a-b@x.io')).to.equal('contains_email');
    expect(passwordProblem('plum harbor lantern', 'ada@example.test')).to.equal(undefined);
    expect(passwordProblem(PASSWORD, 'ab@example.test')).to.equal(undefined); // a short name part is no signal
  });
});
