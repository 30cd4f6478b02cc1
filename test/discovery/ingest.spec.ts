// Discovery ingestion through the daemon endpoints (POST /api/v1/hosts/discovery, POST and GET
// /api/v1/subnets as a daemon): matching, merging, idempotency, history, lineage, tenancy.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from './reports.js';

// Universally administered (a random, locally administered MAC identifies nothing: issue 25.1).
const MAC = '00:16:3E:00:00:01';

describe('discovery: ingestion of daemon reports', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  let dmz: any;

  const getHost = async (id: string) => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${id}`, { auth: t.owner }));
  /** States of every inventory table, and live discovered hosts (the daemon's own host aside). */
  const counts = async () => (await sql(app, `
    select (select count(*)::int from hosts_history) as hosts, (select count(*)::int from ip_addresses_history) as ips,
           (select count(*)::int from ports_history) as ports, (select count(*)::int from services_history) as services,
           (select count(*)::int from bindings_history) as bindings, (select count(*)::int from subnets_history) as subnets,
           (select count(*)::int from hosts where network_id = ? and id not in (select host_id from daemons)) as live_hosts`, [net]))[0]!;
  const webReport = (o: Parameters<typeof hostReport>[2] = {}) => hostReport(d, net, {
    interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.5', mac_address: MAC }],
    ports: [{ number: 22 }, { number: 80 }, { number: 53, protocol: 'Udp' }],
    services: [{ name: 'Nginx', ports: [80] }, { name: 'OpenSSH', ports: [22] }],
    ...o,
  });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'ingest');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.1.0.0/24');
    dmz = await postSubnet(d, net, '10.2.0.0/24');
  });
  afterEach(() => app.close());

  it('a NUL byte quoted from the network (an AMQP version byte) costs that field, never the host: host, ports and services stored', async () => {
    const report = webReport({ services: [{ name: 'AMQP broker', definition: 'AMQP', ports: [80] }, { name: 'OpenSSH', ports: [22] }], description: 'seen\u0000here' });
    report.services[0]!.source.details.reason.data = 'rule amqp-header: probe NULL answered "AMQP\\x00\\x00\\x09\\x01" (major: \u0000; minor: \u0000)';
    report.services[0]!.name = 'AMQP\u0000broker';
    const stored = await postHost(d, report);
    const host = await getHost(stored.id);
    expect(host.description).to.equal(null); // dropped: the report can do without it
    expect(host.ports.map((p: any) => p.number).sort()).to.deep.equal([22, 53, 80]);
    const amqp = host.services.find((svc: any) => svc.service_definition === 'AMQP');
    expect(amqp.name).to.equal('AMQP\uFFFDbroker'); // kept (a service needs its name), the NUL replaced
    expect(JSON.stringify(amqp.source)).to.not.contain('\\u0000');
    expect(host.services).to.have.length(2);
  });

  it('a name discovery gave follows the evidence (a service\'s name goes with the service); a person\'s name, or a Scanopy daemon\'s, is never replaced', async () => {
    const named = (name: string, source: string | null, services: Array<{ name: string; ports: number[] }>) => {
      const r = webReport({ hostId: first.host.id, name, hostname: null, services, ports: [{ number: 22 }, { number: 80 }] });
      (r.host as any).name_source = source;
      return r;
    };
    const first = webReport({ hostname: null });
    const host = await postHost(d, named('Redis', 'service', [{ name: 'Redis', ports: [22] }]));
    expect((await getHost(host.id)).name).to.equal('Redis');
    // The service stopped: the agent names the host after its address now, and so does the server.
    await postHost(d, named('10.1.0.5', 'address', []));
    expect(await getHost(host.id)).to.deep.include({ name: '10.1.0.5', name_source: 'address' });
    // A person names it: never renamed by a later report, whatever it says.
    const mine = await getHost(host.id);
    expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${host.id}`, { auth: t.owner, body: { name: 'build-box' } }));
    expect(mine.name).to.equal('10.1.0.5');
    expect((await getHost(host.id)).name_source).to.equal(null);
    await postHost(d, named('Grafana', 'service', [{ name: 'Grafana', ports: [80] }]));
    expect((await getHost(host.id)).name).to.equal('build-box');
    // A Scanopy daemon says nothing of where a name came from: its first name stays.
    const scanopy = webReport({ name: 'first-name', hostname: null, interfaces: [{ subnet_id: dmz.id, ip_address: '10.2.0.9' }] });
    const stored = await postHost(d, scanopy);
    await postHost(d, { ...scanopy, host: { ...scanopy.host, name: 'second-name' } });
    expect((await getHost(stored.id)).name).to.equal('first-name');
  });

  it('what a host is (device type and model, OS and version with confidence): stored from the report, kept when a report says nothing, filterable', async () => {
    const report = webReport({ hostname: null });
    Object.assign(report.host, { device_type: 'Printer', device_model: 'HP Color LaserJet', os_name: 'Debian Linux', os_version: '12', os_confidence: 'Medium' });
    const host = await postHost(d, report);
    const facts = { device_type: 'Printer', device_model: 'HP Color LaserJet', os_name: 'Debian Linux', os_version: '12', os_confidence: 'Medium' };
    expect(await getHost(host.id)).to.deep.include(facts);
    const silent = webReport({ hostId: report.host.id, hostname: null, ports: [{ number: 80 }], services: [] });
    await postHost(d, silent);
    expect(await getHost(host.id)).to.deep.include(facts);
    const list = async (query: string) => (expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${net}&${query}`, { auth: t.owner })) as any[]).map((h) => h.id);
    expect(await list('device_type=printer')).to.deep.equal([host.id]);
    expect(await list('device_type=NAS')).to.deep.equal([]);
    expect(await list('os=debian')).to.deep.equal([host.id]);
    expect(await list('os=%25')).to.deep.equal([]); // a wildcard is a character here
    // The map draws it as what it is (a printer), not as the guess its services would give.
    const topology = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}`, { auth: t.owner }));
    const kinds = new Set(topology.nodes.filter((n: any) => n.host_id === host.id).map((n: any) => n.host_kind));
    expect([...kinds]).to.deep.equal(['printer']);
  });

  it('the same report twice: the same answer, no new history state, no duplicate host; only the host’s last_seen_at moves', async () => {
    const report = webReport();
    const first = await postHost(d, report);
    expect(first.id).to.equal(report.host.id);
    const before = await counts();
    const seenBefore = (await getHost(first.id)).last_seen_at;

    const again = await postHost(d, report);
    expect(again).to.deep.equal(first);
    expect(await counts()).to.deep.equal(before);
    expect(before.live_hosts).to.equal(1);
    const host = await getHost(first.id);
    expect(host.updated_at).to.equal(first.updated_at);
    expect(Date.parse(host.last_seen_at)).to.be.greaterThan(Date.parse(seenBefore));
    expect(host.ports.map((p: any) => `${p.number}/${p.protocol}=${p.type}`)).to.deep.equal(['22/Tcp=Ssh', '53/Udp=DnsUdp', '80/Tcp=Http']);
  });

  it('a later run of the daemon (every id new) is the same host and children: no new state, the stored ids answered', async () => {
    const first = await postHost(d, webReport());
    const before = await counts();
    const rerun = await postHost(d, webReport()); // fresh host, address, port, service and binding ids
    expect(rerun.id).to.equal(first.id);
    expect(rerun.interfaces.map((i: any) => i.id)).to.deep.equal(first.interfaces.map((i: any) => i.id));
    expect(rerun.ports.map((p: any) => p.id)).to.deep.equal(first.ports.map((p: any) => p.id));
    expect(rerun.services.map((s: any) => s.id)).to.deep.equal(first.services.map((s: any) => s.id));
    expect(rerun.services.flatMap((s: any) => s.bindings.map((b: any) => b.id))).to.deep.equal(first.services.flatMap((s: any) => s.bindings.map((b: any) => b.id)));
    expect(await counts()).to.deep.equal(before);
  });

  it('a new binding between known children gets the reported id, unless another organization has that id', async () => {
    const first = await postHost(d, webReport());
    const b = await registerTenant(app.url, 'other-org');
    const bHost = expectOk(await call(app.url, 'POST', '/api/v1/hosts', {
      auth: b.owner, body: { name: 'b', network_id: b.defaultNetworkId, ports: [{ number: 22, protocol: 'Tcp' }], services: [{ name: 'ssh', service_definition: 'OpenSSH' }] },
    }), 201);
    const bBinding = expectOk(await call(app.url, 'POST', '/api/v1/bindings', { auth: b.owner, body: { service_id: bHost.services[0].id, type: 'Port', port_id: bHost.ports[0].id } }), 201);

    const taken = await postHost(d, webReport({ services: [{ name: 'Nginx', ports: [80, 53], bindingIds: [randomUUID(), bBinding.id] }, { name: 'OpenSSH', ports: [22] }] }));
    expect(taken.services[0].bindings).to.have.length(2);
    expect(taken.services[0].bindings[0].id).to.equal(first.services[0].bindings[0].id);
    expect(taken.services[0].bindings[1].id).to.not.equal(bBinding.id);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/bindings/${bBinding.id}`, { auth: b.owner }))).to.deep.equal(bBinding);

    const mine = randomUUID();
    const free = await postHost(d, webReport({ services: [{ name: 'Nginx', ports: [80, 53] }, { name: 'OpenSSH', ports: [22] }, { name: 'Dnsmasq', ports: [] }] }));
    expect(free.services.map((x: any) => x.bindings.length)).to.deep.equal([2, 1, 0]);
    const own = await postHost(d, webReport({ ports: [{ number: 22 }, { number: 80 }, { number: 53, protocol: 'Udp' }, { number: 8053 }], services: [{ name: 'Dnsmasq', ports: [8053], bindingIds: [mine] }] }));
    expect(own.services[0].bindings.map((x: any) => x.id)).to.deep.equal([mine]);
  });

  describe('unchanged hosts (the digest of the last report applied in full)', () => {
    const digestOf = async (hostId: string) => (await sql(app, `select digest from host_discovery_digests where host_id = ?`, [hostId]))[0]?.digest as string | undefined;

    it('a report applied in full leaves its digest; the same report again is answered from it, and only last_seen_at moves', async () => {
      const report = webReport();
      const first = await postHost(d, report);
      const digest = await digestOf(first.id);
      expect(digest).to.be.a('string');
      // Another answer than a full ingest would give is impossible to tell apart here (that is the
      // point), so check the answer really comes from the stored one: mark it.
      await sql(app, `update host_discovery_digests set response = jsonb_set(response::jsonb, '{name}', '"from-digest"')::text where host_id = ?`, [first.id]);
      const again = await postHost(d, report);
      expect(again.name).to.equal('from-digest');
      expect(await digestOf(first.id)).to.equal(digest);
    });

    it('a user deleting a port or a binding forgets the digest: the same report brings them back, as a full ingest does', async () => {
      const report = webReport();
      const first = await postHost(d, report);
      const dns = first.ports.find((p: any) => p.number === 53); // bound by no service
      expectOk(await call(app.url, 'DELETE', `/api/v1/ports/${dns.id}`, { auth: t.owner }));
      expect(await digestOf(first.id)).to.equal(undefined);
      const again = await postHost(d, report);
      const host = await getHost(first.id);
      expect(host.ports.map((p: any) => p.number)).to.include(53);
      expect(again.ports.find((p: any) => p.number === 53).id).to.equal(host.ports.find((p: any) => p.number === 53).id);
      expect(await digestOf(first.id)).to.be.a('string');

      const binding = again.services.flatMap((s: any) => s.bindings)[0];
      expectOk(await call(app.url, 'DELETE', `/api/v1/bindings/${binding.id}`, { auth: t.owner }));
      expect(await digestOf(first.id)).to.equal(undefined);
      await postHost(d, report);
      expect((await sql(app, `select count(*)::int as n from bindings b join services s on s.id = b.service_id where s.host_id = ?`, [first.id]))[0]!.n).to.equal(2);
    });

    it('a user edit of the host forgets its digest; last_seen_at alone does not', async () => {
      const report = webReport();
      const first = await postHost(d, report);
      await postHost(d, report); // only last_seen_at moves
      expect(await digestOf(first.id)).to.be.a('string');
      const host = await getHost(first.id);
      expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${first.id}`, {
        auth: t.owner, body: { id: host.id, name: 'renamed', hidden: host.hidden, tags: host.tags, hostname: host.hostname, description: host.description },
      }));
      expect(await digestOf(first.id)).to.equal(undefined);
      const again = await postHost(d, report);
      expect(again.name).to.equal('renamed');
    });

    it('another host taking one of its addresses (same MAC) forgets its digest', async () => {
      const report = webReport();
      const first = await postHost(d, report);
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', {
        auth: t.owner, body: { name: 'twin', network_id: net, ip_addresses: [{ subnet_id: dmz.id, ip_address: '10.2.0.9', mac_address: MAC }] },
      }), 201);
      expect(await digestOf(first.id)).to.equal(undefined);
    });
  });

  it('a host found on a second address of a known MAC merges into it; on the same subnet the address moves', async () => {
    const first = await postHost(d, webReport());
    const other = await postHost(d, hostReport(d, net, { interfaces: [{ subnet_id: dmz.id, ip_address: '10.2.0.7', mac_address: MAC }], ports: [{ number: 443 }] }));
    expect(other.id).to.equal(first.id);
    expect((await counts()).live_hosts).to.equal(1);
    const merged = await getHost(first.id);
    expect(merged.ip_addresses.map((i: any) => `${i.ip_address}@${i.subnet_id === lan.id ? 'lan' : 'dmz'}`)).to.deep.equal(['10.1.0.5@lan', '10.2.0.7@dmz']);
    expect(merged.ports.map((p: any) => p.number)).to.include.members([22, 80, 443]);

    // DHCP gave the NIC another address on the same subnet: the same address row, one more state.
    const moved = await postHost(d, hostReport(d, net, { interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.9', mac_address: MAC }] }));
    expect(moved.id).to.equal(first.id);
    expect(moved.interfaces[0].id).to.equal(first.interfaces[0].id);
    const states = await sql(app, `select host(ip_address) as ip from ip_addresses_history where id = ? order by valid_from`, [first.interfaces[0].id]);
    expect(states.map((s) => s.ip)).to.deep.equal(['10.1.0.5', '10.1.0.9']);
    expect((await counts()).live_hosts).to.equal(1);
  });

  it('the same IP on the same subnet is the same host, whatever id and MAC the report carries', async () => {
    const first = await postHost(d, webReport());
    const again = await postHost(d, hostReport(d, net, { interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.5' }] }));
    expect(again.id).to.equal(first.id);
    expect((await counts()).live_hosts).to.equal(1);
  });

  it('a user’s edits survive a re-discovery: name, description, hidden, tags are kept; an empty hostname is filled', async () => {
    const first = await postHost(d, webReport({ hostname: null, name: '10.1.0.5' }));
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'mine', color: 'Blue' } }), 201);
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${first.id}`, {
      auth: t.owner, body: { id: first.id, name: 'Front door', description: 'the web server', hidden: true, tags: [tag.id] },
    }));
    const newer = [{ type: 'Network', subnet_ids: null, daemon_id: d.id, date: '2026-11-23T10:00:00Z' }];
    const again = await postHost(d, webReport({ name: 'web', hostname: 'web.lan', description: 'from the daemon', metadata: newer }));
    expect(again).to.include({ id: first.id, name: 'Front door', description: 'the web server', hidden: true, hostname: 'web.lan' });
    const host = await getHost(first.id);
    expect(host).to.include({ name: 'Front door', description: 'the web server', hidden: true, hostname: 'web.lan' });
    expect(host.tags).to.deep.equal([tag.id]);
    expect(host.source.type).to.equal('Discovery');
    expect(host.source.metadata.map((m: any) => m.date)).to.deep.equal(['2026-11-23T10:00:00Z', '2026-11-22T10:00:00Z']);

    // A hostname already there is not overwritten either.
    const third = await postHost(d, webReport({ hostname: 'renamed.lan', metadata: newer }));
    expect(third.hostname).to.equal('web.lan');
  });

  it('source metadata: new entries first, at most 10', async () => {
    const ids = new Set<string>();
    for (let day = 1; day <= 12; day++) {
      ids.add((await postHost(d, webReport({ metadata: [{ type: 'Network', daemon_id: d.id, date: `2026-11-${String(day).padStart(2, '0')}T00:00:00Z` }] }))).id);
    }
    expect(ids.size).to.equal(1);
    const host = await getHost([...ids][0]!);
    expect(host.source.metadata.map((m: any) => m.date.slice(8, 10))).to.deep.equal(['12', '11', '10', '09', '08', '07', '06', '05', '04', '03']);
    expect(host.services[0].source.metadata).to.have.length(10);
  });

  it('a host created by a user (source Manual) keeps its fields and gains what discovery finds', async () => {
    const manual = expectOk(await call(app.url, 'POST', '/api/v1/hosts', {
      auth: t.owner, body: { name: 'printer', network_id: net, ip_addresses: [{ subnet_id: lan.id, ip_address: '10.1.0.20' }] },
    }), 201);
    const found = await postHost(d, hostReport(d, net, {
      name: 'HP-4711', hostname: 'hp4711.lan', interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.20', mac_address: 'AA:BB:CC:00:00:20' }],
      ports: [{ number: 9100 }], services: [{ name: 'JetDirect', ports: [9100] }],
    }));
    expect(found.id).to.equal(manual.id);
    const host = await getHost(manual.id);
    expect(host).to.include({ name: 'printer', hostname: null });
    expect(host.source).to.deep.equal({ type: 'Manual' });
    expect(host.last_seen_at).to.be.a('string');
    expect(host.ip_addresses).to.have.length(1);
    expect(host.ip_addresses[0]).to.include({ id: manual.ip_addresses[0].id, mac_address: 'AA:BB:CC:00:00:20' });
    expect(host.ports.map((p: any) => p.number)).to.deep.equal([9100]);
    expect(host.services[0]).to.include({ name: 'JetDirect' });
    expect(host.services[0].bindings[0]).to.include({ type: 'Port', port_id: host.ports[0].id });
  });

  it('a deleted host found again (same MAC, new ids) gets its old lineage; so does its address', async () => {
    const first = await postHost(d, webReport());
    expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${first.id}`, { auth: t.owner }));
    const again = await postHost(d, webReport({ interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.77', mac_address: MAC }] }));
    expect(again.id).to.not.equal(first.id);
    const host = await getHost(again.id);
    expect(host.lineage_id).to.equal(first.id);
    expect(host.ip_addresses[0].lineage_id).to.equal(first.interfaces[0].id);
    expect(host.ports[0].lineage_id).to.equal(host.ports[0].id); // a port has no identity beyond its host
  });

  it('discovery ids: first_discovery_id is set once, last_discovery_id follows the running session', async () => {
    const [work] = expectOk(await d.post(`/api/daemons/${d.id}/request-work`, { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' }));
    const first = await postHost(d, webReport());
    let rows = await sql(app, `select first_discovery_id as f, last_discovery_id as l from hosts where id = ? union all
      select first_discovery_id, last_discovery_id from ports where host_id = ?`, [first.id, first.id]);
    for (const r of rows) expect(r).to.deep.equal({ f: work.session_id, l: work.session_id });

    const done = { session_id: work.session_id, daemon_id: d.id, network_id: net, phase: 'Complete', discovery_type: work.discovery_type, progress: 100, error: null, started_at: null, finished_at: new Date().toISOString() };
    expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, done));
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } })); // queues a Network session
    const [next] = expectOk(await d.post(`/api/daemons/${d.id}/request-work`, {}));
    expect(next.discovery_type.type).to.equal('Network');
    await postHost(d, webReport());
    rows = await sql(app, `select first_discovery_id as f, last_discovery_id as l from hosts where id = ?`, [first.id]);
    expect(rows[0]).to.deep.equal({ f: work.session_id, l: next.session_id });
    // A child is written only when it changes: unchanged ports keep the discovery that last changed them;
    // a new one carries this discovery.
    await postHost(d, webReport({ ports: [{ number: 22 }, { number: 80 }, { number: 53, protocol: 'Udp' }, { number: 8443 }] }));
    const ports = await sql(app, `select number, first_discovery_id as f, last_discovery_id as l from ports where host_id = ? order by number`, [first.id]);
    expect(ports.map((p) => [p.number, p.f === work.session_id ? 'first' : 'next', p.l === work.session_id ? 'first' : 'next']))
      .to.deep.equal([[22, 'first', 'first'], [53, 'first', 'first'], [80, 'first', 'first'], [8443, 'next', 'next']]);
  });

  it('a port bound by two reported services stays with the first; the second binding is dropped', async () => {
    const res = await postHost(d, webReport({ services: [{ name: 'Nginx', ports: [80] }, { name: 'Apache', ports: [80] }] }));
    expect(res.services.map((s: any) => s.bindings.length)).to.deep.equal([1, 0]);
    const host = await getHost(res.id);
    expect(host.services.flatMap((s: any) => s.bindings)).to.have.length(1);
  });

  it('an address on an unknown subnet, or outside its subnet, is 400 and stores nothing', async () => {
    const before = await counts();
    const unknown = await d.post('/api/v1/hosts/discovery', webReport({ interfaces: [{ subnet_id: randomUUID(), ip_address: '10.1.0.5' }] }));
    expectError(unknown, 400, 'entity_reference_invalid');
    expect(unknown.body.params).to.include({ entity: 'Subnet', field: 'interfaces[0].subnet_id' });
    expectError(await d.post('/api/v1/hosts/discovery', webReport({ interfaces: [{ subnet_id: lan.id, ip_address: '10.9.0.5' }] })), 400, 'ip_address_out_of_range');
    expect(await counts()).to.deep.equal(before);
  });

  it('a report for another network is 403 daemon_network_mismatch (hosts and subnets)', async () => {
    const other = await createNetwork(app.url, t.owner, 'Other');
    const report = webReport();
    report.host.network_id = other;
    expectError(await d.post('/api/v1/hosts/discovery', report), 403, 'daemon_network_mismatch');
    const res = await d.post('/api/v1/subnets', { id: randomUUID(), cidr: '10.3.0.0/24', network_id: other, name: 'x', description: null, subnet_type: 'Lan', source: { type: 'Discovery', metadata: [] }, tags: [] });
    expectError(res, 403, 'daemon_network_mismatch');
  });

  describe('subnets', () => {
    it('a subnet with a CIDR the network has is that subnet, unchanged; a new one keeps the daemon’s id', async () => {
      const again = await postSubnet(d, net, '10.1.0.0/24', { id: randomUUID(), name: 'renamed', subnet_type: 'Dmz' });
      expect(again).to.deep.equal(lan);
      const id = randomUUID();
      const fresh = await postSubnet(d, net, '10.4.0.0/24', { id });
      expect(fresh.id).to.equal(id);
      expect(Object.keys(fresh).sort()).to.deep.equal(['cidr', 'created_at', 'description', 'id', 'name', 'network_id', 'source', 'subnet_type', 'tags', 'updated_at']);
      // A user's subnet with that CIDR is the one too.
      const mine = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '10.5.0.0/24', name: 'mine', network_id: net } }), 201);
      expect((await postSubnet(d, net, '10.5.0.0/24')).id).to.equal(mine.id);
    });

    it('Docker bridges of different Docker hosts stay apart', async () => {
      const docker = (hostId: string) => ({ subnet_type: 'DockerBridge', source: { type: 'Discovery', metadata: [{ type: 'Docker', host_id: hostId, daemon_id: d.id, date: '2026-11-22T10:00:00Z' }] } });
      const [h1, h2] = [randomUUID(), randomUUID()];
      const a = await postSubnet(d, net, '172.17.0.0/16', docker(h1));
      const b = await postSubnet(d, net, '172.17.0.0/16', docker(h2));
      const a2 = await postSubnet(d, net, '172.17.0.0/16', docker(h1));
      expect(b.id).to.not.equal(a.id);
      expect(a2.id).to.equal(a.id);
    });

    it('GET as a daemon: every subnet of its network, unpaged, in the daemon’s shape', async () => {
      const other = await createNetwork(app.url, t.owner, 'Other');
      expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { cidr: '10.8.0.0/24', name: 'elsewhere', network_id: other } }), 201);
      for (let i = 0; i < 60; i++) await postSubnet(d, net, `10.100.${i}.0/24`);
      const res = await d.get('/api/v1/subnets?limit=10');
      const data = expectOk(res);
      expect(data).to.have.length(62);
      expect(data.map((s: any) => s.network_id)).to.satisfy((ids: string[]) => ids.every((id) => id === net));
      expect(data[0]).to.not.have.property('organization_id');
      expect(res.body.meta.pagination).to.include({ total_count: 62, has_more: false });
    });
  });

  describe('ids used in another organization', () => {
    let b: Tenant;
    let bSubnet: any;
    let bHost: any;

    beforeEach(async () => {
      b = await registerTenant(app.url, 'other-org');
      bSubnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: b.owner, body: { cidr: '10.1.0.0/24', name: 'b-lan', network_id: b.defaultNetworkId } }), 201);
      bHost = expectOk(await call(app.url, 'POST', '/api/v1/hosts', {
        auth: b.owner, body: { name: 'b-host', network_id: b.defaultNetworkId, ip_addresses: [{ subnet_id: bSubnet.id, ip_address: '10.1.0.5' }], ports: [{ number: 22, protocol: 'Tcp' }] },
      }), 201);
    });

    it('are never taken over nor revealed: the daemon’s entity is created with a fresh id, the other stays as it was', async () => {
      const subnet = await postSubnet(d, net, '10.6.0.0/24', { id: bSubnet.id });
      expect(subnet.id).to.not.equal(bSubnet.id);
      const report = webReport({ hostId: bHost.id, interfaces: [{ id: bHost.ip_addresses[0].id, subnet_id: lan.id, ip_address: '10.1.0.5', mac_address: MAC }], ports: [{ id: bHost.ports[0].id, number: 22 }], services: [] });
      const host = await postHost(d, report);
      expect(host.id).to.not.equal(bHost.id);
      expect(host.interfaces[0].id).to.not.equal(bHost.ip_addresses[0].id);
      expect(host.ports[0].id).to.not.equal(bHost.ports[0].id);
      expect(host.network_id).to.equal(net);

      const theirs = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${bHost.id}`, { auth: b.owner }));
      expect(theirs).to.deep.equal(bHost);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/subnets/${bSubnet.id}`, { auth: b.owner }))).to.deep.equal(bSubnet);
      // and the history of their ids is theirs alone
      const states = await sql(app, `select distinct organization_id from hosts_history where id = ?`, [bHost.id]);
      expect(states.map((s) => s.organization_id)).to.deep.equal([b.orgId]);
    });
  });
});
