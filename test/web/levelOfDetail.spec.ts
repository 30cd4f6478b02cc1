// The map's level of detail and labels (web/src/mapState.ts), pure: no DOM, no browser.
import { expect } from 'chai';
import { containerTitle, labelsOf, levelOfDetail, titleThatFits, type GraphNode } from '../../web/src/mapState.js';

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
    expect(at(20)).to.equal('dmz');
    // Whatever the width, what is chosen fits it at 7.6 px a character and 14 px of padding, or is the name.
    for (let w = 0; w < 400; w += 5) expect(at(w).length * 7.6 + 14 <= w || at(w) === 'dmz', `${w} px`).to.equal(true);
  });
});
