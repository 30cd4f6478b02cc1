// Custom service definitions on the agent (issue 38.6), on loopback only (127.0.0.0/8): a definition
// with an HTTP path probe and a body match names a tiny HTTP server no built-in rule names, its reason
// names the definition, and its port is probed because the definition lists it; a banner definition
// reads a greeting; a pattern the server's check refuses is refused here too.
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { customRules, withoutDefinitions, type CustomDefinition } from '../../agent/fingerprint/custom.js';
import { runScan } from '../../agent/scan/scan.js';
import type { FoundService } from '../../agent/scan/types.js';

const BUDGET = { probesPerSecond: 500, maxOpenSockets: 32 };
const FAST = { probeTimeouts: { replyMs: 400, idleMs: 80 } };
const HTTP_ID = '6f1d0c1e-3b8a-4c1f-9a51-0d2c6b7e8f90';
const BANNER_ID = '0b7c9d2a-1e4f-4a6b-8c3d-5e6f7a8b9c0d';

const servers: net.Server[] = [];
const accepted = new Set<net.Socket>();
function listen(server: net.Server): Promise<number> {
  servers.push(server);
  // Tracked so that afterEach can close servers whose clients are gone but whose sockets linger.
  server.on('connection', (s: net.Socket) => (accepted.add(s), s.once('close', () => accepted.delete(s))));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

/** A web app no built-in rule knows: `/` a bare page, `/api/about` says what it is. */
const widgetServer = () => http.createServer((req, res) => {
  if (req.url === '/api/about') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"product":"acme-widget","version":"4.2.1"}');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><html><head><title>Home</title></head><body>hello</body></html>');
});

const httpDefinition = (port: number): CustomDefinition => ({
  id: HTTP_ID, name: 'Acme Widget', category: 'Web', icon: 'server', ports: [port],
  probe: { type: 'http', path: '/api/about' }, match: { field: 'body', pattern: '"product":\\s*"acme-widget"' },
});

async function serviceOn(port: number, definitions: CustomDefinition[], ports: number[] = []): Promise<FoundService | undefined> {
  const custom = customRules(definitions);
  expect(custom.refused).to.deep.equal([]);
  // As the runner does: the definitions' ports are added to those probed, the rules go to the scan.
  const report = await runScan(
    { targets: [{ cidr: '127.0.0.1/32' }], budget: BUDGET, ...(custom.rules.length ? { customRules: custom.rules, extraPorts: custom.ports } : {}) },
    { ...FAST, ports },
  );
  return report.hosts[0]?.services.find((s) => s.port === port);
}

describe('agent: custom service definitions', function () {
  this.timeout(60_000);
  afterEach(async () => {
    for (const s of accepted) s.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  });

  it('an HTTP path probe with a body match names a server no built-in rule names, on a port only the definition lists', async () => {
    const port = await listen(widgetServer());
    expect(await serviceOn(port, []), 'not probed without the definition').to.equal(undefined);
    const built = await serviceOn(port, [], [port]);
    expect(built, 'probed when asked: an HTTP server').to.not.equal(undefined);
    expect(built!.name).not.to.equal('Acme Widget');
    expect(built!.rule).not.to.match(/^custom:/);

    const service = await serviceOn(port, [httpDefinition(port)]);
    expect(service, 'the definition\'s port was probed and named').to.include({ name: 'Acme Widget', definition: 'Acme Widget', rule: `custom:${HTTP_ID}`, confidence: 'High' });
    expect(service!.reason).to.match(new RegExp(`^custom definition Acme Widget \\(${HTTP_ID}\\): probe custom GET /api/about on ${port}/tcp answered body`));
    expect(service!.findings?.[0]).to.include({ layer: 'application', name: 'Acme Widget' });
    expect(service!.facts).to.include({ category: 'Web' });
  });

  it('a banner definition reads the greeting', async () => {
    const port = await listen(net.createServer((s) => { s.on('error', () => undefined); s.end('ACME-PROTO 1.0 ready\r\n'); }));
    const service = await serviceOn(port, [{
      id: BANNER_ID, name: 'Acme Proto', ports: [port], probe: { type: 'banner' }, match: { field: 'banner', pattern: '(?i)^acme-proto \\d' },
    }]);
    expect(service).to.include({ name: 'Acme Proto', rule: `custom:${BANNER_ID}` });
    expect(service!.reason).to.include(`custom definition Acme Proto (${BANNER_ID})`);
  });

  it('refuses what the server refuses (the same check), and reports no definitions back', () => {
    const custom = customRules([
      { ...httpDefinition(8080), id: 'evil', name: 'Evil', match: { field: 'body', pattern: '(a+)+$' } },
      { ...httpDefinition(8080), id: 'odd', name: 'Odd', match: { field: 'cookie', pattern: 'x' } },
      httpDefinition(8081),
    ]);
    expect(custom.rules.map((r) => r.id)).to.deep.equal([`custom:${HTTP_ID}`]);
    expect(custom.ports).to.deep.equal([8081]);
    expect(custom.refused[0]).to.match(/^custom definition Evil \(evil\) left out: pattern .*exponential/);
    expect(custom.refused[1]).to.include('custom definition Odd (odd) left out');
    // An input is cut to 4 KiB before a user's pattern reads it.
    expect(custom.rules[0]!.match[0]!.pattern.test(`${' '.repeat(5000)}"product":"acme-widget"`)).to.equal(false);
    expect(withoutDefinitions({ type: 'Network', subnet_ids: null, service_definitions: [httpDefinition(1)] })).to.deep.equal({ type: 'Network', subnet_ids: null });
  });
});
