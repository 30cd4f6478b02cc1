// Issue 23.4: a timeline never refuses a busy interval. Past its budget the change instants are
// grouped into buckets (a tick is the state at the end of its bucket, with its count of changes),
// and the bound on work (ticks × element rows) still holds. Networks of 1,000 single creates, each
// its own transaction (so its own instant), written in SQL: through the API it would take minutes.
import { expect } from 'chai';
import pg from 'pg';
import { MAX_TICKS, TIMELINE_MAX_DRAWN } from '../../src/modules/topology/bounds.js';
import { mergeBuckets, type ChangeBucket } from '../../src/modules/topology/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';

const US = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;
const instant = (column: string) => `to_char((${column}) at time zone 'utc', ${US})`;

/** A subnet, then `hosts` hosts with `addresses` addresses each, every host created in its own transaction. */
async function createOneByOne(client: pg.Client, t: Tenant, networkId: string, hosts: number, addresses: number): Promise<void> {
  const subnet = await client.query<{ id: string }>(
    `insert into subnets (id, organization_id, network_id, cidr, name) values (gen_random_uuid(), $1, $2, '10.0.0.0/16', 'bulk') returning id`,
    [t.orgId, networkId],
  );
  for (let n = 0; n < hosts; n++) {
    await client.query(
      `with h as (insert into hosts (id, organization_id, network_id, name) values (gen_random_uuid(), $1, $2, 'h-' || lpad($4::text, 4, '0')) returning id)
       insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address, position)
       select gen_random_uuid(), $1, $2, h.id, $3, ('10.0.' || ($4::int / 50) || '.' || (($4::int % 50) * 5 + k + 1))::inet, k from h, generate_series(0, $5::int - 1) k`,
      [t.orgId, networkId, subnet.rows[0]!.id, n, addresses],
    );
  }
}

describe('topology timeline: busy intervals grouped, never refused', function () {
  this.timeout(180_000);
  let app: TestApp;
  let t: Tenant;
  let client: pg.Client;
  /** 1,000 hosts with two addresses each, as created. */
  let small: string;
  /** 1,000 hosts with five addresses each (6,000 element rows), re-timed: a subnet, an hour later a burst of 700 creates 1 ms apart, then 300 a minute apart. */
  let large: string;
  let base: string;
  const timeline = async (networkId: string, from: string, extra = '') =>
    expectOk(await call(app.url, 'GET', `/api/v1/topology/timeline?network_id=${networkId}&from=${encodeURIComponent(from)}${extra}`, { auth: t.owner }));

  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'timeline');
    small = t.defaultNetworkId;
    large = await createNetwork(app.url, t.owner, 'large');
    client = new pg.Client({ connectionString: app.databaseUrl });
    await client.connect();
    await createOneByOne(client, t, small, 1000, 2); // two addresses: not folded into l3's summary of quiet hosts
    await createOneByOne(client, t, large, 1000, 5);
    base = (await client.query<{ t: string }>(`select ${instant(`now() - interval '1 day'`)} as t`)).rows[0]!.t;
    // Known instants (only the history tables are read by a timeline).
    await client.query(
      `with o as (select id, row_number() over (order by valid_from, name) as k from hosts_history where network_id = $1)
       update hosts_history h set valid_from = $2::timestamptz + case when o.k <= 700 then o.k * interval '1 millisecond' else interval '1 second' + (o.k - 700) * interval '1 minute' end
       from o where o.id = h.id`,
      [large, base],
    );
    await client.query(`update ip_addresses_history x set valid_from = h.valid_from from hosts_history h where h.id = x.host_id and x.network_id = $1`, [large]);
    await client.query(`update subnets_history set valid_from = $2::timestamptz - interval '1 hour' where network_id = $1`, [large, base]);
  });
  after(async () => {
    await client?.end();
    await app?.close();
  });

  it('1,000 single creates: 200 ticks whose counts sum to the changes; each host appears at the tick ending its bucket', async () => {
    const created = (await client.query<{ id: string; at: string }>(
      `select id, ${instant('valid_from')} as at from ip_addresses_history where network_id = $1 and position = 0`, [small])).rows;
    const first = (await client.query<{ t: string }>(`select ${instant(`min(valid_from) - interval '1 microsecond'`)} as t from subnets_history where network_id = $1`, [small])).rows[0]!.t;
    const tl = await timeline(small, first, '&max_nodes=5000');
    expect(tl.ticks).to.have.length(MAX_TICKS);
    expect(tl.tick_changes).to.have.length(MAX_TICKS);
    expect(tl.ticks[0]).to.equal(first);
    expect(tl.tick_changes[0]).to.equal(0);
    expect(tl.tick_changes.reduce((a: number, b: number) => a + b, 0)).to.equal(1001); // the subnet and 1,000 hosts
    expect(tl.tick_changes.slice(1).every((n: number) => n >= 1)).to.equal(true);
    expect([...tl.ticks].sort()).to.deep.equal(tl.ticks);
    expect(tl.ticks.at(-1)).to.equal(created.map((c) => c.at).sort().at(-1));
    // A tick is the state at the end of its bucket: a host appears at the first tick at or after its creation.
    const nodes = new Map<string, any>(tl.nodes.map((n: any) => [n.id, n]));
    for (const c of created) {
      const node = nodes.get(`ip_address:${c.id}`);
      expect(node.intervals, c.id).to.deep.equal([{ from: tl.ticks.find((x: string) => x >= c.at), to: null }]);
    }
  });

  it('a large view gets fewer, bigger buckets (ticks × element rows within the bound); a burst of creates is one tick', async () => {
    const rows = 1000 + 5000; // hosts and addresses: the element rows valid in the interval
    const from = (await client.query<{ t: string }>(`select ${instant(`$1::timestamptz - interval '2 hours'`)} as t`, [base])).rows[0]!.t;
    const burstEnd = (await client.query<{ t: string }>(`select ${instant(`$1::timestamptz + interval '700 milliseconds'`)} as t`, [base])).rows[0]!.t;
    const tl = await timeline(large, from);
    expect(tl.ticks).to.have.length(Math.min(MAX_TICKS, Math.floor(TIMELINE_MAX_DRAWN / rows)));
    expect(tl.ticks.length * rows).to.be.at.most(TIMELINE_MAX_DRAWN);
    expect(tl.tick_changes.reduce((a: number, b: number) => a + b, 0)).to.equal(1001);
    // from, the subnet, the burst of 700 as one tick at its last create, then the creates a minute apart.
    expect(tl.tick_changes.slice(0, 5)).to.deep.equal([0, 1, 700, 1, 1]);
    expect(tl.ticks[2]).to.equal(burstEnd);
    // The whole history fits within max_nodes once collapsed: the union is shaped as the view is.
    expect(tl.filtered_out.collapsed_containers).to.equal(1);
  });

  it('a diff of the last N changes: from is just before the Nth last change', async () => {
    const last = (await client.query<{ id: string; at: string }>(
      `select id, ${instant('valid_from')} as at from ip_addresses_history where network_id = $1 and position = 0 order by valid_from desc limit 11`, [small])).rows;
    const diff = expectOk(await call(app.url, 'GET', `/api/v1/topology/diff?network_id=${small}&last_changes=10`, { auth: t.owner }));
    expect(diff.from < last[9]!.at && diff.from >= last[10]!.at, `${diff.from} between ${last[10]!.at} and ${last[9]!.at}`).to.equal(true);
    const added = new Set(diff.nodes.added.map((n: any) => n.id));
    expect(added.size).to.equal(20); // two addresses each
    for (const r of last) expect(added.has(`ip_address:${r.id}`), r.at).to.equal(r !== last[10]);
    // One of from and last_changes.
    for (const q of [`&last_changes=10&from=${encodeURIComponent(diff.from)}`, '', '&last_changes=0']) {
      expectError(await call(app.url, 'GET', `/api/v1/topology/diff?network_id=${small}${q}`, { auth: t.owner }), 400, 'validation_failed');
    }
  });
});

describe('topology timeline buckets (pure)', () => {
  const b = (first: number, last: number, changes = 1): ChangeBucket => ({ tick: String(last), changes, first_us: first, last_us: last });
  it('merges at the longest pauses, keeping counts and each bucket\'s end as its tick', () => {
    const buckets = [b(0, 0), b(10, 10), b(11, 20, 5), b(100, 100), b(101, 101)];
    expect(mergeBuckets(buckets, 5)).to.deep.equal(buckets);
    expect(mergeBuckets(buckets, 2)).to.deep.equal([b(0, 20, 7), b(100, 101, 2)]);
    expect(mergeBuckets(buckets, 3)).to.deep.equal([b(0, 0), b(10, 20, 6), b(100, 101, 2)]);
    expect(mergeBuckets(buckets, 1)).to.deep.equal([b(0, 101, 9)]);
  });
});
