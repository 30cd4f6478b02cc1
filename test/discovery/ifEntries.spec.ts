// What SNMP, names and MAC vendors tell, stored from a daemon's POST /api/v1/hosts/discovery
// (issue 25.1, server side): if_entries as the host's interfaces (by if_index, never erased by a
// walk cut short, a new history state only on a change, linked to addresses by MAC), hostname with
// its source, SNMP system fields, MAC vendors, and random MACs never taken for identity.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet, type ReportOptions } from './reports.js';
import { isLocallyAdministered } from '../../src/modules/discovery/plan.js';

const SWITCH_MAC = '00:1B:21:00:00:01';
/** A locally administered MAC (first octet 0xDA: bit 0x02 set), as a phone randomises it. */
const RANDOM_MAC = 'DA:A1:19:00:00:07';

/** An IfEntry as Scanopy 0.14 sends it (daemon ids and timestamps, which the server ignores), with `extra`. */
const ifEntry = (ifIndex: number, extra: Record<string, unknown> = {}) => ({
  id: randomUUID(), created_at: new Date().toISOString(), updated_at: new Date().toISOString(), host_id: randomUUID(), network_id: randomUUID(),
  if_index: ifIndex, if_descr: `GigabitEthernet0/${ifIndex}`, if_name: `Gi0/${ifIndex}`, if_alias: null, if_type: 6, speed_bps: 1_000_000_000,
  admin_status: 'Up', oper_status: 'Up', mac_address: null, interface_id: null, ...extra,
});

describe('discovery: SNMP interfaces, names and vendors from daemon reports', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  let dmz: any;

  const get = async (path: string) => expectOk(await call(app.url, 'GET', path, { auth: t.owner }));
  const interfacesOf = async (hostId: string) => (await get(`/api/v1/interfaces?host_id=${hostId}&order_by=if_index`)) as any[];
  const states = async (table: string) => (await sql<{ n: number }>(app, `select count(*)::int as n from ${table}_history`))[0]!.n;
  /** A report of the switch 10.1.0.2 with `entries`, and `extra` top-level fields. */
  const switchReport = (entries: unknown[], extra: Record<string, unknown> = {}, o: ReportOptions = {}) => ({
    ...hostReport(d, net, { name: 'sw1', hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.2', mac_address: SWITCH_MAC }], ...o }),
    if_entries: entries, ...extra,
  });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'snmp');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.1.0.0/24');
    dmz = await postSubnet(d, net, '10.2.0.0/24');
  });
  afterEach(() => app.close());

  it('if_entries become the host\'s interfaces, by if_index, linked to the address with their MAC, and are answered as IfEntries', async () => {
    const answer = await postHost(d, switchReport([
      ifEntry(1, { mac_address: SWITCH_MAC.toLowerCase(), lldp_sys_name: 'core', lldp_port_id: 'Gi1/0/1', lldp_chassis_id: '00:1B:21:AA:AA:AA' }),
      ifEntry(2, { oper_status: 'Down', if_alias: 'printer', fdb_macs: ['00:11:22:33:44:55'] }),
    ]));
    const stored = await interfacesOf(answer.id);
    expect(stored.map((i) => [i.if_index, i.if_name, i.oper_status, i.if_alias, i.mac_address, i.lldp_sys_name, i.fdb_macs])).to.deep.equal([
      [1, 'Gi0/1', 'Up', null, SWITCH_MAC, 'core', []],
      [2, 'Gi0/2', 'Down', 'printer', null, null, ['00:11:22:33:44:55']],
    ]);
    expect(stored[0].ip_address_id).to.equal(answer.interfaces[0].id);
    expect(stored[0].speed_bps).to.equal(1_000_000_000);
    // The answer lists them as IfEntries: stored ids, `interface_id` the address.
    expect(answer.if_entries.map((e: any) => [e.id, e.if_index, e.interface_id])).to.deep.equal([[stored[0].id, 1, answer.interfaces[0].id], [stored[1].id, 2, null]]);
  });

  it('an entry naming a reported address by its daemon id (`interface_id`) is linked to it, whatever MAC it has', async () => {
    const r = switchReport([], {}, { interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.2', mac_address: SWITCH_MAC }, { subnet_id: dmz.id, ip_address: '10.2.0.2' }] });
    const answer = await postHost(d, { ...r, if_entries: [ifEntry(7, { interface_id: r.interfaces[1]!.id })] });
    const dmzAddress = answer.interfaces.find((i: any) => i.ip_address === '10.2.0.2');
    expect((await interfacesOf(answer.id))[0].ip_address_id).to.equal(dmzAddress.id);
  });

  it('a later walk: unchanged entries make no history state; a changed one makes one, and what it leaves null stays', async () => {
    const entries = [ifEntry(1, { if_alias: 'uplink', lldp_sys_name: 'core' }), ifEntry(2), ifEntry(3)];
    const first = await postHost(d, switchReport(entries));
    const before = await interfacesOf(first.id);
    const statesBefore = await states('interfaces');
    // The next run: every daemon id new, the same content.
    await postHost(d, switchReport(entries.map((e) => ({ ...e, id: randomUUID() })), {}, { hostId: randomUUID() }));
    expect(await states('interfaces')).to.equal(statesBefore);
    expect(await interfacesOf(first.id)).to.deep.equal(before);

    // Port 1 goes down; the walk did not get its alias nor its LLDP neighbour this time.
    await postHost(d, switchReport([{ ...entries[0], oper_status: 'Down', if_alias: null, lldp_sys_name: undefined }, entries[1], entries[2]]));
    expect(await states('interfaces')).to.equal(statesBefore + 1);
    const after = await interfacesOf(first.id);
    expect(after.map((i) => i.id)).to.deep.equal(before.map((i) => i.id));
    expect(after[0]).to.include({ oper_status: 'Down', if_alias: 'uplink', lldp_sys_name: 'core' });
  });

  it('a walk cut short (fewer rows, if_table and fdb "partial") erases nothing and adds to the forwarding table', async () => {
    const first = await postHost(d, switchReport([
      ifEntry(1, { fdb_macs: ['00:11:22:33:44:01', '00:11:22:33:44:02'] }), ifEntry(2), ifEntry(3, { fdb_macs: ['00:11:22:33:44:03'] }),
    ], { collections: { system: 'complete', if_table: 'complete', fdb: 'complete' } }));
    await postHost(d, switchReport([ifEntry(1, { fdb_macs: ['00:11:22:33:44:09'] })], { collections: { if_table: 'partial', fdb: 'partial' } }));
    const stored = await interfacesOf(first.id);
    expect(stored.map((i) => [i.if_index, i.fdb_macs])).to.deep.equal([
      [1, ['00:11:22:33:44:01', '00:11:22:33:44:02', '00:11:22:33:44:09']], [2, []], [3, ['00:11:22:33:44:03']],
    ]);
    // A complete forwarding table replaces the port's list.
    await postHost(d, switchReport([ifEntry(1, { fdb_macs: ['00:11:22:33:44:09'] })], { collections: { fdb: 'complete' } }));
    expect((await interfacesOf(first.id))[0].fdb_macs).to.deep.equal(['00:11:22:33:44:09']);
  });

  it('an interface deleted through the API comes back with the next identical report (its digest is forgotten)', async () => {
    const report = switchReport([ifEntry(1), ifEntry(2)]);
    const first = await postHost(d, report);
    const [one] = await interfacesOf(first.id);
    expectOk(await call(app.url, 'DELETE', `/api/v1/interfaces/${one.id}`, { auth: t.owner }));
    await postHost(d, report);
    expect((await interfacesOf(first.id)).map((i) => i.if_index)).to.deep.equal([1, 2]);
  });

  it('the hostname keeps where it came from, and SNMP system fields are stored; both filled only when empty, read-only in the API', async () => {
    const system = { sys_descr: 'Cisco IOS 15.2', sys_object_id: '1.3.6.1.4.1.9.1.1208', sys_location: 'rack 4', sys_contact: 'noc@example.net', chassis_id: '00:1B:21:AA:AA:AA' };
    const report = switchReport([], {}, { hostname: 'sw1.lan' });
    const first = await postHost(d, { ...report, host: { ...report.host, hostname_source: 'ptr', ...system } });
    let host = await get(`/api/v1/hosts/${first.id}`);
    expect(host).to.include({ hostname: 'sw1.lan', hostname_source: 'ptr', ...system });

    // Another run names it by mDNS and the walk reads another location: what is stored stays.
    const later = switchReport([], {}, { hostname: 'sw1.local' });
    await postHost(d, { ...later, host: { ...later.host, hostname_source: 'mdns', sys_location: 'moved', sys_descr: null } });
    host = await get(`/api/v1/hosts/${first.id}`);
    expect(host).to.include({ hostname: 'sw1.lan', hostname_source: 'ptr', ...system });

    // A client echoing the host back cannot set them.
    const put = expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${first.id}`, { auth: t.owner, body: { ...host, hostname_source: 'snmp', sys_location: 'x' } }));
    expect(put).to.include({ hostname_source: 'ptr', sys_location: 'rack 4' });
  });

  it('a host named without a source (a Scanopy daemon) has hostname_source null', async () => {
    const first = await postHost(d, hostReport(d, net, { hostname: 'web.lan', interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.9' }] }));
    expect(await get(`/api/v1/hosts/${first.id}`)).to.include({ hostname: 'web.lan', hostname_source: null, sys_descr: null });
  });

  it('addresses carry their MAC\'s vendor and whether it is random; read-only', async () => {
    const report = hostReport(d, net, { interfaces: [{ subnet_id: lan.id, ip_address: '10.1.0.7', mac_address: RANDOM_MAC }, { subnet_id: dmz.id, ip_address: '10.2.0.7', mac_address: SWITCH_MAC }] });
    report.interfaces[1] = { ...report.interfaces[1]!, mac_vendor: 'Intel Corporate', mac_random: false } as any;
    const first = await postHost(d, report);
    const ips = (await get(`/api/v1/ip-addresses?host_id=${first.id}&order_by=ip_address`).catch(() => null))
      ?? (await get(`/api/v1/hosts/${first.id}`)).ip_addresses;
    const byIp = new Map((ips as any[]).map((i) => [i.ip_address, i]));
    expect(byIp.get('10.1.0.7')).to.include({ mac_random: true, mac_vendor: null });
    expect(byIp.get('10.2.0.7')).to.include({ mac_random: false, mac_vendor: 'Intel Corporate' });
    // A later report without the vendor keeps it.
    await postHost(d, hostReport(d, net, { interfaces: [{ subnet_id: dmz.id, ip_address: '10.2.0.7', mac_address: SWITCH_MAC }] }));
    const host = await get(`/api/v1/hosts/${first.id}`);
    expect(host.ip_addresses.find((i: any) => i.ip_address === '10.2.0.7')).to.include({ mac_vendor: 'Intel Corporate' });
  });

  it('a random MAC is never identity alone: the same random MAC at other addresses is another host; at the same address, the same host', async () => {
    const at = (subnet: any, ip: string, mac: string) => postHost(d, hostReport(d, net, { interfaces: [{ subnet_id: subnet.id, ip_address: ip, mac_address: mac }] }));
    const phone = await at(lan, '10.1.0.50', RANDOM_MAC);
    const other = await at(dmz, '10.2.0.51', RANDOM_MAC);
    expect(other.id).to.not.equal(phone.id);
    expect((await at(lan, '10.1.0.50', RANDOM_MAC)).id).to.equal(phone.id);
    // A universally administered MAC still is (reference §2.2.1).
    const server = await at(lan, '10.1.0.60', SWITCH_MAC);
    expect((await at(dmz, '10.2.0.60', SWITCH_MAC)).id).to.equal(server.id);
  });
});

describe('discovery: locally administered MACs (pure)', () => {
  it('bit 0x02 of the first octet, whatever the case', () => {
    expect(['02:00:00:00:00:01', 'da:a1:19:00:00:07', 'AA:BB:CC:00:00:01', '0E:00:00:00:00:00'].map(isLocallyAdministered)).to.deep.equal([true, true, true, true]);
    expect(['00:1B:21:00:00:01', 'A8:BB:CC:00:00:01', '01:00:5E:00:00:01', 'fc:00:00:00:00:00'].map(isLocallyAdministered)).to.deep.equal([false, false, false, false]);
    expect([null, undefined, ''].map(isLocallyAdministered)).to.deep.equal([false, false, false]);
  });
});
