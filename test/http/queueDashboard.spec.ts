// The queue dashboard (/admin/queues) shows every organization's jobs (issue 10.7): it exists only
// once an operator is granted explicitly, only operators see it, and no spelling of its paths gets
// past the guard.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { Db } from '../../src/core/db.js';
import { setOperator } from '../../src/core/operators.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { bundlePath } from '../../scripts/build.js';

const PATH_VARIANTS = [
  '/ADMIN/queues', '/Admin/Queues/api/queues', '//admin/queues', '/admin//queues/api/queues', '/admin/queues//api/queues',
  '/admin/%71ueues', '/%61dmin/queues/api/queues', '/admin/queues/../queues/api/queues', '/admin/queues/%2e%2e/queues/api/queues',
  '/admin/x/../queues/api/queues', '/admin/queues/./api/queues', '/admin%2Fqueues/api/queues',
];

/** `npm run operator -- <args>` (the command the README documents), on the test app's database. */
function operatorCommand(app: TestApp, ...args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', bundlePath('operator'), ...args], {
    env: { ...process.env, DATABASE_URL: app.databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => { out += c; });
  child.stderr.on('data', (c: Buffer) => { out += c; });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

/** A GET sent with its path exactly as written (fetch and URL would resolve `..` first). */
function rawGet(baseUrl: string, path: string, auth?: Credential): Promise<{ status: number; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET', headers: auth?.cookie ? { Cookie: auth.cookie } : {} }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const emailOf = async (app: TestApp, auth: Credential) => expectOk(await call(app.url, 'GET', '/api/auth/me', { auth })).email as string;

describe('http/queueDashboard: operators only, granted explicitly', () => {
  let app: TestApp;
  let t: Tenant;
  afterEach(() => app.close());

  describe('granted with the operator command', () => {
    beforeEach(async () => {
      app = await startTestApp();
      t = await registerTenant(app.url, 'first');
    });

    it('does not exist while nobody is granted, not even for the first organization’s Owner; then only operators see it', async () => {
      for (const path of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/main.js']) {
        expectError(await call(app.url, 'GET', path, { auth: t.owner }), 404, 'route_not_found');
        expectError(await call(app.url, 'GET', path), 404, 'route_not_found');
      }
      expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).operator).to.equal(false);
      const granted = await operatorCommand(app, 'grant', (await emailOf(app, t.owner)).toUpperCase());
      expect(granted, granted.out).to.include({ code: 0 });
      expect(granted.out).to.match(/is an operator/);

      const page = await call(app.url, 'GET', '/admin/queues', { auth: t.owner });
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      const api = await call(app.url, 'GET', '/admin/queues/api/queues', { auth: t.owner });
      expect(api.status).to.equal(200);
      expect((api.body.queues as Array<{ name: string }>).map((q) => q.name).sort()).to.deep.equal(['alert-delivery', 'discovery-schedule', 'discovery-sync', 'maintenance', 'server-poll', 'topology-layout', 'version-status', 'webhook-delivery']);

      // Not operators: without a session 401; another organization's Owner, and this one's Admin, 403.
      expectError(await call(app.url, 'GET', '/admin/queues'), 401, 'auth_not_authenticated');
      expectError(await call(app.url, 'GET', '/admin/queues', { auth: { cookie: 'session_id=forged' } }), 401, 'auth_session_expired');
      const other = await registerTenant(app.url, 'other');
      const admin = await createUser(app.url, t.owner, 'Admin');
      for (const auth of [other.owner, admin.auth]) {
        const denied = await call(app.url, 'GET', '/admin/queues/api/queues', { auth });
        expectError(denied, 403, 'auth_permission_denied');
        expect(denied.body.params).to.deep.equal({ required: 'operator' });
      }
      // The web app links the dashboard for whom /api/auth/me says may open it.
      expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).operator).to.equal(true);
      for (const auth of [other.owner, admin.auth]) expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth })).operator).to.equal(false);
      // An API key, even the operator's, is not a signed-in session.
      const key = expectOk(await call(app.url, 'POST', '/api/v1/auth/keys', { auth: t.owner, body: { name: 'k' } }), 201).key;
      expectError(await call(app.url, 'GET', '/admin/queues', { auth: { bearer: key } }), 401, 'auth_not_authenticated');

      // No other spelling of the paths is served, to anyone.
      for (const path of PATH_VARIANTS) {
        for (const auth of [undefined, other.owner, t.owner]) {
          const res = await rawGet(app.url, path, auth);
          expect([401, 403, 404], `${path}: ${res.status}`).to.include(res.status);
          expect(res.body, path).to.not.match(/discovery-sync/);
        }
      }

      // Revoked, and nobody else granted: gone again.
      expect(await setOperator(new Db(app.services.orm.em.fork()), await emailOf(app, t.owner), false)).to.equal(true);
      expect(await setOperator(new Db(app.services.orm.em.fork()), 'nobody@example.test', true)).to.equal(false);
      expectError(await call(app.url, 'GET', '/admin/queues', { auth: t.owner }), 404, 'route_not_found');
    });
  });

  describe('granted by configuration', () => {
    it('OPERATOR_EMAILS grants those users; OPERATOR_ORGANIZATION_ID that organization’s Owners and Admins', async () => {
      app = await startTestApp({ operatorEmails: ['ops@example.test'] });
      t = await registerTenant(app.url, 'cfg');
      expectError(await call(app.url, 'GET', '/admin/queues', { auth: t.owner }), 403, 'auth_permission_denied');
      expectOk(await call(app.url, 'POST', '/api/v1/users', { auth: t.owner, body: { email: 'OPS@example.test', password: 'plum harbor lantern', permissions: 'Viewer' } }), 201);
      const ops = await call(app.url, 'POST', '/api/auth/login', { body: { email: 'ops@example.test', password: 'plum harbor lantern' } });
      const cookie = ops.headers.get('set-cookie')!.split(';')[0]!;
      expect((await call(app.url, 'GET', '/admin/queues', { auth: { cookie } })).status).to.equal(200);

      // An organization named by OPERATOR_ORGANIZATION_ID (read per request): its Owners and Admins, not its Members.
      const ops2 = await registerTenant(app.url, 'ops-org');
      app.services.config.operatorOrganizationId = ops2.orgId;
      const member = await createUser(app.url, ops2.owner, 'Member');
      expect((await call(app.url, 'GET', '/admin/queues', { auth: ops2.owner })).status).to.equal(200);
      expectError(await call(app.url, 'GET', '/admin/queues', { auth: member.auth }), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'GET', '/admin/queues', { auth: t.owner }), 403, 'auth_permission_denied');
    });
  });

  it('grants are rows of `operators`, dropped with their user', async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'rows');
    const db = new Db(app.services.orm.em.fork());
    expect(await setOperator(db, await emailOf(app, t.owner), true)).to.equal(true);
    expect((await call(app.url, 'GET', '/admin/queues', { auth: t.owner })).status).to.equal(200);
    await db.query(`delete from users where id = ?`, [t.ownerId]);
    expect(await db.query(`select * from operators`)).to.deep.equal([]);
  });
});
