// The L2 view from what a daemon's SNMP walks report (issue 25.1): LLDP neighbour pairs as one
// edge each, and hosts placed on the switch ports whose forwarding tables learned their MAC (the
// access port, never an uplink to another switch), through POST /api/v1/hosts/discovery and
// GET /api/v1/topology?view=l2.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { layoutGraph } from '../../src/modules/topology/layout.js';

const MAC = {
  core: '00:1B:21:00:00:01', access: '00:1B:21:00:00:02', server: '00:16:3E:00:00:10', laptop: '3C:22:FB:00:00:11',
  printer: '00:80:77:00:00:12', nas: '00:11:32:00:00:13',
};
/** MACs no host of the inventory has (behind an unmanaged switch). */
const strangers = (n: number) => [...Array(n).keys()].map((k) => `00:50:56:00:01:${String(k).padStart(2, '0')}`);

const port = (ifIndex: number, extra: Record<string, unknown> = {}) => ({ if_index: ifIndex, if_name: `Gi0/${ifIndex}`, if_descr: `GigabitEthernet0/${ifIndex}`, ...extra });

describe('topology: the l2 view from SNMP (LLDP neighbours, forwarding tables)', () => {
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;

  const l2 = async () => expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${net}&view=l2`, { auth: t.owner }));
  /** A host report: the host at `ip` with `mac`, SNMP entries and host fields. */
  const report = (name: string, ip: string, mac: string, entries: unknown[] = [], host: Record<string, unknown> = {}) => {
    const r = hostReport(d, net, { name, hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: ip, mac_address: mac }] });
    return { ...r, host: { ...r.host, ...host }, if_entries: entries, collections: { if_table: 'complete', fdb: 'complete', lldp: 'complete' } };
  };
  /** The view's links as `host:port — host:port` (sorted), with their evidence. */
  const links = (view: any) => {
    const nodes = new Map<string, any>(view.nodes.map((n: any) => [n.id, n]));
    const name = (id: string) => `${nodes.get(nodes.get(id).parent_id).label}:${nodes.get(id).label}`;
    return view.edges.filter((e: any) => e.kind === 'physical_link')
      .map((e: any) => `${[name(e.source), name(e.target)].sort().join(' — ')}${e.evidence ? ` (${e.evidence})` : ''}`).sort();
  };

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'l2snmp');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.1.0.0/24');
  });
  afterEach(() => app.close());

  it('LLDP: a pair reported by both ends is one edge; a neighbour named by chassis id (a host\'s chassis_id, or its MAC) is found', async () => {
    const coreChassis = '00:1B:21:FF:FF:FF';
    await postHost(d, report('core', '10.1.0.1', MAC.core, [port(1, { lldp_sys_name: 'access.lan', lldp_port_id: 'Gi0/24' }), port(2)], { chassis_id: coreChassis }));
    // The other end of that link names core by its chassis id and the port by its description.
    // Its Gi0/3 learned db's MAC too: LLDP already says where db is, and no second link is drawn.
    await postHost(d, report('access', '10.1.0.2', MAC.access, [
      port(24, { lldp_chassis_id: coreChassis, lldp_port_id: 'GigabitEthernet0/1' }), port(3, { fdb_macs: ['00:0B:86:00:00:21'] }),
    ], { hostname: 'access.lan' }));
    // Hosts running lldpd, on ports whose switch reports no neighbour there.
    await postHost(d, report('ap', '10.1.0.20', '00:0B:86:00:00:20', [{ if_index: 1, if_name: 'eth0', lldp_chassis_id: coreChassis.toLowerCase(), lldp_port_id: 'Gi0/2' }]));
    await postHost(d, report('db', '10.1.0.21', '00:0B:86:00:00:21', [{ if_index: 1, if_name: 'eth0', lldp_chassis_id: MAC.access, lldp_port_id: '3', lldp_port_desc: 'Gi0/3' }]));
    const view = await l2();
    expect(view.available_views).to.include('l2');
    expect(links(view)).to.deep.equal(['access:Gi0/24 — core:Gi0/1', 'access:Gi0/3 — db:eth0', 'ap:eth0 — core:Gi0/2']);
  });

  it('hosts are placed on the port whose forwarding table learned their MAC: the access port, never an uplink to another switch', async () => {
    // core Gi0/1 is the uplink to access Gi0/24 (LLDP): it learns everything behind access.
    await postHost(d, report('core', '10.1.0.1', MAC.core, [
      port(1, { lldp_sys_name: 'access', lldp_port_id: 'Gi0/24', fdb_macs: [MAC.server, MAC.laptop, MAC.nas, MAC.access] }),
      port(2, { fdb_macs: [MAC.printer] }),
    ], { chassis_id: MAC.core }));
    await postHost(d, report('access', '10.1.0.2', MAC.access, [
      port(24, { lldp_chassis_id: MAC.core, lldp_port_id: 'Gi0/1', fdb_macs: [MAC.printer, MAC.core] }),
      port(3, { fdb_macs: [MAC.server] }),
      port(4, { fdb_macs: [MAC.laptop] }),
      // An unmanaged switch on Gi0/5: the nas and five others; more MACs than the uplink learned, and still the nas's port.
      // It saw the printer too (flooded): the printer stays on core Gi0/2, which learned only it.
      port(5, { fdb_macs: [MAC.nas, MAC.printer, ...strangers(5)] }),
    ]));
    await postHost(d, report('server', '10.1.0.10', MAC.server));
    await postHost(d, report('nas', '10.1.0.13', MAC.nas));
    await postHost(d, report('printer', '10.1.0.12', MAC.printer));
    // The laptop reports its own interface (an SNMP agent on it): that interface is the one placed.
    await postHost(d, report('laptop', '10.1.0.11', MAC.laptop, [{ if_index: 2, if_name: 'wlan0', mac_address: MAC.laptop }]));

    const view = await l2();
    expect(links(view)).to.deep.equal([
      `access:Gi0/24 — core:Gi0/1`,
      `access:Gi0/3 — server:${MAC.server} (forwarding_table)`,
      `access:Gi0/4 — laptop:wlan0 (forwarding_table)`,
      `access:Gi0/5 — nas:${MAC.nas} (forwarding_table)`,
      `core:Gi0/2 — printer:${MAC.printer} (forwarding_table)`,
    ]);
    // A port drawn from an address says so, and names the address.
    const server = view.nodes.find((n: any) => n.label === MAC.server);
    expect(server).to.include({ kind: 'interface', entity_kind: 'ip_address' });
    const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${server.parent_id.slice('host:'.length)}`, { auth: t.owner }));
    expect(server.entity_id).to.equal(host.ip_addresses[0].id);
    // Dragging the server pins it with its ports, the one drawn from its address too.
    const pinned = expectOk(await call(app.url, 'PUT', '/api/v1/topology/positions', {
      auth: t.owner, body: { network_id: net, view: 'l2', positions: { [server.parent_id]: { x: 10, y: 20 }, [server.id]: { x: 12, y: 40 } } },
    }));
    expect(pinned.pinned.sort()).to.deep.equal([server.parent_id, server.id].sort());
    // The wiring-diagram layout places every node, the ports drawn from addresses too.
    const positions = await layoutGraph(view.nodes, view.edges);
    expect(Object.keys(positions).sort()).to.deep.equal(view.nodes.map((n: any) => n.id).sort());
  });

  it('the switch\'s own MACs in its forwarding table (from an agent that does not drop them) never place anything on its ports, even a second host that has one', async () => {
    // Issue 37: access's VLAN interface (10.1.0.3, its own MAC `svi`) answered a sweep as a host of its
    // own; access's table lists that MAC, its chassis id and its address's MAC on its ports (as self or
    // mgmt), next to the server it really learned on Gi0/3.
    const svi = '00:1B:21:00:00:22';
    const chassis = '00:1B:21:00:00:21';
    await postHost(d, report('server', '10.1.0.10', MAC.server));
    await postHost(d, report('access-vlan20', '10.1.0.3', svi));
    await postHost(d, report('access', '10.1.0.2', MAC.access, [
      port(3, { fdb_macs: [MAC.server, svi] }), port(4, { fdb_macs: [svi, chassis, MAC.access] }),
      { if_index: 120, if_name: 'Vlan20', mac_address: svi },
    ], { chassis_id: chassis }));
    expect(links(await l2())).to.deep.equal([`access:Gi0/3 — server:${MAC.server} (forwarding_table)`]);
  });

  it('a host that moves to another port moves in the view with the next walk; a walk cut short keeps the last placement', async () => {
    const access = (fdb: Record<number, string[]>, collections?: Record<string, string>) => {
      const r = report('access', '10.1.0.2', MAC.access, [port(3, { fdb_macs: fdb[3] ?? [] }), port(4, { fdb_macs: fdb[4] ?? [] })]);
      return { ...r, host: { ...r.host, id: randomUUID() }, ...(collections ? { collections } : {}) };
    };
    await postHost(d, report('server', '10.1.0.10', MAC.server));
    await postHost(d, access({ 3: [MAC.server] }));
    expect(links(await l2())).to.deep.equal([`access:Gi0/3 — server:${MAC.server} (forwarding_table)`]);
    await postHost(d, access({ 4: [MAC.server] }));
    expect(links(await l2())).to.deep.equal([`access:Gi0/4 — server:${MAC.server} (forwarding_table)`]);
    // A cut-short walk that reached neither port's table leaves both as they were.
    await postHost(d, { ...access({}), if_entries: [], collections: { if_table: 'partial', fdb: 'partial' } });
    expect(links(await l2())).to.deep.equal([`access:Gi0/4 — server:${MAC.server} (forwarding_table)`]);
  });
});
