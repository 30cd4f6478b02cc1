// Redis Cluster (issue 26 part 3): an API process and a worker process from the built bundles (dist/)
// with REDIS_CLUSTER_NODES set, on a 3-master, 3-replica cluster this file starts from Debian's
// redis-server (scripts/redisCluster.ts, loopback ports, no persistence). Checks: each queue's keys
// in its own hash slot, the queues on more than one master; work that goes through the queues runs
// (a topology layout asked for over HTTP, discovery-sync jobs); the rate limit bucket and the login
// guard hold across two processes (their scripts touch one slot each); the queue dashboard lists the
// jobs; and when the master holding `{discovery-sync}` is killed, a replica takes over and the
// worker finishes every job queued before and after the kill, none lost, none duplicated.
//
// The in-process test app is the second API process (same database, prefix and cluster) and gives
// the checks their connections. This file always starts its own cluster (it kills one of its
// masters), also under `npm run test:cluster`.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster, type RedisCluster } from '../../scripts/redisCluster.js';
import { setOperator } from '../../src/core/operators.js';
import { ALL_QUEUES, discoverySyncJobId, loadQueueSettings, openQueues, QUEUE_NAMES, type DiscoverySyncJob, type Queues } from '../../src/core/queues.js';
import type { RedisClient } from '../../src/core/redis.js';
import { testClockKey } from '../../src/http/rateLimiter.js';
import { ingestSubnet } from '../../src/modules/discovery/ingest.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { readRecording } from '../support/fixtures.js';
import { PASSWORD, registerTenant, type Tenant } from '../support/world.js';
import { db, waitFor } from '../workers/support.js';
import { startApi, startWorker, stop, type Child } from './support.js';

const USER_BURST = 20;
// Long enough that jobs are still running after the test's adds and WAIT: at 300 ms a quiet machine
// finished all 12 (4 at a time) before the first look for a running one.
const JOB_DELAY_MS = 1500;
const API_ENV = {
  HOST: '127.0.0.1', // as the in-process app: the login guard counts per (account, client address), ::ffff:127.0.0.1 is another one
  RATE_LIMIT_USER: `${USER_BURST}/60`,
  RATE_LIMIT_TEST_CLOCK: 'true',
  RATE_LIMIT_REDIS_TIMEOUT_MS: '60000', // a slow Redis must not make a request fall back to an in-process bucket
};
const WORKER_ENV = {
  // A job whose worker lost it to the failover is taken up again once its lock expires.
  WORKER_LOCK_DURATION_MS: '5000',
  WORKER_STALLED_INTERVAL_MS: '1000',
  DISCOVERY_SYNC_TEST_DELAY_MS: String(JOB_DELAY_MS), // jobs are in flight when the master dies
  DISCOVERY_SYNC_BACKOFF_MS: '200',
};

const recorded = readRecording('v0.14.10', 'daemon_to_server.json');
const body = (path: string) => structuredClone(recorded.exchanges.find((e) => e.path === path).request_body);

/** Every key under `pattern` on every master of the cluster. */
async function clusterKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const masters = 'nodes' in redis ? redis.nodes('master') : [redis];
  const keys: string[] = [];
  for (const node of masters) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
  }
  return keys;
}

describe('scale: Redis Cluster (3 masters, 3 replicas): an API and a worker process', function () {
  this.timeout(90_000);
  let cluster: RedisCluster;
  let app: TestApp;
  let queues: Queues;
  let api: Child & { url: string };
  let worker: Child;

  const redis = () => app.services.redis;
  /** Every bucket full again: the buckets' clock (frozen otherwise) moves an hour. */
  const refill = async () => { await redis().incrby(testClockKey(app.redisPrefix), 3_600_000); };
  const tenant = async (label: string) => {
    await refill();
    const t = await registerTenant(api.url, label);
    await refill();
    return t;
  };
  const me = (url: string, auth: Credential) => call(url, 'GET', '/api/auth/me', { auth });
  const emailOf = async (t: Tenant) => (expectOk(await me(api.url, t.owner)) as { email: string }).email;

  before(async function () {
    this.timeout(180_000);
    cluster = await startRedisCluster({ nodeTimeoutMs: 2000 });
    const seeds = cluster.seeds.split(',');
    app = await startTestApp({
      redisClusterNodes: seeds,
      userRateLimit: { capacity: USER_BURST, refillPerMinute: 60 }, rateLimitTestClock: true, rateLimitRedisTimeoutMs: 60_000,
    });
    expect(redis(), 'the app’s connection').to.be.instanceOf(Cluster);
    // The app starts degraded when its connection is not up within 2 s (a loaded machine): wait for it.
    await waitFor('the app’s cluster connection ready', async () => redis().status === 'ready', 60_000);
    await redis().set(testClockKey(app.redisPrefix), 1_700_000_000_000);
    queues = openQueues(app.services.config, loadQueueSettings({}));
    const onCluster = { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_URL: 'redis://127.0.0.1:1' }; // REDIS_URL must be ignored
    // Both kept as they start, so that after() stops whichever started when the other did not.
    const started = await Promise.allSettled([
      startApi('netinv-api-cluster', app, { ...API_ENV, ...onCluster }).then((p) => { api = p; }),
      startWorker('netinv-worker-cluster', app, { ...WORKER_ENV, ...onCluster }).then((p) => { worker = p; }),
    ]);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.all([api, worker].filter(Boolean).map(stop));
    await queues?.close();
    await app?.close();
    await cluster?.stop();
  });

  it('each queue’s keys share a hash tag of its own; the queues sit on more than one master', async () => {
    const masters = new Set<number>();
    for (const name of ALL_QUEUES) {
      // Every queue has keys once the worker has started (its meta key, schedulers for some).
      const keys = await clusterKeys(redis(), `${app.redisPrefix}bull:{${name}}:*`);
      expect(keys.length, name).to.be.greaterThan(0);
      const slots = new Set(await Promise.all(keys.map((k) => redis().cluster('KEYSLOT', k))));
      expect([...slots], `${name}: every key in one slot`).to.deep.equal([await redis().cluster('KEYSLOT', `{${name}}`)]);
      masters.add(await cluster.masterOf(`{${name}}`));
    }
    // Nothing of the queues outside the tagged prefixes.
    const untagged = (await clusterKeys(redis(), `${app.redisPrefix}bull:*`)).filter((k) => !/^[^{]*bull:\{[a-z-]+\}:/.test(k));
    expect(untagged).to.deep.equal([]);
    expect(masters.size, 'masters holding queues').to.be.at.least(2);
  });

  it('a topology asked for over HTTP is laid out by the worker through the topology-layout queue', async () => {
    const t = await tenant('layout');
    for (const name of ['alpha', 'beta']) {
      expectOk(await call(api.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { name, network_id: t.defaultNetworkId } }), 201);
    }
    const topo = async () => {
      await refill();
      return expectOk(await call(api.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}`, { auth: t.owner }));
    };
    expect((await topo()).layout.status).to.be.oneOf(['pending', 'ready']);
    const ready = await waitFor('layout ready', async () => {
      const data = await topo();
      return data.layout.status === 'ready' && data;
    }, 60_000, 250);
    expect(Object.keys(ready.layout.positions).sort()).to.deep.equal(ready.nodes.map((n: { id: string }) => n.id).sort());
  });

  it('one principal’s requests on two API processes are limited by one bucket', async () => {
    const t = await tenant('bucket');
    const responses = [];
    for (let i = 0; i < 2 * USER_BURST; i += 10) {
      responses.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => me((i + j) % 2 ? app.url : api.url, t.owner)))));
    }
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), 'allowed across both').to.have.length(USER_BURST);
    expect(statuses.filter((s) => s === 429), 'limited across both').to.have.length(USER_BURST);
    expect(app.services.rateLimiter.degraded, 'decided in Redis, not in process').to.equal(false);
  });

  it('the login guard locks an account’s address on both API processes after five failures', async () => {
    const t = await tenant('guard');
    const email = await emailOf(t);
    const attempt = (url: string, password: string) => call(url, 'POST', '/api/auth/login', { body: { email, password } });
    for (let i = 0; i < 5; i++) {
      await refill();
      expectError(await attempt(i % 2 ? app.url : api.url, 'wrong-horse-battery'), 401, 'auth_invalid_credentials');
    }
    await refill();
    // The sixth, even with the right password, on either process: counted in one place.
    expectError(await attempt(api.url, PASSWORD), 429, 'auth_login_locked');
    expectError(await attempt(app.url, PASSWORD), 429, 'auth_login_locked');
  });

  /** `count` discovery-sync jobs of one host each (own id, MAC and address) on the tenant's network. */
  async function discoveryJobs(t: Tenant, count: number) {
    const ctx = { organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: randomUUID() };
    const subnet = { ...body('/api/v1/subnets'), id: randomUUID(), cidr: '10.77.0.0/16', name: '10.77.0.0/16', network_id: t.defaultNetworkId };
    await ingestSubnet(db(app), ctx, subnet);
    return Array.from({ length: count }, (_, i) => {
      const report = body('/api/v1/hosts/discovery');
      const hostId = randomUUID();
      const iface = { ...report.interfaces[0], id: randomUUID(), subnet_id: subnet.id, network_id: t.defaultNetworkId, ip_address: `10.77.${Math.floor(i / 250)}.${1 + (i % 250)}`,
        mac_address: `02:${randomBytes(5).toString('hex').match(/../g)!.join(':')}`.toUpperCase() };
      const host = { ...report.host, id: hostId, name: `cluster-${i}`, hostname: `cluster-${i}`, network_id: t.defaultNetworkId };
      const data: DiscoverySyncJob = { ctx, subnets: [], hosts: [{ host, interfaces: [iface], ports: [], services: [] }] };
      return { data, jobId: discoverySyncJobId(data), hostId };
    });
  }

  it('discovery-sync jobs run, and the queue dashboard lists them', async () => {
    const t = await tenant('dash');
    const jobs = await discoveryJobs(t, 3);
    for (const j of jobs) await queues.discoverySync.add('sync', j.data, { jobId: j.jobId });
    await waitFor('the jobs completed', async () => (await Promise.all(jobs.map((j) => queues.discoverySync.getJobState(j.jobId)))).every((s) => s === 'completed'), 30_000);
    const hosts = await db(app).query<{ id: string }>(`select id from hosts where network_id = ? order by name`, [t.defaultNetworkId]);
    expect(hosts.map((h) => h.id).sort()).to.deep.equal(jobs.map((j) => j.hostId).sort());

    expect(await setOperator(db(app), await emailOf(t), true)).to.equal(true);
    const res = await call(api.url, 'GET', `/admin/queues/api/queues?activeQueue=${QUEUE_NAMES.discoverySync}&status=completed&page=1`, { auth: t.owner });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const listed = (res.body.queues as Array<{ name: string; jobs: Array<{ id: string }> }>).find((q) => q.name === QUEUE_NAMES.discoverySync)!;
    expect(listed.jobs.map((j) => j.id)).to.include.members(jobs.map((j) => j.jobId));
  });

  it('the master holding {discovery-sync} is killed: a replica takes over, the worker carries on, no job lost or run into a duplicate host', async function () {
    this.timeout(120_000);
    const t = await tenant('failover');
    const jobs = await discoveryJobs(t, 24);
    const before = jobs.slice(0, 12);
    const after = jobs.slice(12);
    const oldMaster = await cluster.masterOf(`{${QUEUE_NAMES.discoverySync}}`);
    for (const j of before) await queues.discoverySync.add('sync', j.data, { jobId: j.jobId });
    // Replication is asynchronous: a write acknowledged in the master's last milliseconds can die
    // with it (Redis's documented limit). WAIT makes sure the replica has every job added so far.
    const direct = new Redis({ host: '127.0.0.1', port: oldMaster, lazyConnect: true });
    await direct.connect();
    expect(Number(await direct.call('WAIT', '1', '5000')), 'replicas acknowledging').to.equal(1);
    direct.disconnect();
    // Some jobs are running now (each holds its transaction JOB_DELAY_MS).
    await waitFor('jobs running', async () => (await queues.discoverySync.getJobCounts('active')).active > 0, 20_000, 20);

    await cluster.kill(oldMaster);
    const killedAt = Date.now();
    // Added around the failover: a producer whose add fails knows it and adds again.
    for (const j of after) {
      for (;;) {
        try {
          await queues.discoverySync.add('sync', j.data, { jobId: j.jobId });
          break;
        } catch {
          await sleep(200);
        }
      }
    }
    const newMaster = await waitFor('a replica promoted', async () => {
      const port = await cluster.masterOf(`{${QUEUE_NAMES.discoverySync}}`).catch(() => undefined);
      return port !== undefined && port !== oldMaster && port;
    }, 30_000, 200);
    expect(cluster.nodes.map((n) => n.port)).to.include(newMaster);

    // Within 30 s of the kill, every job of both batches has completed.
    await waitFor('every job completed after the failover', async () => {
      const states = await Promise.all(jobs.map((j) => queues.discoverySync.getJobState(j.jobId).catch(() => 'unknown')));
      return states.every((s) => s === 'completed');
    }, 30_000, 250);
    const recoveredMs = Date.now() - killedAt;
    const hosts = await db(app).query<{ id: string }>(`select id from hosts where network_id = ?`, [t.defaultNetworkId]);
    expect(hosts.map((h) => h.id).sort(), 'every host once').to.deep.equal(jobs.map((j) => j.hostId).sort());
    expect(worker.running(), 'the worker process survived').to.equal(true);
    console.log(`      (failover: master ${oldMaster} killed, ${newMaster} took over; all ${jobs.length} jobs completed ${recoveredMs} ms after the kill)`);
  });
});
