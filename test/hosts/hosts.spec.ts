import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { createHostWithChildren, createSubnet } from './fixtures.js';

const ids = (list: Array<{ id: string }>) => list.map((x) => x.id).sort();

describe('hosts', () => {
  let app: TestApp;
  let t: Tenant;
  let subnet: any;
  let host: any;
  const put = (id: string, body: unknown) => call(app.url, 'PUT', `/api/v1/hosts/${id}`, { auth: t.owner, body });
  const get = (id: string, at?: string) => call(app.url, 'GET', `/api/v1/hosts/${id}${at ? `?at=${encodeURIComponent(at)}` : ''}`, { auth: t.owner });
  /** What a client sends back: the host it read, with changes. */
  const base = (h: any) => ({ id: h.id, name: h.name, hidden: h.hidden, tags: h.tags, hostname: h.hostname, description: h.description });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    host = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id);
  });
  afterEach(() => app.close());

  it('creates a host with children, derived port types and Manual sources', () => {
    expect(host).to.include({ name: 'web', hostname: 'web.lan', network_id: t.defaultNetworkId, hidden: false });
    expect(host.source).to.deep.equal({ type: 'Manual' });
    expect(host.ip_addresses.map((i: any) => [i.ip_address, i.position, i.mac_address])).to.deep.equal([
      ['10.0.0.10', 0, 'AA:BB:CC:00:00:01'], ['10.0.0.11', 1, null],
    ]);
    expect(host.ports.map((p: any) => `${p.number}/${p.protocol}=${p.type}`)).to.deep.equal(['22/Tcp=Ssh', '80/Tcp=Http', '161/Udp=Snmp']);
    expect(host.services.map((s: any) => s.name)).to.deep.equal(['nginx', 'snmpd']);
    expect(host.services[0].bindings[0]).to.include({ type: 'Port', port_id: host.ports.find((p: any) => p.number === 80).id });
    for (const child of [...host.ip_addresses, ...host.ports, ...host.services]) {
      expect(child).to.include({ host_id: host.id, network_id: t.defaultNetworkId, valid_to: null });
      expect(child.lineage_id).to.equal(child.id);
    }
  });

  describe('PUT sync of each kind (decisions §6)', () => {
    const kinds = ['ip_addresses', 'ports', 'services'] as const;
    for (const kind of kinds) {
      it(`${kind}: absent and null leave them, [] deletes them all`, async () => {
        const absent = expectOk(await put(host.id, { ...base(host), name: 'renamed' }));
        expect(ids(absent[kind])).to.deep.equal(ids(host[kind]));
        const nul = expectOk(await put(host.id, { ...base(host), [kind]: null }));
        expect(ids(nul[kind])).to.deep.equal(ids(host[kind]));
        const cleared = expectOk(await put(host.id, { ...base(host), [kind]: [] }));
        expect(cleared[kind]).to.deep.equal([]);
        for (const other of kinds.filter((k) => k !== kind && !(kind !== 'services' && k === 'services'))) {
          expect(ids(cleared[other])).to.deep.equal(ids(host[other]));
        }
      });
    }

    it('ip_addresses: kept, changed, new and dropped in one list', async () => {
      const [kept, changed] = host.ip_addresses;
      const newId = randomUUID();
      const res = expectOk(await put(host.id, {
        ...base(host),
        ip_addresses: [
          { ...changed, ip_address: '10.0.0.99', name: 'moved' },
          { id: newId, subnet_id: subnet.id, ip_address: '10.0.0.50' },
        ],
      }));
      // The new address's id was the client's placeholder: the server assigns its own (decisions §1).
      const added = res.ip_addresses[1];
      expect(res.ip_addresses.map((i: any) => [i.id, i.ip_address, i.position])).to.deep.equal([
        [changed.id, '10.0.0.99', 0], [added.id, '10.0.0.50', 1],
      ]);
      expect(added.id).to.not.equal(newId);
      expect(res.ip_addresses[0].created_at).to.equal(changed.created_at);
      expect(res.ip_addresses.find((i: any) => i.id === kept.id)).to.equal(undefined);
    });

    it('ports: kept, changed, new and dropped; dropping a port deletes its bindings', async () => {
      const http = host.ports.find((p: any) => p.number === 80);
      const ssh = host.ports.find((p: any) => p.number === 22);
      const res = expectOk(await put(host.id, {
        ...base(host),
        ports: [{ ...ssh }, { id: host.ports.find((p: any) => p.number === 161).id, number: 162, protocol: 'Udp' }, { number: 443, protocol: 'Tcp' }],
      }));
      expect(res.ports.map((p: any) => `${p.number}/${p.type}`)).to.deep.equal(['22/Ssh', '162/SnmpTrap', '443/Https']);
      expect(res.ports.find((p: any) => p.id === http.id)).to.equal(undefined);
      const nginx = res.services.find((s: any) => s.name === 'nginx');
      expect(nginx.bindings).to.deep.equal([]); // its binding was on port 80
    });

    it('services: kept, changed, new and dropped, with their bindings', async () => {
      const [nginx, snmpd] = host.services;
      const ssh = host.ports.find((p: any) => p.number === 22);
      const res = expectOk(await put(host.id, {
        ...base(host),
        services: [
          { ...nginx, name: 'nginx-2', bindings: [...nginx.bindings, { type: 'Port', port_id: ssh.id }] },
          { name: 'postgres', service_definition: 'PostgreSQL', bindings: [] },
        ],
      }));
      expect(res.services.map((s: any) => [s.name, s.position])).to.deep.equal([['nginx-2', 0], ['postgres', 1]]);
      expect(res.services[0].id).to.equal(nginx.id);
      expect(res.services[0].bindings.map((b: any) => b.port_id).sort()).to.deep.equal([nginx.bindings[0].port_id, ssh.id].sort());
      expect(res.services.find((s: any) => s.id === snmpd.id)).to.equal(undefined);
      const rows = await app.services.orm.em.fork().execute(`select id from bindings where id = ?`, [snmpd.bindings[0].id]);
      expect(rows).to.have.length(0);
    });

    it('an id owned by another host is 400 and changes nothing', async () => {
      const other = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, 'db');
      for (const [kind, stolen] of [['ports', { ...other.ports[0] }], ['ip_addresses', { ...other.ip_addresses[0], ip_address: '10.0.0.77' }], ['services', { ...other.services[0], bindings: [] }]] as const) {
        const res = await put(host.id, { ...base(host), name: 'changed', [kind]: [stolen] });
        expectError(res, 400, 'entity_reference_invalid');
        expect(res.body.params.id).to.equal(stolen.id);
      }
      const now = expectOk(await get(host.id));
      expect(now.name).to.equal('web');
      expect(ids(now.ports)).to.deep.equal(ids(host.ports));
      expect(expectOk(await get(other.id))).to.deep.equal(other);
    });

    it('another organization’s child id answers exactly as an id never used: a new child, no 400 naming it', async () => {
      const b = await registerTenant(app.url, 'other-org');
      const bSubnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: b.owner, body: { network_id: b.defaultNetworkId, cidr: '10.0.0.0/24', name: 'b' } }), 201);
      const foreign = await createHostWithChildren(app.url, b.owner, b.defaultNetworkId, bSubnet.id, 'theirs');
      const answers = [];
      for (const portId of [foreign.ports[0].id, randomUUID()]) {
        const res = await put(host.id, { ...base(host), ports: [{ id: portId, number: 9000, protocol: 'Tcp' }] });
        const data = expectOk(res);
        expect(data.ports.map((p: any) => p.id)).to.not.include(portId);
        answers.push({ status: res.status, ports: data.ports.map((p: any) => [p.number, p.protocol]) });
      }
      expect(answers[0]).to.deep.equal(answers[1]);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${foreign.id}`, { auth: b.owner }))).to.deep.equal(foreign);
    });

    it('a duplicate port is 409 entity_already_exists', async () => {
      const res = await put(host.id, { ...base(host), ports: [{ number: 8080, protocol: 'Tcp' }, { number: 8080, protocol: 'Tcp' }] });
      expectError(res, 409, 'entity_already_exists');
      expect(res.body.params).to.include({ entity: 'Port', value: '8080/Tcp' });
    });

    it('a binding to another host’s port is 400', async () => {
      const other = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, 'db');
      const res = await put(host.id, { ...base(host), services: [{ name: 'x', service_definition: 'X', bindings: [{ type: 'Port', port_id: other.ports[0].id }] }] });
      expectError(res, 400, 'entity_reference_invalid');
      expect(res.body.params).to.include({ entity: 'Port', id: other.ports[0].id });
    });

    it('a failure in the services step leaves host, ip addresses and ports as they were', async () => {
      const res = await put(host.id, {
        ...base(host), name: 'half-done',
        ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.200' }],
        ports: [{ number: 9999, protocol: 'Tcp' }],
        services: [{ name: 'bad', service_definition: 'X', bindings: [{ type: 'Port', port_id: randomUUID() }] }],
      });
      expectError(res, 400, 'entity_reference_invalid');
      expect(expectOk(await get(host.id))).to.deep.equal(host);
      const history = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}/history`, { auth: t.owner }));
      expect(history).to.have.length(1);
    });

    it('IP addresses must lie in their subnet, on the host’s network', async () => {
      expectError(await put(host.id, { ...base(host), ip_addresses: [{ subnet_id: subnet.id, ip_address: '192.168.1.1' }] }), 400, 'ip_address_out_of_range');
      const lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
      const labSubnet = await createSubnet(app.url, t.owner, lab.id, '10.0.0.0/24');
      expectError(await put(host.id, { ...base(host), ip_addresses: [{ subnet_id: labSubnet.id, ip_address: '10.0.0.1' }] }), 400, 'entity_network_mismatch');
      const bad = await put(host.id, { ...base(host), ip_addresses: [{ subnet_id: randomUUID(), ip_address: '10.0.0.1' }] });
      expectError(bad, 400, 'entity_reference_invalid');
    });
  });

  describe('tags on hosts', () => {
    it('duplicates collapse, [] clears, unknown and foreign tags are 400 naming the id', async () => {
      const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'prod', color: 'Red' } }), 201);
      const tagged = expectOk(await put(host.id, { ...base(host), tags: [tag.id, tag.id] }));
      expect(tagged.tags).to.deep.equal([tag.id]);
      const unknown = randomUUID();
      const bad = await put(host.id, { ...base(host), tags: [tag.id, unknown] });
      expectError(bad, 400, 'entity_reference_invalid');
      expect(bad.body.params).to.include({ entity: 'Tag', id: unknown });
      const other = await registerTenant(app.url, 'other');
      const foreign = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: other.owner, body: { name: 'theirs', color: 'Red' } }), 201);
      const bad2 = await put(host.id, { ...base(host), tags: [foreign.id] });
      expectError(bad2, 400, 'entity_reference_invalid');
      expect(bad2.body.params.id).to.equal(foreign.id);
      expect(expectOk(await put(host.id, { ...base(host), tags: [] })).tags).to.deep.equal([]);
      const filtered = expectOk(await call(app.url, 'GET', `/api/v1/hosts?tag_ids=${tag.id}`, { auth: t.owner }));
      expect(filtered).to.deep.equal([]);
    });
  });

  it('20 simultaneous PUTs with the same expected_updated_at: one 200, nineteen 409, the winner stored', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      put(host.id, { ...base(host), name: `writer-${i}`, expected_updated_at: host.updated_at, ports: [{ number: 1000 + i, protocol: 'Tcp' }] })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).to.have.length(1);
    expect(statuses.filter((s) => s === 409)).to.have.length(19);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.code).to.equal('entity_modified');
    const winner = results.find((r) => r.status === 200)!.body.data;
    const stored = expectOk(await get(host.id));
    expect(stored.name).to.equal(winner.name);
    expect(stored.ports.map((p: any) => p.number)).to.deep.equal(winner.ports.map((p: any) => p.number));
  });

  describe('`at` and history', () => {
    it('reads a host with its children exactly as before and after a sync', async () => {
      const before = host;
      const after = expectOk(await put(host.id, {
        ...base(host), name: 'web-v2', ports: [{ number: 8443, protocol: 'Tcp' }], ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.30' }],
      }));
      // As of the earlier instant every entity is its earlier state; only valid_to now says when
      // each state ended (the sync's instant for what it changed or removed, null for the rest).
      const atBefore = expectOk(await get(host.id, before.updated_at));
      const end = after.updated_at;
      const kept = new Set([...after.ports, ...after.ip_addresses, ...after.services].filter((c: any) => c.valid_from === before.updated_at).map((c: any) => c.id));
      const closed = (c: any) => ({ ...c, valid_to: kept.has(c.id) ? null : end });
      expect(atBefore).to.deep.equal({
        ...before, valid_to: end,
        ip_addresses: before.ip_addresses.map(closed), ports: before.ports.map(closed),
        services: before.services.map((s: any) => ({ ...s, valid_to: null, bindings: s.bindings.map((b: any) => ({ ...b, valid_to: kept.has(b.port_id ?? b.ip_address_id) ? null : end })) })),
      });
      expect(expectOk(await get(host.id, after.updated_at))).to.deep.equal(after);
      // The list as of the earlier instant shows the earlier children too.
      const listed = expectOk(await call(app.url, 'GET', `/api/v1/hosts?at=${encodeURIComponent(before.updated_at)}`, { auth: t.owner }));
      expect(listed[0].ports.map((p: any) => p.number)).to.deep.equal([22, 80, 161]);
    });

    it('a list as of an instant pages through closed and still-open states in one order, each page a slice of the whole', async () => {
      const made = [host];
      for (const name of ['c', 'd', 'e', 'f', 'g']) made.push(await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, name));
      const at = made.at(-1)!.updated_at;
      // Three of the six change after the instant: as of it, their states are closed ones, the others' still open.
      for (const h of [made[0], made[2], made[4]]) expectOk(await put(h.id, { ...base(h), name: `${h.name}-renamed` }));
      const page = async (limit: number, offset: number) =>
        expectOk(await call(app.url, 'GET', `/api/v1/hosts?at=${encodeURIComponent(at)}&limit=${limit}&offset=${offset}`, { auth: t.owner })).map((h: any) => h.name);
      const whole = await page(100, 0);
      expect(whole).to.deep.equal(made.map((h) => h.name));
      for (const offset of [0, 1, 2, 3, 4, 5]) expect(await page(2, offset), `offset ${offset}`).to.deep.equal(whole.slice(offset, offset + 2));
    });

    it('a deleted host is visible at an earlier instant and absent now', async () => {
      const earlier = host.updated_at;
      expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${host.id}`, { auth: t.owner }));
      expectError(await get(host.id), 404, 'entity_not_found');
      const old = expectOk(await get(host.id, earlier));
      expect(old.name).to.equal('web');
      expect(old.ports).to.have.length(3);
      expect(old.valid_to).to.be.a('string');
      expect(expectOk(await call(app.url, 'GET', '/api/v1/hosts', { auth: t.owner }))).to.deep.equal([]);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts?at=${encodeURIComponent(earlier)}`, { auth: t.owner }))).to.have.length(1);
    });
  });

  describe('list', () => {
    it('filters by network_id, hidden and q; orders by name both ways', async () => {
      await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, 'alpha');
      const hidden = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { name: 'zulu', network_id: t.defaultNetworkId, hidden: true, hostname: 'secret.lan' } }), 201);
      const names = async (q: string) => expectOk(await call(app.url, 'GET', `/api/v1/hosts${q}`, { auth: t.owner })).map((h: any) => h.name);
      expect(await names('?order_by=name')).to.deep.equal(['alpha', 'web', 'zulu']);
      expect(await names('?order_by=name&order_direction=desc')).to.deep.equal(['zulu', 'web', 'alpha']);
      expect(await names('?hidden=true')).to.deep.equal(['zulu']);
      expect(await names('?q=SECRET')).to.deep.equal(['zulu']);
      expect(await names('?q=%25')).to.deep.equal([]); // % is a literal, not a wildcard
      expect(await names(`?network_id=${t.defaultNetworkId}&order_by=name&limit=1`)).to.deep.equal(['alpha']);
      expect(hidden.hidden).to.equal(true);
    });

    it('q matches IP addresses (exact and prefix), MAC addresses in any spelling and hostnames, now and at `at`', async () => {
      // web: 10.0.0.10 (MAC AA:BB:CC:00:00:01) and 10.0.0.11, hostname web.lan
      const other = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.0.1.0/24');
      const db = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: {
        name: 'db', network_id: t.defaultNetworkId, hostname: 'pg.example',
        ip_addresses: [{ subnet_id: other.id, ip_address: '10.0.1.100' }],
      } }), 201);
      expectOk(await call(app.url, 'POST', `/api/v1/interfaces`, { auth: t.owner, body: { host_id: db.id, if_index: 1, mac_address: 'DE:AD:BE:EF:00:07' } }), 201);
      const names = async (q: string, at?: string) =>
        expectOk(await call(app.url, 'GET', `/api/v1/hosts?order_by=name&q=${encodeURIComponent(q)}${at ? `&at=${encodeURIComponent(at)}` : ''}`, { auth: t.owner })).map((h: any) => h.name);
      expect(await names('10.0.0.11')).to.deep.equal(['web']);
      expect(await names('10.0.1.100')).to.deep.equal(['db']);
      expect(await names('10.0.')).to.deep.equal(['db', 'web']); // 10.0.0.x and 10.0.1.x
      expect(await names('10.0.1')).to.deep.equal(['db']);
      expect(await names('10.0.0.1')).to.deep.equal(['web']); // prefix of 10.0.0.10 and 10.0.0.11
      expect(await names('10.0.0.12')).to.deep.equal([]);
      for (const mac of ['aa:bb:cc:00:00:01', 'AA-BB-CC-00-00-01', 'aabb.cc00.0001', 'aabbcc', 'AA:BB:CC']) expect(await names(mac), mac).to.deep.equal(['web']);
      expect(await names('de:ad:be:ef')).to.deep.equal(['db']); // an interface's MAC
      expect(await names('pg.example')).to.deep.equal(['db']);
      // As the host was before its address changed, an instant earlier.
      const before = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner })).updated_at;
      expectOk(await put(host.id, { ...base(host), ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.0.99' }] }));
      expect(await names('10.0.0.11')).to.deep.equal([]);
      expect(await names('10.0.0.99')).to.deep.equal(['web']);
      expect(await names('10.0.0.11', before)).to.deep.equal(['web']);
      expect(await names('aabbcc', before)).to.deep.equal(['web']);
    });

    it('network_id: outside the scope 403, unknown 404', async () => {
      const lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
      const member = await createUser(app.url, t.owner, 'Member', [lab.id]);
      expectError(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}`, { auth: member.auth }), 403, 'entity_access_denied');
      expectError(await call(app.url, 'GET', `/api/v1/hosts?network_id=${randomUUID()}`, { auth: member.auth }), 404, 'entity_not_found');
      expect(expectOk(await call(app.url, 'GET', '/api/v1/hosts', { auth: member.auth }))).to.deep.equal([]);
      expectError(await get(host.id).then(() => call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: member.auth })), 403, 'entity_access_denied');
      expectError(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: member.auth, body: base(host) }), 403, 'entity_access_denied');
      const other = await registerTenant(app.url, 'other');
      expectError(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: other.owner }), 404, 'entity_not_found');
      expectError(await call(app.url, 'DELETE', `/api/v1/hosts/${host.id}`, { auth: other.owner }), 404, 'entity_not_found');
    });
  });

  it('bulk-delete: all or none (an unknown id is 404, one out of scope 403), each deletion in history, [] is 400', async () => {
    const second = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id, 'db');
    expectError(await call(app.url, 'POST', '/api/v1/hosts/bulk-delete', { auth: t.owner, body: [] }), 400, 'validation_failed');
    const lab = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Lab' } }), 201);
    const member = await createUser(app.url, t.owner, 'Member', [lab.id]);
    expectError(await call(app.url, 'POST', '/api/v1/hosts/bulk-delete', { auth: member.auth, body: [host.id] }), 403, 'entity_access_denied');
    const unknown = randomUUID();
    const refused = await call(app.url, 'POST', '/api/v1/hosts/bulk-delete', { auth: t.owner, body: [host.id, second.id, unknown] });
    expectError(refused, 404, 'entity_not_found');
    expect(refused.body.params.id).to.equal(unknown);
    expect(expectOk(await call(app.url, 'GET', '/api/v1/hosts', { auth: t.owner }))).to.have.length(2);
    const res = expectOk(await call(app.url, 'POST', '/api/v1/hosts/bulk-delete', { auth: t.owner, body: { ids: [host.id, second.id] } }));
    expect(res).to.deep.equal({ deleted_count: 2, requested_count: 2 });
    expect(expectOk(await call(app.url, 'GET', '/api/v1/hosts', { auth: t.owner }))).to.deep.equal([]);
    // Each deletion is a state of its own: the host's history ends, and it is readable as it was.
    const states = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${second.id}/history`, { auth: t.owner }));
    expect(states[0].valid_to).to.be.a('string');
  });
});
