// Half-done writes (issue 10.5): with Redis down a provisioned daemon is a 201, not a 500 after the
// commit; and a create retried with the same Idempotency-Key answers the first answer and creates
// nothing more, whatever the timing.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createKey, createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';

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
      // The answer held the daemon's key, which is shown once: the retry says so (see below).
      expectError(retry, 409, 'idempotency_secret_not_replayed');
      expect(retry.body.params.id).to.equal(first.daemon.id);
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

    it('keys belong to the credential: the same user\'s network-limited API key replaying its session\'s request is checked as a new create (403), not answered the session\'s host', async () => {
      const lab = await createNetwork(app.url, t.owner, 'Lab');
      const limited = await createKey(app.url, t.owner, { name: 'default only', network_ids: [t.defaultNetworkId] });
      const key = randomUUID();
      const body = { name: 'in-lab', network_id: lab };
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body, headers: withKey(key) }), 201);
      const replay = await call(app.url, 'POST', '/api/v1/hosts', { auth: { bearer: limited.key }, body, headers: withKey(key) });
      expectError(replay, 403, 'entity_access_denied');
      expect(replay.headers.get('idempotent-replayed')).to.equal(null);
      // And the other way round: the key's own create is not the session's to replay.
      const other = randomUUID();
      const byKey = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: { bearer: limited.key }, body: { name: 'by-key', network_id: t.defaultNetworkId }, headers: withKey(other) }), 201);
      const bySession = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { name: 'by-key-2', network_id: t.defaultNetworkId }, headers: withKey(other) }), 201);
      expect(bySession.id).to.not.equal(byKey.id);
      expect(await count(app, 'hosts', t.orgId)).to.equal(3);
    });

    it('a replay answers only what the credential may see now: 403 once the created host\'s network is no longer granted', async () => {
      const lab = await createNetwork(app.url, t.owner, 'Lab');
      const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId, lab]);
      const [inLab, inDefault] = [randomUUID(), randomUUID()];
      const labBody = { name: 'in-lab', network_id: lab };
      const defaultBody = { name: 'in-default', network_id: t.defaultNetworkId };
      const first = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: member.auth, body: labBody, headers: withKey(inLab) }), 201);
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: member.auth, body: defaultBody, headers: withKey(inDefault) }), 201);
      const before = await call(app.url, 'POST', '/api/v1/hosts', { auth: member.auth, body: labBody, headers: withKey(inLab) });
      expect(expectOk(before, 201).id).to.equal(first.id);
      expect(before.headers.get('idempotent-replayed')).to.equal('true');
      expectOk(await call(app.url, 'PUT', `/api/v1/users/${member.id}`, { auth: t.owner, body: { permissions: 'Member', network_ids: [t.defaultNetworkId] } }));
      const after = await call(app.url, 'POST', '/api/v1/hosts', { auth: member.auth, body: labBody, headers: withKey(inLab) });
      expectError(after, 403, 'entity_access_denied');
      expect(after.body.params).to.deep.equal({ entity: 'Network', id: lab });
      expect(JSON.stringify(after.body)).to.not.include(first.id);
      // A host still in reach is replayed as before.
      expect(expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: member.auth, body: defaultBody, headers: withKey(inDefault) }), 201).name).to.equal('in-default');
      expect(await count(app, 'hosts', t.orgId)).to.equal(2);
    });

    it('an answer that carried a secret (a plaintext key, a signing secret) is neither kept nor replayed: 409 idempotency_secret_not_replayed with the created id', async () => {
      const creates: Array<[string, unknown, (data: any) => [id: string, secret: string]]> = [
        ['/api/v1/auth/keys', { name: 'ci' }, (d) => [d.api_key.id, d.key]],
        ['/api/v1/auth/daemon', { name: 'edge', network_id: t.defaultNetworkId }, (d) => [d.api_key.id, d.key]],
        ['/api/v1/daemons/provision', { name: 'poller', network_id: t.defaultNetworkId, url: 'http://10.0.0.9:60073' }, (d) => [d.daemon.id, d.daemon_api_key]],
        ['/api/v1/webhooks', { name: 'hook', url: 'https://example.com/hook' }, (d) => [d.id, d.secret]],
      ];
      for (const [path, body, created] of creates) {
        const key = randomUUID();
        const [id, secret] = created(expectOk(await call(app.url, 'POST', path, { auth: t.owner, body, headers: withKey(key) }), 201));
        expect(secret, path).to.be.a('string').with.length.above(20);
        const replay = await call(app.url, 'POST', path, { auth: t.owner, body, headers: withKey(key) });
        expectError(replay, 409, 'idempotency_secret_not_replayed');
        expect(replay.body.params, path).to.deep.equal({ key, id });
        expect(JSON.stringify(replay.body), path).to.not.include(secret);
      }
      const kept = await app.services.orm.em.fork().execute<Array<{ response: unknown }>>('select response from idempotency_keys');
      expect(kept).to.have.length(creates.length);
      for (const row of kept) expect(JSON.stringify(row.response)).to.not.match(/scp_[ud]_|whsec_/);
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
