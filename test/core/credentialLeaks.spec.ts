// Credentials are write-only (issue 37). Unique markers are stored through every path a credential
// takes (a user's password at sign-up and at creation, an SNMP v2c community and SNMPv3 auth / priv
// passwords in the work queued for a daemon, in a daemon's own session and in its entities' source
// metadata, the API key and daemon key shown at creation and rotation, a provisioned server_poll
// daemon's key, a webhook's signing secret), then everything that reads is exercised: lists, one
// entity, history, the event list and stream, webhook deliveries to a receiver on 127.0.0.1, CSV
// exports, the topology, the OpenAPI document, errors to requests that carry the credentials.
// Every output of the spec (test/support/leakCapture.ts: answers, SSE frames, webhook bodies,
// requests the service sent, log lines at debug level) is searched for every marker; a plaintext
// may be only where ALLOWED says (the creation / rotation answer, the daemon's work). The root
// `after` hook (test/setup.ts) searches the same way the outputs of every other spec of the run.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { startWebhookDelivery } from '../../workers/webhookDelivery.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import { capturedOutputs, leakCaptureEnabled, leaksFoundStreaming, plantCredential, plantedCredentials, search, stats, type CapturedOutput, type CredentialKind } from '../support/leakCapture.js';
import { readSse, type SseFrame } from '../support/sse.js';
import { login, uniqueEmail } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { envelope, startStandInDaemon, waitFor, workerServicesFor, type StandInDaemon } from '../workers/support.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

const marker = (what: string) => `planted-cred-${what}-${randomBytes(6).toString('hex')}`;
const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
const SERVER_POLL_STATUS = { name: 'scanopy-daemon-serverpoll', mode: 'server_poll', version: '0.14.10', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
const v3 = (auth: string, priv: string) => ({ version: 'V3', user: 'ops', auth_protocol: 'sha', auth_password: auth, priv_protocol: 'aes', priv_password: priv });
const snmp = (p: { community: string; auth: string; priv: string }, ip: string) => ({
  default_credential: v3(p.auth, p.priv), ip_overrides: [{ ip, credential: { version: 'V2c', community: p.community } }],
});
const now = () => new Date().toISOString();

describe('credentials are write-only: no answer, event, webhook body, export or log line shows one (issue 37)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let owner: Credential;
  let ownerEmail: string;
  let networkId: string;
  let receiver: Receiver;
  let standIn: StandInDaemon;
  let worker: Worker;
  let syncWorker: Worker;
  let workerServices: ReturnType<typeof workerServicesFor>;
  let daemon: DaemonClient;
  let serverPollId: string;
  let hostId: string;
  let webhookId: string;
  const frames: SseFrame[] = [];
  const stream = new AbortController();
  /** This spec's credentials, by what they are. */
  const mine = new Map<string, CredentialKind>();
  const plant = (value: string, kind: CredentialKind) => {
    mine.set(value, kind);
    plantCredential(value, kind, `credentialLeaks.spec (${kind})`);
    return value;
  };
  const passwords = { owner: marker('pw-owner'), member: marker('pw-member') };
  /** Queued by the server for the daemon_poll daemon, sent by that daemon in its own session, in its entities' metadata, queued for the server_poll daemon. */
  const queued = { community: marker('c-queued'), auth: marker('a-queued'), priv: marker('p-queued') };
  const own = { community: marker('c-own'), auth: marker('a-own'), priv: marker('p-own') };
  const meta = { community: marker('c-meta'), auth: marker('a-meta'), priv: marker('p-meta') };
  const polled = { community: marker('c-polled'), auth: marker('a-polled'), priv: marker('p-polled') };
  /** In the source metadata of a host the server_poll daemon reports in a poll (a discovery-sync job's data). */
  const polledMeta = { community: marker('c-pmeta'), auth: marker('a-pmeta'), priv: marker('p-pmeta') };
  const keys: Record<string, string> = {};

  before(async function () {
    if (!leakCaptureEnabled()) this.skip(); // LEAK_CAPTURE=0: nothing is captured
    ownerEmail = uniqueEmail('leaks');
    // The Owner is also an operator: the queue dashboard (every job's data) is read too.
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'], daemonAllowedNetworks: ['127.0.0.0/8'], operatorEmails: [ownerEmail] });
    for (const p of Object.values(passwords)) plant(p, 'password');
    for (const set of [queued, own, meta, polled, polledMeta]) for (const v of Object.values(set)) plant(v, 'snmp');

    // A user's password: at sign-up (the Owner) and at creation by an Admin (a Member).
    const user = expectOk(await call(app.url, 'POST', '/api/auth/register', { body: { email: ownerEmail, password: passwords.owner, organization_name: 'Leaks' } }), 201);
    networkId = user.network_ids[0];
    owner = await login(app.url, ownerEmail, passwords.owner);
    const memberEmail = uniqueEmail('member');
    expectOk(await call(app.url, 'POST', '/api/v1/users', { auth: owner, body: { email: memberEmail, password: passwords.member, permissions: 'Member', network_ids: [networkId] } }), 201);
    await login(app.url, memberEmail, passwords.member);

    // The live stream, open from here on: every frame of every change below.
    const res = await fetch(`${app.url}/api/v1/events/stream`, { headers: { Accept: 'text/event-stream', Cookie: owner.cookie! }, signal: stream.signal });
    expect(res.status).to.equal(200);
    void readSse(res.body, (f) => frames.push(f));

    // A webhook to a receiver on 127.0.0.1, its secret rotated, deliveries by an in-process worker.
    receiver = await startReceiver();
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: owner, body: { name: 'leaks', url: receiver.url, event_types: ['*'] } }), 201);
    webhookId = hook.id;
    keys.webhook = plant(hook.secret, 'webhook_secret');
    keys.webhookRotated = plant(expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${hook.id}/rotate-secret`, { auth: owner })).secret, 'webhook_secret');
    receiver.secrets.push(keys.webhook, keys.webhookRotated);
    workerServices = workerServicesFor(app, { serverPollTimeoutMs: 2000 });
    worker = await startWebhookDelivery({ ...workerServices, config: { ...workerServices.config, webhookAllowedNetworks: ['127.0.0.0/8'], webhookRetrySchedule: [0, 1, 1] } }, { sweepMs: 300 });

    // An API key, created and rotated (the rotated one reads below).
    const apiKey = expectOk(await call(app.url, 'POST', '/api/v1/auth/keys', { auth: owner, body: { name: 'leaks' } }), 201);
    keys.api = plant(apiKey.key, 'api_key');
    keys.apiRotated = plant(expectOk(await call(app.url, 'POST', `/api/v1/auth/keys/${apiKey.api_key.id}/rotate`, { auth: owner })).key, 'api_key');

    // A daemon_poll daemon: its key created and rotated; the server's queued Network session carries
    // SNMP credentials (as an Admin's settings would), the daemon reports its own session and
    // entities with others.
    const daemonKey = await createDaemonKey(app.url, owner, networkId);
    keys.daemon = plant(daemonKey.key, 'daemon_key');
    keys.daemonRotated = plant(expectOk(await call(app.url, 'POST', `/api/v1/auth/daemon/${daemonKey.id}/rotate`, { auth: owner })).key, 'daemon_key');
    daemon = daemonClient(app.url, keys.daemonRotated);
    await registerDaemon(daemon, networkId);
    const lan = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: owner, body: { cidr: '198.18.7.0/24', name: 'lab', network_id: networkId } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemon.id}/targets`, { auth: owner, body: { subnet_id: lan.id } }));
    await sql(app, `update discovery_sessions set discovery_type = jsonb_set(discovery_type, '{snmp_credentials}', ?::jsonb) where daemon_id = ? and discovery_type->>'type' = 'Network'`,
      [JSON.stringify(snmp(queued, '198.18.7.5')), daemon.id]);
    const requestWork = () => daemon.post(`/api/daemons/${daemon.id}/request-work`, STATUS);
    const [selfReport] = expectOk(await requestWork());
    expectOk(await daemon.post(`/api/v1/discovery/${selfReport.session_id}/update`, { ...selfReport, phase: 'Complete', progress: 100, finished_at: now() }));
    const [work] = expectOk(await requestWork());
    expect(JSON.stringify(work)).to.include(queued.community).and.include(queued.auth).and.include(queued.priv);
    // A daemon echoes its work back in its updates (plaintext in, masked when read).
    expectOk(await daemon.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, phase: 'Scanning', progress: 10, started_at: now() }));
    const ownType = { type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', probe_raw_socket_ports: false, snmp_credentials: snmp(own, '198.18.9.5') };
    const ownId = randomUUID();
    expectOk(await daemon.post(`/api/v1/discovery/${ownId}/update`, {
      session_id: ownId, daemon_id: daemon.id, network_id: networkId, phase: 'Complete', discovery_type: ownType, progress: 100, error: null, started_at: now(), finished_at: now(),
    }));
    const metadata = [{ ...ownType, daemon_id: daemon.id, date: '2026-11-22T10:00:00Z', snmp_credentials: snmp(meta, '198.18.9.5') }];
    const subnet = await postSubnet(daemon, networkId, '198.18.9.0/24', { source: { type: 'Discovery', metadata } });
    const report = { interfaces: [{ subnet_id: subnet.id, ip_address: '198.18.9.5' }], ports: [{ number: 161, protocol: 'Udp' as const }], services: [{ name: 'SNMP', ports: [161] }], metadata };
    hostId = (await postHost(daemon, hostReport(daemon, networkId, report))).id;
    await postHost(daemon, hostReport(daemon, networkId, { ...report, hostId })); // merged with the stored (masked) metadata
    expectOk(await daemon.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, phase: 'Complete', progress: 100, started_at: now(), finished_at: now() }));

    // A server_poll daemon provisioned with a pairing code (the server hands its key to the stand-in
    // agent), then polled: the initiate it sends carries the queued SNMP credentials; a poll
    // reports a host whose source metadata carries others (a discovery-sync job, then the host).
    let polledHosts: unknown[] = [];
    standIn = await startStandInDaemon((req) => {
      if (req.path === '/api/initialize') return { status: 200, body: envelope('Daemon initialized successfully') };
      if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(SERVER_POLL_STATUS) };
      if (req.path === '/api/poll') return { status: 200, body: envelope({ progress: null, entities: { hosts: polledHosts, subnets: [] } }) };
      if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
      return undefined;
    });
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', {
      auth: owner, body: { name: 'poller', network_id: networkId, url: standIn.url, pairing_code: 'PAIR-LEAKS-0042' },
    }), 201);
    keys.serverPoll = plant(provisioned.daemon_api_key, 'daemon_key');
    serverPollId = provisioned.daemon.id;
    await pollDaemon(workerServices, serverPollId); // first contact: its default session, handed out
    await sql(app, `update discovery_sessions set phase = 'Complete', finished_at = now() where daemon_id = ?`, [serverPollId]); // as if the agent had reported it
    const polledSession = randomUUID();
    await sql(app, `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type) values (?, (select organization_id from daemons where id = ?), ?, ?, ?::jsonb)`, [
      polledSession, serverPollId, networkId, serverPollId,
      JSON.stringify({ type: 'Network', subnet_ids: [lan.id], host_naming_fallback: 'BestService', probe_raw_socket_ports: false, snmp_credentials: snmp(polled, '198.18.7.9') }),
    ]);
    await waitFor('the polled session initiated', async () => {
      await pollDaemon(workerServices, serverPollId);
      return standIn.requests.some((r) => r.path === '/api/discovery/initiate' && JSON.stringify(r.body).includes(polledSession));
    }, 20_000, 200);
    const polledType = { type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', probe_raw_socket_ports: false, snmp_credentials: snmp(polledMeta, '198.18.7.9') };
    const polledHost = hostReport({ id: serverPollId } as DaemonClient, networkId, {
      name: 'polled', ports: [{ number: 161, protocol: 'Udp' }], services: [{ name: 'SNMP', ports: [161] }],
      metadata: [{ ...polledType, daemon_id: serverPollId, date: '2026-11-22T10:00:00Z' }],
    });
    polledHosts = [polledHost];
    syncWorker = await startDiscoverySync(workerServices);
    await waitFor('the polled host stored', async () => {
      await pollDaemon(workerServices, serverPollId);
      return (await sql(app, `select 1 from hosts where id = ?`, [polledHost.host.id])).length > 0;
    }, 20_000, 200);
    polledHosts = [];

    // Something for the webhook and the stream to carry besides the daemons' changes.
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: { bearer: keys.apiRotated }, body: { name: 'by-key', network_id: networkId } }), 201);
    expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${webhookId}/test`, { auth: owner }), 202);
  });

  after(async () => {
    stream.abort();
    await worker?.close();
    await syncWorker?.close();
    await workerServices?.close();
    await receiver?.close();
    await standIn?.close();
    await app?.close();
  });

  it('reads back everything a reader can: lists, entities, history, events, exports, the topology, the OpenAPI document', async () => {
    const byKey = { bearer: keys.apiRotated };
    const reads: Array<[Credential, string]> = [];
    for (const auth of [owner, byKey]) {
      for (const path of [
        '/api/auth/me', '/api/v1/users', '/api/v1/organizations/current',
        '/api/v1/daemons', `/api/v1/daemons/${daemon.id}`, `/api/v1/daemons/${daemon.id}/history`, `/api/v1/daemons/${daemon.id}/sessions`,
        `/api/v1/daemons/${serverPollId}`, `/api/v1/daemons/${serverPollId}/history`, `/api/v1/daemons/${serverPollId}/sessions`,
        `/api/v1/events?network_id=${networkId}&limit=1000`, '/api/v1/hosts', `/api/v1/hosts/${hostId}`, `/api/v1/hosts/${hostId}/history`,
        '/api/v1/subnets', '/api/v1/services', '/api/v1/ports', '/api/v1/ip-addresses', '/api/v1/interfaces',
        `/api/v1/topology?network_id=${networkId}`, `/api/v1/topology/export?network_id=${networkId}&format=graphml`, `/api/v1/topology/export?network_id=${networkId}&format=svg`,
        '/api/v1/hosts/export/csv', '/api/v1/subnets/export/csv', '/api/v1/daemons/export/csv', '/api/v1/services/export/csv', '/api/v1/users/export/csv',
        '/api/openapi.json',
      ]) reads.push([auth, path]);
    }
    // Session-only and Admin-only reads (keys, daemon keys, webhooks and their deliveries).
    for (const path of [
      '/api/v1/auth/keys', '/api/v1/auth/keys/export/csv', '/api/v1/auth/daemon', '/api/v1/auth/daemon/export/csv',
      '/api/v1/webhooks', `/api/v1/webhooks/${webhookId}`, '/api/v1/webhooks/export/csv',
    ]) reads.push([owner, path]);
    for (const [auth, path] of reads) {
      const res = await fetch(app.url + path, { headers: auth.cookie ? { Cookie: auth.cookie } : { Authorization: `Bearer ${auth.bearer}` } });
      await res.text();
      expect(res.status, `${path} ${auth.cookie ? 'session' : 'key'}`).to.equal(200);
    }
    // The queue dashboard's jobs (the operator's), every queue and state, and each job of them.
    for (const status of ['latest', 'completed', 'waiting', 'failed', 'delayed', 'active']) {
      const res = await call(app.url, 'GET', `/admin/queues/api/queues?activeQueue=discovery-sync&status=${status}&page=1&jobsPerPage=50`, { auth: owner });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).to.equal(200);
      if (status === 'completed') {
        // The polled host's job, its metadata masked (it showed the daemon's credentials before).
        const jobs = res.body.queues.find((q: any) => q.name === 'discovery-sync').jobs;
        expect(jobs).to.have.length.greaterThan(0);
        expect(JSON.stringify(jobs)).to.include('"community":"********"');
        const job = await call(app.url, 'GET', `/admin/queues/api/queues/discovery-sync/${encodeURIComponent(jobs[0].id)}`, { auth: owner });
        expect(job.status).to.equal(200);
        expect(JSON.stringify(job.body)).to.include('"priv_password":"********"');
      }
    }
    // The daemon's own reads.
    expectOk(await daemon.get('/api/daemons/key'));
    // Deliveries (with their receivers' answers), once the webhook has carried the changes above.
    await waitFor('webhook deliveries', async () => receiver.received.length >= 5 && receiver.received.some((r) => r.json.type === 'host.created'));
    const deliveries = expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${webhookId}/deliveries?limit=100`, { auth: owner }));
    expect(deliveries.length).to.be.greaterThan(0);
    expect(receiver.received.every((r) => r.verified === true)).to.equal(true);
    await waitFor('events on the stream', async () => frames.filter((f) => f.data).length >= 5);
  });

  it('refuses requests that carry the credentials without echoing them back', async () => {
    const answers: ApiResponse[] = [];
    // A wrong password that starts with the right one; a sign-up that would reuse one, refused.
    answers.push(await call(app.url, 'POST', '/api/auth/login', { body: { email: ownerEmail, password: `${passwords.owner}-wrong` } }));
    answers.push(await call(app.url, 'POST', '/api/auth/register', { body: { email: 'not an email', password: passwords.member, organization_name: 'x' } }));
    answers.push(await call(app.url, 'POST', '/api/auth/register', { body: { email: uniqueEmail('long'), password: passwords.owner.repeat(10), organization_name: 'x' } }));
    answers.push(await call(app.url, 'POST', '/api/v1/users', { auth: owner, body: { email: uniqueEmail('bad'), password: passwords.member, permissions: 'Emperor' } }));
    // Keys that are not quite the real ones, a key where a session is needed, a daemon key on a user route.
    answers.push(await call(app.url, 'GET', '/api/v1/hosts', { auth: { bearer: `${keys.apiRotated}x` } }));
    answers.push(await call(app.url, 'GET', '/api/v1/auth/keys', { auth: { bearer: keys.apiRotated } }));
    answers.push(await call(app.url, 'GET', '/api/v1/hosts', { auth: { bearer: keys.daemonRotated } }));
    answers.push(await call(app.url, 'GET', '/api/v1/hosts', { auth: { bearer: keys.api } })); // rotated away
    // Credentials in bodies and queries the schemas refuse.
    answers.push(await call(app.url, 'PUT', `/api/v1/webhooks/${webhookId}`, { auth: owner, body: { name: 'x', url: receiver.url, secret: keys.webhookRotated } }));
    answers.push(await call(app.url, 'POST', '/api/v1/auth/keys', { auth: owner, body: { name: 'x', permissions: 'Emperor', key: keys.apiRotated } }));
    answers.push(await call(app.url, 'GET', `/api/v1/hosts?community=${queued.community}`, { auth: owner }));
    answers.push(await daemon.post(`/api/v1/discovery/${randomUUID()}/update`, {
      session_id: 'not-a-uuid', daemon_id: daemon.id, network_id: networkId, phase: 'Bogus', progress: 'x',
      discovery_type: { type: 'Network', snmp_credentials: { default_credential: v3(own.auth, own.priv), ip_overrides: [{ ip: 'not an ip', credential: { version: 'V9', community: own.community } }] } },
    }));
    answers.push(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: owner, body: { name: 'x', network_id: networkId, url: 'not a url', pairing_code: keys.serverPoll } }));
    // A create retried with its Idempotency-Key: the replay does not show the key or secret again (409).
    for (const [path, body, field] of [['/api/v1/auth/keys', { name: 'retried' }, 'key'], ['/api/v1/webhooks', { name: 'retried', url: receiver.url, event_types: ['tag.*'] }, 'secret']] as const) {
      const headers = { 'Idempotency-Key': `leaks-${randomUUID()}` };
      const first = expectOk(await call(app.url, 'POST', path, { auth: owner, body, headers }), 201);
      plant(first[field], field === 'key' ? 'api_key' : 'webhook_secret');
      const replay = await call(app.url, 'POST', path, { auth: owner, body, headers });
      expect(JSON.stringify(replay.body)).to.not.include(first[field]);
      answers.push(replay);
    }
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).to.be.within(400, 499);
    if (process.env.LEAK_SPEC_VERBOSE) for (const a of answers) console.log(a.status, JSON.stringify(a.body).slice(0, 300));
    expectError(answers[0]!, 401, answers[0]!.body.code);
  });

  it('no captured output shows a credential outside its allowed places; the allowed ones do show them (the search finds what is there)', async () => {
    // Late webhook deliveries and log lines are in too.
    await new Promise((r) => setTimeout(r, 500));
    const outputs = capturedOutputs();
    const planted = new Map([...plantedCredentials()].filter(([v]) => mine.has(v)));
    expect(planted.size, 'every credential of this spec planted').to.equal(mine.size);
    const leaks = [...search(outputs, planted), ...leaksFoundStreaming().filter((l) => mine.has(l.value))];
    expect(leaks.map((l) => `${l.kind} in ${l.where}: ${l.context}`)).to.deep.equal([]);

    // What was captured: answers (a compressed one among them), SSE frames, webhook bodies, requests sent, logs.
    const of = (source: CapturedOutput['source'], where: RegExp) => outputs.filter((o) => o.source === source && where.test(o.where));
    expect(of('answer', /GET \/api\/v1\/hosts\/export\/csv/)[0]?.text, 'the CSV export').to.match(/^id,/);
    expect(of('answer', /GET \/api\/openapi\.json/)[0]?.text, 'the OpenAPI document, decompressed').to.include('"openapi"');
    expect(of('answer', /GET \/api\/v1\/events\/stream/)[0]?.text, 'the event stream').to.include('data: ');
    expect(of('sent', /^a webhook body/).length, 'webhook bodies').to.be.at.least(Math.max(5, receiver.received.length));
    expect(of('log', /test app/).length, 'log lines').to.be.greaterThan(50);
    expect(of('log', /test app/).some((o) => o.text.includes('"msg":"request"'))).to.equal(true);
    expect(stats.compressedAnswers).to.be.greaterThan(0);

    // Each credential shows where it is allowed to, and only there: the search would have found it anywhere.
    const shown = (value: string) => outputs.filter((o) => o.text.includes(value)).map((o) => `${o.source} ${o.method} ${o.path}`);
    for (const v of [...Object.values(queued)]) expect(shown(v), v).to.include(`answer POST /api/daemons/${daemon.id}/request-work`);
    for (const v of [...Object.values(polled)]) expect(shown(v), v).to.include('sent POST /api/discovery/initiate');
    expect(shown(keys.serverPoll)).to.include.members(['answer POST /api/v1/daemons/provision', 'sent POST /api/initialize']);
    expect(shown(keys.apiRotated).filter((w) => /^answer POST \/api\/v1\/auth\/keys\/[^/]+\/rotate$/.test(w))).to.have.length(1);
    expect(shown(keys.webhook)).to.deep.equal(['answer POST /api/v1/webhooks']);

    // And the search itself: a marker in a log line, an event frame or an answer other than its creation is a leak.
    const probe = (o: Partial<CapturedOutput>) => search([{ source: 'log', where: 'probe', test: 'probe', text: '', ...o } as CapturedOutput], planted);
    expect(probe({ text: `{"msg":"request","body":{"community":"${own.community}"}}` })).to.have.length(1);
    expect(probe({ source: 'answer', method: 'GET', path: '/api/v1/events/stream', text: `data: {"auth_password":"${queued.auth}"}` })).to.have.length(1);
    expect(probe({ source: 'answer', method: 'POST', path: '/api/v1/webhooks', text: keys.apiRotated })).to.have.length(1);
    expect(probe({ source: 'answer', method: 'POST', path: `/api/daemons/${daemon.id}/request-work`, text: queued.priv })).to.deep.equal([]);
  });
});
