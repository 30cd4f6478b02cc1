// Issue 10.8, replayed: a page of another site could rotate a key or sign the user out with a form
// riding on the session cookie. And the headers a browser needs from an API that will serve pages.
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { setOperator } from '../../src/core/operators.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createKey, PASSWORD, registerTenant, uniqueEmail, type Tenant } from '../support/world.js';

describe('http: browser-facing defaults', () => {
  let app: TestApp;
  let t: Tenant;
  const EVIL = 'https://evil.example';
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('a cross-site request riding on the session cookie changes nothing', async () => {
    const key = await createKey(app.url, t.owner, { name: 'k' });
    const rotate = (headers: Record<string, string>) => call(app.url, 'POST', `/api/v1/auth/keys/${key.id}/rotate`, { auth: t.owner, headers });
    expectError(await rotate({ Origin: EVIL }), 403, 'csrf_origin_mismatch');
    expectError(await rotate({ 'Sec-Fetch-Site': 'cross-site' }), 403, 'csrf_origin_mismatch');
    expectError(await rotate({ Origin: 'null' }), 403, 'csrf_origin_mismatch'); // a sandboxed frame or a data: page
    expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: { bearer: key.key } })); // not rotated
    expectError(await call(app.url, 'POST', '/api/auth/logout', { auth: t.owner, headers: { Origin: EVIL } }), 403, 'csrf_origin_mismatch');
    expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })); // still signed in
    // Nor can another site sign a victim's browser into an account of its choosing.
    expectError(await call(app.url, 'POST', '/api/auth/login', { body: { email: uniqueEmail('x'), password: PASSWORD }, headers: { Origin: EVIL } }), 403, 'csrf_origin_mismatch');
  });

  it('same-origin pages, clients without browser headers and Bearer keys are not affected', async () => {
    const origin = new URL(app.url).origin;
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'a', color: 'Red' }, headers: { Origin: origin } }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'b', color: 'Red' }, headers: { 'Sec-Fetch-Site': 'same-origin' } }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'c', color: 'Red' } }), 201); // curl
    const key = await createKey(app.url, t.owner, { name: 'k' });
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: { bearer: key.key }, body: { name: 'd', color: 'Red' }, headers: { Origin: EVIL } }), 201);
    expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: t.owner, headers: { Origin: EVIL } })); // reads are not writes
  });

  it('nosniff and no referrer everywhere, no-store for credentials, a strict CSP and no framing on HTML', async () => {
    for (const res of [await call(app.url, 'GET', '/api/health'), await call(app.url, 'GET', '/nowhere'), await call(app.url, 'GET', '/api/v1/tags', { auth: t.owner })]) {
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
    }
    expect((await call(app.url, 'GET', '/api/v1/tags', { auth: t.owner })).headers.get('cache-control')).to.equal('no-store');
    const key = await createKey(app.url, t.owner, { name: 'k' });
    expect((await call(app.url, 'GET', '/api/v1/tags', { auth: { bearer: key.key } })).headers.get('cache-control')).to.equal('no-store');
    await setOperator(new Db(app.services.orm.em.fork()), expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).email, true);
    for (const path of ['/api/docs', '/admin/queues']) {
      const page = await call(app.url, 'GET', path, { auth: t.owner });
      expect(page.status, path).to.equal(200);
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp, path).to.contain("frame-ancestors 'none'").and.to.contain("script-src 'self'").and.to.contain("default-src 'self'");
      expect(page.headers.get('x-frame-options'), path).to.equal('DENY');
    }
  });
});
