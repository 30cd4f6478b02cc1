// The discovery-sync worker: at-least-once delivery is safe (a replayed job gives the same inventory
// and no new history state), producers dedupe by job id, a daemon's bad data is not retried, and
// transient failures are retried with exponential backoff.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Worker } from 'bullmq';
import { discoverySyncJobId, type DiscoverySyncJob } from '../../src/core/queues.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { db, ROOT, waitFor, workerServicesFor } from './support.js';

const recorded = JSON.parse(readFileSync(join(ROOT, '../shared/fixtures/scanopy-daemon/v0.14.10/daemon_to_server.json'), 'utf8')) as { exchanges: any[] };
const body = (path: string) => structuredClone(recorded.exchanges.find((e) => e.path === path).request_body);

describe('discovery-sync worker', () => {
  let app: TestApp;
  let t: Tenant;
  let services: ReturnType<typeof workerServicesFor>;
  let worker: Worker;

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    services = workerServicesFor(app);
    worker = await startDiscoverySync(services);
  });
  afterEach(async () => {
    await worker.close();
    await services.close();
    await app.close();
  });

  const ctx = () => ({ organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: '1021fc5b-4ac2-43b2-b569-8887a59340b4' });
  const run = async (data: DiscoverySyncJob, jobId?: string) => {
    const job = await services.queues.discoverySync.add(data.kind, data, jobId ? { jobId } : {});
    await waitFor(`job ${job.id}`, async () => ['completed', 'failed'].includes(await job.getState()));
    return (await services.queues.discoverySync.getJob(job.id!))!;
  };
  const counts = async () => {
    const out: Record<string, number> = {};
    for (const table of ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings']) {
      const row = await db(app).one<{ live: string; states: string }>(
        `select (select count(*) from ${table} where network_id = ?) as live, (select count(*) from ${table}_history where network_id = ?) as states`,
        [t.defaultNetworkId, t.defaultNetworkId],
      );
      out[table] = Number(row!.live);
      out[`${table}_history`] = Number(row!.states);
    }
    return out;
  };

  it('a replayed job gives the same result and inventory, with no new history state', async () => {
    const subnet: DiscoverySyncJob = { kind: 'subnet', ctx: ctx(), payload: { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId } };
    const host = body('/api/v1/hosts/discovery');
    host.host.network_id = t.defaultNetworkId;
    const hostJob: DiscoverySyncJob = { kind: 'host', ctx: ctx(), payload: host };
    expect((await run(subnet)).returnvalue).to.include({ id: subnet.payload.id });
    const first = await run(hostJob);
    expect(first.finishedOn).to.be.a('number');
    const after = await counts();
    expect(after).to.include({ subnets: 1, hosts: 1, ip_addresses: 1, ports: 1, services: 1, bindings: 1 });

    // Delivered again (another job id: as after a crash, or a daemon re-sending it).
    const again = await run(hostJob);
    const strip = (r: any) => JSON.parse(JSON.stringify(r, (k, v) => (['created_at', 'updated_at'].includes(k) ? undefined : v)));
    expect(strip(again.returnvalue)).to.deep.equal(strip(first.returnvalue));
    expect(await counts()).to.deep.equal(after);
    await run(subnet);
    expect(await counts()).to.deep.equal(after);
  });

  it('the same entity with the same content is one job; new content is another', async () => {
    const payload = { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId };
    const data: DiscoverySyncJob = { kind: 'subnet', ctx: ctx(), payload };
    const a = discoverySyncJobId(data, payload.id);
    expect(discoverySyncJobId({ ...data, payload: Object.fromEntries(Object.entries(payload).reverse()) }, payload.id)).to.equal(a);
    expect(discoverySyncJobId({ ...data, ctx: { ...data.ctx, discoveryId: 'x' } }, payload.id)).to.equal(a);
    expect(discoverySyncJobId({ ...data, payload: { ...payload, name: 'renamed' } }, payload.id)).not.to.equal(a);
    await run(data, a);
    await services.queues.discoverySync.add('subnet', data, { jobId: a });
    expect(await services.queues.discoverySync.getJobCounts('completed', 'waiting')).to.deep.equal({ completed: 1, waiting: 0 });
  });

  it('bad data from a daemon fails at once; other failures are retried with backoff', async () => {
    const invalid = await run({ kind: 'subnet', ctx: ctx(), payload: { id: 'nope' } });
    expect(invalid.failedReason).to.match(/^invalid subnet/);
    expect(invalid.attemptsMade).to.equal(1);
    const host = body('/api/v1/hosts/discovery');
    host.host.network_id = t.defaultNetworkId; // its subnet was never reported
    const orphan = await run({ kind: 'host', ctx: ctx(), payload: host });
    expect(orphan.failedReason).to.match(/^entity_reference_invalid/);
    expect(orphan.attemptsMade).to.equal(1);
    const foreign = await run({ kind: 'subnet', ctx: ctx(), payload: body('/api/v1/subnets') }); // another network's id
    expect(foreign.failedReason).to.match(/^daemon_network_mismatch/);
    // Every job carries the retry policy of the queue.
    expect(orphan.opts).to.deep.include({ attempts: services.settings.discoverySyncAttempts, backoff: { type: 'exponential', delay: services.settings.discoverySyncBackoffMs } });

    // A transient failure: the job's statement is cancelled while it waits for a lock held here.
    const blocker = new pg.Client({ connectionString: app.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table subnets in access exclusive mode');
      const subnet = await services.queues.discoverySync.add('subnet', { kind: 'subnet', ctx: ctx(), payload: { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId } });
      const waiting = await waitFor('job waiting for the lock', async () => (await blocker.query(
        `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`)).rows[0]?.pid as number | undefined);
      await blocker.query('select pg_cancel_backend($1)', [waiting]);
      await blocker.query('commit');
      await waitFor('retried to completion', async () => (await subnet.getState()) === 'completed', 20_000);
      const done = (await services.queues.discoverySync.getJob(subnet.id!))!;
      expect(done.attemptsMade).to.equal(2);
      expect(await db(app).query(`select id from subnets where id = ?`, [subnet.data.payload.id])).to.have.length(1);
    } finally {
      await blocker.end();
    }
  });
});
