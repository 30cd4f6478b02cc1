// The live l3 map chooses its collapsed subnets from kept counts (subnet_counts, written by
// triggers) instead of scanning every host and address: after seeded random changes through the
// API (host merges too), discovery ingest and raw SQL, the kept counts equal the scanned ones and the map drawn from
// them equals the map drawn by the scan (the same network as of the live answer's instant, which is
// read by scanning the history); two transactions adding addresses to one subnet do not wait on
// each other.
import { expect } from 'chai';
import pg from 'pg';
import { Db } from '../../src/core/db.js';
import { keptL3Counts, scannedL3Counts, type L3Counts } from '../../src/modules/topology/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { byId, pick, random } from './randomChanges.js';

describe('topology: kept subnet counts', function () {
  this.timeout(300_000);
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let client: pg.Client;
  let db: Db;
  /** Subnets by id: the second octet of their 10.x.0.0/16. */
  const subnets = new Map<string, number>();
  let octet = 0;
  let serial = 0;
  const addressIn = (subnetId: string) => { serial += 1; return `10.${subnets.get(subnetId)}.${Math.floor(serial / 250)}.${(serial % 250) + 1}`; };
  const randomAddresses = (rnd: () => number, max: number) =>
    Array.from({ length: Math.floor(rnd() * (max + 1)) }, () => { const subnet_id = pick(rnd, [...subnets.keys()]); return { subnet_id, ip_address: addressIn(subnet_id) }; });
  const owner = () => ({ auth: t.owner });

  async function addSubnet(viaDaemon: boolean) {
    octet += 1;
    const cidr = `10.${octet}.0.0/16`;
    const s = viaDaemon ? await postSubnet(d, net, cidr)
      : expectOk(await call(app.url, 'POST', '/api/v1/subnets', { ...owner(), body: { network_id: net, cidr, name: `lan ${octet}`, subnet_type: 'Lan' } }), 201);
    subnets.set(s.id, octet);
  }
  /** The network's hosts but the daemon's own (which the API neither deletes nor merges). */
  const hostIds = async () => (await client.query<{ id: string }>(
    `select id from hosts where organization_id = $1 and network_id = $2
        and id not in (select host_id from daemons where organization_id = $1 and host_id is not null) order by id`, [t.orgId, net])).rows.map((r) => r.id);
  const getHost = async (id: string) => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${id}`, owner()));
  const patchHost = async (id: string, body: Record<string, unknown>) => expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${id}`, { ...owner(), body }));
  const keep = (a: any) => ({ id: a.id, subnet_id: a.subnet_id, ip_address: a.ip_address });

  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'counts');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
    await registerDaemon(d, net);
    for (let k = 0; k < 5; k++) await addSubnet(k % 2 === 0);
    client = new pg.Client({ connectionString: app.databaseUrl });
    await client.connect();
    db = new Db(app.services.orm.em.fork());
  });
  after(async () => {
    await client?.end();
    await app?.close();
  });

  /** One random change of the network through the API, discovery ingest or raw SQL. */
  async function change(rnd: () => number): Promise<string> {
    const hosts = await hostIds();
    const kind = hosts.length < 30 ? pick(rnd, ['ingest host', 'create host']) : pick(rnd, [
      'ingest host', 'create host', 'ingest again', 'add address', 'delete address', 'move address', 'move address (SQL)', 'delete address (SQL)',
      'hide host', 'unhide host', 'hide hosts (SQL)', 'delete host', 'delete subnet (SQL)', 'merge hosts']);
    switch (kind) {
      case 'ingest host': {
        const n = ++serial;
        await postHost(d, hostReport(d, net, { hostname: `h${n}.lan`, interfaces: randomAddresses(rnd, 3) }));
        break;
      }
      case 'create host':
        expectOk(await call(app.url, 'POST', '/api/v1/hosts', { ...owner(), body: { name: `api ${++serial}`, network_id: net, ip_addresses: randomAddresses(rnd, 2) } }), 201);
        break;
      case 'ingest again': {
        // A discovered host found again with one more address.
        const row = (await client.query<{ id: string; hostname: string }>(
          `select id, hostname from hosts where organization_id = $1 and network_id = $2 and hostname like 'h%.lan' order by id`, [t.orgId, net])).rows;
        if (!row.length) return 'ingest again (none)';
        const h = pick(rnd, row);
        const current = (await getHost(h.id)).ip_addresses.map((a: any) => ({ id: a.id, subnet_id: a.subnet_id, ip_address: a.ip_address }));
        await postHost(d, hostReport(d, net, { hostId: h.id, hostname: h.hostname, interfaces: [...current, ...randomAddresses(rnd, 1)] }));
        break;
      }
      case 'add address': {
        const h = await getHost(pick(rnd, hosts));
        await patchHost(h.id, { ip_addresses: [...h.ip_addresses.map(keep), ...randomAddresses(rnd, 2)] });
        break;
      }
      case 'delete address': {
        const h = await getHost(pick(rnd, hosts));
        await patchHost(h.id, { ip_addresses: h.ip_addresses.slice(1).map(keep) });
        break;
      }
      case 'move address': {
        const h = await getHost(pick(rnd, hosts));
        if (!h.ip_addresses.length) return 'move address (none)';
        const to = pick(rnd, [...subnets.keys()]);
        await patchHost(h.id, { ip_addresses: h.ip_addresses.map((a: any, k: number) => (k === 0 ? { id: a.id, subnet_id: to, ip_address: addressIn(to) } : keep(a))) });
        break;
      }
      case 'move address (SQL)': {
        // Several addresses of one host moved by one statement, some into one subnet.
        const to = pick(rnd, [...subnets.keys()]);
        await client.query(`update ip_addresses set subnet_id = $3, ip_address = $4::inet + (abs(hashtext(id::text)) % 10000)
                            where organization_id = $1 and host_id = $2`, [t.orgId, pick(rnd, hosts), to, `10.${subnets.get(to)}.200.0`]);
        break;
      }
      case 'delete address (SQL)':
        await client.query(`delete from ip_addresses where organization_id = $1 and host_id = $2`, [t.orgId, pick(rnd, hosts)]);
        break;
      case 'hide host': await patchHost(pick(rnd, hosts), { hidden: true }); break;
      case 'unhide host': await patchHost(pick(rnd, hosts), { hidden: false }); break;
      case 'hide hosts (SQL)':
        await client.query(`update hosts set hidden = not hidden where organization_id = $1 and id = any($2::uuid[])`, [t.orgId, [pick(rnd, hosts), pick(rnd, hosts), pick(rnd, hosts)]]);
        break;
      case 'merge hosts': {
        // The other host's addresses move to the destination (their host_id changes), the other goes.
        const [destination, other] = [pick(rnd, hosts), pick(rnd, hosts)];
        if (destination === other) return 'merge hosts (none)';
        expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${destination}/consolidate/${other}`, owner()));
        break;
      }
      case 'delete host': expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${pick(rnd, hosts)}`, owner())); break;
      case 'delete subnet (SQL)': {
        const id = pick(rnd, [...subnets.keys()]);
        // The API refuses a subnet in use; SQL deletes it with its addresses (the foreign key's cascade).
        await client.query(`delete from subnets where organization_id = $1 and id = $2`, [t.orgId, id]);
        subnets.delete(id);
        await addSubnet(rnd() < 0.5);
        break;
      }
    }
    return kind;
  }

  /** Counts per subnet (null: no subnet of the network, or no address) as one object. */
  const asObject = (c: L3Counts) => {
    const out: Record<string, number> = {};
    for (const r of c.counts) out[r.subnet_id ?? 'none'] = (out[r.subnet_id ?? 'none'] ?? 0) + r.n;
    return out;
  };

  async function expectCountsAgree(rnd: () => number, label: string) {
    for (const includeHidden of [false, true]) {
      const kept = await keptL3Counts(db, t.orgId, net, includeHidden);
      const scanned = await scannedL3Counts(db, t.orgId, { network_id: net, include_hidden: includeHidden }, undefined);
      const where = `${label}, include_hidden ${includeHidden}`;
      expect(asObject(kept), where).to.deep.equal(asObject(scanned));
      expect(await kept.filteredOut(), where).to.deep.equal(await scanned.filteredOut());
      const collapsed = [...subnets.keys()].filter(() => rnd() < 0.5);
      expect((await kept.hostsDrawn(collapsed)).sort(), `${where}, hosts drawn`).to.deep.equal((await scanned.hostsDrawn(collapsed)).sort());
    }
  }

  /** The live map (kept counts) and the map as of its instant (scanned from history), node for node. */
  async function expectMapsAgree(query: string, label: string) {
    const topo = async (q: string) => expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}&view=l3${q}`, owner()));
    const live = await topo(query);
    const scanned = await topo(`${query}&at=${encodeURIComponent(live.as_of)}`);
    expect(live.nodes.some((n: any) => n.kind === 'collapsed'), `${label}: something collapsed`).to.equal(true);
    expect(byId(live.nodes), label).to.deep.equal(byId(scanned.nodes));
    expect(byId(live.edges), label).to.deep.equal(byId(scanned.edges));
    expect(live.filtered_out, label).to.deep.equal(scanned.filtered_out);
  }

  it('equal the scanned counts, and draw the same map, after random changes through the API, ingest and SQL', async () => {
    const rnd = random(43);
    const kinds: string[] = [];
    // Counts compared after every change (a failure names the changes up to it), maps after each round.
    for (let k = 0; k < 30; k++) {
      kinds.push(await change(rnd));
      await expectCountsAgree(rnd, `seeding: ${kinds.join(', ')}`);
    }
    for (let round = 0; round < 12; round++) {
      const done: string[] = [];
      for (let k = 0; k < 8; k++) {
        done.push(await change(rnd));
        await expectCountsAgree(rnd, `round ${round}: ${done.join(', ')}`);
      }
      kinds.push(...done);
      for (const q of ['&max_nodes=12', '&max_nodes=25&include_hidden=true']) await expectMapsAgree(q, `round ${round} ${q}: ${done.join(', ')}`);
    }
    // Every kind of change happened.
    expect(new Set(kinds.map((k) => k.replace(/ \(none\)$/, '')))).to.include.members(['ingest host', 'create host', 'ingest again', 'add address', 'delete address',
      'move address', 'move address (SQL)', 'delete address (SQL)', 'hide host', 'unhide host', 'hide hosts (SQL)', 'delete host', 'delete subnet (SQL)', 'merge hosts']);
  });

  it('are summed into one row per group by compaction, unchanged, and deleted with their network', async () => {
    const deltas = async () => Number((await client.query(`select count(*) from subnet_counts where organization_id = $1 and network_id = $2`, [t.orgId, net])).rows[0].count);
    // Many small writes: an address added and taken off again, 80 times (a delta row each).
    const [host, subnetId] = [(await hostIds())[0]!, [...subnets.keys()][0]!];
    for (let k = 0; k < 80; k++) {
      const ip = addressIn(subnetId);
      await client.query(`insert into ip_addresses (id, organization_id, network_id, lineage_id, host_id, subnet_id, ip_address)
                          select g, $1, $2, g, $3, $4, $5::inet from gen_random_uuid() g`, [t.orgId, net, host, subnetId, ip]);
      await client.query(`delete from ip_addresses where organization_id = $1 and host_id = $2 and ip_address = $3::inet`, [t.orgId, host, ip]);
    }
    const before = asObject(await keptL3Counts(db, t.orgId, net, true));
    expect(await deltas()).to.be.greaterThan(160);
    // A read finds them due; the answer's transaction done, the request compacts them.
    expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}&view=l3&max_nodes=12`, owner()));
    const groups = Number((await client.query(
      `select count(*) from (select 1 from subnet_counts where organization_id = $1 and network_id = $2 group by kind, subnet_id, host_id, hidden) g`, [t.orgId, net])).rows[0].count);
    expect(await deltas()).to.equal(groups);
    expect(asObject(await keptL3Counts(db, t.orgId, net, true))).to.deep.equal(before);
    await expectCountsAgree(random(7), 'after compaction');

    const other = expectOk(await call(app.url, 'POST', '/api/v1/networks', { ...owner(), body: { name: 'doomed' } }), 201);
    const s = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { ...owner(), body: { network_id: other.id, cidr: '10.200.0.0/16', name: 'x', subnet_type: 'Lan' } }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { ...owner(), body: { name: 'x', network_id: other.id, ip_addresses: [{ subnet_id: s.id, ip_address: '10.200.0.1' }] } }), 201);
    const of = async (id: string) => Number((await client.query(`select count(*) from subnet_counts where organization_id = $1 and network_id = $2`, [t.orgId, id])).rows[0].count);
    expect(await of(other.id)).to.be.greaterThan(0);
    expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${other.id}?cascade=true`, owner()));
    expect(await of(other.id)).to.equal(0);
  });

  it('two transactions adding addresses to one subnet do not wait on each other (the first held open while the second commits)', async () => {
    const subnetId = [...subnets.keys()][0]!;
    const [a, b] = await Promise.all([1, 2].map(async (k) => expectOk(await call(app.url, 'POST', '/api/v1/hosts', { ...owner(), body: { name: `pair ${k}`, network_id: net } }), 201).id as string));
    const first = new pg.Client({ connectionString: app.databaseUrl });
    const second = new pg.Client({ connectionString: app.databaseUrl });
    await first.connect();
    await second.connect();
    const insert = `insert into ip_addresses (id, organization_id, network_id, lineage_id, host_id, subnet_id, ip_address)
                    select g, $1, $2, g, $3, $4, $5::inet from gen_random_uuid() g`;
    try {
      await first.query('begin');
      await first.query(insert, [t.orgId, net, a, subnetId, addressIn(subnetId)]);
      // The first holds its transaction open: the second, waiting on any of its locks, would fail here.
      await second.query(`set lock_timeout = '3s'`);
      await second.query('begin');
      await second.query(insert, [t.orgId, net, b, subnetId, addressIn(subnetId)]);
      await second.query('commit');
      // And through discovery ingest: another host's address in that subnet, stored while the first is still open.
      await postHost(d, hostReport(d, net, { hostname: 'concurrent.lan', interfaces: [{ subnet_id: subnetId, ip_address: addressIn(subnetId) }] }));
      await first.query('commit');
    } finally {
      await first.query('rollback').catch(() => undefined);
      await first.end();
      await second.end();
    }
    await expectCountsAgree(random(11), 'after the concurrent inserts');
  });
});
