// POST /api/v1/hosts/bulk (issue 28): up to 1,000 hosts in one request, one transaction (all or
// none), each validated and written as POST /api/v1/hosts would; errors name the item's index; one
// history instant, one event batch, one rate-limit token; the create's access rules.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import { createKey, createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { testClockKey } from '../../src/http/rateLimiter.js';
import { createSubnet } from './fixtures.js';

/** Host `i` with two addresses in 10.1.0.0/16 and two ports. */
const hostBody = (networkId: string, subnetId: string, i: number) => ({
  name: `bulk-${String(i).padStart(4, '0')}`, network_id: networkId,
  ip_addresses: [
    { subnet_id: subnetId, ip_address: `10.1.${Math.floor((2 * i) / 250)}.${1 + ((2 * i) % 250)}` },
    { subnet_id: subnetId, ip_address: `10.1.${Math.floor((2 * i + 1) / 250)}.${1 + ((2 * i + 1) % 250)}` },
  ],
  ports: [{ number: 22, protocol: 'Tcp' }, { number: 443, protocol: 'Tcp' }],
});

describe('hosts: bulk create', () => {
  let app: TestApp;
  let t: Tenant;
  let subnet: { id: string };
  const bulk = (body: unknown, auth: Credential = t.owner) => call(app.url, 'POST', '/api/v1/hosts/bulk', { auth, body });
  const hostCount = async (auth: Credential = t.owner) => (await call(app.url, 'GET', '/api/v1/hosts?limit=1', { auth })).body.meta.pagination.total_count as number;
  const hosts = (n: number, networkId = t.defaultNetworkId) => Array.from({ length: n }, (_, i) => hostBody(networkId, subnet.id, i));
  /** Every event of these types, read through the feed. */
  async function events(types: string): Promise<Array<{ type: string; entity_id: string; batch_id: string }>> {
    const out = [];
    let after = '0';
    for (;;) {
      const res = await call(app.url, 'GET', `/api/v1/events?types=${types}&after=${after}&limit=1000`, { auth: t.owner });
      const page = expectOk(res);
      out.push(...page);
      if (!res.body.meta.cursor.has_more) return out;
      after = res.body.meta.cursor.next;
    }
  }

  beforeEach(async function () {
    this.timeout(120_000); // a new app, tenant and subnet: slow only on a loaded machine
    // The buckets' clock frozen (test/http/rateLimit.spec.ts): a token spent is never refilled meanwhile.
    app = await startTestApp({ rateLimitTestClock: true, rateLimitRedisTimeoutMs: 60_000 });
    await app.services.redis.set(testClockKey(app.redisPrefix), 1_700_000_000_000);
    t = await registerTenant(app.url);
    subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.1.0.0/16');
  });
  afterEach(async function () {
    this.timeout(120_000); // the events of 1,000 hosts may still be sequencing on a loaded machine
    await app.close();
  });

  it('creates 1,000 hosts with their children in one request: in order, one history instant, one event batch', async function () {
    this.timeout(180_000);
    const data = expectOk(await bulk(hosts(1000)), 201);
    expect(data.count).to.equal(1000);
    expect(data.items.map((h: { name: string }) => h.name)).to.deep.equal(hosts(1000).map((h) => h.name));
    expect(data.items[700].ip_addresses.map((a: { ip_address: string }) => a.ip_address)).to.deep.equal(['10.1.5.151', '10.1.5.152']);
    expect(data.items[700].ports.map((p: { number: number; type: string }) => `${p.number}=${p.type}`)).to.deep.equal(['22=Ssh', '443=Https']);
    expect(await hostCount()).to.equal(1000);
    // One history instant: every host's (and child's) state starts at the transaction's now().
    const validFrom = new Set(data.items.flatMap((h: any) => [h.valid_from, ...h.ip_addresses.map((a: any) => a.valid_from), ...h.ports.map((p: any) => p.valid_from)]));
    expect([...validFrom]).to.have.length(1);
    const history = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${data.items[999].id}/history`, { auth: t.owner }));
    expect(history.map((s: { valid_from: string }) => s.valid_from)).to.deep.equal([data.items[0].valid_from]);
    // One event batch: the 1,000 host.created and the 2,000 ip_address.created share one batch_id.
    const created = await events('host.created,ip_address.created');
    expect(created.filter((e) => e.type === 'host.created').map((e) => e.entity_id).sort()).to.deep.equal(data.items.map((h: { id: string }) => h.id).sort());
    expect(created.filter((e) => e.type === 'ip_address.created')).to.have.length(2000);
    expect(new Set(created.map((e) => e.batch_id)).size).to.equal(1);
  });

  it('costs one rate-limit token, however many hosts it creates', async function () {
    this.timeout(120_000);
    const remaining = (res: ApiResponse) => Number(res.headers.get('x-ratelimit-remaining'));
    const before = remaining(await call(app.url, 'GET', '/api/v1/hosts?limit=1', { auth: t.owner }));
    const res = await bulk(hosts(1000));
    expectOk(res, 201);
    expect(remaining(res)).to.equal(before - 1);
    expect(remaining(await call(app.url, 'GET', '/api/v1/hosts?limit=1', { auth: t.owner }))).to.equal(before - 2);
  });

  it('stores nothing when item 700 is invalid, and names its index (every invalid item reported before any write)', async function () {
    this.timeout(120_000);
    const body: any[] = hosts(1000);
    body[700] = { ...body[700], ip_addresses: [{ subnet_id: subnet.id, ip_address: 'not-an-address' }] };
    body[900] = { ...body[900], nmae: 'typo' };
    const res = await bulk(body);
    expectError(res, 400, 'validation_failed');
    expect(res.body.params).to.include({ index: 700, field: 'ip_addresses.0.ip_address' });
    expect(res.body.params.errors.map((e: { index: number; field: string; code: string }) => [e.index, e.field, e.code])).to.deep.equal([
      [700, 'ip_addresses.0.ip_address', 'string_ipVersion'],
      [900, 'nmae', 'unknown_field'],
    ]);
    expect(res.body.error).to.match(/^Validation failed: item 700: /);
    expect(await hostCount()).to.equal(0);
    expect(await events('host.created')).to.deep.equal([]);
  });

  it('stores nothing when item 700 is refused at write time (an address another host has): 409 naming index 700', async function () {
    this.timeout(120_000);
    const other = expectOk(await call(app.url, 'POST', '/api/v1/hosts', {
      auth: t.owner, body: { name: 'holder', network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.1.200.1' }] },
    }), 201);
    const body = hosts(1000);
    body[700]!.ip_addresses[1]!.ip_address = '10.1.200.1';
    const res = await bulk(body);
    expectError(res, 409, 'ip_address_duplicate');
    expect(res.body.params).to.include({ index: 700, host_id: other.id });
    expect(res.body.params.errors).to.have.length(1);
    expect(res.body.params.errors[0]).to.include({ index: 700, code: 'ip_address_duplicate' });
    expect(res.body.error).to.match(/^Item 700: IP address 10\.1\.200\.1 /);
    expect(await hostCount()).to.equal(1);
    // Items of one request see each other: the same address twice in the batch is refused at the second.
    const twice = hosts(3);
    twice[2]!.ip_addresses[0]!.ip_address = twice[0]!.ip_addresses[0]!.ip_address;
    const dup = await bulk(twice);
    expectError(dup, 409, 'ip_address_duplicate');
    expect(dup.body.params.index).to.equal(2);
    expect(await hostCount()).to.equal(1);
  });

  it('the duplicate-address key is subnet and address: one address in two subnets of a network is accepted, twice in one subnet refused', async () => {
    const inner = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.1.5.0/24'); // overlaps 10.1.0.0/16 (a warning, not a refusal)
    const host = (name: string, subnetId: string) => ({ name, network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnetId, ip_address: '10.1.5.9' }] });
    const res = await bulk([host('in-wide', subnet.id), host('in-inner', inner.id)]);
    const created = expectOk(res, 201).items as any[];
    expect(created.map((h) => [h.name, h.ip_addresses[0].subnet_id, h.ip_addresses[0].ip_address])).to.deep.equal([
      ['in-wide', subnet.id, '10.1.5.9'], ['in-inner', inner.id, '10.1.5.9'],
    ]);
    const twice = await bulk([host('again-1', inner.id), { ...host('again-2', inner.id), ip_addresses: [{ subnet_id: inner.id, ip_address: '10.1.5.10' }] }, host('again-3', inner.id)]);
    expectError(twice, 409, 'ip_address_duplicate'); // 10.1.5.9 in the inner subnet: held by in-inner (and again-1)
    expect(twice.body.params.index).to.equal(0);
    const inBatch = await bulk([{ ...host('b-1', inner.id), ip_addresses: [{ subnet_id: inner.id, ip_address: '10.1.5.20' }] }, { ...host('b-2', inner.id), ip_addresses: [{ subnet_id: inner.id, ip_address: '10.1.5.20' }] }]);
    expectError(inBatch, 409, 'ip_address_duplicate');
    expect(inBatch.body.params.index).to.equal(1);
    expect(await hostCount()).to.equal(2);
  });

  it('refuses more than 1,000 items, an empty list, and a body that is not a list (400, nothing stored)', async function () {
    this.timeout(60_000);
    const over = await bulk(hosts(1001));
    expectError(over, 400, 'validation_failed');
    expect(over.body.params.field).to.equal('body');
    expect(over.body.error).to.include('1000');
    expectError(await bulk([]), 400, 'validation_failed');
    expectError(await bulk(hostBody(t.defaultNetworkId, subnet.id, 0)), 400, 'validation_failed');
    // Every address is an advisory lock held to the commit: at most 4,000 in one request, the item that passes it named.
    const wide = Array.from({ length: 5 }, (_, i) => ({
      name: `wide-${i}`, network_id: t.defaultNetworkId,
      ip_addresses: Array.from({ length: 1000 }, (__, k) => ({ subnet_id: subnet.id, ip_address: `10.1.${100 + i * 4 + Math.floor(k / 250)}.${1 + (k % 250)}` })),
    }));
    const tooMany = await bulk(wide);
    expectError(tooMany, 400, 'validation_failed');
    expect(tooMany.body.params).to.include({ index: 4, field: 'ip_addresses' });
    expect(await hostCount()).to.equal(0);
  });

  it('takes a body over 1 MiB (up to 8 MiB); other routes keep the 1 MiB limit', async function () {
    this.timeout(120_000);
    const body = hosts(1000).map((h) => ({ ...h, virtualization: { notes: 'n'.repeat(1000) } }));
    expect(Buffer.byteLength(JSON.stringify(body))).to.be.above(1024 * 1024);
    expect(expectOk(await bulk(body), 201).count).to.equal(1000);
    const big = await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { name: 'big', network_id: t.defaultNetworkId, description: 'd'.repeat(1024 * 1024) } });
    expectError(big, 413, 'payload_too_large');
    expect(big.body.params.limit).to.equal(1024 * 1024);
    const huge = await call(app.url, 'POST', '/api/v1/hosts/bulk', { auth: t.owner, rawBody: `[${'"x",'.repeat(2_200_000)}"x"]`, headers: { 'Content-Type': 'application/json' } });
    expectError(huge, 413, 'payload_too_large');
    expect(huge.body.params.limit).to.equal(8 * 1024 * 1024);
  });

  it('is refused to a Viewer, as the single create is', async () => {
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const res = await bulk(hosts(2), viewer.auth);
    expectError(res, 403, 'auth_permission_denied');
    expect(res.body.params).to.include({ required: 'Member' });
    expect(await hostCount()).to.equal(0);
  });

  it('checks every item against the caller’s networks: a key limited to one network creates nothing in another (403 naming the item)', async () => {
    const other = await createNetwork(app.url, t.owner, 'Other');
    const key = await createKey(app.url, t.owner, { name: 'limited', network_ids: [t.defaultNetworkId] });
    const body = [...hosts(3), { name: 'elsewhere', network_id: other }];
    const res = await bulk(body, { bearer: key.key });
    expectError(res, 403, 'entity_access_denied');
    expect(res.body.params).to.include({ index: 3, entity: 'Network', id: other });
    expect(await hostCount()).to.equal(0);
    // Within its network the same key may.
    expect(expectOk(await bulk(hosts(3), { bearer: key.key }), 201).count).to.equal(3);
  });
});
