// network_id is read-only on a host's children too (issue 37): a PUT of a service, port, IP
// address, interface or binding naming another network is 400, as for hosts and subnets, instead
// of answering 200 and moving nothing. The check comes from the update schema's declaration
// (readOnlyNetworkId, src/http/schemas.ts), applied by the declared routes (src/http/resourceRoutes.ts).
import { expect } from 'chai';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';

/** What a write moves by itself: compared apart. */
const withoutClock = ({ updated_at: _u, valid_from: _v, ...rest }: Record<string, unknown>) => rest;

/** The five children: a path to one of each (made in before()), its noun and a field a PUT changes with it. */
const RESOURCES: Array<{ name: string; noun: string; path: (w: World) => string; change: Record<string, unknown> }> = [
  { name: 'services', noun: 'a service', path: (w) => `/api/v1/services/${w.host.services[0].id}`, change: { name: 'nginx-2' } },
  { name: 'ports', noun: 'a port', path: (w) => `/api/v1/ports/${w.host.ports[1].id}`, change: { number: 2222 } },
  { name: 'ip addresses', noun: 'an IP address', path: (w) => `/api/v1/ip-addresses/${w.host.ip_addresses[0].id}`, change: { name: 'primary' } },
  { name: 'interfaces', noun: 'an interface', path: (w) => `/api/v1/interfaces/${w.iface.id}`, change: { if_alias: 'uplink' } },
  { name: 'bindings', noun: 'a binding', path: (w) => `/api/v1/bindings/${w.host.services[1].bindings[0].id}`, change: {} },
];
interface World { host: any; iface: any; otherNetworkId: string }

describe('http/childNetworkId: network_id is read-only on services, ports, IP addresses, interfaces and bindings', () => {
  let app: TestApp;
  let t: Tenant;
  let w: World;
  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    const other = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'elsewhere' } }), 201);
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    const host = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id);
    const iface = expectOk(await call(app.url, 'POST', '/api/v1/interfaces', { auth: t.owner, body: { host_id: host.id, if_index: 1 } }), 201);
    w = { host, iface, otherNetworkId: other.id };
  });
  after(() => app.close());

  for (const r of RESOURCES) {
    it(`${r.name}: a PUT naming another network is 400 validation_failed (field network_id) and moves nothing; the stored one is accepted; the OpenAPI document says so`, async () => {
      const path = r.path(w);
      const before = expectOk(await call(app.url, 'GET', path, { auth: t.owner }));
      expect(before.network_id).to.equal(t.defaultNetworkId);
      const put = await call(app.url, 'PUT', path, { auth: t.owner, body: { ...before, ...r.change, network_id: w.otherNetworkId } });
      expectError(put, 400, 'validation_failed');
      expect(put.body.params.field).to.equal('network_id');
      expect(put.body.error).to.contain(`network_id is read-only: ${r.noun} does not move to another network`);
      expect(withoutClock(expectOk(await call(app.url, 'GET', path, { auth: t.owner })))).to.deep.equal(withoutClock(before));
      // The stored network (a GET sent back, in any case) is accepted and the rest written, as on hosts.
      const same = expectOk(await call(app.url, 'PUT', path, { auth: t.owner, body: { ...before, ...r.change, network_id: t.defaultNetworkId.toUpperCase() } }));
      expect(same).to.include({ network_id: t.defaultNetworkId, ...r.change });
      const doc = JSON.stringify((await call(app.url, 'GET', '/api/openapi.json', { auth: t.owner })).body);
      expect(doc).to.contain(`Read-only: ${r.noun} never moves to another network`);
    });
  }
});
