// The benchmarks' raw-SQL baseline (bench/rawHosts.ts) answers what the API answers, so that the
// benchmarks cannot rot unnoticed. It once selected fewer host and address columns than the service
// had grown, and nothing noticed until `npm run bench` was run again: its own equality check
// stopped it. Here the check runs with every `npm test`: on a small seeded set in which every
// column the hosts resource declares (its HistoryTable and its children's: src/modules/*/table.ts)
// has a value somewhere, the baseline's body must be deep-equal to GET /api/v1/hosts's, for pages of
// the live list, the list `at` an instant and the tag filter (the variants bench/growth.ts measures).
// A column added later is in the baseline by construction (it reads the same declarations); this
// test makes sure the comparison covers it: a declared column that no compared row has a value in
// fails the test until the seed below gives it one.
import { expect } from 'chai';
import pg from 'pg';
import { Db } from '../../src/core/db.js';
import type { HistoryTable } from '../../src/core/historyTable.js';
import { bindingTable } from '../../src/modules/bindings/table.js';
import { hostTable } from '../../src/modules/hosts/table.js';
import { interfaceTable } from '../../src/modules/interfaces/table.js';
import { ipAddressTable } from '../../src/modules/ipAddresses/table.js';
import { portTable } from '../../src/modules/ports/table.js';
import { serviceTable } from '../../src/modules/services/table.js';
import { compareHostLists, RAW_PATH, rawHostsBody } from '../../bench/rawHosts.js';
import { seed } from '../../bench/seed.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';

const HOSTS = 40;

/** The children lists of a host as the API answers them, by the table each comes from. */
const CHILD_LISTS: Array<[string, HistoryTable]> = [['ip_addresses', ipAddressTable], ['ports', portTable], ['services', serviceTable], ['interfaces', interfaceTable]];
/** Columns that have no value on a live row by definition. */
const ALWAYS_EMPTY_LIVE = new Set(['valid_to']);

/** A value that says something: not null, '', [], {} or false. */
const hasValue = (v: unknown) => v !== null && v !== undefined && v !== '' && v !== false
  && !(Array.isArray(v) && !v.length) && !(typeof v === 'object' && !Array.isArray(v) && !Object.keys(v as object).length);

describe('Benchmark baselines: bench/rawHosts.ts answers what GET /api/v1/hosts answers', function () {
  this.timeout(120_000);
  let app: TestApp;
  let t: Tenant;
  let admin: pg.Client;
  let atInstant: string;
  let tagId: string;

  /** GET as the Owner: the API over HTTP, the baseline (RAW_PATH) through its own function, as its route calls it. */
  const get = async (path: string): Promise<{ status: number; text: string }> => {
    if (path.startsWith(RAW_PATH)) {
      const q = new URL(path, 'http://x').searchParams;
      const text = await rawHostsBody(new Db(app.services.orm.em.fork()), app.services.config, {
        organizationId: q.get('organization_id')!, limit: Number(q.get('limit') ?? 50), offset: Number(q.get('offset') ?? 0),
        at: q.get('at') ?? undefined, tagId: q.get('tag') ?? undefined,
      });
      return { status: 200, text };
    }
    // A plain fetch: this test compares bodies; the answers' shape is the contract tests' (test/http/openapi.spec.ts).
    const res = await fetch(app.url + path, { headers: { Cookie: t.owner.cookie! } });
    return { status: res.status, text: await res.text() };
  };

  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'baselines');
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: t.defaultNetworkId, cidr: '10.0.0.0/8', name: 'bench' } }), 201);
    tagId = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'baseline', color: 'Blue' } }), 201).id;
    // The benches' own seed (2 addresses, 5 ports, 3 services, 5 bindings a host; 2 rounds of history).
    const seeded = await seed({
      databaseUrl: app.databaseUrl, organizationId: t.orgId, networkId: t.defaultNetworkId, subnetId: subnet.id,
      hosts: HOSTS, minHistory: 0, batchHosts: HOSTS, parallel: 1, log: () => undefined,
    });
    atInstant = seeded.atInstant;

    // Then a value in every column the service declares: what discovery sets, presence, vendors,
    // interfaces (none in the seed), an address binding, tags, provenance.
    admin = new pg.Client({ connectionString: app.databaseUrl });
    await admin.connect();
    const q = (sql: string, params: unknown[] = []) => admin.query(sql, params);
    const host = async (n: number) => (await q(`select id from hosts where organization_id = $1 and name like $2`, [t.orgId, `host-${String(n).padStart(5, '0')}%`])).rows[0].id as string;
    const [first, offline, stale, ignored] = [await host(1), await host(2), await host(3), await host(4)];
    const session = { type: 'Discovery', metadata: [{ type: 'Network', daemon_id: '6b1d2a3c-0000-4000-8000-000000000001', date: '2026-11-22T10:00:00Z' }] };
    await q(
      `update hosts set hostname_source = 'ptr', name_source = 'hostname', device_type = 'NAS', device_model = 'Synology DS920+',
              os_name = 'Debian Linux', os_version = '12', os_confidence = 'High', sys_descr = 'Linux nas 6.1.0', sys_object_id = '1.3.6.1.4.1.8072.3.2.10',
              sys_location = 'rack 2', sys_contact = 'ops@example.test', chassis_id = '00:11:32:aa:bb:cc',
              first_discovery_id = gen_random_uuid(), last_discovery_id = gen_random_uuid(), tags = array[$2::uuid], source = $3::jsonb,
              virtualization = '{"type": "Proxmox", "details": {"vm_id": 101}}', credential_assignments = '[{"credential_id": "6b1d2a3c-0000-4000-8000-000000000002"}]'
       where id = $1`, [first, tagId, JSON.stringify(session)]);
    // Presence: offline (a scan missed it a day ago), stale (past the network's 30 days), ignored.
    await q(`update hosts set offline_at = now() - interval '1 day' where id = $1`, [offline]);
    await q(`update hosts set offline_at = now() - interval '40 days' where id = $1`, [stale]);
    await q(`update hosts set ignored = true, hidden = true where id = $1`, [ignored]);
    await q(`update ip_addresses set mac_vendor = 'Synology Incorporated', mac_random = false, first_discovery_id = gen_random_uuid(), last_discovery_id = gen_random_uuid() where host_id = $1 and position = 0`, [first]);
    // An address, a port and a service a completed scan no longer saw (offline since two hours).
    await q(`update ip_addresses set mac_random = true, mac_address = '02:11:32:AA:BB:CD', offline_at = now() - interval '2 hours' where host_id = $1 and position = 1`, [first]);
    await q(`update ports set last_discovery_id = gen_random_uuid(), offline_at = case when number = 9100 then now() - interval '2 hours' end where host_id = $1`, [first]);
    await q(`update services set offline_at = now() - interval '2 hours' where host_id = $1 and position = 2`, [first]);
    await q(`update services set tags = array[$2::uuid], source = $3::jsonb, virtualization = '{"type": "Docker", "details": {"container": "db"}}',
                    first_discovery_id = gen_random_uuid(), last_discovery_id = gen_random_uuid() where host_id = $1`, [first, tagId, JSON.stringify(session)]);
    await q(`update bindings set last_discovery_id = gen_random_uuid() where service_id in (select id from services where host_id = $1)`, [first]);
    // An address binding (the seed's are port bindings).
    await q(
      `insert into bindings (id, organization_id, network_id, service_id, type, ip_address_id, last_seen_at)
       select gen_random_uuid(), s.organization_id, s.network_id, s.id, 'IPAddress', a.id, now()
       from services s join ip_addresses a on a.host_id = s.host_id and a.position = 1 where s.host_id = $1 and s.position = 0`, [first]);
    // Two interfaces (LLDP neighbour, forwarding table, a speed past 32 bits: a bigint answered as a number).
    await q(
      `insert into interfaces (id, organization_id, network_id, host_id, ip_address_id, if_index, if_type, if_name, if_descr, if_alias, mac_address,
                               speed_bps, admin_status, oper_status, cdp_address, cdp_device_id, cdp_platform, cdp_port_id, lldp_chassis_id,
                               lldp_mgmt_addr, lldp_port_desc, lldp_port_id, lldp_sys_desc, lldp_sys_name, neighbor, fdb_macs,
                               first_discovery_id, last_discovery_id, last_seen_at)
       select gen_random_uuid(), h.organization_id, h.network_id, h.id, a.id, k, 6, 'eth' || k, 'Ethernet ' || k, 'uplink ' || k, a.mac_address,
              10000000000, 'Up', case when k = 1 then 'Up' else 'Down' end, '10.9.9.9', 'core-sw', 'cisco WS-C2960', 'Gi0/' || k, '00:1b:21:0a:00:50',
              '10.9.9.10', 'port ' || k, 'gi' || k, 'Cisco IOS', 'lab-sw1', '{"host_id": "lab-sw1", "port": "gi1"}', '["00:50:56:01:00:01"]',
              gen_random_uuid(), gen_random_uuid(), now()
       from hosts h join ip_addresses a on a.host_id = h.id and a.position = 0, generate_series(1, 2) k where h.id = $1`, [first]);
  });

  after(async () => {
    await admin?.end();
    await app?.close();
  });

  it('answers deep-equal bodies for the live list, its pages, the list `at` an instant and the tag filter', async () => {
    const queries = ['limit=1000', 'limit=7&offset=3', `limit=50&offset=${HOSTS - 5}`, `limit=50&at=${encodeURIComponent(atInstant)}`, `limit=50&tag_ids=${tagId}`];
    const compared = await compareHostLists(get, t.orgId, queries);
    for (const c of compared) {
      expect(c.difference === null, `GET /api/v1/hosts?${c.query} against ${RAW_PATH}, first difference: ${c.difference}`).to.equal(true);
      expect(c.apiCount, `GET /api/v1/hosts?${c.query}: hosts compared`).to.be.greaterThan(0);
    }
  });

  it('compares a value in every column the hosts resource and its children declare (a column nobody seeded would not be compared)', async () => {
    const hosts = JSON.parse((await get('/api/v1/hosts?limit=1000')).text).data as Array<Record<string, any>>;
    expect(hosts).to.have.length(HOSTS);
    const rowsOf: Array<[string, HistoryTable, Array<Record<string, unknown>>]> = [
      ['hosts', hostTable, hosts],
      ...CHILD_LISTS.map(([list, table]) => [list, table, hosts.flatMap((h) => h[list] as Array<Record<string, unknown>>)] as [string, HistoryTable, Array<Record<string, unknown>>]),
      ['bindings', bindingTable, hosts.flatMap((h) => (h.services as Array<{ bindings: Array<Record<string, unknown>> }>).flatMap((s) => s.bindings))],
    ];
    const empty: string[] = [];
    for (const [list, table, rows] of rowsOf) {
      expect(rows.length, `${list}: rows compared`).to.be.greaterThan(0);
      for (const column of table.spec.columns) {
        if (!ALWAYS_EMPTY_LIVE.has(column) && !rows.some((r) => hasValue(r[column]))) empty.push(`${table.spec.table}.${column}`);
      }
    }
    expect(empty, 'declared columns without a value in any compared row: give them one in this test\'s seed (before())').to.deep.equal([]);
    // Every derived status too.
    expect(new Set(hosts.map((h) => h.status))).to.deep.equal(new Set(['online', 'offline', 'stale', 'ignored']));
  });
});
