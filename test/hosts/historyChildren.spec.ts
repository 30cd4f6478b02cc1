// A host's history with its children (issue 28.3): GET /api/v1/hosts/{id}/history lists every
// instant at which the host or one of its addresses, ports, services, bindings or interfaces changed,
// newest first, each the host as GET /hosts/{id}?at= answers it then, with what changed.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { createSubnet } from './fixtures.js';

/** A change without its ids, as a test names it. */
const described = (c: any) => {
  const { id: _id, other_host_id: _o, ...rest } = c;
  return rest;
};

describe('hosts: history with children', () => {
  let app: TestApp;
  let t: Tenant;
  let subnet: any;
  const req = (method: string, path: string, body?: unknown, auth = t.owner) => call(app.url, method, path, { auth, body });
  const ok = async (method: string, path: string, body?: unknown, status = 200) => expectOk(await req(method, path, body), status);
  const history = (id: string, q = '') => ok('GET', `/api/v1/hosts/${id}/history${q}`);
  const base = (h: any) => ({ id: h.id, name: h.name, hidden: h.hidden, tags: h.tags, hostname: h.hostname, description: h.description });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
  });
  afterEach(() => app.close());

  /** web: addresses 10.0.0.5 and 10.0.0.6, port 80/tcp; then a service, a port change, an address deleted, a rename. */
  async function hostWithSteps() {
    const host = await ok('POST', '/api/v1/hosts', {
      network_id: t.defaultNetworkId, name: 'web',
      ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.5' }, { subnet_id: subnet.id, ip_address: '10.0.0.6' }],
      ports: [{ number: 80, protocol: 'Tcp' }],
    }, 201);
    const port = host.ports[0];
    await ok('POST', '/api/v1/services', { host_id: host.id, name: 'https', service_definition: 'Nginx', bindings: [{ type: 'Port', port_id: port.id }] }, 201);
    await ok('PUT', `/api/v1/ports/${port.id}`, { number: 443, protocol: 'Tcp' });
    await ok('DELETE', `/api/v1/ip-addresses/${host.ip_addresses[1].id}`);
    const renamed = await ok('PUT', `/api/v1/hosts/${host.id}`, { ...base(host), name: 'renamed' });
    return { host, renamed };
  }

  it('lists the host’s and its children’s changes newest first, each entry the host as GET ?at= answers it then', async () => {
    const { host, renamed } = await hostWithSteps();
    const states = await history(host.id);
    expect(states.map((s: any) => s.changes.map(described))).to.deep.equal([
      [{ entity: 'host', action: 'updated', fields: ['name'], label: 'renamed', previous_label: 'web' }],
      [{ entity: 'ip_address', action: 'deleted', label: '10.0.0.6' }],
      [{ entity: 'port', action: 'updated', fields: ['number', 'type'], label: '443/tcp', previous_label: '80/tcp' }],
      [{ entity: 'service', action: 'created', label: 'https' }, { entity: 'binding', action: 'created', label: 'https: 80/tcp' }],
      [
        { entity: 'host', action: 'created', label: 'web' },
        { entity: 'ip_address', action: 'created', label: '10.0.0.5' }, { entity: 'ip_address', action: 'created', label: '10.0.0.6' },
        { entity: 'port', action: 'created', label: '80/tcp' },
      ],
    ]);
    // Each entry lasts until the next one; the newest is the host now.
    expect(states[0].valid_to).to.equal(null);
    for (let i = 1; i < states.length; i++) expect(states[i].valid_to, `entry ${i}`).to.equal(states[i - 1].valid_from);
    expect(states.at(-1).valid_from).to.equal(host.valid_from);
    const { changes: _c, valid_from: _f, valid_to: _t, ...now } = states[0];
    expect(now).to.deep.equal((({ valid_from: _x, valid_to: _y, ...h }) => h)(renamed));
    // Every entry is the host with its children as of its instant, exactly as GET ?at= answers it.
    for (const state of states) {
      const { changes: _ch, valid_from: vf, valid_to: _vt, ...entry } = state;
      const { valid_from: _hf, valid_to: _ht, ...asOf } = await ok('GET', `/api/v1/hosts/${host.id}?at=${encodeURIComponent(vf)}`);
      expect(entry, vf).to.deep.equal(asOf);
    }
    expect(states[1].ip_addresses.map((a: any) => a.ip_address)).to.deep.equal(['10.0.0.5']);
    expect(states[3].services.map((s: any) => [s.name, s.bindings.length])).to.deep.equal([['https', 1]]);
  });

  it('an unchanged PUT (children listed again) adds no entry; a volatile last_seen_at alone neither', async () => {
    const { host } = await hostWithSteps();
    const now = await ok('GET', `/api/v1/hosts/${host.id}`);
    const before = await history(host.id);
    await ok('PUT', `/api/v1/hosts/${host.id}`, {
      ...base(now), ip_addresses: now.ip_addresses.map((a: any) => ({ id: a.id, subnet_id: a.subnet_id, ip_address: a.ip_address })),
      ports: now.ports.map((p: any) => ({ id: p.id, number: p.number, protocol: p.protocol })),
      services: now.services.map((s: any) => ({ id: s.id, name: s.name, service_definition: s.service_definition, bindings: s.bindings.map((b: any) => ({ id: b.id, type: b.type, port_id: b.port_id })) })),
    });
    await app.services.orm.em.fork().execute(`update ports set last_seen_at = now() where host_id = ?`, [host.id]);
    expect((await history(host.id)).map((s: any) => s.valid_from)).to.deep.equal(before.map((s: any) => s.valid_from));
  });

  it('pages with limit and before; a host and its children written in one request are one entry', async () => {
    const { host } = await hostWithSteps();
    const all = await history(host.id);
    expect(all).to.have.length(5);
    const first = await history(host.id, '?limit=2');
    expect(first).to.deep.equal(all.slice(0, 2));
    const second = await history(host.id, `?limit=2&before=${encodeURIComponent(first[1].valid_from)}`);
    expect(second).to.deep.equal(all.slice(2, 4));
    const last = await history(host.id, `?limit=2&before=${encodeURIComponent(second[1].valid_from)}`);
    expect(last).to.deep.equal(all.slice(4));
    expectError(await req('GET', `/api/v1/hosts/${host.id}/history?limit=101`), 400, 'validation_failed');
    expectError(await req('GET', `/api/v1/hosts/${host.id}/history?before=yesterday`), 400, 'validation_failed');
    // A PUT changing the host and a port at once: one entry with both.
    const now = await ok('GET', `/api/v1/hosts/${host.id}`);
    await ok('PUT', `/api/v1/hosts/${host.id}`, { ...base(now), description: 'front', ports: [...now.ports.map((p: any) => ({ id: p.id, number: p.number, protocol: p.protocol })), { number: 22, protocol: 'Tcp' }] });
    const [both] = await history(host.id, '?limit=1');
    expect(both.changes.map(described)).to.deep.equal([
      { entity: 'host', action: 'updated', fields: ['description'], label: 'renamed' },
      { entity: 'port', action: 'created', label: '22/tcp' },
    ]);
  });

  it('interfaces are children too; a deleted host’s history stays readable, ending at its deletion', async () => {
    const host = await ok('POST', '/api/v1/hosts', { network_id: t.defaultNetworkId, name: 'switch' }, 201);
    const iface = await ok('POST', '/api/v1/interfaces', { host_id: host.id, if_index: 3, if_name: 'ge-0/0/3' }, 201);
    await ok('PUT', `/api/v1/interfaces/${iface.id}`, { if_index: 3, if_name: 'ge-0/0/3', if_alias: 'uplink' });
    await ok('DELETE', `/api/v1/hosts/${host.id}`);
    const states = await history(host.id);
    expect(states.map((s: any) => s.changes.map(described))).to.deep.equal([
      [{ entity: 'interface', action: 'updated', fields: ['if_alias'], label: 'ge-0/0/3' }],
      [{ entity: 'interface', action: 'created', label: 'ge-0/0/3' }],
      [{ entity: 'host', action: 'created', label: 'switch' }],
    ]);
    expect(states[0].valid_to).to.be.a('string'); // the deletion
    expect(states[0].interfaces.map((i: any) => i.if_alias)).to.deep.equal(['uplink']);
  });

  it('consolidate: the children that moved are moved_in to the destination, naming the duplicate, whose history ends at the merge', async () => {
    const dest = await ok('POST', '/api/v1/hosts', { network_id: t.defaultNetworkId, name: 'server', ports: [{ number: 22, protocol: 'Tcp' }] }, 201);
    const other = await ok('POST', '/api/v1/hosts', { network_id: t.defaultNetworkId, name: 'server (dup)', ports: [{ number: 80, protocol: 'Tcp' }] }, 201);
    await ok('PUT', `/api/v1/hosts/${dest.id}/consolidate/${other.id}`);
    const [merged] = await history(dest.id, '?limit=1');
    const port80 = merged.changes.find((c: any) => c.entity === 'port');
    expect(port80).to.include({ action: 'moved_in', label: '80/tcp', other_host_id: other.id, id: other.ports[0].id });
    expect(port80.fields).to.include('host_id');
    expect(merged.ports.map((p: any) => p.number)).to.deep.equal([22, 80]);
    // The duplicate's history ends at the merge (its deletion); its port is in its entries until then.
    const dup = await history(other.id);
    expect(dup[0].valid_to).to.equal(merged.valid_from);
    expect(dup[0].ports.map((p: any) => p.number)).to.deep.equal([80]);
    // A child leaving a host that stays (no route moves one; a script's SQL can) is moved_out there.
    const third = await ok('POST', '/api/v1/hosts', { network_id: t.defaultNetworkId, name: 'third' }, 201);
    await app.services.orm.em.fork().execute(`update ports set host_id = ? where id = ?`, [third.id, dest.ports[0].id]);
    const [left] = await history(dest.id, '?limit=1');
    expect(left.changes).to.deep.equal([{ entity: 'port', id: dest.ports[0].id, action: 'moved_out', label: '22/tcp', other_host_id: third.id }]);
    expect((await history(third.id, '?limit=1'))[0].changes).to.deep.equal([
      { entity: 'port', id: dest.ports[0].id, action: 'moved_in', fields: ['host_id'], label: '22/tcp', other_host_id: dest.id },
    ]);
  });

  it('tenancy as the host row’s history: another organization’s host 404, a network out of scope 403', async () => {
    const { host } = await hostWithSteps();
    const other = await registerTenant(app.url, 'other');
    expectError(await call(app.url, 'GET', `/api/v1/hosts/${host.id}/history`, { auth: other.owner }), 404, 'entity_not_found');
    const lab = await ok('POST', '/api/v1/networks', { name: 'Lab' }, 201);
    const member = await createUser(app.url, t.owner, 'Member', [lab.id]);
    expectError(await call(app.url, 'GET', `/api/v1/hosts/${host.id}/history`, { auth: member.auth }), 403, 'entity_access_denied');
  });
});
