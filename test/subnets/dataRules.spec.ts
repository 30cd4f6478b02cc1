// Issue 28.4: a CIDR with host bits set names the network meant; overlapping subnets of one network
// are reported in `warnings` (not refused: a /24 carved out of a /16 is a real layout).
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { networkOf } from '../../src/http/cidr.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';
import { postSubnet } from '../discovery/reports.js';

describe('subnets: data that is right', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  const create = (cidr: string, networkId = t.defaultNetworkId) =>
    call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: networkId, cidr, name: `net ${cidr}` } });

  it('networkOf clears the host bits of IPv4 and IPv6 CIDRs', () => {
    expect(networkOf('10.1.2.3/24')).to.equal('10.1.2.0/24');
    expect(networkOf('10.1.2.3/32')).to.equal('10.1.2.3/32');
    expect(networkOf('172.16.200.1/12')).to.equal('172.16.0.0/12');
    expect(networkOf('1.2.3.4/0')).to.equal('0.0.0.0/0');
    expect(networkOf('2001:db8::1/64')).to.equal('2001:db8::/64');
    expect(networkOf('fe80::1:2/112')).to.equal('fe80::1:0/112');
  });

  it('a CIDR with host bits set is 400 validation_failed saying "did you mean", on POST, PUT and PATCH', async () => {
    const refused = await create('10.1.2.3/24');
    expectError(refused, 400, 'validation_failed');
    expect(refused.body.error).to.contain('did you mean 10.1.2.0/24?');
    expect(refused.body.params.field).to.equal('cidr');
    const v6 = await create('2001:db8::1/64');
    expectError(v6, 400, 'validation_failed');
    expect(v6.body.error).to.contain('did you mean 2001:db8::/64?');
    expect(expectOk(await call(app.url, 'GET', '/api/v1/subnets', { auth: t.owner }))).to.have.length(0);

    const subnet = expectOk(await create('10.1.2.0/24'), 201);
    const put = await call(app.url, 'PUT', `/api/v1/subnets/${subnet.id}`, { auth: t.owner, body: { cidr: '10.1.2.129/25', name: 'x' } });
    expectError(put, 400, 'validation_failed');
    expect(put.body.error).to.contain('did you mean 10.1.2.128/25?');
    const patch = await call(app.url, 'PATCH', `/api/v1/subnets/${subnet.id}`, {
      auth: t.owner, body: { cidr: '10.1.2.7/16' }, headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    expectError(patch, 400, 'validation_failed');
    expect(patch.body.error).to.contain('did you mean 10.1.0.0/16?');
    expect(expectOk(await create('2001:db8::/64'), 201).cidr).to.equal('2001:db8::/64');
  });

  it('overlapping subnets of one network come back in warnings (subnet_overlap; no field when none), and are stored', async () => {
    const site = expectOk(await create('10.0.0.0/16'), 201);
    expect(site).to.not.have.property('warnings');
    const vlan = expectOk(await create('10.0.5.0/24'), 201);
    expect(vlan.warnings).to.deep.equal([{ code: 'subnet_overlap', subnet_id: site.id, cidr: '10.0.0.0/16' }]);
    const apart = expectOk(await create('10.1.0.0/24'), 201);
    expect(apart).to.not.have.property('warnings');
    // Another network's subnets are not this network's overlap.
    const lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
    expect(expectOk(await create('10.0.5.0/24', lab.id), 201)).to.not.have.property('warnings');

    // An update that comes to overlap is reported too: both subnets it now meets.
    const moved = expectOk(await call(app.url, 'PUT', `/api/v1/subnets/${apart.id}`, { auth: t.owner, body: { cidr: '10.0.0.0/8', name: 'wide' } }));
    expect(moved.warnings.map((w: any) => w.subnet_id).sort()).to.deep.equal([site.id, vlan.id].sort());
    expect(moved.warnings.every((w: any) => w.code === 'subnet_overlap')).to.equal(true);
    // What a create answered may be sent back as is: its warnings are ignored.
    expectOk(await call(app.url, 'PUT', `/api/v1/subnets/${vlan.id}`, { auth: t.owner, body: vlan }));
    const patched = expectOk(await call(app.url, 'PATCH', `/api/v1/subnets/${vlan.id}`, {
      auth: t.owner, body: { name: 'vlan 5' }, headers: { 'Content-Type': 'application/merge-patch+json' },
    }));
    expect(patched.warnings.map((w: any) => w.cidr).sort()).to.deep.equal(['10.0.0.0/16', '10.0.0.0/8']);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/subnets?network_id=${t.defaultNetworkId}`, { auth: t.owner }))).to.have.length(3);
  });

  it('every other CIDR taken says the same: a daemon\'s subnet, and a daemon target approved by CIDR', async () => {
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    const reported = await d.post('/api/v1/subnets', {
      id: '6f1d3c1e-0000-4000-8000-000000000001', cidr: '198.18.1.5/24', network_id: t.defaultNetworkId, name: 'lan', description: null,
      subnet_type: 'Lan', source: { type: 'Discovery', metadata: [] }, tags: [],
    });
    expectError(reported, 400, 'validation_failed');
    expect(reported.body.error).to.contain('did you mean 198.18.1.0/24?');
    await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
    const target = await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { cidr: '198.18.1.77/24' } });
    expectError(target, 400, 'validation_failed');
    expect(target.body.error).to.contain('did you mean 198.18.1.0/24?');
    expect(expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { cidr: '198.18.1.0/24' } }))).to.include({ cidr: '198.18.1.0/24' });
  });
});
