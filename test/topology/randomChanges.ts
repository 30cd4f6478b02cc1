// What the topology agreement specs share: a seeded random generator, a generated network (the
// realistic one: VMs, containers, dependencies, a hidden hub, workstations folded into summaries)
// in an app of its own, and random changes of it in SQL, each in its own transaction (its own
// change instant). Each spec names the changes it draws from; the same seed makes the same changes.
import pg from 'pg';
import { apiCaller, buildRealisticNetwork } from '../../scripts/realisticNetwork.js';
import { Db } from '../../src/core/db.js';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { registerTenant, type Tenant } from '../support/world.js';

/** A small seeded generator (mulberry32): the same changes on every run. */
export function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(rnd: () => number, list: T[]) => list[Math.floor(rnd() * list.length)]!;
export const byId = <T extends { id: string }>(items: T[]) => [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** The realistic network of one tenant, with a connection of the test's own and a Db for the service's functions. */
export interface GeneratedNetwork {
  app: TestApp;
  t: Tenant;
  client: pg.Client;
  db: Db;
  networkId: string;
  /** The database's clock (the instant after everything committed so far). */
  now(): Promise<string>;
  hostCount(): Promise<number>;
}

/** Starts an app holding the realistic network in a tenant named `name` (mocha's before), and closes it after. */
export function generatedNetwork(name: string): GeneratedNetwork {
  const w = {} as GeneratedNetwork;
  before(async () => {
    w.app = await startTestApp(FIXTURE_BUILDING);
    w.t = await registerTenant(w.app.url, name);
    w.networkId = w.t.defaultNetworkId;
    await buildRealisticNetwork(apiCaller(w.app.url, { cookie: w.t.owner.cookie }), w.networkId, { changes: false });
    w.client = new pg.Client({ connectionString: w.app.databaseUrl });
    await w.client.connect();
    w.db = new Db(w.app.services.orm.em.fork());
    w.now = async () => (await w.client.query<{ t: string }>(`select to_char(clock_timestamp() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as t`)).rows[0]!.t;
    w.hostCount = async () => Number((await w.client.query(`select count(*) from hosts where organization_id = $1 and network_id = $2`, [w.t.orgId, w.networkId])).rows[0].count);
  });
  after(async () => {
    await w.client?.end();
    await w.app?.close();
  });
  return w;
}

/** One change of the network in SQL: `one` picks an id among a query's answers ($1 organization, $2 network). */
type Change = (w: GeneratedNetwork, one: (sql: string) => Promise<string>, hosts: string[], rnd: () => number) => Promise<unknown>;

const SQL_CHANGES = {
  'rename host': (w, _one, hosts, rnd) => w.client.query(`update hosts set name = name || '*' where organization_id = $1 and id = $2`, [w.t.orgId, pick(rnd, hosts)]),
  'hide host': (w, _one, hosts, rnd) => w.client.query(`update hosts set hidden = not hidden where organization_id = $1 and id = $2`, [w.t.orgId, pick(rnd, hosts)]),
  'untag host': async (w, one) => w.client.query(`update hosts set tags = '{}' where organization_id = $1 and id = $2`,
    [w.t.orgId, await one(`select id from hosts where organization_id = $1 and network_id = $2 and tags <> '{}' order by id`)]),
  'delete host': (w, _one, hosts, rnd) => w.client.query(`delete from hosts where organization_id = $1 and id = $2`, [w.t.orgId, pick(rnd, hosts)]),
  'rename service': async (w, one) => w.client.query(`update services set name = name || '*' where organization_id = $1 and id = $2`,
    [w.t.orgId, await one(`select id from services where organization_id = $1 and network_id = $2 order by id`)]),
  'delete service': async (w, one) => w.client.query(`delete from services where organization_id = $1 and id = $2`,
    [w.t.orgId, await one(`select id from services where organization_id = $1 and network_id = $2 order by id`)]),
  // An address of a host with two or more (a host with one left may become quiet, and fold).
  'delete address': async (w, one) => w.client.query(`delete from ip_addresses where organization_id = $1 and id = $2`, [w.t.orgId, await one(
    `select a.id from ip_addresses a where a.organization_id = $1 and a.network_id = $2 and (select count(*) from ip_addresses b where b.organization_id = $1 and b.host_id = a.host_id) > 1 order by a.id`)]),
  // A second address for a quiet host (it leaves its subnet's summary while it has two).
  'add address': async (w, one) => w.client.query(
    `insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address, position)
     select gen_random_uuid(), a.organization_id, a.network_id, a.host_id, a.subnet_id, a.ip_address + 100, 1 from ip_addresses a
     where a.organization_id = $1 and a.id = $2`, [w.t.orgId, await one(
      `select a.id from ip_addresses a where a.organization_id = $1 and a.network_id = $2 and a.subnet_id is not null
         and (select count(*) from ip_addresses b where b.organization_id = $1 and b.host_id = a.host_id) = 1
         and not exists (select 1 from services s where s.organization_id = $1 and s.host_id = a.host_id)
         and not exists (select 1 from ip_addresses c where c.organization_id = $1 and c.network_id = $2 and c.ip_address = a.ip_address + 100) order by a.id`)]),
  'rename subnet': async (w, one) => w.client.query(`update subnets set name = name || '*' where organization_id = $1 and id = $2`,
    [w.t.orgId, await one(`select id from subnets where organization_id = $1 and network_id = $2 order by id`)]),
  // A subnet created inside the window, and a quiet host's address moved into it (its old subnet loses one).
  'add subnet': async (w, one) => {
    const address = await one(`select a.id from ip_addresses a where a.organization_id = $1 and a.network_id = $2 and a.subnet_id is not null
       and (select count(*) from ip_addresses b where b.organization_id = $1 and b.host_id = a.host_id) = 1
       and not exists (select 1 from services s where s.organization_id = $1 and s.host_id = a.host_id) order by a.id`);
    const subnet = (await w.client.query<{ id: string }>(
      `insert into subnets (id, organization_id, network_id, cidr, name)
       select gen_random_uuid(), $1, $2, set_masklen(a.ip_address, 32)::cidr, 'new ' || host(a.ip_address) from ip_addresses a
       where a.organization_id = $1 and a.id = $3 returning id`, [w.t.orgId, w.networkId, address])).rows[0]!.id;
    return w.client.query(`update ip_addresses set subnet_id = $3 where organization_id = $1 and id = $2`, [w.t.orgId, address, subnet]);
  },
  // A small subnet deleted inside the window, its addresses with it (on delete cascade); small, so
  // that the network the other checks on the same generated world draw stays as large.
  'delete subnet': async (w, one) => w.client.query(`delete from subnets where organization_id = $1 and id = $2`,
    [w.t.orgId, await one(`select y.id from subnets y where y.organization_id = $1 and y.network_id = $2
       and (select count(*) from ip_addresses a where a.organization_id = $1 and a.subnet_id = y.id) <= 3 order by y.id`)]),
  'rename dependency': async (w, one) => w.client.query(`update dependencies set name = name || '*' where organization_id = $1 and id = $2`,
    [w.t.orgId, await one(`select id from dependencies where organization_id = $1 and network_id = $2 order by id`)]),
} satisfies Record<string, Change>;

export type SqlChange = keyof typeof SQL_CHANGES;

/** One random change among `kinds` (a kind listed twice is twice as likely), in its own transaction; its kind. */
export async function changeBySql(w: GeneratedNetwork, rnd: () => number, kinds: SqlChange[]): Promise<SqlChange> {
  const rows = async (sql: string) => (await w.client.query<{ id: string }>(sql, [w.t.orgId, w.networkId])).rows.map((r) => r.id);
  const hosts = await rows(`select id from hosts where organization_id = $1 and network_id = $2 order by id`);
  const kind = pick(rnd, kinds);
  await (SQL_CHANGES[kind] as Change)(w, async (sql) => pick(rnd, await rows(sql)), hosts, rnd);
  return kind;
}
