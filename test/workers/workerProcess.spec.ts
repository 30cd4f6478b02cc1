// The worker process (`node --import tsx workers/index.ts`) as a child, over a test app's database
// and Redis prefix: killed in the middle of a discovery-sync job, stopped with SIGTERM while a job
// runs, and the API process stopped with SIGTERM while a request is in flight.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import pg from 'pg';
import type { Worker } from 'bullmq';
import { discoverySyncJobId, type DiscoverySyncJob } from '../../src/core/queues.js';
import { ingestSubnet } from '../../src/modules/discovery/ingest.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { readRecording } from '../support/fixtures.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { db, NODE, ROOT, spawnWorker, waitFor, workerServicesFor, type WorkerProcess } from './support.js';
import { bundlePath } from '../../scripts/build.js';

const recorded = readRecording('v0.14.10', 'daemon_to_server.json');
const body = (path: string) => structuredClone(recorded.exchanges.find((e) => e.path === path).request_body);
const DAEMON_ID = randomUUID();
const FAST_RECOVERY = { WORKER_LOCK_DURATION_MS: '1500', WORKER_STALLED_INTERVAL_MS: '500' };
const RECOVERY_SETTINGS = { lockDurationMs: 1500, stalledIntervalMs: 500 };

/** A tenant whose network has the recorded subnet, and the recorded host as a discovery-sync job. */
async function prepare(app: TestApp, t: Tenant) {
  const subnet = { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId };
  await ingestSubnet(db(app), { organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: DAEMON_ID }, subnet);
  const host = body('/api/v1/hosts/discovery');
  host.host.network_id = t.defaultNetworkId;
  const data: DiscoverySyncJob = { ctx: { organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: DAEMON_ID }, subnets: [], hosts: [host] };
  return { data, jobId: discoverySyncJobId(data), hostId: host.host.id as string };
}

const TABLES = ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings'];
const VOLATILE = new Set(['organization_id', 'network_id', 'created_at', 'updated_at', 'valid_from', 'valid_to', 'last_seen_at']);

/** The network's inventory without what differs between two databases (tenant ids, instants), and its history size. */
async function inventory(app: TestApp, networkId: string) {
  const out: Record<string, unknown> = {};
  for (const table of TABLES) {
    const rows = await db(app).query<Record<string, unknown>>(`select * from ${table} where network_id = ? order by id`, [networkId]);
    out[table] = rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !VOLATILE.has(k))));
    out[`${table}_history`] = Number((await db(app).one<{ n: string }>(`select count(*) as n from ${table}_history where network_id = ?`, [networkId]))!.n);
  }
  return out;
}

/** True while some connection to the app's database sits in an open transaction (the job's, paused by the test hook). */
async function transactionOpen(app: TestApp): Promise<boolean> {
  const client = new pg.Client({ connectionString: app.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction' and pid <> pg_backend_pid()`);
    return rows[0].n > 0;
  } finally {
    await client.end();
  }
}

describe('worker process', function () {
  this.timeout(90_000);
  const apps: TestApp[] = [];
  const children: WorkerProcess[] = [];

  const newApp = async () => {
    const app = await startTestApp();
    apps.push(app);
    return { app, t: await registerTenant(app.url) };
  };
  const spawn = (app: TestApp, env: Record<string, string>) => {
    const w = spawnWorker(app, env);
    children.push(w);
    return w;
  };

  afterEach(async () => {
    for (const w of children.splice(0)) {
      if (w.child.exitCode === null && w.child.signalCode === null) {
        w.child.kill('SIGKILL');
        await w.exited;
      }
    }
    for (const app of apps.splice(0)) await app.close();
  });

  it('SIGKILL in the middle of a discovery-sync job: after a restart the job completes and the inventory is that of a run without the kill', async () => {
    // The run without a kill (in-process worker), in a database of its own.
    const base = await newApp();
    const baseJob = await prepare(base.app, base.t);
    const baseServices = workerServicesFor(base.app);
    const baseWorker: Worker = await startDiscoverySync(baseServices);
    try {
      await baseServices.queues.discoverySync.add('sync', baseJob.data, { jobId: baseJob.jobId });
      await waitFor('baseline job', async () => (await baseServices.queues.discoverySync.getJobState(baseJob.jobId)) === 'completed');
    } finally {
      await baseWorker.close();
      await baseServices.close();
    }
    const expected = await inventory(base.app, base.t.defaultNetworkId);
    expect((expected.hosts as unknown[]).length).to.equal(1);
    expect((expected.ip_addresses as unknown[]).length).to.equal(1);

    // The same job, with the worker killed while the job's transaction is open.
    const { app, t } = await newApp();
    const job = await prepare(app, t);
    const services = workerServicesFor(app);
    const recovery = workerServicesFor(app, RECOVERY_SETTINGS);
    try {
      const before = await inventory(app, t.defaultNetworkId);
      const first = spawn(app, { DISCOVERY_SYNC_TEST_DELAY_MS: '20000', ...FAST_RECOVERY });
      await services.queues.discoverySync.add('sync', job.data, { jobId: job.jobId });
      await waitFor('job active', async () => (await services.queues.discoverySync.getJobState(job.jobId)) === 'active', 30_000);
      await waitFor('ingest transaction open', () => transactionOpen(app), 10_000);
      first.child.kill('SIGKILL');
      expect(await first.exited).to.deep.equal({ code: null, signal: 'SIGKILL' });
      // Nothing of the job is stored (its transaction died with the process); the job still looks active.
      expect(await inventory(app, t.defaultNetworkId)).to.deep.equal(before);
      expect(await services.queues.discoverySync.getJobState(job.jobId)).to.equal('active');

      // The next worker (in this process: what matters is what it finds in Redis and the database).
      const next = await startDiscoverySync(recovery);
      try {
        await waitFor('job completed after restart', async () => (await services.queues.discoverySync.getJobState(job.jobId)) === 'completed', 30_000);
      } finally {
        await next.close();
      }
      const done = (await services.queues.discoverySync.getJob(job.jobId))!;
      expect(done.returnvalue.hosts[0]).to.include({ id: job.hostId });
      expect(done.stalledCounter, 'taken up again as a stalled job').to.equal(1);
      expect(await inventory(app, t.defaultNetworkId)).to.deep.equal(expected);
    } finally {
      await services.close();
      await recovery.close();
    }
  });

  it('SIGTERM lets the running job finish, takes no new job, and exits 0', async () => {
    const { app, t } = await newApp();
    const job = await prepare(app, t);
    const services = workerServicesFor(app);
    try {
      const w = spawn(app, { DISCOVERY_SYNC_TEST_DELAY_MS: '2000', SHUTDOWN_TIMEOUT_MS: '15000' });
      await services.queues.discoverySync.add('sync', job.data, { jobId: job.jobId });
      await waitFor('job active', async () => (await services.queues.discoverySync.getJobState(job.jobId)) === 'active', 30_000);
      await waitFor('ingest transaction open', () => transactionOpen(app), 10_000);
      const stoppedAt = Date.now();
      w.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      const later = await services.queues.discoverySync.add('sync', {
        ctx: job.data.ctx, hosts: [], subnets: [{ ...body('/api/v1/subnets'), id: randomUUID(), cidr: '10.9.0.0/24', name: 'later', network_id: t.defaultNetworkId }],
      });
      expect(await w.exited, `worker output:\n${w.output()}`).to.deep.equal({ code: 0, signal: null });
      expect(Date.now() - stoppedAt).to.be.below(10_000);
      expect(await services.queues.discoverySync.getJobState(job.jobId)).to.equal('completed');
      expect(await db(app).query(`select id from hosts where id = ?`, [job.hostId])).to.have.length(1);
      expect(await later.getState()).to.equal('waiting');
      expect(w.output()).to.include('worker stopped');
    } finally {
      await services.close();
    }
  });

  it('SIGTERM with a job longer than SHUTDOWN_TIMEOUT_MS: exits at the deadline, the job is rolled back and done by the next worker', async () => {
    const { app, t } = await newApp();
    const job = await prepare(app, t);
    const services = workerServicesFor(app);
    const recovery = workerServicesFor(app, RECOVERY_SETTINGS);
    try {
      const w = spawn(app, { DISCOVERY_SYNC_TEST_DELAY_MS: '30000', SHUTDOWN_TIMEOUT_MS: '1000', ...FAST_RECOVERY });
      await services.queues.discoverySync.add('sync', job.data, { jobId: job.jobId });
      await waitFor('ingest transaction open', () => transactionOpen(app), 30_000);
      const stoppedAt = Date.now();
      w.child.kill('SIGTERM');
      expect(await w.exited).to.deep.equal({ code: 1, signal: null });
      expect(Date.now() - stoppedAt).to.be.within(900, 5000);
      expect(await db(app).query(`select id from hosts where id = ?`, [job.hostId])).to.deep.equal([]);
      const next = await startDiscoverySync(recovery);
      try {
        await waitFor('job completed by the next worker', async () => (await services.queues.discoverySync.getJobState(job.jobId)) === 'completed', 30_000);
      } finally {
        await next.close();
      }
      expect(await db(app).query(`select id from hosts where id = ?`, [job.hostId])).to.have.length(1);
    } finally {
      await services.close();
      await recovery.close();
    }
  });

  it('the API process finishes an in-flight request on SIGTERM, then exits 0', async () => {
    const { app } = await newApp();
    const { spawn: spawnProcess } = await import('node:child_process');
    const child = spawnProcess(NODE, ['--enable-source-maps', bundlePath('server')], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '10000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr!.on('data', (c: Buffer) => { out += c.toString(); });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      const port = await waitFor('api listening', async () => Number(/"port":(\d+)[^\n]*api listening/.exec(out)?.[1]) || undefined, 30_000);
      // A request whose body is still arriving when SIGTERM comes.
      const payload = JSON.stringify({ email: 'nobody@example.test', password: 'not-the-password' });
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      let response = '';
      socket.on('data', (c: Buffer) => { response += c.toString(); });
      socket.write(`POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n${payload.slice(0, 10)}`);
      await new Promise((r) => setTimeout(r, 300));
      child.kill('SIGTERM');
      await waitFor('shutdown begins', async () => out.includes('api shutting down'), 5000);
      socket.write(payload.slice(10));
      await new Promise((r) => socket.once('close', r));
      expect(response).to.match(/^HTTP\/1\.1 401/);
      expect(response).to.include('auth_invalid_credentials');
      expect(await exited).to.deep.equal({ code: 0, signal: null });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
