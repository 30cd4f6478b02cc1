// A diff draws only the hosts its window's changes touch and their neighbours (service.ts
// hostsToCompare): on a generated network (the realistic one: VMs, containers, dependencies, a
// hidden hub, workstations folded into summaries) changed at random, that diff equals the diff of
// every host, item for item, in every view that bounds it; and leaving out a touched host is seen.
import { expect } from 'chai';
import pg from 'pg';
import { apiCaller, buildRealisticNetwork } from '../../scripts/realisticNetwork.js';
import { Db } from '../../src/core/db.js';
import { diffParts, type IntervalQuery } from '../../src/modules/topology/service.js';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { registerTenant, type Tenant } from '../support/world.js';

/** A small seeded generator (mulberry32): the same changes on every run. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const parse = (j: { json: string | Uint8Array }) => JSON.parse(typeof j.json === 'string' ? j.json : Buffer.from(j.json).toString('utf8'));
const byId = (items: Array<{ id: string }>) => [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
/** A diff's items, each list in id order (the drawings' orders differ with the rows read). */
const items = (d: { nodes: any; edges: any }) => Object.fromEntries((['nodes', 'edges'] as const).flatMap((part) =>
  (['added', 'removed', 'changed'] as const).map((k) => [`${part}.${k}`, byId(parse(d[part])[k])])));

describe('topology diff: the hosts compared give the whole diff', function () {
  this.timeout(240_000);
  let app: TestApp;
  let t: Tenant;
  let client: pg.Client;
  let db: Db;
  const now = async () => (await client.query<{ t: string }>(`select to_char(clock_timestamp() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as t`)).rows[0]!.t;
  const pick = <T>(rnd: () => number, list: T[]) => list[Math.floor(rnd() * list.length)]!;

  before(async () => {
    app = await startTestApp(FIXTURE_BUILDING);
    t = await registerTenant(app.url, 'agree');
    await buildRealisticNetwork(apiCaller(app.url, { cookie: t.owner.cookie }), t.defaultNetworkId, { changes: false });
    client = new pg.Client({ connectionString: app.databaseUrl });
    await client.connect();
    db = new Db(app.services.orm.em.fork());
  });
  after(async () => {
    await client?.end();
    await app?.close();
  });

  /** One random change of the network, in its own transaction (its own change instant). */
  async function change(rnd: () => number): Promise<string> {
    const org = t.orgId;
    const rows = async (sql: string) => (await client.query<{ id: string }>(sql, [org, t.defaultNetworkId])).rows.map((r) => r.id);
    const hosts = await rows(`select id from hosts where organization_id = $1 and network_id = $2 order by id`);
    const kind = pick(rnd, ['rename host', 'hide host', 'untag host', 'delete host', 'rename service', 'delete service', 'delete address', 'rename subnet']);
    const one = async (sql: string) => pick(rnd, await rows(sql));
    switch (kind) {
      case 'rename host': await client.query(`update hosts set name = name || '*' where organization_id = $1 and id = $2`, [org, pick(rnd, hosts)]); break;
      case 'hide host': await client.query(`update hosts set hidden = not hidden where organization_id = $1 and id = $2`, [org, pick(rnd, hosts)]); break;
      case 'untag host': await client.query(`update hosts set tags = '{}' where organization_id = $1 and id = $2`, [org, await one(`select id from hosts where organization_id = $1 and network_id = $2 and tags <> '{}' order by id`)]); break;
      case 'delete host': await client.query(`delete from hosts where organization_id = $1 and id = $2`, [org, pick(rnd, hosts)]); break;
      case 'rename service': await client.query(`update services set name = name || '*' where organization_id = $1 and id = $2`, [org, await one(`select id from services where organization_id = $1 and network_id = $2 order by id`)]); break;
      case 'delete service': await client.query(`delete from services where organization_id = $1 and id = $2`, [org, await one(`select id from services where organization_id = $1 and network_id = $2 order by id`)]); break;
      // An address of a host with two or more (a host with one left may become quiet, and fold).
      case 'delete address': await client.query(`delete from ip_addresses where organization_id = $1 and id = $2`, [org, await one(
        `select a.id from ip_addresses a where a.organization_id = $1 and a.network_id = $2 and (select count(*) from ip_addresses b where b.organization_id = $1 and b.host_id = a.host_id) > 1 order by a.id`)]); break;
      case 'rename subnet': await client.query(`update subnets set name = name || '*' where organization_id = $1 and id = $2`, [org, await one(`select id from subnets where organization_id = $1 and network_id = $2 order by id`)]); break;
    }
    return kind;
  }

  it('equals the diff of every host after random changes, in l3, workloads and application, hidden hosts shown or not', async () => {
    const rnd = random(41);
    const all = Number((await client.query(`select count(*) from hosts where organization_id = $1 and network_id = $2`, [t.orgId, t.defaultNetworkId])).rows[0].count);
    let compared = 0;
    for (let round = 0; round < 4; round++) {
      const from = await now();
      const kinds: string[] = [];
      for (let k = 0; k < 5; k++) kinds.push(await change(rnd));
      const to = await now();
      for (const view of ['l3', 'workloads', 'application'] as const) {
        for (const includeHidden of [false, true]) {
          const q: IntervalQuery = { network_id: t.defaultNetworkId, view, from, include_hidden: includeHidden };
          const hostIds = await diffParts.hostsToCompare(db, t.orgId, q, to);
          const what = `round ${round} (${kinds.join(', ')}), ${view}, include_hidden=${includeHidden}`;
          if (view === 'l3') expect(hostIds, what).to.be.an('array'); // bounded: the test compares something
          if (!hostIds) continue;
          expect(hostIds.length, what).to.be.lessThan(all);
          compared += hostIds.length;
          const bounded = items(await diffParts.draw(db, t.orgId, q, to, hostIds));
          const whole = items(await diffParts.draw(db, t.orgId, q, to, undefined));
          expect(bounded, what).to.deep.equal(whole);
        }
      }
    }
    expect(compared).to.be.greaterThan(0);
  });

  it('differs from the whole diff when a touched host is left out', async () => {
    const org = t.orgId;
    const host = (await client.query<{ id: string }>(
      `select h.id from hosts h where h.organization_id = $1 and h.network_id = $2 and not h.hidden
         and (select count(*) from ip_addresses a where a.organization_id = $1 and a.host_id = h.id) > 1 order by h.id limit 1`, [org, t.defaultNetworkId])).rows[0]!.id;
    const from = await now();
    await client.query(`update hosts set name = name || ' renamed' where organization_id = $1 and id = $2`, [org, host]);
    const to = await now();
    const q: IntervalQuery = { network_id: t.defaultNetworkId, view: 'l3', from, include_hidden: false };
    const hostIds = (await diffParts.hostsToCompare(db, org, q, to))!;
    expect(hostIds).to.include(host);
    const whole = items(await diffParts.draw(db, org, q, to, undefined));
    expect(items(await diffParts.draw(db, org, q, to, hostIds))).to.deep.equal(whole);
    expect(items(await diffParts.draw(db, org, q, to, hostIds.filter((h) => h !== host)))).not.to.deep.equal(whole);
  });
});
