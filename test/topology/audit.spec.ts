// Topology behaviours an audit found no test for (issue 22): the diff of a port-only and of a
// binding-only change, a tag-filtered map next to a cached unfiltered one, and L2 links resolved
// from LLDP and CDP neighbour data.
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { buildNetwork, type Net } from '../support/network.js';

describe('topology: what the audit slipped past', () => {
  let app: TestApp;
  let t: Tenant;
  let n: Net;
  const get = async (path: string) => expectOk(await call(app.url, 'GET', path, { auth: t.owner }));
  const put = async (path: string, body: unknown) => expectOk(await call(app.url, 'PUT', path, { auth: t.owner, body }));
  const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth: t.owner, body }), 201);
  const topo = (query = '', networkId = t.defaultNetworkId) => get(`/api/v1/topology?network_id=${networkId}${query}`);
  const diff = (from: string, to: string) => get(`/api/v1/topology/diff?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
  /** A diff's changed nodes: id → the fields that changed. */
  const changedNodes = (d: any) => new Map<string, any>(d.nodes.changed.map((c: any) => [c.id, c.changes]));
  const names = (services: any[]) => services.map((s: any) => s.name);

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'audit');
    n = await buildNetwork(app, t.owner, t.defaultNetworkId);
  });
  afterEach(() => app.close());

  it('diff: a port renumbered, and a binding moved to another address, are changes (neither touches the host itself)', async () => {
    const t0 = (await topo()).as_of;
    const port = n.web.ports.find((p: any) => p.number === 443);
    await put(`/api/v1/ports/${port.id}`, { number: 8443, protocol: 'Tcp' });
    const t1 = (await topo()).as_of;
    const metrics = n.web.services.find((s: any) => s.name === 'metrics');
    await put(`/api/v1/bindings/${metrics.bindings[0].id}`, { type: 'IPAddress', ip_address_id: n.ip.webA });
    const t2 = (await topo()).as_of;

    // The port: nginx is drawn on both of web's addresses, with its port.
    const renumbered = changedNodes(await diff(t0, t1));
    expect([...renumbered.keys()].sort()).to.deep.equal([`ip_address:${n.ip.webA}`, `ip_address:${n.ip.webB}`].sort());
    const [before, after] = renumbered.get(`ip_address:${n.ip.webA}`).services;
    expect(before.find((s: any) => s.name === 'nginx').ports).to.deep.equal([{ number: 443, protocol: 'Tcp' }]);
    expect(after.find((s: any) => s.name === 'nginx').ports).to.deep.equal([{ number: 8443, protocol: 'Tcp' }]);

    // The binding: metrics leaves web's second address for its first.
    const moved = changedNodes(await diff(t1, t2));
    expect([...moved.keys()].sort()).to.deep.equal([`ip_address:${n.ip.webA}`, `ip_address:${n.ip.webB}`].sort());
    expect(moved.get(`ip_address:${n.ip.webB}`).services.map(names)).to.deep.equal([['nginx', 'metrics'], ['nginx']]);
    expect(moved.get(`ip_address:${n.ip.webA}`).services.map(names)).to.deep.equal([['nginx', 'agent'], ['nginx', 'metrics', 'agent']]);
  });

  it('a tag-filtered map asked after the unfiltered one (cached) is filtered, and the unfiltered one is still whole', async () => {
    const tag = await post('/api/v1/tags', { name: 'prod', color: 'Red' });
    await put(`/api/v1/hosts/${n.bare.id}`, { id: n.bare.id, name: 'bare', hidden: false, tags: [tag.id] });
    const hostsOf = (data: any) => [...new Set(data.nodes.filter((x: any) => x.kind !== 'subnet').map((x: any) => x.host_id ?? x.entity_id))].sort();
    const whole = await topo();
    expect(hostsOf(await topo())).to.deep.equal(hostsOf(whole)); // drawn once, then served from the cache
    expect(hostsOf(whole)).to.have.members([n.web.id, n.db.id, n.bare.id]);
    const filtered = await topo(`&tag_ids=${tag.id}`);
    expect(hostsOf(filtered)).to.deep.equal([n.bare.id]);
    expect(filtered.filtered_out).to.include({ hosts_without_tag: 2 });
    expect(filtered.digest).to.not.equal(whole.digest);
    expect(hostsOf(await topo())).to.deep.equal(hostsOf(whole));
  });

  it('l2: links resolved from LLDP (system name, port id) and CDP (device id, port id) name the neighbour\'s host and interface', async () => {
    const net = await createNetwork(app.url, t.owner, 'Wiring');
    const hostOn = (name: string, hostname: string | null) => post('/api/v1/hosts', { network_id: net, name, hostname });
    const [sw, server, phone, stray] = [await hostOn('core-switch', 'sw1.lan'), await hostOn('server', null), await hostOn('phone', null), await hostOn('stray', null)];
    const iface = (host: any, ifIndex: number, extra: Record<string, unknown>) => post('/api/v1/interfaces', { host_id: host.id, if_index: ifIndex, ...extra });
    const gi1 = await iface(sw, 1, { if_name: 'Gi0/1' });
    const gi2 = await iface(sw, 2, { if_name: 'Gi0/2', if_descr: 'GigabitEthernet0/2' });
    await iface(sw, 3, { if_name: 'Gi0/3' });
    // LLDP names the switch by its hostname, CDP by its name and the port by its description; case differs.
    const serverEth = await iface(server, 1, { if_name: 'eth0', lldp_sys_name: 'SW1.lan', lldp_port_id: 'gi0/1' });
    const phoneEth = await iface(phone, 1, { if_name: 'eth0', cdp_device_id: 'Core-Switch', cdp_port_id: 'GigabitEthernet0/2' });
    await iface(stray, 1, { if_name: 'eth0', lldp_sys_name: 'unknown-switch', lldp_port_id: 'Gi0/3' }); // names no host here: no link

    const l2 = await topo('&view=l2', net);
    expect(l2.available_views).to.include('l2');
    const link = (a: string, b: string) => [a, b].sort().map((id) => `interface:${id}`);
    expect(l2.edges.map((e: any) => [e.kind, [e.source, e.target].sort()]).sort()).to.deep.equal([
      ['physical_link', link(serverEth.id, gi1.id)],
      ['physical_link', link(phoneEth.id, gi2.id)],
    ].sort());
  });
});
