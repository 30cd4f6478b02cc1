// Dependency edges that exist (issue 23.1): a member that is not drawn (a hidden host, a service
// outside the view) is never skipped over. A hub-and-spoke's missing hub is a ghost node its spokes
// join, never the next member promoted to hub; a request path keeps its order through a ghost.
import { expect } from 'chai';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { apiCaller, buildRealisticNetwork, type RealisticNetwork } from '../../scripts/realisticNetwork.js';

describe('topology: dependency edges that exist', function () {
  this.timeout(120_000);
  let app: TestApp;
  let t: Tenant;
  let net: RealisticNetwork;
  // Through apiCaller, which waits out the 429s the fixture's ~600 requests leave behind.
  const topo = (networkId: string, query: string) => apiCaller(app.url, { cookie: t.owner.cookie })('GET', `/api/v1/topology?network_id=${networkId}${query}`);

  before(async () => {
    app = await startTestApp(FIXTURE_BUILDING);
    t = await registerTenant(app.url, 'deps');
    net = await buildRealisticNetwork(apiCaller(app.url, { cookie: t.owner.cookie }), t.defaultNetworkId, { changes: false });
  });
  after(() => app?.close());

  for (const view of ['l3', 'workloads', 'application']) {
    it(`${view}: the hidden hub of "Internal DNS" is a ghost its spokes join; no spoke joins another`, async () => {
      const data = await topo(net.networkId, `&view=${view}`);
      const dns = net.dependencies['Internal DNS'];
      const hub = net.services['dns-01/unbound']!;
      const edges = data.edges.filter((e: any) => e.dependency_id === dns.id);
      expect(edges.length).to.be.greaterThan(0);
      const ghost = data.nodes.find((n: any) => n.id === `ghost:${hub}`);
      expect(ghost).to.include({ kind: 'ghost', entity_id: hub, reason: 'hidden host', label: 'unbound · dns-01 (hidden host)' });
      for (const e of edges) {
        expect(e.source, e.id).to.equal(`ghost:${hub}`);
        expect(e.source_service_id).to.equal(hub);
        expect(e.target, e.id).not.to.match(/^ghost:/); // a drawn spoke is itself
      }
      // The spokes drawn in this view, each once (the application view draws only zabbix, an observability service).
      const spokes = ['mail-01/postfix', 'ldap-01/openldap', 'mon-01/zabbix', 'ci-01/jenkins'].map((k) => net.services[k]);
      expect(edges.map((e: any) => e.target_service_id)).to.deep.equal(view === 'application' ? [net.services['mon-01/zabbix']] : spokes);
      const nodeIds = new Set(data.nodes.map((n: any) => n.id));
      for (const e of data.edges) expect(nodeIds.has(e.source) && nodeIds.has(e.target), e.id).to.equal(true);
    });
  }

  it('with the hidden hosts shown, the hub is itself and there is no ghost', async () => {
    const data = await topo(net.networkId, '&include_hidden=true');
    const hub = net.services['dns-01/unbound']!;
    expect(data.nodes.filter((n: any) => n.kind === 'ghost')).to.deep.equal([]);
    const edges = data.edges.filter((e: any) => e.dependency_id === net.dependencies['Internal DNS'].id);
    expect(edges).to.have.length(4);
    const hubNode = data.nodes.find((n: any) => n.host_id === net.hosts['dns-01'].id);
    for (const e of edges) expect([e.source, e.source_service_id]).to.deep.equal([hubNode.id, hub]);
  });

  it('a request path whose middle member is hidden keeps its order through a ghost', async () => {
    // A network of its own: nothing else in this file reads it.
    const api = apiCaller(app.url, { cookie: t.owner.cookie });
    const network = await api('POST', '/api/v1/networks', { name: 'path' });
    const subnet = await api('POST', '/api/v1/subnets', { network_id: network.id, cidr: '10.9.0.0/24', name: 'path' });
    const host = (name: string, octet: number, hidden = false) => api('POST', '/api/v1/hosts', {
      network_id: network.id, name, hidden, ip_addresses: [{ subnet_id: subnet.id, ip_address: `10.9.0.${octet}` }], services: [{ name: `${name}-svc`, service_definition: 'Nginx' }],
    });
    const [a, b, c] = [await host('a', 1), await host('b', 2, true), await host('c', 3)];
    const svc = (h: any) => h.services[0].id as string;
    const dep = await api('POST', '/api/v1/dependencies', {
      network_id: network.id, name: 'chain', color: 'Blue', dependency_type: 'RequestPath', members: { type: 'Services', service_ids: [svc(a), svc(b), svc(c)] },
    });
    for (const view of ['l3', 'workloads']) {
      const data = await topo(network.id, `&view=${view}`);
      const nodeOf = (h: any) => data.nodes.find((n: any) => n.host_id === h.id && (n.kind === 'ip_address' || n.kind === 'service')).id;
      const path = data.edges.filter((e: any) => e.dependency_id === dep.id).map((e: any) => [e.source, e.target, e.step]);
      expect(path, view).to.deep.equal([[nodeOf(a), `ghost:${svc(b)}`, 1], [`ghost:${svc(b)}`, nodeOf(c), 2]]);
      expect(data.nodes.find((n: any) => n.id === `ghost:${svc(b)}`)).to.include({ kind: 'ghost', reason: 'hidden host', label: 'b-svc · b (hidden host)' });
    }
  });
});
