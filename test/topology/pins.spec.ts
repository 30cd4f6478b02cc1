// Pins name nodes of the view (issue 22: any node id was stored, unbounded: 100,000 pins made an
// empty map's GET 8× slower): a kind the view draws, an entity of the network (a tag: of the
// organization), and at most MAX_PINS per network view. Refused pins store nothing.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Db } from '../../src/core/db.js';
import { MAX_PINS } from '../../src/modules/topology/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { buildNetwork, type Net } from '../support/network.js';

describe('topology pins: only nodes of the view, and not too many', () => {
  let app: TestApp;
  let t: Tenant;
  let n: Net;
  const pin = (view: string, positions: Record<string, { x: number; y: number }>, networkId = t.defaultNetworkId) =>
    call(app.url, 'PUT', '/api/v1/topology/positions', { auth: t.owner, body: { network_id: networkId, view, positions } });
  const pinned = async (view: string) => (await new Db(app.services.orm.em.fork()).query<{ node_id: string }>(`select node_id from topology_pins where view = ? order by node_id`, [view])).map((r) => r.node_id);

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'pins');
    n = await buildNetwork(app, t.owner, t.defaultNetworkId);
  });
  afterEach(() => app.close());

  it('accepts the nodes each view draws', async () => {
    expectOk(await pin('l3', { [`ip_address:${n.ip.webA}`]: { x: 1, y: 2 }, [`subnet:${n.subnetA.id}`]: { x: 0, y: 0 }, [`host:${n.bare.id}`]: { x: 5, y: 5 } }));
    expectOk(await pin('workloads', { [`host:${n.web.id}`]: { x: 1, y: 2 }, [`service:${n.svc.nginx}`]: { x: 3, y: 4 } }));
    expectOk(await pin('l2', { [`host:${n.web.id}`]: { x: 1, y: 2 } }));
    expect(await pinned('l3')).to.have.length(3);
  });

  it('refuses a kind the view does not draw, an id of no entity, and another network\'s node; nothing is stored', async () => {
    const other = await createNetwork(app.url, t.owner, 'other');
    const otherSubnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: other, cidr: '10.9.0.0/24', name: 'elsewhere' } }), 201);
    const refused = [
      ['l3', `service:${n.svc.nginx}`], // services are drawn on addresses in l3
      ['l3', `ip_address:${randomUUID()}`],
      ['l3', `subnet:${otherSubnet.id}`],
      ['l2', `ip_address:${n.ip.webA}`],
    ] as const;
    for (const [view, id] of refused) {
      const res = await pin(view, { [`host:${n.web.id}`]: { x: 0, y: 0 }, [id]: { x: 1, y: 1 } });
      expectError(res, 400, 'validation_failed');
      expect(res.body.params.field, `${view} ${id}`).to.equal(`positions.${id}`);
    }
    expect(await pinned('l3')).to.deep.equal([]);
    expect(await pinned('l2')).to.deep.equal([]);
  });

  it(`at most ${MAX_PINS} pins per network view: moving a pinned node is fine, one more is refused`, async () => {
    // The bound's worth of pins, in SQL (the API takes 5,000 per request).
    await new Db(app.services.orm.em.fork()).query(
      `insert into topology_pins (organization_id, network_id, view, node_id, x, y)
       select ?, ?, 'l3', 'ip_address:' || gen_random_uuid(), 0, 0 from generate_series(1, ?::int - 1)`,
      [t.orgId, t.defaultNetworkId, MAX_PINS],
    );
    expectOk(await pin('l3', { [`ip_address:${n.ip.webA}`]: { x: 1, y: 1 } })); // the last one allowed
    expectOk(await pin('l3', { [`ip_address:${n.ip.webA}`]: { x: 2, y: 2 } })); // moved, not added
    const res = await pin('l3', { [`ip_address:${n.ip.webB}`]: { x: 3, y: 3 } });
    expectError(res, 400, 'validation_failed');
    expect(res.body.params.reason).to.match(/at most 5000 nodes .* unpin some first/);
  });
});
