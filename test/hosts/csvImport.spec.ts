// POST /api/v1/hosts/import/csv (issue 28): a dry run answers what a realistic file would create,
// change and refuse and stores nothing; a commit stores it all in one transaction (one history
// instant, one event batch) or nothing at all.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createKey, createUser, registerTenant, type Tenant } from '../support/world.js';
import { createSubnet } from './fixtures.js';
import { routes } from '../../src/routes.js';

const HEADER = 'name,hostname,description,address,subnet,mac,ports,services,tags';

/**
 * 50 rows: 42 new servers (two with a quoted description holding a comma, a line break and a
 * formula-looking text), a router with 3 addresses (two of them in subnets the file creates), 2
 * rows changing the existing db-01, 1 row repeating what app-old has, and 2 bad rows.
 */
function realisticCsv(): string {
  const rows = [HEADER];
  for (let i = 1; i <= 40; i++) {
    const n = String(i).padStart(2, '0');
    // srv-31..40 go into 10.0.2.0/24, which srv-31's row names (and the import creates).
    const address = i <= 30 ? `10.0.1.${10 + i}` : `10.0.2.${10 + i}`;
    const subnet = i === 31 ? '10.0.2.0/24' : '';
    rows.push(`srv-${n},srv-${n}.lan,,${address},${subnet},,22/tcp;443/tcp,ssh;https,${i % 2 ? 'production' : 'web;production'}`);
  }
  rows.push('srv-41,,"Rack 4, shelf 2\nsecond line",10.0.1.91,,aa-bb-cc-00-00-41,8080,,');
  rows.push('srv-42,,"=HYPERLINK(""http://example.com"")",10.0.1.92,,,,,');
  rows.push('router,gw.lan,Edge router,10.0.1.1,10.0.1.0/24,AA:BB:CC:00:00:01,22/tcp;161/udp,ssh;snmp,');
  rows.push('router,,,10.0.2.1,,,,,');
  rows.push('router,gw.lan,,10.0.3.1,10.0.3.0/24,,,,');
  rows.push('db-01,db-01.example,,10.0.1.5,,AA:BB:CC:00:00:05,22/tcp,ssh,production');
  rows.push('db-01,,,10.0.1.6,,,,,');
  rows.push('app-old,,,10.0.1.7,,,,,');
  rows.push('bad-ip,,,10.0.1.300,,,,,'); // row 49
  rows.push('thief,,,10.0.1.7,,,,,'); // row 50: app-old holds 10.0.1.7
  return `${rows.join('\r\n')}\r\n`;
}

describe('hosts: CSV import', () => {
  let app: TestApp;
  let t: Tenant;
  let subnet: any;
  let db01: any;
  let appOld: any;

  const post = (csv: string, query: string, auth: Credential = t.owner, type = 'text/csv') =>
    call(app.url, 'POST', `/api/v1/hosts/import/csv?network_id=${t.defaultNetworkId}${query}`, { auth, rawBody: csv, headers: { 'Content-Type': type } });
  const hostsOf = async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
  const subnetsOf = async () => expectOk(await call(app.url, 'GET', `/api/v1/subnets?network_id=${t.defaultNetworkId}&limit=1000`, { auth: t.owner })) as any[];
  const events = async () => expectOk(await call(app.url, 'GET', `/api/v1/events?network_id=${t.defaultNetworkId}&after=0&limit=1000`, { auth: t.owner })) as any[];

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId, '10.0.1.0/24');
    for (const name of ['production', 'web']) expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name, color: 'Green' } }), 201);
    db01 = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: {
      name: 'db-01', network_id: t.defaultNetworkId, hostname: 'db-01.lan',
      ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.1.5' }], ports: [{ number: 5432, protocol: 'Tcp' }],
      services: [{ name: 'postgres', service_definition: 'PostgreSQL', bindings: [] }],
    } }), 201);
    appOld = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: {
      name: 'app-old', network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.0.1.7' }],
    } }), 201);
  });
  afterEach(() => app.close());

  it('dry run: shows what would be created, changed and refused, and writes nothing', async () => {
    const eventsBefore = (await events()).length;
    const plan = expectOk(await post(realisticCsv(), '&dry_run=true'));
    expect(plan.dry_run).to.equal(true);
    expect(plan.rows).to.equal(50);
    expect(plan.counts).to.deep.equal({ hosts_created: 43, hosts_changed: 1, hosts_unchanged: 1, subnets_created: 2, rows_refused: 2, refusals: 2 });
    expect(plan.subnets_created).to.deep.equal([{ cidr: '10.0.2.0/24', id: null }, { cidr: '10.0.3.0/24', id: null }]);

    const router = plan.created.find((c: any) => c.name === 'router');
    expect(router).to.deep.include({ id: null, rows: [44, 45, 46], hostname: 'gw.lan', description: 'Edge router', ports: ['22/tcp', '161/udp'], services: ['ssh', 'snmp'] });
    expect(router.ip_addresses).to.deep.equal([
      { ip_address: '10.0.1.1', subnet: '10.0.1.0/24', mac_address: 'AA:BB:CC:00:00:01' },
      { ip_address: '10.0.2.1', subnet: '10.0.2.0/24', mac_address: null },
      { ip_address: '10.0.3.1', subnet: '10.0.3.0/24', mac_address: null },
    ]);
    expect(plan.created.find((c: any) => c.name === 'srv-02')).to.deep.include({ tags: ['web', 'production'], hostname: 'srv-02.lan' });
    expect(plan.created.find((c: any) => c.name === 'srv-35').ip_addresses[0]).to.deep.equal({ ip_address: '10.0.2.45', subnet: '10.0.2.0/24', mac_address: null });
    const quoted = plan.created.find((c: any) => c.name === 'srv-41');
    expect(quoted).to.deep.include({ description: 'Rack 4, shelf 2\nsecond line', ports: ['8080/tcp'], rows: [42] });
    expect(quoted.ip_addresses[0].mac_address).to.equal('AA:BB:CC:00:00:41');
    expect(plan.created.find((c: any) => c.name === 'srv-42').description).to.equal('=HYPERLINK("http://example.com")');

    expect(plan.changed).to.deep.equal([{
      id: db01.id, name: 'db-01', rows: [47, 48],
      changes: [
        { field: 'hostname', from: 'db-01.lan', to: 'db-01.example' },
        { field: 'ip_addresses', added: ['10.0.1.6 (10.0.1.0/24)'] },
        { field: 'mac_address', item: '10.0.1.5', from: null, to: 'AA:BB:CC:00:00:05' },
        { field: 'ports', added: ['22/tcp'] },
        { field: 'services', added: ['ssh'] },
        { field: 'tags', added: ['production'] },
      ],
    }]);
    expect(plan.unchanged).to.deep.equal([{ id: appOld.id, name: 'app-old', rows: [49] }]);
    expect(plan.refused).to.have.length(2);
    expect(plan.refused[0]).to.deep.include({ row: 50, column: 'address', value: '10.0.1.300' });
    expect(plan.refused[1]).to.deep.include({ row: 51, column: 'address', value: '10.0.1.7' });
    expect(plan.refused[1].message).to.contain("held by host 'app-old'");

    // Nothing stored: the same two hosts, one subnet, no event.
    expect((await hostsOf()).map((h) => h.name).sort()).to.deep.equal(['app-old', 'db-01']);
    expect(await subnetsOf()).to.have.length(1);
    expect((await events()).length).to.equal(eventsBefore);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${db01.id}`, { auth: t.owner })).updated_at).to.equal(db01.updated_at);
  });

  it('commit: applies the plan in one transaction (one history instant, one event batch) and answers the ids', async () => {
    const csv = realisticCsv().split('\r\n').filter((l) => !l.startsWith('bad-ip') && !l.startsWith('thief')).join('\r\n');
    const eventsBefore = await events();
    const done = expectOk(await post(csv, '&dry_run=false'));
    expect(done.dry_run).to.equal(false);
    expect(done.counts).to.deep.include({ hosts_created: 43, hosts_changed: 1, hosts_unchanged: 1, subnets_created: 2, rows_refused: 0 });
    expect(done.created.every((c: any) => typeof c.id === 'string')).to.equal(true);
    expect(done.subnets_created.every((s: any) => typeof s.id === 'string')).to.equal(true);

    const hosts = await hostsOf();
    expect(hosts).to.have.length(45);
    const byName = new Map(hosts.map((h) => [h.name, h]));
    const router = byName.get('router');
    expect(router.id).to.equal(done.created.find((c: any) => c.name === 'router').id);
    expect(router.ip_addresses.map((a: any) => `${a.ip_address} ${a.mac_address}`)).to.deep.equal(['10.0.1.1 AA:BB:CC:00:00:01', '10.0.2.1 null', '10.0.3.1 null']);
    expect(router.ports.map((p: any) => `${p.number}/${p.protocol}`)).to.have.members(['22/Tcp', '161/Udp']);
    expect(router.services.map((s: any) => s.name)).to.deep.equal(['ssh', 'snmp']);
    const tags = new Map((expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: t.owner })) as any[]).map((x) => [x.id, x.name]));
    expect(byName.get('srv-02').tags.map((id: string) => tags.get(id))).to.deep.equal(['web', 'production']);

    const db = byName.get('db-01');
    expect(db).to.include({ hostname: 'db-01.example' });
    expect(db.ip_addresses.map((a: any) => `${a.ip_address} ${a.mac_address}`)).to.deep.equal(['10.0.1.5 AA:BB:CC:00:00:05', '10.0.1.6 null']);
    expect(db.ports.map((p: any) => p.number)).to.have.members([5432, 22]);
    expect(db.services.map((s: any) => s.name)).to.deep.equal(['postgres', 'ssh']);
    expect(db.ip_addresses[0].id, 'the existing address kept its id').to.equal(db01.ip_addresses[0].id);
    expect(byName.get('app-old').updated_at, 'unchanged host untouched').to.equal(appOld.updated_at);

    // One history instant: every written state starts at the transaction's time.
    const instants = new Set([...done.created.map((c: any) => byName.get(c.name).valid_from), db.valid_from]);
    expect([...instants]).to.have.length(1);
    const subnets = await subnetsOf();
    expect(subnets.filter((s) => s.id !== subnet.id).map((s) => s.valid_from)).to.deep.equal([...instants, ...instants]);
    // One event batch, covering hosts, children and subnets.
    const newEvents = (await events()).slice(eventsBefore.length);
    expect(newEvents.length).to.be.greaterThan(43 + 1 + 2);
    expect(new Set(newEvents.map((e) => e.batch_id)).size).to.equal(1);
    expect(new Set(newEvents.map((e) => e.type))).to.include.members(['host.created', 'host.updated', 'subnet.created', 'ip_address.created', 'port.created', 'service.created']);
  });

  it('commit with a refused row stores nothing and names the row', async () => {
    const eventsBefore = (await events()).length;
    const res = await post(realisticCsv(), '&dry_run=false');
    expectError(res, 422, 'csv_import_refused');
    expect(res.body.params.rows_refused).to.equal(2);
    expect(res.body.params.refused.map((r: any) => [r.row, r.column])).to.deep.equal([[50, 'address'], [51, 'address']]);
    expect((await hostsOf()).map((h) => h.name).sort()).to.deep.equal(['app-old', 'db-01']);
    expect(await subnetsOf()).to.have.length(1);
    expect((await events()).length).to.equal(eventsBefore);
  });

  it('commit with exactly one refused row stores nothing and names that row', async () => {
    const eventsBefore = (await events()).length;
    for (const [skip, row] of [['thief', 50], ['bad-ip', 50]] as const) { // each file keeps one of the two bad rows (the last row: 50)
      const csv = realisticCsv().split('\r\n').filter((l) => !l.startsWith(skip)).join('\r\n');
      const res = await post(csv, '&dry_run=false');
      expectError(res, 422, 'csv_import_refused');
      expect(res.body.params.rows_refused).to.equal(1);
      expect(res.body.params.refused.map((r: any) => [r.row, r.column])).to.deep.equal([[row, 'address']]);
      expect((await hostsOf()).map((h) => h.name).sort()).to.deep.equal(['app-old', 'db-01']);
      expect(await subnetsOf()).to.have.length(1);
      expect((await events()).length).to.equal(eventsBefore);
    }
  });

  it('one address in two subnets of the network is two addresses; twice in one subnet is refused (commit)', async () => {
    const inner = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { name: 'inner', cidr: '10.0.1.0/25', network_id: t.defaultNetworkId } }), 201);
    const ok = await post(`${HEADER}\r\nwide,,,10.0.1.50,10.0.1.0/24,,,,\r\nnarrow,,,10.0.1.50,10.0.1.0/25,,,,\r\n`, '&dry_run=false');
    expectOk(ok);
    const byName = new Map((await hostsOf()).map((h) => [h.name, h]));
    expect(byName.get('wide').ip_addresses.map((a: any) => [a.subnet_id, a.ip_address])).to.deep.equal([[subnet.id, '10.0.1.50']]);
    expect(byName.get('narrow').ip_addresses.map((a: any) => [a.subnet_id, a.ip_address])).to.deep.equal([[inner.id, '10.0.1.50']]);
    const twice = await post(`${HEADER}\r\nfirst,,,10.0.1.60,10.0.1.0/25,,,,\r\nsecond,,,10.0.1.60,10.0.1.0/25,,,,\r\n`, '&dry_run=false');
    expectError(twice, 422, 'csv_import_refused');
    expect(twice.body.params.refused.map((r: any) => [r.row, r.column])).to.deep.equal([[3, 'address']]);
    expect((await hostsOf()).map((h) => h.name).sort()).to.deep.equal(['app-old', 'db-01', 'narrow', 'wide']);
  });

  it('refuses a file it cannot read: unknown column, no name column, bad quoting, not CSV, too many rows (400); dry run is the default', async () => {
    const unknown = await post('name,colour\nweb,red\n', '');
    expectError(unknown, 400, 'validation_failed');
    expect(unknown.body.error).to.contain("unknown column 'colour'").and.contain('name, hostname, description, address, subnet, mac, ports, services, tags');
    expectError(await post('hostname\nweb.lan\n', ''), 400, 'validation_failed');
    const quoting = await post('name,description\nweb,"not closed\n', '');
    expectError(quoting, 400, 'validation_failed');
    expect(quoting.body.error).to.contain('row 2');
    expectError(await post('name\nweb\n', '', t.owner, 'text/plain'), 415, 'unsupported_media_type');
    const many = `name\n${Array.from({ length: 5001 }, (_, i) => `h${i}`).join('\n')}\n`;
    expect((await post(many, '')).body.error).to.contain('more than 5000 rows');
    // No dry_run: a preview, nothing stored.
    expect(expectOk(await post('name\nweb\n', '')).dry_run).to.equal(true);
    expect(await hostsOf()).to.have.length(2);
  });

  it('takes who may call it from the host create\'s declaration', () => {
    const access = (path: string) => {
      const r = routes.find((x) => x.method === 'post' && x.path === path)!;
      return r.auth !== 'public' && r.auth !== 'daemon' ? { auth: r.auth, sessionOnly: r.sessionOnly, organizationWide: r.organizationWide } : undefined;
    };
    expect(access('/api/v1/hosts/import/csv')).to.deep.equal(access('/api/v1/hosts')).and.to.include({ auth: 'Member' });
  });

  it('a Viewer is refused; a Member and a key limited to the network may import, a key limited to another network may not', async () => {
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    expectError(await post('name\nweb\n', '&dry_run=false', viewer.auth), 403, 'auth_permission_denied');
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expectOk(await post('name\nweb\n', '&dry_run=false', member.auth));
    const scoped = await createKey(app.url, t.owner, { name: 'scoped', network_ids: [t.defaultNetworkId] });
    expectOk(await post('name\nweb-2\n', '&dry_run=false', { bearer: scoped.key }));
    const other = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'Other' } }), 201);
    const elsewhere = await createKey(app.url, t.owner, { name: 'elsewhere', network_ids: [other.id] });
    expectError(await post('name\nweb-3\n', '&dry_run=false', { bearer: elsewhere.key }), 403, 'entity_access_denied');
    expect((await hostsOf()).map((h) => h.name).sort()).to.deep.equal(['app-old', 'db-01', 'web', 'web-2']);
  });
});
