// The map's SVG export (web/src/exportSvg.ts), pure: a drawing in, a standalone SVG out, with every
// label whole (wrapped, never cut), the icons as data: URLs and the legend beside the drawing.
import { expect } from 'chai';
import { XMLValidator } from 'fast-xml-parser';
import { paint, toSvg, wrapLine, type ExportDrawing } from '../../web/src/exportSvg.js';

const ICON = `data:image/svg+xml;charset=utf-8,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M1 1h22"/></svg>')}`;
const width = (s: string) => s.length * 7;

describe('web map SVG export (pure)', () => {
  it('wraps a line at spaces without losing a word; a word wider than the box stays whole on its own line', () => {
    expect(wrapLine('node-exporter :9100', 100, width)).to.deep.equal(['node-exporter', ':9100']);
    expect(wrapLine('traefik · docker-01', 200, width)).to.deep.equal(['traefik · docker-01']);
    expect(wrapLine('averyveryverylongname x', 50, width)).to.deep.equal(['averyveryverylongname', 'x']);
    for (const max of [10, 40, 80, 160]) expect(wrapLine('a bb ccc dddd eeeee', max, width).join(' ')).to.equal('a bb ccc dddd eeeee');
  });

  it('paints CSS colours as SVG 1.1 takes them: #rrggbb with the alpha apart', () => {
    expect(paint('rgb(238, 242, 255)')).to.deep.equal({ color: '#eef2ff', alpha: 1 });
    expect(paint('rgba(241, 245, 249, 0.7)')).to.deep.equal({ color: '#f1f5f9', alpha: 0.7 });
    expect(paint('#6366f1')).to.deep.equal({ color: '#6366f1', alpha: 1 });
    expect(paint('rgba(0, 0, 0, 0)').alpha).to.equal(0);
  });

  it('writes the drawing whole, with its title, icons, arrowheads and legend, sized to all of it', () => {
    const d: ExportDrawing = {
      containers: [{ id: 'subnet:s', x: 0, y: 0, width: 340, height: 120, title: 'docker app-net · 172.18.0.0/24 · 1 host', fill: 'rgba(241, 245, 249, 0.7)', stroke: 'rgb(148, 163, 184)', strokeWidth: 1, opacity: 1 }],
      nodes: [
        { id: 'ip_address:t', x: 10, y: 30, width: 170, height: 52, text: 'traefik · docker-01\n172.18.0.10\ntraefik :8443', fontPx: 12, bold: false, italic: false, textColor: 'rgb(30, 27, 75)', fill: 'rgb(238, 242, 255)', stroke: 'rgb(99, 102, 241)', strokeWidth: 1, borderStyle: 'solid', opacity: 1, icon: ICON, iconPx: 16 },
        { id: 'ip_address:g', x: 200, y: 30, width: 130, height: 36, text: 'grafana', fontPx: 12, bold: false, italic: false, textColor: '#1e1b4b', fill: '#eef2ff', stroke: '#6366f1', strokeWidth: 1, borderStyle: 'double', opacity: 0.45, iconPx: 16 },
      ],
      edges: [{ id: 'e', source: 'ip_address:t', target: 'ip_address:g', start: { x: 180, y: 56 }, end: { x: 200, y: 48 }, via: [{ x: 190, y: 56 }, { x: 190, y: 48 }], curve: 'segments', color: 'rgb(20, 184, 166)', width: 2.55, opacity: 1, targetArrow: 'triangle', sourceArrow: 'circle' }],
    };
    const legend = {
      edges: [{ key: 'same_host', name: 'Addresses of one host', color: '#cbd5e1', width: 1.5, dash: '5 3' }],
      dependencies: [{ key: 'dependency:d', name: 'Web shop', color: '#14b8a6', ends: 'arrow' as const }],
      kinds: [{ key: 'kind:container_host', name: 'Container host', icon: ICON }],
    };
    const out = toSvg(d, { title: 'HQ — L3 (subnets) — now', legend, measure: width });
    expect(XMLValidator.validate(out.svg)).to.equal(true);
    expect(out.labels['ip_address:t']).to.deep.equal(['traefik · docker-01', '172.18.0.10', 'traefik :8443']);
    expect(out.svg).to.contain('>traefik · docker-01</tspan>').and.to.contain('>docker app-net · 172.18.0.0/24 · 1 host</text>');
    expect(out.svg).to.not.contain('…');
    expect(out.svg.match(/<image /g)).to.have.length(2); // the element's icon and the legend's
    expect(out.svg).to.contain(`xlink:href="${ICON}"`);
    for (const key of ['same_host', 'dependency:d', 'kind:container_host']) expect(out.svg).to.contain(`data-legend="${key}"`);
    expect(out.svg).to.contain('>Web shop</text>').and.to.contain('>HQ — L3 (subnets) — now</text>');
    expect(out.svg).to.contain('fill="#f1f5f9" fill-opacity="0.7"').and.to.not.contain('rgba(');
    expect(out.svg).to.match(/<path d="M180,56 L190,56 L190,48 L200,48"/);
    expect(out.svg).to.contain('<circle'); // the hub's dot
    // The legend to the right of the drawing, inside the picture.
    const legendX = Number(/<g class="legend"[^>]*><rect x="([\d.]+)"/.exec(out.svg)![1]);
    expect(legendX).to.be.greaterThan(340);
    expect(out.width).to.be.greaterThan(legendX);
    // Written at a PNG's size: width and height scaled, the viewBox the same.
    const twice = toSvg(d, { title: 'x', legend, measure: width, pixelScale: 2 });
    const attrs = (svg: string) => /<svg [^>]*width="([\d.]+)" height="([\d.]+)" viewBox="([^"]+)"/.exec(svg)!.slice(1);
    const [w1, h1, box1] = attrs(toSvg(d, { title: 'x', legend, measure: width }).svg);
    const [w2, h2, box2] = attrs(twice.svg);
    expect([Number(w2), Number(h2), box2]).to.deep.equal([2 * Number(w1), 2 * Number(h1), box1]);
  });
});
