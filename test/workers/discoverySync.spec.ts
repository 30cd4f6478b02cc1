// The discovery-sync worker: at-least-once delivery is safe (a replayed job gives the same inventory
// and no new history state), producers dedupe by job id, an entity the inventory refuses is answered
// null without failing its job, transient failures are retried with exponential backoff, and a batch
// gives what ingesting its hosts one by one gives.
import { expect } from 'chai';
import pg from 'pg';
import type { Worker } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { discoverySyncBatches, discoverySyncJobId, type DiscoverySyncJob, type DiscoverySyncResult } from '../../src/core/queues.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { readRecording } from '../support/fixtures.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { db, waitFor, workerServicesFor } from './support.js';

const recorded = readRecording('v0.14.10', 'daemon_to_server.json');
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
    const job = await services.queues.discoverySync.add('sync', data, jobId ? { jobId } : {});
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

  const subnetBody = () => ({ ...body('/api/v1/subnets'), network_id: t.defaultNetworkId });
  const hostBody = () => {
    const host = body('/api/v1/hosts/discovery');
    host.host.network_id = t.defaultNetworkId;
    return host;
  };
  const result = (job: { returnvalue: unknown }) => job.returnvalue as DiscoverySyncResult;
  /** The recorded host as another machine: fresh ids, its own address and MAC on the recorded subnet. */
  const otherHost = (n: number, mac = `00:16:3E:00:00:${n.toString(16).padStart(2, '0')}`) => {
    const host = hostBody();
    const fresh = new Map<string, string>();
    const id = (old: string) => fresh.get(old) ?? fresh.set(old, randomUUID()).get(old)!;
    host.host.id = randomUUID();
    host.host.name = `machine-${n}`;
    for (const i of host.interfaces) Object.assign(i, { id: id(i.id), ip_address: `${i.ip_address.split('.').slice(0, 3).join('.')}.${4 + n}`, mac_address: mac });
    for (const p of host.ports) p.id = id(p.id);
    for (const s of host.services) {
      s.id = id(s.id);
      for (const b of s.bindings) Object.assign(b, { id: randomUUID(), port_id: b.port_id && id(b.port_id), interface_id: b.interface_id && id(b.interface_id) });
    }
    return host;
  };

  it('a replayed job gives the same result and inventory, with no new history state', async () => {
    const job: DiscoverySyncJob = { ctx: ctx(), subnets: [subnetBody()], hosts: [hostBody()] };
    const first = await run(job);
    expect(first.finishedOn).to.be.a('number');
    expect(result(first).subnets[0]).to.include({ id: job.subnets[0]!.id });
    expect(result(first).hosts[0]).to.deep.equal({ id: (job.hosts[0]!.host as any).id });
    const after = await counts();
    expect(after).to.include({ subnets: 1, hosts: 1, ip_addresses: 1, ports: 1, services: 1, bindings: 1 });

    // Delivered again (another job id: as after a crash, or a daemon re-sending it).
    const again = await run(job);
    const strip = (r: any) => JSON.parse(JSON.stringify(r, (k, v) => (['created_at', 'updated_at'].includes(k) ? undefined : v)));
    expect(strip(result(again))).to.deep.equal(strip(result(first)));
    expect(await counts()).to.deep.equal(after);
  });

  it('the same entities with the same content are one job; new content is another', async () => {
    const data: DiscoverySyncJob = { ctx: ctx(), subnets: [subnetBody()], hosts: [] };
    const a = discoverySyncJobId(data);
    expect(discoverySyncJobId({ ...data, subnets: [Object.fromEntries(Object.entries(data.subnets[0]!).reverse())] })).to.equal(a);
    expect(discoverySyncJobId({ ...data, ctx: { ...data.ctx, discoveryId: 'x' } })).to.equal(a);
    expect(discoverySyncJobId({ ...data, subnets: [{ ...data.subnets[0]!, name: 'renamed' }] })).not.to.equal(a);
    await run(data, a);
    await services.queues.discoverySync.add('sync', data, { jobId: a });
    expect(await services.queues.discoverySync.getJobCounts('completed', 'waiting')).to.deep.equal({ completed: 1, waiting: 0 });
  });

  it('a poll in batches: each batch carries the subnets its hosts are on, the first every subnet', () => {
    const lan = { id: 'lan' };
    const dmz = { id: 'dmz' };
    const on = (subnet: string) => ({ interfaces: [{ subnet_id: subnet }] });
    const hosts = [on('lan'), on('lan'), on('dmz'), on('lan'), on('lan')];
    const batches = discoverySyncBatches([lan, dmz], hosts, 2);
    expect(batches.map((b) => [b.subnets.map((s) => s.id), b.hosts.length])).to.deep.equal([[['lan', 'dmz'], 2], [['lan', 'dmz'], 2], [['lan'], 1]]);
    expect(batches.flatMap((b) => b.hosts)).to.deep.equal(hosts);
    expect(discoverySyncBatches([lan], [], 2)).to.deep.equal([{ subnets: [lan], hosts: [] }]);
    expect(discoverySyncBatches([], [], 2)).to.deep.equal([]);
  });

  it('a batch stores what one-by-one ingestion stores; two reports of one machine (same MAC) in a batch are one host', async () => {
    const subnet = subnetBody();
    await run({ ctx: ctx(), subnets: [subnet], hosts: [] });
    const hosts = [otherHost(1), otherHost(2), otherHost(3, '00:16:3E:00:00:01')]; // the third: machine 1 on another address
    const batch = await run({ ctx: ctx(), subnets: [], hosts });
    expect(result(batch).hosts).to.deep.equal([{ id: hosts[0]!.host.id }, { id: hosts[1]!.host.id }, { id: hosts[0]!.host.id }]);
    // The answers to the daemon (the last report of each host's), as the server-poll cycle reads them.
    const answers = async (ids: string[]) => {
      const rows = await db(app).query<{ host_id: string; response: string }>(`select host_id, response from host_discovery_digests where host_id = any(?::uuid[])`, [ids]);
      return ids.map((id) => JSON.parse(rows.find((r) => r.host_id === id)!.response));
    };
    const stored = await answers([hosts[0]!.host.id, hosts[1]!.host.id]);
    const rows = await db(app).query<{ id: string; ips: string[] }>(
      `select h.id, array_agg(host(i.ip_address) order by i.ip_address) as ips from hosts h join ip_addresses i on i.host_id = h.id
       where h.network_id = ? group by h.id order by h.id`, [t.defaultNetworkId]);
    expect(rows).to.have.length(2);
    // The same MAC on the same subnet is one address, which moved to the later report's IP.
    const machine1 = rows.find((r) => r.id === hosts[0]!.host.id)!;
    expect(machine1.ips).to.have.length(1);
    expect(machine1.ips).to.deep.equal(['172.25.0.7']);

    // The same reports one job each, into a fresh network of another tenant: the same inventory.
    const u = await registerTenant(app.url, 'one-by-one');
    const uctx = { ...ctx(), organizationId: u.orgId, networkId: u.defaultNetworkId };
    const otherSubnetId = randomUUID(); // the first network's subnet id stays its own
    const move = (x: any) => JSON.parse(JSON.stringify(x).replaceAll(t.defaultNetworkId, u.defaultNetworkId).replaceAll(subnet.id, otherSubnetId));
    await run({ ctx: uctx, subnets: [move(subnet)], hosts: [] });
    const single: string[] = [];
    for (const h of hosts) single.push(result(await run({ ctx: uctx, subnets: [], hosts: [move(h)] })).hosts[0]!.id);
    const shape = (list: any[]) => list.map((h) => JSON.parse(JSON.stringify(h, (k, v) => (['created_at', 'updated_at', 'network_id', 'id', 'host_id', 'service_id', 'port_id', 'interface_id', 'subnet_id', 'lineage_id'].includes(k) ? undefined : v))));
    expect(single[2]).to.equal(single[0]);
    expect(shape(await answers([single[0]!, single[1]!]))).to.deep.equal(shape(stored));
  });

  it('two reports of a batch that share no identifier but match one stored host are ingested one after the other', async () => {
    await run({ ctx: ctx(), subnets: [subnetBody()], hosts: [] });
    // A stored host with two addresses: .5 (MAC …:01) and .6 (MAC …:02).
    const stored = otherHost(1);
    stored.interfaces.push({ ...stored.interfaces[0], id: randomUUID(), ip_address: '172.25.0.6', mac_address: '00:16:3E:00:00:02', position: 1 });
    await run({ ctx: ctx(), subnets: [], hosts: [stored] });
    // One report finds it by address .5 (no MAC), the other by MAC …:02 on a new address .9.
    const byIp = otherHost(3, null as unknown as string);
    byIp.interfaces[0].ip_address = '172.25.0.5';
    const byMac = otherHost(4, '00:16:3E:00:00:02');
    byMac.interfaces[0].ip_address = '172.25.0.9';
    const job = await run({ ctx: ctx(), subnets: [], hosts: [byIp, byMac] });
    expect(job.failedReason).to.equal(undefined);
    expect(result(job).hosts).to.deep.equal([{ id: stored.host.id }, { id: stored.host.id }]);
    const ips = await db(app).query<{ ip: string }>(`select host(ip_address) as ip from ip_addresses where host_id = ? order by ip_address`, [stored.host.id]);
    expect(ips.map((r) => r.ip)).to.deep.equal(['172.25.0.5', '172.25.0.9']); // the address with MAC …:02 moved
    expect((await counts()).hosts).to.equal(1);
  });

  it('an entity the inventory refuses is answered null and logged; the rest of its job is stored', async () => {
    const foreignSubnet = body('/api/v1/subnets'); // another network's id
    const orphan = hostBody(); // its subnet was never reported
    const job = await run({ ctx: ctx(), subnets: [foreignSubnet], hosts: [orphan] });
    expect(job.finishedOn).to.be.a('number');
    expect(result(job)).to.deep.equal({ subnets: [null], hosts: [null] });
    const good = await run({ ctx: ctx(), subnets: [subnetBody()], hosts: [otherHost(1), orphan, { ...otherHost(2), host: { ...otherHost(2).host, network_id: randomUUID() } }] });
    expect(result(good).hosts.map((h) => h === null)).to.deep.equal([false, false, true]);
    expect((await counts()).hosts).to.equal(2);
  });

  it('a malformed job fails at once; other failures are retried with backoff', async () => {
    const malformed = await run({ ctx: ctx(), subnets: 'nope' } as unknown as DiscoverySyncJob);
    expect(malformed.failedReason).to.match(/^malformed discovery-sync job/);
    expect(malformed.attemptsMade).to.equal(1);
    // Every job carries the retry policy of the queue.
    expect(malformed.opts).to.deep.include({ attempts: services.settings.discoverySyncAttempts, backoff: { type: 'exponential', delay: services.settings.discoverySyncBackoffMs } });

    // A transient failure: the job's statement is cancelled while it waits for a lock held here.
    const blocker = new pg.Client({ connectionString: app.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table subnets in access exclusive mode');
      const data: DiscoverySyncJob = { ctx: ctx(), subnets: [subnetBody()], hosts: [] };
      const job = await services.queues.discoverySync.add('sync', data);
      const waiting = await waitFor('job waiting for the lock', async () => (await blocker.query(
        `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`)).rows[0]?.pid as number | undefined);
      await blocker.query('select pg_cancel_backend($1)', [waiting]);
      await blocker.query('commit');
      await waitFor('retried to completion', async () => (await job.getState()) === 'completed', 20_000);
      const done = (await services.queues.discoverySync.getJob(job.id!))!;
      expect(done.attemptsMade).to.equal(2);
      expect(await db(app).query(`select id from subnets where id = ?`, [data.subnets[0]!.id])).to.have.length(1);
    } finally {
      await blocker.end();
    }
  });
});
