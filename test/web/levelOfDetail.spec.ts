// The map's level of detail and labels (web/src/mapState.ts), pure: no DOM, no browser.
import { expect } from 'chai';
import { cardLines, containerCardLines, containerTitle, exportLabelOf, groupCardLines, hangingHosts, labelsOf, labelVariants, levelOfDetail, titleThatFits, type GraphEdge, type GraphNode } from '../../web/src/mapState.js';

const node = (x: Partial<GraphNode> & { id: string }): GraphNode => ({ kind: 'ip_address', entity_id: null, parent_id: null, label: x.id, ...x });

describe('web map level of detail (pure)', () => {
  it('draws labels at 11 CSS px or more on screen at every zoom, and says more as one zooms in', () => {
    for (let zoom = 0.02; zoom <= 4; zoom *= 1.03) {
      const lod = levelOfDetail(zoom);
      expect(lod.font * zoom, `zoom ${zoom}`).to.be.at.least(11);
      // Zoomed out, a constant size on screen; zoomed in past 1, the text grows with its box.
      if (zoom <= 1) expect(lod.font * zoom, `zoom ${zoom}`).to.be.at.most(13);
    }
    expect([0.1, 0.4, 0.8, 1.2].map((z) => levelOfDetail(z).level)).to.deep.equal([0, 1, 2, 3]);
    // Zooms within one step share a style: the drawing is restyled only when a step is crossed.
    expect(levelOfDetail(0.5).step).to.equal(levelOfDetail(0.51).step);
  });

  it('labels a host by name, then with its address, then with its services; a service of the application view with its host', () => {
    const ip = node({ id: 'ip_address:a', label: 'web-01 10.0.0.1', host_name: 'web-01', ip_address: '10.0.0.1', services: [{ id: 's', name: 'nginx', ports: [{ number: 443, protocol: 'Tcp' }] }] });
    expect(labelsOf(ip)).to.deep.equal({ name: 'web-01', mid: 'web-01\n10.0.0.1', full: 'web-01\n10.0.0.1\nnginx :443' });
    expect(labelsOf(node({ id: 'service:s', kind: 'service', label: 'nginx', host_name: 'web-01' })).name).to.equal('nginx · web-01');
    expect(labelsOf(node({ id: 'service:t', kind: 'service', label: 'cron' })).name).to.equal('cron'); // workloads: inside its host already
    // An address of one container: the container with its host.
    const traefik = node({ id: 'ip_address:t', label: 'docker-01 172.18.0.10', host_name: 'docker-01', ip_address: '172.18.0.10', workload: 'traefik' });
    expect(labelsOf(traefik)).to.include({ name: 'traefik · docker-01', mid: 'traefik · docker-01\n172.18.0.10' });
  });

  it('titles a subnet with its CIDR and how many hosts it holds', () => {
    const subnet = node({ id: 'subnet:s', kind: 'subnet', label: 'servers', cidr: '10.0.2.0/24' });
    const kids = [node({ id: 'ip_address:1', host_id: 'h1' }), node({ id: 'ip_address:2', host_id: 'h1' }), node({ id: 'ip_address:3', host_id: 'h2' })];
    expect(containerTitle(subnet, kids)).to.equal('servers · 10.0.2.0/24 · 2 hosts');
    expect(containerTitle({ ...subnet, label: '10.0.2.0/24' }, kids.slice(0, 1))).to.equal('10.0.2.0/24 · 1 host');
    expect(containerTitle(node({ id: 'host:h', kind: 'host', label: 'docker-01' }), kids)).to.equal('docker-01');
    // Hosts folded into the subnet's summary node count too.
    const folded = node({ id: 'summary:s', kind: 'summary', label: '2 hosts · 10.0.2.0/24', hosts: [{ id: 'h3', name: 'a', ip_address: '10.0.2.3' }, { id: 'h4', name: 'b', ip_address: '10.0.2.4' }] as GraphNode['hosts'] });
    expect(containerTitle(subnet, [...kids, folded])).to.equal('servers · 10.0.2.0/24 · 4 hosts');
  });

  it('shortens a subnet title to what reads whole in its box on screen: without the CIDR, then the bare count, then the name', () => {
    const dmz = node({ id: 'subnet:d', kind: 'subnet', label: 'dmz', cidr: '10.10.3.0/24' });
    const kids = [node({ id: 'ip_address:1', host_id: 'h1' }), node({ id: 'ip_address:2', host_id: 'h2' })];
    const at = (widthPx: number) => titleThatFits(dmz, kids, widthPx);
    expect(at(400)).to.equal('dmz · 10.10.3.0/24 · 2 hosts');
    // The box at Fit in docs/web-l3.png: about 145 px, where the whole title was cut.
    expect(at(145)).to.equal('dmz · 2 hosts');
    expect(at(80)).to.equal('dmz · 2');
    expect(at(40)).to.equal('dmz');
    // Not even the name: no title rather than a cut one (issue 40.1).
    expect(at(20)).to.equal('');
    // Whatever the width, what is chosen fits it at 7.6 px a character and 14 px of padding, or is nothing.
    for (let w = 0; w < 400; w += 5) expect(at(w) === '' || at(w).length * 7.6 + 14 <= w, `${w} px`).to.equal(true);
    // Measured (the map measures its font): the same rule with the widths given.
    expect(titleThatFits(dmz, kids, 100, 0, (t) => t.length * 5)).to.equal('dmz · 2 hosts');
  });

  it('an element may say, most first: everything, name and address, the name; never a cut one (the map draws the first that fits)', () => {
    const ip = node({ id: 'ip_address:a', label: 'web-01 10.0.0.1', host_name: 'web-01', ip_address: '10.0.0.1', services: [{ id: 's', name: 'nginx', ports: [{ number: 443, protocol: 'Tcp' }] }] });
    expect(labelVariants(ip, 3)).to.deep.equal(['web-01\n10.0.0.1\nnginx :443', 'web-01\n10.0.0.1', 'web-01']);
    expect(labelVariants(ip, 2)).to.deep.equal(['web-01\n10.0.0.1', 'web-01']);
    expect(labelVariants(ip, 1)).to.deep.equal(['web-01']);
    expect(labelVariants(ip, 0)).to.deep.equal(['web-01']);
    // A host named by its address: the whole address, once.
    const bare = node({ id: 'ip_address:b', label: '198.18.23.45 198.18.23.45', host_name: '198.18.23.45', ip_address: '198.18.23.45' });
    expect(labelVariants(bare, 1)).to.deep.equal(['198.18.23.45']);
    expect(labelVariants(bare, 2)).to.deep.equal(['198.18.23.45']);
  });

  it('a summary of quiet hosts is a card: count, subnet, kinds, offline and new, one short line each; fewer lines when small', () => {
    const summary = node({
      id: 'summary:o', kind: 'summary', label: '95 hosts · 10.10.1.0/24', cidr: '10.10.1.0/24', subnet_name: 'office', counts: { host: 95 },
      host_kinds: { workstation: 90, printer: 3, phone: 1, camera: 1 }, offline_count: 2, new_count: 1,
    });
    expect(cardLines(summary)).to.deep.equal(['95 hosts', 'office · 10.10.1.0/24', '90 workstations', '3 printers', '2 more', '2 offline · 1 new']);
    expect(labelVariants(summary, 1)[0]).to.equal(cardLines(summary)!.join('\n'));
    expect(labelVariants(summary, 1).at(-1)).to.equal('95 hosts');
    expect(exportLabelOf(summary)).to.equal(cardLines(summary)!.join('\n'));
    // In History the live count is a bound.
    expect(cardLines({ ...summary, label: 'up to 95 hosts · 10.10.1.0/24' })![0]).to.equal('up to 95 hosts');
    const collapsed = node({ id: 'subnet:s', kind: 'collapsed', label: 'servers', counts: { ip_address: 250 } });
    expect(cardLines(collapsed)).to.deep.equal(['servers', '250 addresses']);
  });

  it('a container drawn as a card says how many hosts of which kinds, offline and new (a summary inside it counted in)', () => {
    const subnet = node({ id: 'subnet:o', kind: 'subnet', label: 'office', cidr: '10.10.1.0/24' });
    const kids = [
      node({ id: 'ip_address:1', host_id: 'cam1', host_kind: 'camera' }), node({ id: 'ip_address:2', host_id: 'cam2', host_kind: 'camera', offline: true }),
      node({ id: 'ip_address:3', host_id: 'ap1', host_kind: 'access_point', new: true }), node({ id: 'ip_address:4', host_id: 'ap1', host_kind: 'access_point' }),
      node({ id: 'summary:o', kind: 'summary', host_kinds: { workstation: 9 }, offline_count: 1, hosts: Array.from({ length: 9 }, (_, i) => ({ id: `ws${i}`, name: `ws-${i}`, ip_address: `10.10.1.${i}` })) }),
    ];
    expect(containerCardLines(subnet, kids)).to.deep.equal(['12 hosts', '9 workstations', '2 cameras', '1 access point', '2 offline · 1 new']);
    const host = node({ id: 'host:d', kind: 'host', label: 'docker-01' });
    const services = ['docker', 'traefik', 'grafana', 'loki'].map((name) => node({ id: `service:${name}`, kind: 'service', label: name, host_id: 'd' }));
    expect(containerCardLines(host, services)).to.deep.equal(['4 services', 'docker', 'traefik', '2 more']);
    const ports = Array.from({ length: 36 }, (_, i) => node({ id: `interface:${i}`, kind: 'interface', label: `Gi1/0/${i + 1}`, oper_status: i < 30 ? 'Up' : 'Down' }));
    expect(containerCardLines(node({ id: 'host:sw', kind: 'host', label: 'core-sw-01' }), ports)).to.deep.equal(['36 interfaces', '30 up']);
  });

  it('l2: the hosts hanging off a switch (linked to it alone) are its group, a card of their count, kinds, offline and new, then its ports', () => {
    const sw = node({ id: 'host:sw', kind: 'host', entity_id: 'sw', label: 'core-sw-01', host_kind: 'switch' });
    const sw2 = node({ id: 'host:sw2', kind: 'host', entity_id: 'sw2', label: 'edge-sw', host_kind: 'switch' });
    const nodes: GraphNode[] = [sw, sw2];
    const edges: GraphEdge[] = [];
    for (let i = 1; i <= 8; i++) {
      nodes.push(node({ id: `interface:sw${i}`, kind: 'interface', label: `Gi1/0/${i}`, parent_id: 'host:sw', oper_status: 'Up' }));
      nodes.push(node({ id: `host:h${i}`, kind: 'host', entity_id: `h${i}`, label: `ws-${i}`, host_kind: i <= 5 ? 'workstation' : 'camera', offline: i === 1, new: i === 2 }));
      nodes.push(node({ id: `interface:h${i}`, kind: 'interface', label: 'eth0', parent_id: `host:h${i}` }));
    }
    const link = (a: string, b: string) => edges.push({ id: `physical_link:${a}:${b}`, kind: 'physical_link', source: `interface:${a}`, target: `interface:${b}` });
    for (let i = 1; i <= 6; i++) link(`sw${i}`, `h${i}`);
    // h7 is linked to both switches: not hanging off either; the uplink to sw2 (which has three hosts: fewer than a group).
    nodes.push(node({ id: 'interface:sw2a', kind: 'interface', label: 'Gi0/1', parent_id: 'host:sw2' }), node({ id: 'interface:h7b', kind: 'interface', label: 'eth1', parent_id: 'host:h7' }));
    link('sw7', 'h7');
    link('sw2a', 'h7b');
    link('sw8', 'sw2a');
    const containers = new Set(nodes.filter((n) => n.parent_id).map((n) => n.parent_id!));
    expect(Object.fromEntries(hangingHosts(nodes, edges, containers))).to.deep.equal({ 'host:sw': ['host:h1', 'host:h2', 'host:h3', 'host:h4', 'host:h5', 'host:h6'] });
    // Two hosts linked only to each other are no group; nor three off one switch.
    expect(hangingHosts(nodes, edges.slice(0, 3), containers).size).to.equal(0);
    const hosts = nodes.filter((n) => /^host:h[1-6]$/.test(n.id));
    const ports = nodes.filter((n) => n.parent_id === 'host:sw');
    expect(groupCardLines(sw, hosts, ports)).to.deep.equal(['6 hosts', '5 workstations', '1 camera', '1 offline · 1 new', '8 interfaces', '8 up']);
  });
});
