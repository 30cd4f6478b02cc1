// Bulk create and PostgreSQL's shared lock table (issue 37): a bulk create took one advisory lock
// per address, held to its commit, and three 4,000-address bulks filled the server's lock table
// (bench/bulkLocks.ts: then any transaction of any tenant needing a slot failed with "out of shared
// memory"). It now holds at most BULK_ADDRESS_LOCK_BUDGET (64) for its addresses: the buckets of
// its subnets exclusively (src/core/advisoryLocks.ts), and every other writer of an address takes
// its subnet's bucket shared, so writers of one address still take turns.
// The locks are observed inside the bulk's transaction: ipAddressTable.syncChildren (called after
// the locks, before the commit) is wrapped, in this process, where the test app runs.
import { expect } from 'chai';
import pg from 'pg';
import { BULK_ADDRESS_LOCK_BUDGET } from '../../src/modules/hosts/bulkCreate.js';
import { ipAddressTable } from '../../src/modules/ipAddresses/table.js';
import type { Db } from '../../src/core/db.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from '../daemons/world.js';
import { hostReport, postSubnet } from '../discovery/reports.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createSubnet } from './fixtures.js';

type Sync = typeof ipAddressTable.syncChildren;
/** Hosts of 4 addresses each in `subnet` (10.<octet>.0.0/16), `count` addresses in all. */
const hostsOf = (networkId: string, subnetId: string, octet: number, count: number) =>
  Array.from({ length: Math.ceil(count / 4) }, (_, h) => ({
    name: `bulk-${h}`, network_id: networkId,
    ip_addresses: Array.from({ length: Math.min(4, count - 4 * h) }, (__, k) => {
      const n = 4 * h + k;
      return { subnet_id: subnetId, ip_address: `10.${octet}.${Math.floor(n / 250)}.${1 + (n % 250)}` };
    }),
  }));

describe('hosts: bulk create and the lock table', () => {
  let app: TestApp;
  let t: Tenant;
  let original: Sync;
  /** While set: called in the bulk's transaction (syncChildren of more than one address row) before its address rows are written. */
  let inBulk: ((tx: Db) => Promise<void>) | undefined;
  const bulk = (body: unknown) => call(app.url, 'POST', '/api/v1/hosts/bulk', { auth: t.owner, body });
  /** The advisory locks the transaction of `tx` holds, by mode. */
  const heldBy = async (tx: Db) => (await tx.query<{ mode: string; n: number }>(
    `select mode, count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid() group by mode`))
    .reduce((m, r) => ({ ...m, [r.mode]: r.n }), {} as Record<string, number>);

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'locks');
    original = ipAddressTable.syncChildren;
    ipAddressTable.syncChildren = async function (this: typeof ipAddressTable, ...args: Parameters<Sync>) {
      if (inBulk && args[2].length > 1) await inBulk(args[0]);
      return original.apply(this, args);
    } as Sync;
  });
  afterEach(async function () {
    this.timeout(120_000); // closing an app after 4,000-address bulks: once over 30 s in the fresh-machine run
    delete (ipAddressTable as { syncChildren?: Sync }).syncChildren; // the class's method again
    if (ipAddressTable.syncChildren !== original) ipAddressTable.syncChildren = original;
    inBulk = undefined;
    await app.close();
  });

  it(`a bulk of 4,000 addresses holds at most ${BULK_ADDRESS_LOCK_BUDGET} advisory locks to its commit, in one subnet or in 200`, async function () {
    this.timeout(240_000);
    const one = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.1.0.0/16');
    // 200 subnets (/27) of 20 addresses each: more subnets than buckets.
    const many = expectOk(await call(app.url, 'POST', '/api/v1/subnets/bulk', {
      auth: t.owner,
      body: Array.from({ length: 200 }, (_, i) => ({ network_id: t.defaultNetworkId, name: `p2p-${i}`, cidr: `10.2.${i >> 3}.${(i & 7) * 32}/27` })),
    }), 201).items as Array<{ id: string; cidr: string }>;
    const spread = Array.from({ length: 1000 }, (_, h) => ({
      name: `spread-${h}`, network_id: t.defaultNetworkId,
      ip_addresses: Array.from({ length: 4 }, (__, k) => {
        const n = 4 * h + k;
        const s = Math.floor(n / 20);
        return { subnet_id: many[s]!.id, ip_address: `10.2.${s >> 3}.${(s & 7) * 32 + 1 + (n % 20)}` };
      }),
    }));
    for (const body of [hostsOf(t.defaultNetworkId, one.id, 1, 4000), spread]) {
      const held: Array<Record<string, number>> = [];
      inBulk = async (tx) => { held.push(await heldBy(tx)); };
      const res = await bulk(body);
      expect(expectOk(res, 201).count).to.equal(1000);
      expect(held).to.have.length(1);
      const total = Object.values(held[0]!).reduce((a, b) => a + b, 0);
      expect(total, JSON.stringify(held[0])).to.be.within(1, BULK_ADDRESS_LOCK_BUDGET);
    }
    const [{ n }] = await sql<{ n: number }>(app, `select count(*)::int as n from ip_addresses where organization_id = ?`, [t.orgId]);
    expect(n).to.equal(8000);
  });

  it('a small bulk keeps one lock per address (and its subnet’s bucket, shared): another address of the subnet is written meanwhile', async function () {
    this.timeout(60_000);
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.1.0.0/16');
    let held: Record<string, number> = {};
    let other: ApiResponse | undefined;
    inBulk = async (tx) => {
      held = await heldBy(tx);
      // A host with another address of the same subnet, created while the bulk holds its locks: not held up.
      other = await call(app.url, 'POST', '/api/v1/hosts', {
        auth: t.owner, body: { name: 'beside', network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.1.9.9' }] },
      });
    };
    expectOk(await bulk(hostsOf(t.defaultNetworkId, subnet.id, 1, 8)), 201);
    expect(held).to.deep.equal({ ExclusiveLock: 8, ShareLock: 1 });
    expectOk(other!, 201);
  });

  /**
   * A bulk of 248 addresses (over the budget: its subnet's bucket taken exclusively) paused inside its
   * transaction while `rival` (started then) writes one of its addresses: the rival must wait for
   * the bulk's commit (seen waiting on an advisory lock in pg_locks); the bulk is let go once it
   * waits, or once it answered (what went wrong without the shared bucket lock).
   */
  async function raceBulk(rival: () => Promise<ApiResponse>) {
    const subnetId = (await sql<{ id: string }>(app, `select id from subnets where organization_id = ? and cidr = '10.1.0.0/24'`, [t.orgId]))[0]!.id;
    const watcher = new pg.Client({ connectionString: app.databaseUrl });
    await watcher.connect();
    const rivalWaits = async () => Number((await watcher.query(
      `select count(*) as n from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`,
    )).rows[0].n) > 0;
    let rivalAnswer: Promise<ApiResponse> | undefined;
    let answered = false;
    let answeredWhileHeld = false;
    let held: Record<string, number> = {};
    inBulk = async (tx) => {
      held = await heldBy(tx);
      rivalAnswer = rival();
      void rivalAnswer.then(() => { answered = true; }, () => undefined);
      for (const deadline = Date.now() + 20_000; !answered && !(await rivalWaits());) {
        if (Date.now() > deadline) throw new Error('the rival neither waited on a lock nor answered');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      answeredWhileHeld = answered;
    };
    try {
      // 248 addresses of 10.1.0.0/24 (.1 to .248): over the budget.
      const body = Array.from({ length: 62 }, (_, h) => ({
        name: `race-${h}`, network_id: t.defaultNetworkId,
        ip_addresses: [0, 1, 2, 3].map((k) => ({ subnet_id: subnetId, ip_address: `10.1.0.${1 + 4 * h + k}` })),
      }));
      const created = expectOk(await bulk(body), 201);
      expect(held).to.deep.equal({ ExclusiveLock: 1 }); // the bucket alone
      expect(answeredWhileHeld, 'the rival answered while the bulk held its locks').to.equal(false);
      return { bulkHost: (created.items as Array<{ id: string; ip_addresses: Array<{ ip_address: string }> }>).find((h) => h.ip_addresses.some((a) => a.ip_address === '10.1.0.7'))!, rival: await rivalAnswer! };
    } finally {
      await watcher.end();
    }
  }

  it('an address of a bulk holding its subnet’s bucket: a single create of it waits for the commit, then is 409 naming the bulk’s host', async function () {
    this.timeout(60_000);
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.1.0.0/24');
    const { bulkHost, rival } = await raceBulk(() => call(app.url, 'POST', '/api/v1/hosts', {
      auth: t.owner, body: { name: 'rival', network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.1.0.7' }] },
    }));
    expectError(rival, 409, 'ip_address_duplicate');
    expect(rival.body.params).to.include({ ip: '10.1.0.7', host_id: bulkHost.id });
    const [{ n }] = await sql<{ n: number }>(app, `select count(*)::int as n from ip_addresses where subnet_id = ? and ip_address = '10.1.0.7'`, [subnet.id]);
    expect(n).to.equal(1);
  });

  it('an address of a bulk holding its subnet’s bucket: a discovery report of it waits for the commit, then merges into the bulk’s host', async function () {
    this.timeout(60_000);
    const daemon = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(daemon, t.defaultNetworkId);
    const subnet = await postSubnet(daemon, t.defaultNetworkId, '10.1.0.0/24');
    const { bulkHost, rival } = await raceBulk(() => daemon.post('/api/v1/hosts/discovery',
      hostReport(daemon, t.defaultNetworkId, { interfaces: [{ subnet_id: subnet.id, ip_address: '10.1.0.7' }], ports: [{ number: 22 }] })));
    expect(expectOk(rival).id).to.equal(bulkHost.id);
    const holders = await sql<{ host_id: string }>(app, `select host_id from ip_addresses where subnet_id = ? and ip_address = '10.1.0.7'`, [subnet.id]);
    expect(holders.map((h) => h.host_id)).to.deep.equal([bulkHost.id]);
  });
});
