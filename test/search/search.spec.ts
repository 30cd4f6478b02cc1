// Search everywhere through HTTP: hosts by name or hostname, addresses by their start, MACs by any
// part with any separators, services, subnets and tags by name; exact matches first; only the
// networks the caller may see; another organization sees none of it.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';

describe('search: hosts, addresses, MACs, services, subnets and tags', () => {
  let app: TestApp;
  let t: Tenant;
  let lab: string;
  let web: any;
  let hidden: any;

  const search = async (auth: Credential, q: string, extra = '') =>
    expectOk(await call(app.url, 'GET', `/api/v1/search?q=${encodeURIComponent(q)}${extra}`, { auth })) as any[];
  const kinds = (items: any[]) => items.map((i) => `${i.kind}:${i.label}`);

  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'search');
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    web = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, 'web');
    await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, 'webcam');
    lab = await createNetwork(app.url, t.owner, 'Lab');
    const labSubnet = await createSubnet(app.url, t.owner, lab, '10.0.0.0/24');
    hidden = await createHostWithChildren(app.url, t.owner, lab, labSubnet.id, 'web-lab');
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'web-tier', color: 'Sky' } }), 201);
  });
  after(() => app.close());

  it('ranks the exact name first, then prefixes, then the rest; each result says where it is', async () => {
    const found = await search(t.owner, 'web');
    expect(found[0]).to.include({ kind: 'host', id: web.id, host_id: web.id, label: 'web', match: 'exact', network_id: t.defaultNetworkId });
    expect(kinds(found)).to.include.members(['host:webcam', 'host:web-lab', 'tag:web-tier']);
    expect(found.slice(1).every((i) => i.match !== 'exact')).to.equal(true);
    const nginx = (await search(t.owner, 'ngin')).filter((i) => i.kind === 'service');
    expect(nginx.map((i) => i.detail).sort()).to.deep.equal(['web', 'web-lab', 'webcam']);
  });

  it('an address by its start, a MAC by any part and any separators, a subnet by its CIDR', async () => {
    const byIp = await search(t.owner, '10.0.0.1', `&network_id=${t.defaultNetworkId}`);
    expect(byIp.filter((i) => i.kind === 'ip_address').map((i) => i.label)).to.include.members(['10.0.0.10', '10.0.0.11']);
    expect(byIp.find((i) => i.label === '10.0.0.10')).to.include({ host_id: web.id, detail: 'web' });
    for (const q of ['bb-cc-00', 'aa:bb:cc:00:00:01', 'BB.CC']) {
      expect((await search(t.owner, q, `&network_id=${t.defaultNetworkId}`)).filter((i) => i.kind === 'mac_address').map((i) => i.label), q)
        .to.include('AA:BB:CC:00:00:01');
    }
    expect((await search(t.owner, '10.0.0.0/2')).filter((i) => i.kind === 'subnet').length).to.equal(2);
    // LIKE's wildcards are text like any other.
    expect(await search(t.owner, '%')).to.deep.equal([]);
    expect(await search(t.owner, 'w_b')).to.deep.equal([]);
  });

  it('only the networks the caller may see; another organization sees nothing; bad input is a 400', async () => {
    const viewer = await createUser(app.url, t.owner, 'Viewer', [lab]);
    const seen = await search(viewer.auth, 'web');
    expect(seen.filter((i) => i.network_id).every((i) => i.network_id === lab)).to.equal(true);
    expect(seen.map((i) => i.id)).to.include(hidden.id).and.not.include(web.id);
    expectError(await call(app.url, 'GET', `/api/v1/search?q=web&network_id=${t.defaultNetworkId}`, { auth: viewer.auth }), 403, 'entity_access_denied');
    const other = await registerTenant(app.url, 'elsewhere');
    expect(await search(other.owner, 'web')).to.deep.equal([]);
    // Another organization's network is an unknown one.
    expectError(await call(app.url, 'GET', `/api/v1/search?q=web&network_id=${lab}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'GET', '/api/v1/search?q=', { auth: t.owner }), 400, 'validation_failed');
    expectError(await call(app.url, 'GET', `/api/v1/search?q=${'x'.repeat(101)}`, { auth: t.owner }), 400, 'validation_failed');
    expectError(await call(app.url, 'GET', '/api/v1/search?q=web&limit=51', { auth: t.owner }), 400, 'validation_failed');
    expect(await search(t.owner, 'web', '&limit=1')).to.have.length(1);
  });
});
