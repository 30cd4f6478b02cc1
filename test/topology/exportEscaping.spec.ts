// The Mermaid export with hostile names (issue 22, finding 6): a name is label text and nothing else,
// whatever it holds: line breaks, `%%` comments and `%%{init}%%` directives, HTML, quotes.
import { expect } from 'chai';
import { mermaidText, toMermaid } from '../../src/modules/topology/export.js';
import type { GraphEdge, GraphNode } from '../../src/modules/topology/graph.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant } from '../support/world.js';

const HOSTILE = [
  'web"]\nclick n0 call alert(7)\n%%',
  '%%{init: {"securityLevel": "loose"}}%%',
  '<img src=x onerror=alert(1)>',
  'a\r\nb\u2028c',
  '`**md**`',
  'x|y',
  '#quot;&lt;',
];

/** Every line of a Mermaid file is one of the statements toMermaid writes; labels are quoted and inert. */
function expectOnlyOwnStatements(mermaid: string) {
  const label = '"[^"%<>\\n`|]*(?:<br/>[^"%<>\\n`|]*)*"';
  const statements = [
    '^flowchart LR$', `^  subgraph n\\d+\\[${label}\\]$`, `^ {2,4}n\\d+\\[${label}\\]$`, '^  end$',
    `^  n\\d+ -(?:-|\\.-)>(?:\\|${label}\\|)? n\\d+$`, '^  linkStyle \\d+ stroke:#[0-9a-f]{6}$',
  ].map((re) => new RegExp(re));
  const lines = mermaid.replace(/\n$/, '').split('\n');
  for (const line of lines) expect(statements.some((re) => re.test(line)), `statement: ${line}`).to.equal(true);
  expect(mermaid).to.not.contain('%%');
}

describe('topology export: Mermaid escaping', () => {
  it('writes a name as one quoted line of text: no line break, %%, HTML, quote, backtick or pipe left', () => {
    expect(mermaidText('web"]\nclick n0 call alert(7)')).to.equal('web#quot;] click n0 call alert(7)');
    expect(mermaidText('%%{init: {}}%%')).to.equal('#37;#37;{init: {}}#37;#37;');
    expect(mermaidText('<b>x</b> & #35;')).to.equal('#lt;b#gt;x#lt;/b#gt; #amp; #35;35;');
    expect(mermaidText('a\r\nb\u2028c\td')).to.equal('a b c d');
    expect(mermaidText('`md`|')).to.equal('#96;md#96;#124;');
  });

  it('toMermaid: hostile container, node, service and edge names stay inside their quoted labels', () => {
    const uuid = (i: number) => `00000000-0000-4000-8000-00000000000${i}`;
    const nodes: GraphNode[] = [
      { id: `subnet:${uuid(1)}`, kind: 'subnet', entity_id: uuid(1), parent_id: null, label: HOSTILE[0]! },
      { id: `ip_address:${uuid(2)}`, kind: 'ip_address', entity_id: uuid(2), parent_id: `subnet:${uuid(1)}`, label: HOSTILE[1]!, services: HOSTILE.map((name) => ({ name })) },
      { id: `host:${uuid(3)}`, kind: 'host', entity_id: uuid(3), parent_id: null, label: HOSTILE[2]! },
    ];
    const edges: GraphEdge[] = HOSTILE.map((label, i) => ({ id: `e${i}`, kind: i % 2 ? 'same_host' : 'dependency', source: nodes[1]!.id, target: nodes[2]!.id, label, color: 'Blue' }));
    const mermaid = toMermaid({ nodes, edges, positions: {}, title: 'x' });
    expectOnlyOwnStatements(mermaid);
    expect(mermaid).to.contain('#lt;img src=x onerror=alert(1)#gt;');
    expect(mermaid.split('\n').filter((l) => /^\s*n\d+\[/.test(l))).to.have.length(2);
  });

  describe('through HTTP', function () {
    let app: TestApp;
    beforeEach(async () => { app = await startTestApp(); });
    afterEach(() => app.close());

    it('GET /topology/export?format=mermaid of hosts and a subnet named by an attacker', async () => {
      const t = await registerTenant(app.url, 'mmd');
      const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth: t.owner, body }), 201);
      const subnet = await post('/api/v1/subnets', { network_id: t.defaultNetworkId, cidr: '10.9.0.0/24', name: HOSTILE[1] });
      await post('/api/v1/hosts', {
        network_id: t.defaultNetworkId, name: HOSTILE[0], ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.9.0.5' }],
        services: [{ name: HOSTILE[2], service_definition: 'Custom', bindings: [] }],
      });
      const res = await fetch(`${app.url}/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=mermaid`, { headers: { Cookie: t.owner.cookie! } });
      expect(res.status).to.equal(200);
      const mermaid = await res.text();
      expectOnlyOwnStatements(mermaid);
      expect(mermaid).to.contain('#37;#37;{init: {#quot;securityLevel#quot;: #quot;loose#quot;}}#37;#37;');
      expect(mermaid).to.contain('web#quot;] click n0 call alert(7) #37;#37;').and.to.contain('· #lt;img src=x onerror=alert(1)#gt;');
    });
  });
});
