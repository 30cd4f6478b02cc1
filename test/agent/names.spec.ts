// Names and vendors: PTR from a resolver the test runs on loopback (never the system's), mDNS asked
// of the host itself (unicast, a responder on loopback), SNMP sysName last; vendors from the OUI
// registry, random MACs flagged. Nothing leaves 127.0.0.0/8.
import { expect } from 'chai';
import makeMdns from 'multicast-dns';
import { mdnsName, ptrResolver, reverseName } from '../../agent/names.js';
import { runScan } from '../../agent/scan/scan.js';
import { ouiTable, vendorOf } from '../../agent/vendors.js';
import { freeUdpPort } from '../lab/snmpSwitch.js';

type Responder = { queries: number; close(): Promise<void> };

/**
 * Answers PTR questions for the names it knows on 127.0.0.1:`port`, as a DNS server (the query's
 * id echoed) and as an mDNS responder (a unicast reply to the asker): multicast-dns without multicast.
 */
async function responder(port: number, names: Record<string, string>): Promise<Responder> {
  const server = makeMdns({ multicast: false, port, bind: '127.0.0.1' });
  const state = { queries: 0 };
  server.on('query', (query, rinfo) => {
    state.queries++;
    const q = query.questions[0];
    const name = q && names[q.name];
    server.respond({ id: query.id, flags: 0x8000, questions: query.questions, answers: name ? [{ name: q.name, type: 'PTR', ttl: 60, data: name }] : [] } as any, rinfo);
  });
  await new Promise<void>((resolve) => server.once('ready', () => resolve()));
  return { get queries() { return state.queries; }, close: () => new Promise<void>((r) => server.destroy(() => r())) };
}

const budget = { probesPerSecond: 500, maxOpenSockets: 8 };
const alive = async () => ({ evidence: [{ kind: 'tcp_refused' as const, port: 80 }], open: [] });

describe('agent names: PTR and mDNS on loopback', function () {
  this.timeout(20_000);
  let port: number;
  let r: Responder | null = null;
  afterEach(async () => {
    await r?.close();
    r = null;
  });

  it('PTR through the resolver the operator named', async () => {
    port = await freeUdpPort();
    r = await responder(port, { [reverseName('127.0.0.1')]: 'web.lab.example.' });
    const lookup = ptrResolver({ server: `127.0.0.1:${port}` });
    expect(await lookup('127.0.0.1')).to.equal('web.lab.example');
    expect(await lookup('127.0.0.2')).to.equal(null);
  });

  it('mDNS: the host\'s own answer to a unicast query for its reverse name', async () => {
    port = await freeUdpPort();
    r = await responder(port, { [reverseName('127.0.0.1')]: 'printer.local' });
    expect(await mdnsName('127.0.0.1', { port, timeoutMs: 1000 })).to.equal('printer.local');
    expect(await mdnsName('127.0.0.1', { port: await freeUdpPort(), timeoutMs: 200 })).to.equal(null); // nobody there
  });

  it('mDNS: an answer from another address does not name the host', async () => {
    port = await freeUdpPort('127.0.0.2');
    const otherPort = await freeUdpPort('127.0.0.3');
    const asked = makeMdns({ multicast: false, port, bind: '127.0.0.2' });
    const other = makeMdns({ multicast: false, port: otherPort, bind: '127.0.0.3' });
    asked.on('query', (query, rinfo) => {
      const q = query.questions[0]!;
      other.respond({ answers: [{ name: q.name, type: 'PTR', ttl: 60, data: 'spoofed.local' }] }, rinfo); // sent from 127.0.0.3
    });
    await new Promise<void>((resolve) => asked.once('ready', () => resolve()));
    try {
      expect(await mdnsName('127.0.0.2', { port, timeoutMs: 400 })).to.equal(null);
    } finally {
      asked.destroy();
      other.destroy();
    }
  });

  it('the scanner: PTR first (source ptr), else mDNS (source mdns); with neither configured nothing is asked', async () => {
    const dnsPort = await freeUdpPort();
    const mdnsPort = await freeUdpPort();
    r = await responder(dnsPort, { [reverseName('127.0.0.1')]: 'web.lab.example' });
    const m = await responder(mdnsPort, { [reverseName('127.0.0.1')]: 'web.local' });
    try {
      const scan = (opts: { dns?: boolean; mdns?: boolean }) => runScan({
        budget, targets: [{ cidr: '127.0.0.1/32' }], dnsServer: opts.dns ? `127.0.0.1:${dnsPort}` : undefined, mdns: opts.mdns,
      }, { onLink: [], sweep: alive, mdns: { port: mdnsPort, timeoutMs: 1000 } });
      const named = async (opts: { dns?: boolean; mdns?: boolean }) => (await scan(opts)).hosts.map((h) => [h.hostname, h.hostnameSource]);
      expect(await named({})).to.deep.equal([[null, undefined]]);
      expect(r.queries + m.queries).to.equal(0);
      expect(await named({ dns: true })).to.deep.equal([['web.lab.example', 'ptr']]);
      expect(await named({ dns: true, mdns: true })).to.deep.equal([['web.lab.example', 'ptr']]);
      expect(await named({ mdns: true })).to.deep.equal([['web.local', 'mdns']]);
    } finally {
      await m.close();
    }
  });
});

describe('agent vendors: the OUI registry', () => {
  it('the organisation of a MAC; a 28- or 36-bit block before its 24-bit parent; a random MAC flagged, no vendor', async () => {
    const table = await ouiTable();
    expect(vendorOf(table, '00:1b:21:0a:00:11')).to.deep.equal({ vendor: 'Intel Corporate', random: false });
    expect(vendorOf(table, '10:06:48:01:02:03')).to.deep.equal({ vendor: 'FLEXTRONICS TECHNOLOGIES (INDIA) PVT LTD', random: false });
    expect(vendorOf(table, '00:1B:C5:00:00:01')).to.deep.equal({ vendor: 'Converging Systems Inc.', random: false });
    expect(vendorOf(table, '02:1B:21:0A:00:11')).to.deep.equal({ vendor: null, random: true });
    expect(vendorOf(table, 'not a mac')).to.deep.equal({ vendor: null, random: false });
  });

  it('the scanner adds them to a host with a MAC', async () => {
    const report = await runScan({ budget, targets: [{ cidr: '127.0.0.1/32' }, { cidr: '127.0.0.2/32' }] }, {
      onLink: [{ network: 0x7f000000, prefix: 8 }], sweep: alive,
      readNeighbours: async () => new Map([['127.0.0.1', '00:1B:21:0A:00:11'], ['127.0.0.2', '3A:00:00:00:00:02']]),
    });
    expect(report.hosts.map((h) => [h.ip, h.macVendor, h.macIsRandom])).to.deep.equal([['127.0.0.1', 'Intel Corporate', false], ['127.0.0.2', null, true]]);
  });
});
