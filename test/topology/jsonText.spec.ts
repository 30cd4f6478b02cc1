// Issue 22: topology reads bound for a thread come from PostgreSQL as one JSON text per table
// (json_agg), and large answers go out as JSON text made in the thread (JsonText). Both must be
// exactly what the plain path gives.
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { readSnapshot, readSnapshotText } from '../../src/modules/topology/service.js';
import { parseSnapshot } from '../../src/modules/topology/thread.js';
import { INLINE_BELOW } from '../../src/modules/topology/pool.js';
import { JsonText, toJsonBody } from '../../src/http/jsonText.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { buildNetwork } from '../support/network.js';

type Rows = Array<Record<string, unknown>>;
/** Rows in a fixed order (neither read orders them): by id, then by the start of their validity. */
const sorted = (snapshot: object) => Object.fromEntries(Object.entries(snapshot).map(([table, rows]) => [
  table, [...(rows as Rows)].sort((a, b) => `${a.id}${a.v_from ?? ''}`.localeCompare(`${b.id}${b.v_from ?? ''}`)),
]));

describe('topology: rows read as JSON text', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'jsontext');
  });
  afterEach(() => app.close());

  it('equal the driver\'s rows (uuid[], jsonb, inet, booleans, integers, validity), live, as of an instant, at two instants and over a span', async function () {
    this.timeout(60_000);
    const n = await buildNetwork(app, t.owner, t.defaultNetworkId);
    const em = app.services.orm.em.fork();
    // Neighbour columns filled as discovery fills them (the API does not write them).
    await em.execute(`update interfaces set lldp_sys_name = 'core-sw', lldp_port_id = 'Gi0/1', cdp_device_id = 'core-sw.lan', cdp_port_id = 'Gi0/1', mac_address = 'aa:bb:cc:dd:ee:ff', oper_status = 'Up' where host_id = ?`, [n.web.id]);
    const db = new Db(em);
    // An instant before the last changes (db's first state ended when it was replaced) and now.
    const { first, last } = (await db.one<{ first: string; last: string }>(
      `select to_char((min(valid_to) - interval '1 microsecond') at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as first,
              to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as last
       from hosts_history where network_id = ?`, [t.defaultNetworkId],
    ))!;
    for (const at of [undefined, first, [first, last] as [string, string], { first, last }]) {
      const plain = await readSnapshot(db, t.orgId, t.defaultNetworkId, at);
      const text = await readSnapshotText(db, t.orgId, t.defaultNetworkId, at);
      const label = JSON.stringify(at ?? 'live');
      expect(sorted(parseSnapshot(text)), label).to.deep.equal(sorted(plain));
      for (const [table, rows] of Object.entries(plain)) expect(text[table as keyof typeof text].n, `${label} ${table}`).to.equal(rows.length);
    }
    // Every kind of value was there to compare (an empty table would prove nothing).
    const live = await readSnapshot(db, t.orgId, t.defaultNetworkId, undefined);
    for (const [table, rows] of Object.entries(live)) expect(rows.length, table).to.be.above(0);
    expect(live.services.some((s) => Array.isArray(s.tags) && s.tags.length)).to.equal(true);
    expect(live.interfaces.some((i) => i.neighbor && typeof i.neighbor === 'object')).to.equal(true);
    // Budgeted: only some hosts' rows.
    const some = [n.web.id];
    expect(sorted(parseSnapshot(await readSnapshotText(db, t.orgId, t.defaultNetworkId, undefined, some))))
      .to.deep.equal(sorted(await readSnapshot(db, t.orgId, t.defaultNetworkId, undefined, some)));
  });

  it('answers the same through a thread (JSON bytes spliced in) as inline: graph, diff, timeline, export', async function () {
    this.timeout(60_000);
    await buildNetwork(app, t.owner, t.defaultNetworkId);
    const q = `network_id=${t.defaultNetworkId}`;
    const paths = [`/api/v1/topology?${q}&view=workloads`, `/api/v1/topology/diff?${q}&last_changes=5`, `/api/v1/topology/timeline?${q}&from=2000-01-01T00:00:00Z`, `/api/v1/topology/export?${q}&format=svg`];
    // Each answer's instant fixed, so two reads can be compared.
    const to = (expectOk(await call(app.url, 'GET', `/api/v1/topology?${q}`, { auth: t.owner })) as { as_of: string }).as_of;
    const read = async () => Promise.all(paths.map(async (path) => {
      const at = path.includes('/diff') || path.includes('/timeline') ? `&to=${encodeURIComponent(to)}` : `&at=${encodeURIComponent(to)}`;
      const res = await fetch(`${app.url}${path}${at}`, { headers: { Cookie: t.owner.cookie! } });
      const body = await res.text();
      expect(res.status, `${path}: ${body}`).to.equal(200);
      return path.includes('/export') ? body : { ...JSON.parse(body).data, layout: undefined };
    }));
    const inline = await read();
    const saved = { ...INLINE_BELOW };
    try {
      for (const k of Object.keys(INLINE_BELOW) as Array<keyof typeof INLINE_BELOW>) INLINE_BELOW[k] = 0;
      const threaded = await read();
      paths.forEach((path, i) => expect(threaded[i], path).to.deep.equal(inline[i]));
    } finally {
      Object.assign(INLINE_BELOW, saved);
    }
    expect(inline[0].nodes.length).to.be.above(3);
    expect(inline[1].nodes.added.length + inline[1].nodes.changed.length + inline[1].edges.added.length).to.be.above(0);
  });
});

describe('topology: answers spliced from JSON text (pure)', () => {
  it('puts each JsonText\'s JSON (text or UTF-8 bytes) where it stands, at any depth, and stringifies the rest as JSON.stringify does', () => {
    const nodes = [{ id: 'a', label: 'quote " and \\ and \u2028' }, { id: 'b', counts: { x: 1 } }];
    const edges: unknown[] = [];
    const value = {
      success: true,
      data: { id: 'n', nodes: new JsonText(JSON.stringify(nodes)), edges: new JsonText(Buffer.from(JSON.stringify(edges))), nested: [new JsonText(new TextEncoder().encode('null')), 'jsontext-0'] },
      meta: { api_version: '1' },
    };
    const body = toJsonBody(value);
    expect(JSON.parse(body.toString())).to.deep.equal({ success: true, data: { id: 'n', nodes, edges, nested: [null, 'jsontext-0'] }, meta: { api_version: '1' } });
    // Nothing spliced: exactly JSON.stringify.
    expect(toJsonBody({ a: [1, 'b'] })).to.equal(JSON.stringify({ a: [1, 'b'] }));
  });
});
