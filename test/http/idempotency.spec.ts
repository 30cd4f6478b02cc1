// Half-done writes (issue 10.5): with Redis down a provisioned daemon is a 201, not a 500 after the
// commit; and a create retried with the same Idempotency-Key answers the first answer and creates
// nothing more, whatever the timing.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';

const withKey = (key: string) => ({ 'Idempotency-Key': key });

async function count(app: TestApp, table: string, organizationId: string): Promise<number> {
  const rows = await app.services.orm.em.fork().execute<Array<{ n: string }>>(`select count(*) as n from ${table} where organization_id = ?`, [organizationId]);
  return Number(rows[0]!.n);
}

describe('http/idempotency: creates that complete or leave nothing, and retries that are safe', () => {
  let app: TestApp;
  let t: Tenant;
  afterEach(() => app.close());

  describe('with Redis down', () => {
    beforeEach(async () => {
      app = await startTestApp({ redisUrl: 'redis://127.0.0.1:1' });
      t = await registerTenant(app.url, 'noredis');
    });

    it('provisioning a daemon answers 201 (was 500 after the commit), and its retry with the key provisions nothing more', async () => {
      const body = { name: 'edge', network_id: t.defaultNetworkId, url: 'http://10.0.0.9:60073' };
      const key = randomUUID();
      const first = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body, headers: withKey(key) }), 201);
      const retry = await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body, headers: withKey(key) });
      expect(expectOk(retry, 201)).to.deep.equal(first);
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      expect(await count(app, 'daemons', t.orgId)).to.equal(1);
      expect(await count(app, 'daemon_api_keys', t.orgId)).to.equal(1);
      // Without a key it is a plain create, and it too is a 201.
      expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { ...body, name: 'edge-2' } }), 201);
      expect(await count(app, 'daemons', t.orgId)).to.equal(2);
    });
  });

  describe('with Redis up', () => {
    beforeEach(async () => {
      app = await startTestApp();
      t = await registerTenant(app.url, 'idem');
    });

    it('concurrent requests with one key create one tag and all answer it', async () => {
      const key = randomUUID();
      const answers = await Promise.all(Array.from({ length: 6 }, () =>
        call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'prod', color: 'Red' }, headers: withKey(key) })));
      const ids = answers.map((res) => expectOk(res, 201).id);
      expect(new Set(ids).size).to.equal(1);
      expect(answers.filter((res) => res.headers.get('idempotent-replayed') === 'true')).to.have.length(5);
      expect(await count(app, 'tags', t.orgId)).to.equal(1);
    });

    it('the same key for a different request is 422 idempotency_key_reused and creates nothing', async () => {
      const key = randomUUID();
      expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'a', color: 'Red' }, headers: withKey(key) }), 201);
      const reused = await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'b', color: 'Red' }, headers: withKey(key) });
      expectError(reused, 422, 'idempotency_key_reused');
      const onOtherPath = await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'a' }, headers: withKey(key) });
      expectError(onOtherPath, 422, 'idempotency_key_reused');
      expect(await count(app, 'tags', t.orgId)).to.equal(1);
    });

    it('a create that failed leaves no key behind: once the cause is gone the same request with the key runs', async () => {
      const blocker = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'dup', color: 'Red' } }), 201);
      const key = randomUUID();
      const send = () => call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'dup', color: 'Blue' }, headers: withKey(key) });
      expectError(await send(), 409, 'entity_already_exists');
      expectOk(await call(app.url, 'DELETE', `/api/v1/tags/${blocker.id}`, { auth: t.owner }));
      const created = await send();
      expect(expectOk(created, 201)).to.include({ name: 'dup', color: 'Blue' });
      expect(created.headers.get('idempotent-replayed')).to.equal(null);
    });

    it('keys belong to their user: another user with the same key creates their own; a malformed key is 400', async () => {
      const other: Credential = (await createUser(app.url, t.owner, 'Admin')).auth;
      const key = 'retry-me-1';
      const mine = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'n1' }, headers: withKey(key) }), 201);
      const theirs = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: other, body: { name: 'n1' }, headers: withKey(key) }), 201);
      expect(theirs.id).to.not.equal(mine.id);
      const bad = await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'n2' }, headers: withKey('has space') });
      expectError(bad, 400, 'validation_failed');
      expect(bad.body.params.field).to.equal('header.Idempotency-Key');
    });
  });
});
