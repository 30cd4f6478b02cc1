// Credentials the server keeps to use again are stored sealed (src/core/secretBox.ts): AES-256-GCM
// under keys from SECRETS_KEY or a key file made on first start. Checked here: the cipher and its
// purposes, the key file, every sealed column as the API writes it, rows stored in plaintext
// sealed at start, a rotation to a new key, and that every column that could hold a credential is
// either sealed or a digest.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import {
  DAEMON_SERVER_KEY, isSealed, loadSecretKeys, open, parseSecretKeys, seal, SEALED_COLUMNS, sealedStatus, sealStoredSecrets, useSecretKeys, WEBHOOK_SECRET,
  type SecretKey,
} from '../../src/core/secretBox.js';
import { SECRET_MASK } from '../../src/core/secretFields.js';
import { withoutSecrets } from '../../src/modules/events/access.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from '../daemons/world.js';
import { NODE, ROOT } from '../workers/support.js';

const keyText = () => randomBytes(32).toString('base64');
const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };

describe('core: stored credentials are sealed', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let ring: SecretKey[];
  const db = () => new Db(app.services.orm.em.fork());

  beforeEach(async () => {
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'], daemonAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url, 'sealed');
    ring = parseSecretKeys(process.env.SECRETS_KEY!, 'SECRETS_KEY');
  });
  afterEach(async () => {
    useSecretKeys(ring); // this process's other apps use the run's key
    await app.close();
  });

  it('AES-GCM: a sealed value opens with its purpose and a key of the ring only; tampered, it does not open', () => {
    const a = parseSecretKeys(keyText(), 'a');
    const b = parseSecretKeys(keyText(), 'b');
    useSecretKeys(a);
    const sealed = seal('hunter2', WEBHOOK_SECRET);
    expect(sealed).to.match(new RegExp(`^enc:v1:${a[0]!.id}:`)).and.not.include('hunter2');
    expect(seal('hunter2', WEBHOOK_SECRET)).to.not.equal(sealed); // a new IV each time
    expect(open(sealed, WEBHOOK_SECRET)).to.equal('hunter2');
    expect(() => open(sealed, DAEMON_SERVER_KEY)).to.throw(); // moved to another column: refused
    const raw = Buffer.from(sealed.split(':')[3]!, 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => open(`enc:v1:${a[0]!.id}:${raw.toString('base64')}`, WEBHOOK_SECRET)).to.throw();
    useSecretKeys(b);
    expect(() => open(sealed, WEBHOOK_SECRET)).to.throw(/sealed with key .* does not have/);
    useSecretKeys([...b, ...a]); // a rotation's ring: the new key seals, the old one still opens
    expect(open(sealed, WEBHOOK_SECRET)).to.equal('hunter2');
    expect(seal('x', WEBHOOK_SECRET)).to.match(new RegExp(`^enc:v1:${b[0]!.id}:`));
    expect(() => parseSecretKeys('c2hvcnQ=', 'SECRETS_KEY')).to.throw(/32 bytes/);
  });

  it('the key file is made on first start, mode 0600, and processes starting at once all read the one key', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'netinv-keyfile-'));
    try {
      const file = path.join(dir, 'data', 'secrets.key');
      const script = `import { loadSecretKeys } from './src/core/secretBox.ts'; console.log(loadSecretKeys({ secretsKey: undefined, secretsKeyFile: ${JSON.stringify(file)} })[0].id);`;
      const ids = await Promise.all(Array.from({ length: 4 }, () => new Promise<string>((resolve, reject) => {
        const child = spawn(NODE, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (c) => (out += c));
        child.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`exit ${code}`))));
      })));
      expect(new Set(ids).size).to.equal(1);
      expect(statSync(file).mode & 0o777).to.equal(0o600);
      expect(loadSecretKeys({ secretsKey: undefined, secretsKeyFile: file })[0]!.id).to.equal(ids[0]);
      expect(readFileSync(file, 'utf8').split('\n').filter((l) => l && !l.startsWith('#'))).to.have.length(1);
      // SECRETS_KEY, when set, is the key, whatever the file holds.
      const env = keyText();
      expect(loadSecretKeys({ secretsKey: env, secretsKeyFile: file })[0]!.key.toString('base64')).to.equal(env);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('as the API stores them: a webhook\'s secrets and a server_poll daemon\'s key are sealed, and open to what was shown once', async () => {
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'h', url: 'http://127.0.0.1:9/hook' } }), 201);
    const rotated = expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${hook.id}/rotate-secret`, { auth: t.owner }));
    const [w] = await sql(app, `select secret, previous_secret from webhooks where id = ?`, [hook.id]);
    for (const [stored, shown] of [[w!.secret, rotated.secret], [w!.previous_secret, hook.secret]]) {
      expect(stored).to.match(/^enc:v1:/).and.not.include(shown.slice(6));
      expect(open(stored, WEBHOOK_SECRET)).to.equal(shown);
    }
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'poller', network_id: t.defaultNetworkId, url: 'http://127.0.0.1:9' } }), 201);
    const [k] = await sql(app, `select server_key from daemon_api_keys where id = ?`, [provisioned.daemon.api_key_id]);
    expect(k!.server_key).to.match(/^enc:v1:/).and.not.include(provisioned.daemon_api_key.slice(6));
    expect(open(k!.server_key, DAEMON_SERVER_KEY)).to.equal(provisioned.daemon_api_key);
  });

  it('rows stored in plaintext are sealed at start; a rotation re-seals all under the new key, and the daemon still gets its credentials', async () => {
    // What an older version stored: a webhook secret, a server key and an SNMP community in plaintext.
    const community = `community-${randomUUID()}`;
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'h', url: 'http://127.0.0.1:9/hook' } }), 201);
    await sql(app, `update webhooks set secret = ? where id = ?`, [hook.secret, hook.id]);
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'poller', network_id: t.defaultNetworkId, url: 'http://127.0.0.1:9' } }), 201);
    await sql(app, `update daemon_api_keys set server_key = ? where id = ?`, [provisioned.daemon_api_key, provisioned.daemon.api_key_id]);
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    const lan = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '198.18.7.0/24', name: 'lab', network_id: t.defaultNetworkId } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
    await sql(app, `update discovery_sessions set discovery_type = jsonb_set(discovery_type, '{snmp_credentials,default_credential}', ?::jsonb) where daemon_id = ? and discovery_type->>'type' = 'Network'`,
      [JSON.stringify({ version: 'V2c', community }), d.id]);
    expect((await sealedStatus(db()))['discovery_sessions.discovery_type']).to.deep.equal({ plaintext: 1 });

    const sealed = await sealStoredSecrets(db());
    expect(sealed).to.deep.equal({ 'webhooks.secret': 1, 'webhooks.previous_secret': 0, 'daemon_api_keys.server_key': 1, 'discovery_sessions.discovery_type': 1 });
    expect(await sealStoredSecrets(db())).to.deep.include({ 'webhooks.secret': 0, 'discovery_sessions.discovery_type': 0 }); // once
    const stored = JSON.stringify(await sql(app, `select s.discovery_type, w.secret, k.server_key from discovery_sessions s, webhooks w, daemon_api_keys k where s.daemon_id = ? and k.id = ?`, [d.id, provisioned.daemon.api_key_id]));
    for (const plain of [community, hook.secret.slice(6), provisioned.daemon_api_key.slice(6)]) expect(stored).to.not.include(plain);

    // Rotation: a new key first, the old one kept to open; `rotate` re-seals; then the old key can go.
    const next = parseSecretKeys(keyText(), 'next');
    useSecretKeys([...next, ...ring]);
    const resealed = await sealStoredSecrets(db(), true);
    expect(resealed).to.deep.equal({ 'webhooks.secret': 1, 'webhooks.previous_secret': 0, 'daemon_api_keys.server_key': 1, 'discovery_sessions.discovery_type': 1 });
    const status = await sealedStatus(db());
    for (const counts of Object.values(status)) expect(Object.keys(counts).every((k) => k === `key ${next[0]!.id}`), JSON.stringify(status)).to.equal(true);
    useSecretKeys(next);
    const [w] = await sql(app, `select secret from webhooks where id = ?`, [hook.id]);
    expect(open(w!.secret, WEBHOOK_SECRET)).to.equal(hook.secret);
    // The daemon's work carries the community in plaintext, opened with the new key alone.
    const requestWork = () => d.post(`/api/daemons/${d.id}/request-work`, STATUS);
    const [selfReport] = expectOk(await requestWork());
    expectOk(await d.post(`/api/v1/discovery/${selfReport.session_id}/update`, { ...selfReport, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    const [work] = expectOk(await requestWork());
    expect(work.discovery_type.snmp_credentials.default_credential.community).to.equal(community);
  });

  it('an event says a credential changed, never from what to what', () => {
    const changes = withoutSecrets('host', { community: ['old-community', 'new-community'], source: [{ metadata: [{ auth_password: 'a' }] }, { metadata: [{ auth_password: 'b' }] }] });
    expect(changes).to.deep.equal({ community: SECRET_MASK, source: [{ metadata: [{ auth_password: SECRET_MASK }] }, { metadata: [{ auth_password: SECRET_MASK }] }] });
  });

  it('every column that could hold a credential is sealed (SEALED_COLUMNS) or holds a digest', async () => {
    const DIGESTS = ['user_api_keys.key_hash', 'daemon_api_keys.key_hash', 'users.password_hash', 'sessions.id_hash', 'idempotency_keys.request_hash', 'share_links.token_hash'];
    // Not credentials: which credentials a host uses, by id (reference §hosts).
    const REFERENCES = ['hosts.credential_assignments'];
    const columns = await sql<{ name: string }>(app,
      `select c.table_name || '.' || c.column_name as name from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
       where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' and c.data_type in ('text', 'character varying', 'character', 'jsonb', 'json')
         and (c.column_name ~ '(secret|password|passwd|token|community|credential|server_key|key_hash|_hash$)' or c.column_name = 'discovery_type')
         and c.table_name !~ '_(history|p[0-9]+|default)$'`);
    const sealed = SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`);
    const unknown = columns.map((c) => c.name).filter((n) => !sealed.includes(n) && !DIGESTS.includes(n) && !REFERENCES.includes(n));
    expect(unknown, 'a column that may hold a credential: seal it (SEALED_COLUMNS) or store a digest').to.deep.equal([]);
    expect(isSealed('enc:v1:00000000:AAAA')).to.equal(true);
  });
});
