// The map's draw.io export (web/src/exportDrawio.ts), pure: elements and positions in, an mxfile
// out, read back with an XML parser (fast-xml-parser) as draw.io reads it: vertices with their
// labels and geometry, groups as parents, edges between their cells.
import { expect } from 'chai';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { drawioImage, toDrawio } from '../../web/src/exportDrawio.js';
import type { Box, GraphEdge, GraphNode } from '../../web/src/mapState.js';

const node = (x: Partial<GraphNode> & { id: string }): GraphNode => ({ kind: 'ip_address', entity_id: null, parent_id: null, label: x.id, ...x });

/** Two subnets, a host container inside one (nested group), elements, a folded-away one and a ghost. */
function drawing() {
  const nodes: GraphNode[] = [
    node({ id: 'subnet:servers', kind: 'subnet', label: 'servers', cidr: '10.0.2.0/24' }),
    node({ id: 'subnet:dmz', kind: 'subnet', label: 'dmz', cidr: '10.0.3.0/24' }),
    node({ id: 'ip_address:web', parent_id: 'subnet:servers', host_id: 'h1', host_name: 'web-01', label: 'web-01 10.0.2.21', ip_address: '10.0.2.21', host_kind: 'server',
      services: [{ id: 's1', name: 'nginx', ports: [{ number: 443, protocol: 'Tcp' }] }, { id: 's2', name: 'node-exporter', ports: [{ number: 9100, protocol: 'Tcp' }] }] }),
    node({ id: 'host:docker', kind: 'host', entity_id: 'h2', parent_id: 'subnet:servers', label: 'docker-01' }),
    node({ id: 'service:traefik', kind: 'service', parent_id: 'host:docker', label: 'traefik', host_name: 'docker-01' }),
    node({ id: 'ip_address:proxy', parent_id: 'subnet:dmz', host_id: 'h3', host_name: 'proxy-01', label: 'proxy-01 10.0.3.5', ip_address: '10.0.3.5' }),
    node({ id: 'ip_address:gone', parent_id: 'subnet:dmz', host_id: 'h4', host_name: 'gone', label: 'gone' }),
    node({ id: 'ghost:dns', kind: 'ghost', label: 'unbound · dns-01 (hidden host)' }),
  ];
  const positions: Record<string, Box> = {
    'subnet:servers': { x: 0, y: 0, width: 600, height: 300 },
    'subnet:dmz': { x: 700, y: 0, width: 300, height: 200 },
    'ip_address:web': { x: 20, y: 40, width: 160, height: 68 },
    'host:docker': { x: 220, y: 40, width: 300, height: 200 },
    'service:traefik': { x: 240, y: 80, width: 180, height: 36 },
    'ip_address:proxy': { x: 720, y: 40, width: 150, height: 36 },
    'ip_address:gone': { x: 720, y: 100, width: 150, height: 36 },
    'ghost:dns': { x: -300, y: 0, width: 250, height: 36 },
  };
  const edges: GraphEdge[] = [
    { id: 'e:shop', kind: 'request_path', source: 'ip_address:proxy', target: 'ip_address:web', color: 'Teal', label: 'Web shop', dependency_id: 'd1', edge_style: 'Bezier' } as GraphEdge,
    { id: 'e:shop2', kind: 'request_path', source: 'ip_address:web', target: 'service:traefik', color: 'Teal', label: 'Web shop', dependency_id: 'd1' } as GraphEdge,
    { id: 'e:dns', kind: 'hub_and_spoke', source: 'ghost:dns', target: 'ip_address:web', color: 'Sky', label: 'Internal DNS', dependency_id: 'd2' } as GraphEdge,
    { id: 'e:gone', kind: 'same_host', source: 'ip_address:gone', target: 'ip_address:proxy' } as GraphEdge,
  ];
  return { nodes, edges, positions };
}

type Cell = Record<string, any>;
function parse(text: string): { vertices: Cell[]; edges: Cell[]; byId: Map<string, Cell> } {
  expect(XMLValidator.validate(text)).to.equal(true);
  const file = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', processEntities: true, htmlEntities: true }).parse(text);
  const cells: Cell[] = [file.mxfile.diagram.mxGraphModel.root.mxCell].flat();
  return { vertices: cells.filter((c) => c.vertex === '1'), edges: cells.filter((c) => c.edge === '1'), byId: new Map(cells.map((c) => [c.id, c])) };
}

describe('web map draw.io export (pure)', () => {
  it('writes every drawn node as a vertex with its whole label, groups as parents with relative geometry, edges between their cells', () => {
    const { nodes, edges, positions } = drawing();
    const text = toDrawio({ title: 'HQ — l3 — 2026-12-02', nodes, edges, positions, omit: new Set(['ip_address:gone']) });
    const { vertices, edges: links, byId } = parse(text);

    expect(vertices).to.have.length(nodes.length - 1); // all but the one left out
    expect(byId.has('ip_address:gone')).to.equal(false);
    // The root cells draw.io expects.
    expect(byId.get('0')).to.not.have.property('parent');
    expect(byId.get('1')!.parent).to.equal('0');

    // Groups: subnets and the host holding a service, containers (container=1) whose elements name them as parent.
    for (const id of ['subnet:servers', 'subnet:dmz', 'host:docker']) expect(byId.get(id)!.style, id).to.contain('container=1;');
    expect(byId.get('subnet:servers')!.parent).to.equal('1');
    expect(byId.get('ip_address:web')!.parent).to.equal('subnet:servers');
    expect(byId.get('host:docker')!.parent).to.equal('subnet:servers');
    expect(byId.get('service:traefik')!.parent).to.equal('host:docker'); // nested
    expect(byId.get('ip_address:proxy')!.parent).to.equal('subnet:dmz');
    expect(byId.get('ghost:dns')!.parent).to.equal('1');
    // Geometry relative to the parent, as draw.io places a group's children.
    const geometry = (id: string) => byId.get(id)!.mxGeometry;
    expect(geometry('service:traefik')).to.include({ x: '20', y: '40', width: '180', height: '36', as: 'geometry' });
    expect(geometry('host:docker')).to.include({ x: '220', y: '40' });
    expect(geometry('ip_address:proxy')).to.include({ x: '20', y: '40' });
    expect(geometry('ghost:dns')).to.include({ x: '-300', y: '0' });
    // A parent is written before what it holds.
    const order = [...byId.keys()];
    for (const v of vertices) if (v.parent !== '1') expect(order.indexOf(v.parent), v.id).to.be.lessThan(order.indexOf(v.id));

    // Labels whole: name, address and services on lines of their own; a subnet titled with its CIDR and hosts.
    expect(byId.get('ip_address:web')!.value).to.equal('web-01\n10.0.2.21\nnginx :443\nnode-exporter :9100');
    expect(byId.get('service:traefik')!.value).to.equal('traefik · docker-01');
    expect(byId.get('subnet:servers')!.value).to.equal('servers · 10.0.2.0/24 · 2 hosts');
    expect(byId.get('ghost:dns')!.value).to.equal('unbound · dns-01 (hidden host)');

    // Edges: source and target cells; the one to the element left out is gone.
    expect(links.map((e) => [e.id, e.source, e.target])).to.deep.equal([
      ['e:shop', 'ip_address:proxy', 'ip_address:web'], ['e:shop2', 'ip_address:web', 'service:traefik'], ['e:dns', 'ghost:dns', 'ip_address:web'],
    ]);
    for (const e of links) expect(e.parent).to.equal('1');
    // A dependency named once, in its colour, with its arrows; the hub's end a dot.
    expect(links.map((e) => e.value)).to.deep.equal(['Web shop', '', 'Internal DNS']);
    expect(byId.get('e:shop')!.style).to.contain('strokeColor=#14b8a6;').and.to.contain('endArrow=classic;').and.to.contain('curved=1;');
    expect(byId.get('e:dns')!.style).to.contain('startArrow=oval;');
    expect(file(text)).to.include({ host: 'netinventory' });
  });

  it('escapes names (markup, quotes, ampersands stay text), keeps styles parseable and embeds icons as draw.io reads them', () => {
    const { nodes, edges, positions } = drawing();
    const hostile = 'web"><script>alert(1)</script> & co;x=1';
    nodes[2] = { ...nodes[2]!, host_name: hostile };
    const icon = `data:image/svg+xml;charset=utf-8,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M1 1h22"/></svg>')}`;
    const text = toDrawio({ title: 'a & b', nodes, edges, positions, icon: (n) => (n.id === 'ip_address:web' ? icon : undefined) });
    expect(text).to.not.contain('<script>');
    const { byId } = parse(text);
    expect(byId.get('ip_address:web')!.value.split('\n')[0]).to.equal(hostile);
    // Every style is key=value pairs, each ended by ';'.
    for (const c of byId.values()) if (c.style) expect(c.style, c.id).to.match(/^([A-Za-z]+=[^;=]*;)+$/);
    const style = byId.get('ip_address:web')!.style as string;
    expect(style).to.contain('shape=label;').and.to.contain('image=data:image/svg+xml,%3Csvg');
    expect(drawioImage(icon)).to.equal(`data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M1 1h22"/></svg>')}`);
    expect(byId.get('ip_address:proxy')!.style).to.not.contain('image=');
  });

  it('takes the map\'s colours for what it marks, and a look\'s opacity', () => {
    const { nodes, edges, positions } = drawing();
    const text = toDrawio({ title: 't', nodes, edges, positions, look: (id) => (id === 'ip_address:proxy' ? { fill: '#dcfce7', stroke: '#16a34a', strokeWidth: 3 } : id === 'e:dns' ? { opacity: 0.08 } : undefined) });
    const { byId } = parse(text);
    expect(byId.get('ip_address:proxy')!.style).to.contain('fillColor=#dcfce7;').and.to.contain('strokeColor=#16a34a;').and.to.contain('strokeWidth=3;');
    expect(byId.get('e:dns')!.style).to.contain('opacity=8;');
  });

  it('an edge drawn with bends (routed around boxes) is a polyline through them as waypoints; one without keeps its own style', () => {
    const { nodes, edges, positions } = drawing();
    const bends = { 'e:shop': [{ x: 795, y: 250 }, { x: 100.004, y: 250 }] };
    const { byId } = parse(toDrawio({ title: 't', nodes, edges, positions, bends }));
    const shop = byId.get('e:shop')!;
    expect(shop.style).to.contain('edgeStyle=none;').and.not.contain('curved=1');
    expect([shop.mxGeometry.Array.mxPoint].flat()).to.deep.equal([{ x: '795', y: '250' }, { x: '100', y: '250' }]);
    expect(shop.mxGeometry.Array.as).to.equal('points');
    // Without bends: draw.io's own path, as before (a dependency at right angles).
    expect(byId.get('e:shop2')!.style).to.contain('edgeStyle=orthogonalEdgeStyle;');
    expect(byId.get('e:shop2')!.mxGeometry).to.not.have.property('Array');
  });
});

const file = (text: string) => new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(text).mxfile as Record<string, string>;
