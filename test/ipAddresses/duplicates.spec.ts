// Issue 28.4: one address per subnet. The same IP in one subnet on a second host is 409
// ip_address_duplicate naming the host that holds it, by every write path and under concurrency.
import { expect } from 'chai';
import { call, expectError, expectOk } from '../support/client.js';
import { startInventory, type Inventory } from './inventory.js';

describe('ip-addresses: one address per subnet', () => {
  let inv: Inventory;
  let other: any;
  beforeEach(async () => {
    inv = await startInventory();
    other = expectOk(await call(inv.app.url, 'POST', '/api/v1/hosts', {
      auth: inv.t.owner, body: { name: 'db', network_id: inv.t.defaultNetworkId, ip_addresses: [{ subnet_id: inv.subnet.id, ip_address: '10.0.0.50' }] },
    }), 201);
  });
  afterEach(() => inv.app.close());

  const holder = () => ({ ip: '10.0.0.10', subnet: '10.0.0.0/24', host_id: inv.host.id, host_name: 'web' });

  it('POST and PUT (IP addresses have no PATCH) of an IP address taken by another host are 409 naming that host', async () => {
    const post = await inv.api.post('/api/v1/ip-addresses', { host_id: other.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.10' });
    expectError(post, 409, 'ip_address_duplicate');
    expect(post.body.params).to.deep.equal(holder());
    expect(post.body.error).to.contain("host 'web'");

    const mine = other.ip_addresses[0];
    const put = await inv.api.put(`/api/v1/ip-addresses/${mine.id}`, { ...mine, ip_address: '10.0.0.10' });
    expectError(put, 409, 'ip_address_duplicate');
    expect(put.body.params).to.deep.equal(holder());

    // The host's own address kept when rewritten, and a free address, are fine.
    expectOk(await inv.api.put(`/api/v1/ip-addresses/${mine.id}`, { ...mine, name: 'eth0' }));
    expectOk(await inv.api.post('/api/v1/ip-addresses', { host_id: other.id, subnet_id: inv.subnet.id, ip_address: '10.0.0.51' }), 201);
  });

  it('a host created, replaced or patched with a nested address another host holds is 409, and nothing is stored', async () => {
    const create = await call(inv.app.url, 'POST', '/api/v1/hosts', {
      auth: inv.t.owner, body: { name: 'copy', network_id: inv.t.defaultNetworkId, ip_addresses: [{ subnet_id: inv.subnet.id, ip_address: '10.0.0.11' }] },
    });
    expectError(create, 409, 'ip_address_duplicate');
    expect(create.body.params).to.deep.include({ ip: '10.0.0.11', host_id: inv.host.id, host_name: 'web' });
    const hosts = expectOk(await call(inv.app.url, 'GET', `/api/v1/hosts?network_id=${inv.t.defaultNetworkId}`, { auth: inv.t.owner }));
    expect(hosts.map((h: any) => h.name).sort()).to.deep.equal(['db', 'web']);

    const put = await call(inv.app.url, 'PUT', `/api/v1/hosts/${other.id}`, {
      auth: inv.t.owner, body: { ...other, ip_addresses: [...other.ip_addresses, { subnet_id: inv.subnet.id, ip_address: '10.0.0.10' }] },
    });
    expectError(put, 409, 'ip_address_duplicate');
    expect(put.body.params).to.deep.equal(holder());

    const patch = await call(inv.app.url, 'PATCH', `/api/v1/hosts/${other.id}`, {
      auth: inv.t.owner, body: { ip_addresses: [{ subnet_id: inv.subnet.id, ip_address: '10.0.0.10' }] }, headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    expectError(patch, 409, 'ip_address_duplicate');
    expect(patch.body.params).to.deep.equal(holder());

    // Replacing a host with its own addresses (same IPs, new rows) is not a duplicate of itself.
    const self = await call(inv.app.url, 'PUT', `/api/v1/hosts/${other.id}`, {
      auth: inv.t.owner, body: { ...other, ip_addresses: [{ subnet_id: inv.subnet.id, ip_address: '10.0.0.50' }] },
    });
    expectOk(self);
  });

  it('the same free address posted for two hosts at once: one 201, one 409', async () => {
    for (let round = 0; round < 5; round++) {
      const ip = `10.0.0.${100 + round}`;
      const answers = await Promise.all([inv.host.id, other.id].map((hostId) =>
        call(inv.app.url, 'POST', '/api/v1/ip-addresses', { auth: inv.t.owner, body: { host_id: hostId, subnet_id: inv.subnet.id, ip_address: ip } })));
      expect(answers.map((a) => a.status).sort()).to.deep.equal([201, 409]);
      expect(answers.find((a) => a.status === 409)!.body.code).to.equal('ip_address_duplicate');
    }
  });
});
