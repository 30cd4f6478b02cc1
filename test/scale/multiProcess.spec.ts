// Several processes, proven (issue 26 part 1): two API processes and two worker processes from the
// built bundles (dist/) on one database and one Redis prefix share the rate limit bucket, the
// sessions and keys (and their revocation), run each repeatable job under one scheduler, finish a
// discovery-sync job whose worker was killed, stream every event to both APIs, and poll each
// server_poll daemon once per interval. Everything listens on and calls 127.0.0.1 only.
//
// The processes are started once (before) and each check is one it(): each makes its own tenant and
// refills the rate limit buckets first (their clock is the test's, RATE_LIMIT_TEST_CLOCK), so no
// check depends on another or on their order.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { discoverySyncJobId, loadQueueSettings, openQueues, pollSchedulerId, QUEUE_NAMES, RECONCILE_SCHEDULER_ID, requestSchedulerReconcile, type DiscoverySyncJob, type Queues } from '../../src/core/queues.js';
import { testClockKey } from '../../src/http/rateLimiter.js';
import { ingestSubnet } from '../../src/modules/discovery/ingest.js';
import { VERSION_STATUS_SCHEDULER_ID } from '../../workers/versionStatus.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk, type Credential } from '../support/client.js';
import { readRecording } from '../support/fixtures.js';
import { createKey, login, registerTenant, type Tenant } from '../support/world.js';
import { db, envelope, seedDaemon, startStandInDaemon, waitFor, type Responder, type StandInDaemon } from '../workers/support.js';
import { openStream, startApi, startWorker, stop, type Child } from './support.js';
import { SCHEDULE_RECONCILE_ID } from '../../src/modules/schedules/jobs.js';

const USER_BURST = 20;
const POLL_INTERVAL_MS = 1000;
const JOB_DELAY_MS = 4000;
const API_ENV = {
  RATE_LIMIT_USER: `${USER_BURST}/60`,
  RATE_LIMIT_TEST_CLOCK: 'true',
  RATE_LIMIT_REDIS_TIMEOUT_MS: '60000', // a slow Redis must not make a request fall back to an in-process bucket
  DAEMON_ALLOWED_NETWORKS: '127.0.0.0/8',
};
const WORKER_ENV = {
  WORKER_LOCK_DURATION_MS: '1500',
  WORKER_STALLED_INTERVAL_MS: '500',
  DISCOVERY_SYNC_TEST_DELAY_MS: String(JOB_DELAY_MS), // each discovery-sync job holds its transaction open this long
  SERVER_POLL_INTERVAL_MS: String(POLL_INTERVAL_MS),
  SERVER_POLL_TIMEOUT_MS: '1000',
  DAEMON_ALLOWED_NETWORKS: '127.0.0.0/8', // the stand-in daemon listens on loopback
};

const recorded = readRecording('v0.14.10', 'daemon_to_server.json');
const body = (path: string) => structuredClone(recorded.exchanges.find((e) => e.path === path).request_body);

const STATUS = { name: 'scanopy-daemon-serverpoll', mode: 'server_poll', version: '0.14.10', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
const healthy: Responder = (req) => {
  if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(STATUS) };
  if (req.path === '/api/poll') return { status: 200, body: envelope({ progress: null, entities: { hosts: [], subnets: [] } }) };
  if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
  return undefined;
};

describe('scale: two API and two worker processes on one database and one Redis', function () {
  this.timeout(60_000);
  let app: TestApp;
  let queues: Queues;
  let apiA: Child & { url: string };
  let apiB: Child & { url: string };
  const workers: Child[] = [];
  const daemons: StandInDaemon[] = [];

  /** Every bucket full again: the buckets' clock (frozen otherwise) moves an hour. */
  const refill = async () => { await app.services.redis.incrby(testClockKey(app.redisPrefix), 3_600_000); };
  const tenant = async (label: string) => {
    await refill();
    const t = await registerTenant(apiA.url, label);
    await refill();
    return t;
  };
  const me = (url: string, auth: Credential) => call(url, 'GET', '/api/auth/me', { auth });

  before(async function () {
    this.timeout(120_000);
    // The in-process app only provides the database, the prefix and connections for the checks.
    app = await startTestApp();
    await app.services.redis.set(testClockKey(app.redisPrefix), 1_700_000_000_000);
    queues = openQueues(app.services.config, loadQueueSettings({}));
    [apiA, apiB] = await Promise.all([startApi('netinv-api-a', app, API_ENV), startApi('netinv-api-b', app, API_ENV)]);
    workers.push(...(await Promise.all([startWorker('netinv-worker-1', app, WORKER_ENV), startWorker('netinv-worker-2', app, WORKER_ENV)])));
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.all([apiA, apiB, ...workers].filter(Boolean).map(stop));
    for (const d of daemons.splice(0)) await d.close();
    await queues?.close();
    await app?.close();
  });

  it('one principal’s requests spread over both APIs are limited by one bucket', async () => {
    const t = await tenant('bucket');
    // Twice the burst, alternating between the APIs, in concurrent batches.
    const responses = [];
    for (let i = 0; i < 2 * USER_BURST; i += 10) {
      responses.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => me((i + j) % 2 ? apiB.url : apiA.url, t.owner)))));
    }
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), 'allowed across both').to.have.length(USER_BURST);
    expect(statuses.filter((s) => s === 429), 'limited across both').to.have.length(USER_BURST);
    // Both processes refuse now: the bucket is the same one.
    expect((await me(apiA.url, t.owner)).status).to.equal(429);
    expect((await me(apiB.url, t.owner)).status).to.equal(429);
  });

  it('a session and an API key made on one API work on the other; revoked on one, refused by the other within a second', async () => {
    const t = await tenant('creds');
    expectOk(await me(apiB.url, t.owner)); // the session was made by A's login
    const key = await createKey(apiA.url, t.owner, { name: 'across' });
    expectOk(await me(apiB.url, { bearer: key.key }));
    const session = await login(apiB.url, (expectOk(await me(apiA.url, t.owner)) as { email: string }).email);
    expectOk(await me(apiA.url, session));

    /** Polls `url` with `auth` until it answers 401; fails after a second. */
    const refusedWithinASecond = async (what: string, url: string, auth: Credential) => {
      const deadline = Date.now() + 1000;
      for (;;) {
        await refill(); // polling spends the user's tokens: a 429 must not hide the answer
        const res = await me(url, auth);
        if (res.status === 401) return;
        expect(res.status, what).to.equal(200);
        if (Date.now() > deadline) throw new Error(`${what}: still accepted a second after the revocation`);
        await sleep(50);
      }
    };
    expect((await call(apiA.url, 'DELETE', `/api/v1/auth/keys/${key.id}`, { auth: t.owner })).status).to.be.within(200, 204);
    await refusedWithinASecond('the deleted key on B', apiB.url, { bearer: key.key });
    expect((await call(apiB.url, 'POST', '/api/auth/logout', { auth: session })).status).to.be.within(200, 204);
    await refusedWithinASecond('the logged-out session on A', apiA.url, session);
    expectOk(await me(apiA.url, t.owner)); // the other session is untouched
  });

  it('exactly one scheduler per repeatable job with both workers running', async () => {
    expect(workers.map((w) => w.running())).to.deep.equal([true, true]);
    const expected: Record<string, string[]> = {
      [QUEUE_NAMES.maintenance]: ['purge-expired-sessions', 'stalled-discovery-sessions'],
      [QUEUE_NAMES.versionStatus]: [VERSION_STATUS_SCHEDULER_ID],
      [QUEUE_NAMES.serverPoll]: [RECONCILE_SCHEDULER_ID],
      [QUEUE_NAMES.discoverySchedule]: [SCHEDULE_RECONCILE_ID],
      [QUEUE_NAMES.alertDelivery]: ['alert-sweep'],
    };
    for (const [name, queue] of Object.entries(queues.byName)) {
      const schedulers = await queue.getJobSchedulers(0, -1);
      // Per-daemon poll schedulers exist only while daemons do (the server-poll check makes one).
      const fixed = schedulers.filter((s) => !s.key.startsWith('poll-'));
      expect(fixed.map((s) => s.key).sort(), name).to.deep.equal(expected[name] ?? []);
      // The same job (name and data) under two ids would run twice per period.
      const jobs = schedulers.map((s) => `${s.name} ${JSON.stringify(s.template?.data ?? {})}`);
      expect(new Set(jobs).size, `${name}: ${jobs.join(', ')}`).to.equal(jobs.length);
    }
  });

  it('kill -9 of a worker in the middle of a discovery-sync job: the other worker finishes it, no host lost or duplicated', async () => {
    const t = await tenant('kill');
    const ctx = { organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: randomUUID() };
    await ingestSubnet(db(app), ctx, { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId });
    const host = body('/api/v1/hosts/discovery');
    host.host.network_id = t.defaultNetworkId;
    const data: DiscoverySyncJob = { ctx, subnets: [], hosts: [host] };
    const jobId = discoverySyncJobId(data);
    await queues.discoverySync.add('sync', data, { jobId });

    // The worker whose connection sits in the job's open transaction (application_name = its name).
    const holder = await waitFor('the job’s transaction open in a worker', async () => {
      const client = new pg.Client({ connectionString: app.databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query(
          `select application_name from pg_stat_activity where datname = current_database() and state = 'idle in transaction'
           and application_name like 'netinv-worker-%' and now() - state_change > interval '300 milliseconds'`,
        );
        return rows[0]?.application_name as string | undefined;
      } finally {
        await client.end();
      }
    }, 30_000, 50);
    const index = workers.findIndex((w) => w.name === holder);
    const killed = workers[index]!;
    try {
      killed.child.kill('SIGKILL');
      expect(await killed.exited).to.deep.equal({ code: null, signal: 'SIGKILL' });
      await waitFor('the job completed by the other worker', async () => (await queues.discoverySync.getJobState(jobId)) === 'completed', 30_000);
      const done = (await queues.discoverySync.getJob(jobId))!;
      expect(done.stalledCounter, 'taken up again as a stalled job').to.equal(1);
      expect(done.returnvalue.hosts).to.deep.equal([{ id: host.host.id }]);
      const hosts = await db(app).query<{ id: string }>(`select id from hosts where network_id = ?`, [t.defaultNetworkId]);
      expect(hosts.map((h) => h.id)).to.deep.equal([host.host.id]);
      const ips = await db(app).query(`select id from ip_addresses where network_id = ?`, [t.defaultNetworkId]);
      expect(ips).to.have.length(1);
    } finally {
      // Both workers again for the other checks.
      workers[index] = await startWorker(killed.name, app, WORKER_ENV);
    }
  });

  it('event streams on both APIs receive every event of a burst written through one, once each and in order', async () => {
    const t = await tenant('stream');
    const onA = await openStream(apiA.url, t.owner, '?types=tag.created');
    const onB = await openStream(apiB.url, t.owner, '?types=tag.created');
    try {
      const names = Array.from({ length: 12 }, (_, i) => `burst-${i}`);
      await Promise.all(names.map((name) => call(apiA.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name, color: 'Blue' } }).then((r) => expectOk(r, 201))));
      // Under the hubs' 5 s safety sweep: what arrives sooner came through the cross-process wake-up.
      const deadline = Date.now() + 4000;
      while ((onA.events.length < names.length || onB.events.length < names.length) && Date.now() < deadline) await sleep(50);
      await sleep(200); // a duplicate would come right behind
      const stored = expectOk(await call(apiA.url, 'GET', '/api/v1/events?types=tag.created&limit=100', { auth: t.owner })) as Array<{ id: string; data: { name: string } }>;
      expect(stored.map((e) => e.data.name).sort()).to.deep.equal([...names].sort());
      for (const [label, stream] of [['A', onA], ['B', onB]] as const) {
        expect(stream.events.map((e) => e.id), `stream on ${label}: every event once, in commit order`).to.deep.equal(stored.map((e) => String(e.id)));
      }
    } finally {
      onA.close();
      onB.close();
    }
  });

  it('each server_poll daemon is polled by exactly one process per interval', async () => {
    const t = await tenant('poll');
    const daemon = await startStandInDaemon(healthy);
    daemons.push(daemon);
    const seeded = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    await requestSchedulerReconcile(queues);
    const polls = () => daemon.requests.filter((r) => r.path === '/api/poll').length;
    await waitFor('six polls', async () => polls() >= 6, 30_000);
    // No url: the next job skips the daemon and drops its scheduler; then the count is final.
    await db(app).query(`update daemons set url = '' where id = ?`, [seeded.id]);
    await waitFor('the poll scheduler gone', async () => !(await queues.serverPoll.getJobSchedulers(0, -1)).some((s) => s.key === pollSchedulerId(seeded.id)), 15_000);
    await sleep(2 * POLL_INTERVAL_MS);
    const jobs = (await queues.serverPoll.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'], 0, -1))
      .filter((j) => j.name === 'poll' && (j.data as { daemonId?: string }).daemonId === seeded.id);
    const polled = jobs.filter((j) => j.returnvalue?.result === 'ok');
    // One job per period (scheduler job ids end with the period's instant), each one poll of the daemon.
    const instants = polled.map((j) => Number(String(j.id).split(':').at(-1)));
    expect(new Set(instants).size, `job ids ${polled.map((j) => j.id).join(', ')}`).to.equal(polled.length);
    expect(polls(), 'daemon polls = poll jobs that ran').to.equal(polled.length);
    const sorted = [...instants].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!, 'periods apart').to.be.at.least(POLL_INTERVAL_MS);
  });
});
