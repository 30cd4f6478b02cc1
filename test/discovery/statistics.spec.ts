// A large first discovery under statistics taken before the network had rows (src/modules/discovery/
// statistics.ts): the planner must not keep believing the network is empty. With those statistics
// ingest's step 3 (newFacts in hostIngest.ts) read hosts_history through the GiST (organization_id,
// valid range) index, every state of the organization per probe (bench/ingestGrowth.ts). The batches
// go through ingestHosts(), what the discovery-sync worker calls for a job.
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { ingestHosts, type IngestContext } from '../../src/modules/discovery/ingest.js';
import type { DaemonHostRequest } from '../../src/modules/discovery/vocabulary.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createNetwork, registerTenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postSubnet } from './reports.js';

type Plan = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; 'Index Cond'?: string; Plans?: Plan[] };
const nodes = (plan: Plan): Plan[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];
const hex2 = (n: number) => (n & 255).toString(16).padStart(2, '0');

describe('discovery: statistics follow a large first discovery', () => {
  let app: TestApp;
  let ctx: IngestContext;
  let d: DaemonClient;
  let lanId: string;
  let db: Db;
  let reported = 0;
  let owner: Parameters<typeof createNetwork>[1];

  /** `count` new hosts (two addresses with MACs, a port, a service binding it), in one batch (one discovery-sync job). */
  const batch = (count: number) => Array.from({ length: count }, () => {
    const n = 2 * reported++ + 256;
    return hostReport(d, ctx.networkId, {
      interfaces: [0, 1].map((k) => ({ subnet_id: lanId, ip_address: `10.16.${(n + k) >> 8}.${(n + k) & 255}`, mac_address: `00:16:3e:00:${hex2((n + k) >> 8)}:${hex2(n + k)}` })),
      ports: [{ number: 22 }],
      services: [{ name: 'OpenSSH', ports: [22] }],
    }) as unknown as DaemonHostRequest;
  });
  const ingest = (count: number) => db.transaction((tx) => ingestHosts(tx, ctx, batch(count)));
  const estimate = async (table: string) => {
    const [row] = await sql<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      app, `explain (format json) select 1 from ${table} where organization_id = ? and network_id = ?`, [ctx.organizationId, ctx.networkId]);
    return row!['QUERY PLAN'][0]!.Plan['Plan Rows'];
  };

  before(async function () {
    this.timeout(60_000);
    app = await startTestApp();
    const t = await registerTenant(app.url, 'statistics');
    owner = t.owner;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    lanId = (await postSubnet(d, t.defaultNetworkId, '10.16.0.0/16')).id;
    ctx = { organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: d.id };
    db = new Db(app.services.orm.em.fork(), { actor: { type: 'daemon', id: d.id } });
    // The statistics of a network that has no discovered host yet; then its past (3,000 deleted
    // hosts, two addresses each, written in SQL: history tables have no foreign keys) unknown to them.
    await sql(app, 'analyze hosts_history, ip_addresses_history, hosts, host_discovery_digests');
    await sql(app, `
      insert into hosts_history (id, name, organization_id, network_id, lineage_id, valid_from, valid_to)
      select gen_random_uuid(), 'gone-' || n, ?, ?, gen_random_uuid(), now() - interval '2 days', now() - interval '1 day' from generate_series(1, 3000) n`,
    [ctx.organizationId, ctx.networkId]);
    await sql(app, `
      insert into ip_addresses_history (id, host_id, subnet_id, ip_address, mac_address, organization_id, network_id, lineage_id, valid_from, valid_to)
      select gen_random_uuid(), h.id, ?, '10.16.128.0'::inet + n, '00:16:3e:80:' || lpad(to_hex(n >> 8), 2, '0') || ':' || lpad(to_hex(n & 255), 2, '0'),
             h.organization_id, h.network_id, gen_random_uuid(), h.valid_from, h.valid_to
      from (select h.*, row_number() over () as r from hosts_history h where h.network_id = ? and h.name like 'gone-%') h, generate_series(2 * h.r, 2 * h.r + 1) n`,
    [lanId, ctx.networkId]);
  });
  after(() => app.close());

  it('a batch of new hosts the statistics do not know of: the tables analyzed (history, hosts, digests), and the next batch’s probes are B-tree lookups', async function () {
    this.timeout(60_000);
    expect(await estimate('hosts_history')).to.be.below(10);
    expect(await estimate('hosts')).to.be.below(10);
    expect(await estimate('host_discovery_digests')).to.be.below(10);
    await ingest(60);
    expect(await estimate('hosts_history')).to.be.at.least(60);
    expect(await estimate('ip_addresses_history')).to.be.at.least(120);
    // The unchanged-host lookup's tables too: believing the organization had one host, it looped over
    // all its hosts reading the network's digests per host (2.5-3.9 s a batch at 10,000 hosts,
    // bench/ingestGrowth.ts round 5); on the partitioned schema the bindings' per-row digest trigger
    // scanned every digest of the organization per binding.
    expect(await estimate('hosts')).to.be.at.least(60);
    expect(await estimate('host_discovery_digests')).to.be.at.least(60);

    // The next batch's step 3, explained as ingest sends it.
    const original = Db.prototype.query;
    let plan: Plan | undefined;
    Db.prototype.query = async function explained<T>(this: Db, text: string, params: unknown[] = []): Promise<T[]> {
      if (text.includes('host_taken') && !plan) {
        const [row] = await (original.call(this, `explain (format json) ${text}`, params) as Promise<any[]>);
        plan = row['QUERY PLAN'][0].Plan;
      }
      return original.call(this, text, params) as Promise<T[]>;
    };
    try {
      await ingest(60);
    } finally {
      Db.prototype.query = original;
    }
    const historyReads = nodes(plan!).filter((n) => /_history(_p[0-7])?$/.test(n['Relation Name'] ?? ''));
    expect(historyReads.length).to.be.greaterThan(0);
    // No probe by equality on the organization or network through a GiST (organization_id | network_id,
    // valid range) index (*_asof_idx, on a partition *_tstzrange_idx), filtering the id / address / MAC.
    // (whether a host id is another network's, `network_id <>`, may scan that index: the other networks' states.)
    expect(historyReads.filter((n) => /asof|tstzrange/.test(n['Index Name'] ?? '') && /(organization_id|network_id) = /.test(n['Index Cond'] ?? ''))
      .map((n) => `${n['Relation Name']} ${n['Index Name']}: ${n['Index Cond']}`)).to.deep.equal([]);
  });

  it('a batch of one new host never analyzes (nor asks the planner): only a batch of 50 new rows or more does', async function () {
    this.timeout(60_000);
    await sql(app, 'analyze hosts_history, ip_addresses_history'); // what the planner knows predates the next batch
    const original = Db.prototype.query;
    const sent: string[] = [];
    Db.prototype.query = function recorded<T>(this: Db, text: string, params: unknown[] = []): Promise<T[]> {
      sent.push(text.trim().split(/\s+/)[0]!.toLowerCase());
      return original.call(this, text, params) as Promise<T[]>;
    };
    try {
      await ingest(1);
    } finally {
      Db.prototype.query = original;
    }
    expect(sent).to.include('insert');
    expect(sent.filter((s) => s === 'analyze' || s === 'explain')).to.deep.equal([]);
  });

  it('one host at a time (a daemon posting each host): the batches add up, and 50 new rows of a network the statistics do not know of are analyzed', async function () {
    this.timeout(120_000);
    // A network of its own (the rows counted are per network), unknown to the statistics.
    const networkId = await createNetwork(app.url, owner, 'one at a time');
    const d2 = daemonClient(app.url, (await createDaemonKey(app.url, owner, networkId)).key);
    await registerDaemon(d2, networkId);
    const subnetId = (await postSubnet(d2, networkId, '10.17.0.0/16')).id;
    const ctx2: IngestContext = { organizationId: ctx.organizationId, networkId, daemonId: d2.id };
    const db2 = new Db(app.services.orm.em.fork(), { actor: { type: 'daemon', id: d2.id } });
    await sql(app, 'analyze hosts_history, ip_addresses_history, hosts');
    const estimate2 = async (table: string) => {
      const [row] = await sql<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
        app, `explain (format json) select 1 from ${table} where organization_id = ? and network_id = ?`, [ctx.organizationId, networkId]);
      return row!['QUERY PLAN'][0]!.Plan['Plan Rows'];
    };
    expect(await estimate2('hosts_history')).to.be.below(10);
    for (let i = 0; i < 60; i++) {
      const report = hostReport(d2, networkId, {
        interfaces: [{ subnet_id: subnetId, ip_address: `10.17.0.${i + 1}`, mac_address: `00:16:3e:17:00:${hex2(i + 1)}` }],
        ports: [{ number: 22 }], services: [{ name: 'OpenSSH', ports: [22] }],
      }) as unknown as DaemonHostRequest;
      await db2.transaction((tx) => ingestHosts(tx, ctx2, [report]));
    }
    expect(await estimate2('hosts_history')).to.be.at.least(50);
    expect(await estimate2('hosts')).to.be.at.least(50);
  });
});

