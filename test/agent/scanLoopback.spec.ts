// The scanner against loopback only (127.0.0.0/8): tiny servers started here, and the real Redis
// and PostgreSQL the tests run with, on the ports test/setup.ts gave them (REDIS_URL, DATABASE_URL:
// 6379 / 5432, or the project's own 56379 / 55432). Never any other address.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { getEventListeners, getMaxListeners, setMaxListeners } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { explainAddress } from '../../agent/fingerprint/explain.js';
import { runScan, type ScanTuning } from '../../agent/scan/scan.js';
import { parseCidr } from '../../agent/scan/targets.js';
import type { FoundHost, ScanOptions } from '../../agent/scan/types.js';

const GREETING = 'SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n';
const FAST: ScanTuning = { probeTimeouts: { replyMs: 400, idleMs: 80 } };
const BUDGET = { probesPerSecond: 500, maxOpenSockets: 32 };

/** The loopback port of the real server at `url` (DATABASE_URL / REDIS_URL, set by test/setup.ts). */
function loopbackPort(name: 'DATABASE_URL' | 'REDIS_URL', fallback: number): number {
  const url = new URL(process.env[name]!);
  expect(['127.0.0.1', 'localhost', '[::1]'], `${name} is not on loopback`).to.include(url.hostname);
  return Number(url.port || fallback);
}

const servers: net.Server[] = [];
const accepted = new Set<net.Socket>();

function listen(server: net.Server, host: string, port = 0): Promise<number> {
  servers.push(server);
  // Tracked so that afterEach can close servers whose clients are gone but whose sockets linger.
  server.on('connection', (s: net.Socket) => (accepted.add(s), s.once('close', () => accepted.delete(s))));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
  });
}
const sshServer = () => net.createServer((s) => { s.on('error', () => undefined); s.end(GREETING); });
// Reads and drops what it gets (a paused socket would never see the client's close), answers nothing.
const silentServer = (onConnect?: () => void) => net.createServer((s) => { s.on('error', () => undefined); s.resume(); onConnect?.(); });
const redisServer = () => net.createServer((s) => {
  s.on('error', () => undefined);
  s.on('data', (d) => s.write(d.toString('latin1').startsWith('PING\r\n') ? '+PONG\r\n' : '-ERR unknown command\r\n'));
});
const page = (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><html><head><title>Lab &amp; web page</title></head><body>hi</body></html>');
};

/** A port nothing listens on (taken, then freed). */
async function freePort(host: string): Promise<number> {
  const s = net.createServer();
  const port = await new Promise<number>((r) => s.listen(0, host, () => r((s.address() as net.AddressInfo).port)));
  await new Promise((r) => s.close(r));
  return port;
}

function scan(options: Partial<ScanOptions> & Pick<ScanOptions, 'targets'>, tuning: ScanTuning) {
  return runScan({ budget: BUDGET, ...options }, { ...FAST, ...tuning });
}

describe('agent scan: loopback', function () {
  this.timeout(60_000);
  let dir: string;
  let cert: { key: string; cert: string };

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'agent-scan-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=lab-https.test/O=Lab',
      '-addext', 'subjectAltName=DNS:lab-https.test,IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
    cert = { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  });
  afterEach(async () => {
    for (const s of accepted) s.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('finds services on 127.0.0.1 with their reasons: fake SSH, fake Redis, HTTP with a title, HTTPS, real Redis and PostgreSQL', async () => {
    const ssh = await listen(sshServer(), '127.0.0.1');
    const redis = await listen(redisServer(), '127.0.0.1');
    const web = await listen(http.createServer(page), '127.0.0.1');
    const secure = await listen(tls.createServer(cert, (s) => { s.on('error', () => undefined); s.once('data', () => s.end('HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 0\r\n\r\n')); }), '127.0.0.1');
    const silent = await listen(silentServer(), '127.0.0.1');
    const closed = await freePort('127.0.0.1');
    const realRedis = loopbackPort('REDIS_URL', 6379);
    const realPg = loopbackPort('DATABASE_URL', 5432);
    const seen: FoundHost[] = [];
    const progress: number[] = [];
    const report = await scan(
      { targets: [{ cidr: '127.0.0.1/32' }], onHost: (h) => void seen.push(h), onProgress: (p) => void progress.push(p) },
      { ports: [ssh, redis, web, secure, silent, closed, realRedis, realPg] },
    );

    expect(report.cancelled).to.equal(false);
    expect(report.addressesTried).to.equal(1);
    expect(report.hosts).to.have.length(1);
    expect(seen).to.deep.equal(report.hosts);
    const host = report.hosts[0];
    expect(host).to.deep.include({ ip: '127.0.0.1', mac: null, hostname: null, target: { cidr: '127.0.0.1/32' } });
    const open = host.openPorts.map((p) => p.port);
    expect(open).to.include.members([ssh, redis, web, secure, silent, realRedis, realPg]);
    expect(open).to.not.include(closed);
    expect(host.evidence.map((e) => e.kind)).to.include.members(['tcp_open', 'tcp_refused']);
    expect(report.aliveByEvidence).to.deep.include({ tcp_open: 1, tcp_refused: 1 });

    const on = (port: number) => host.services.find((s) => s.port === port);
    expect(on(ssh)).to.deep.include({ rule: 'ssh-greeting', definition: 'SSH', confidence: 'High', facts: { protocol: '2.0', product: 'OpenSSH', version: '9.2p1', os: 'Debian' } });
    expect(on(ssh)!.reason).to.equal(`rule ssh-greeting: probe NULL (read the greeting) on ${ssh}/tcp answered "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3"`);
    expect(on(redis)).to.deep.include({ rule: 'redis-ping', definition: 'Redis', confidence: 'High' });
    expect(on(redis)!.reason).to.equal(`rule redis-ping: probe "PING\\r\\n" on ${redis}/tcp answered "+PONG"`);
    expect(on(web)).to.deep.include({ rule: 'http', definition: 'HTTP', confidence: 'High', facts: { status: '200', title: 'Lab & web page' } });
    expect(on(secure)).to.deep.include({ rule: 'http-nginx', definition: 'Nginx', confidence: 'High' });
    expect(on(secure)!.facts).to.deep.include({ subject: 'lab-https.test', san: 'DNS:lab-https.test, IP Address:127.0.0.1', issuer: 'lab-https.test' });
    expect(on(realRedis)).to.deep.include({ rule: 'redis-ping', definition: 'Redis', confidence: 'High' });
    expect(on(realPg)).to.deep.include({ rule: 'postgresql-sslrequest', definition: 'PostgreSQL', confidence: 'High' });
    expect(on(realPg)!.reason).to.match(new RegExp(`^rule postgresql-sslrequest: probe SSLRequest 00000008 04d2162f on ${realPg}/tcp answered "[SN]"$`));
    expect(on(silent)).to.equal(undefined); // open, but nothing recognised it and no port rule names it

    expect(progress[0]).to.equal(0);
    expect(progress.at(-1)).to.equal(100);
    expect(progress).to.deep.equal([...progress].sort((a, b) => a - b));
    expect(report.probesSent).to.be.at.least(8 + 8); // the liveness ports and ours, then the fingerprints
  });

  it('each probe sends what it says: the connect and NULL nothing, PING, the SSLRequest, a GET with Host, a TLS ClientHello', async () => {
    const received: Buffer[] = [];
    let connections = 0;
    const recorder = net.createServer((s) => {
      connections++;
      const chunks: Buffer[] = [];
      s.on('error', () => undefined);
      s.on('data', (d) => chunks.push(d));
      s.once('close', () => received.push(Buffer.concat(chunks)));
    });
    const port = await listen(recorder, '127.0.0.4');
    await scan({ targets: [{ cidr: '127.0.0.4/32' }] }, { ports: [port], probeTimeouts: { replyMs: 150, idleMs: 50 } });
    while (received.length < connections) await new Promise((r) => setTimeout(r, 10)); // the last closes reach the server
    const seen = received.map((b) => (b[0] === 0x16 ? 'tls-client-hello' : b.toString('latin1'))).sort();
    expect(seen).to.deep.equal([
      '', '', // the port sweep's connect, and the NULL probe
      '\x00\x00\x00\x08\x04\xd2\x16\x2f',
      `GET / HTTP/1.1\r\nHost: 127.0.0.4:${port}\r\nUser-Agent: netinv-agent\r\nAccept: */*\r\nConnection: close\r\n\r\n`,
      'PING\r\n',
      'tls-client-hello',
    ].sort());
  });

  it('a closed port on 127.0.0.2 is evidence: tcp_refused, a host with no open port', async () => {
    const closed = await freePort('127.0.0.2');
    const report = await scan({ targets: [{ cidr: '127.0.0.2/32' }] }, { ports: [closed] });
    expect(report.hosts).to.have.length(1);
    const host = report.hosts[0];
    expect(host.ip).to.equal('127.0.0.2');
    expect(host.openPorts).to.deep.equal([]);
    expect(host.evidence.map((e) => e.kind)).to.deep.equal(['tcp_refused']);
    expect(report.aliveByEvidence).to.deep.equal({ tcp_refused: 1 });
  });

  it('MAC from the neighbour table on on-link targets only, read after the liveness connects', async () => {
    let connects = 0;
    const web = http.createServer(page);
    web.on('connection', () => connects++);
    await listen(web, '127.0.0.5', 8080); // a liveness port
    let connectsBeforeRead = -1;
    const table = async () => {
      connectsBeforeRead = connects;
      return new Map([['127.0.0.5', '02:AA:BB:CC:DD:05'], ['127.0.0.6', '00:1B:21:00:00:06']]);
    };
    // Loopback stands in for an on-link subnet here (the neighbour table is a stub: lo has none).
    const onLink = await scan({ targets: [{ cidr: '127.0.0.5/32' }] }, { ports: [], onLink: [parseCidr('127.0.0.0/8')], readNeighbours: table });
    expect(connectsBeforeRead).to.be.above(0);
    const host = onLink.hosts[0];
    expect(host).to.deep.include({ ip: '127.0.0.5', mac: '02:AA:BB:CC:DD:05', macIsRandom: true });
    expect(host.evidence).to.deep.include({ kind: 'neighbour', mac: '02:AA:BB:CC:DD:05' });
    expect(onLink.aliveByEvidence).to.deep.include({ neighbour: 1, tcp_open: 1 });
    expect(host.services.map((s) => s.rule)).to.deep.equal(['http']);

    connectsBeforeRead = -1;
    const routed = await scan({ targets: [{ cidr: '127.0.0.5/32' }] }, { ports: [], onLink: [parseCidr('198.18.10.0/24')], readNeighbours: table });
    expect(connectsBeforeRead).to.equal(-1); // not even read
    expect(routed.hosts[0].mac).to.equal(null);
    expect(routed.hosts[0].evidence.map((e) => e.kind)).to.not.include('neighbour');
  });

  it('never connects to 9100-9107 unless probeRawSocketPorts, even when asked by extraPorts or known ports', async function () {
    let connects = 0;
    const printer = await listen(silentServer(() => connects++), '127.0.0.3', 9100).catch(() => null);
    expect(printer, '127.0.0.3:9100 must be free for this test').to.equal(9100);
    const options = { targets: [{ cidr: '127.0.0.3/32' }], extraPorts: [9100, 9104], known: { '127.0.0.3': [9100, 9107] } };
    const off = await scan(options, { ports: [] });
    expect(connects).to.equal(0);
    expect(off.hosts[0].openPorts).to.deep.equal([]);
    const on = await scan({ ...options, probeRawSocketPorts: true }, { ports: [] });
    expect(connects).to.be.above(0);
    expect(on.hosts[0].openPorts.map((p) => p.port)).to.deep.equal([9100]);
  });

  it('a target that opts in to 9100-9107 gets them probed; another target of the same run does not', async function () {
    const connects: Record<string, number> = { '127.0.0.7': 0, '127.0.0.8': 0 };
    for (const ip of Object.keys(connects)) {
      expect(await listen(silentServer(() => connects[ip]!++), ip, 9100).catch(() => null), `${ip}:9100 must be free for this test`).to.equal(9100);
    }
    const both = await scan({ targets: [{ cidr: '127.0.0.7/32', probeRawSocketPorts: true }, { cidr: '127.0.0.8/32' }], extraPorts: [9100] }, { ports: [] });
    expect(connects['127.0.0.7'], 'the opted-in target').to.be.above(0);
    expect(connects['127.0.0.8'], 'the other target').to.equal(0);
    expect(both.hosts.find((h) => h.ip === '127.0.0.7')?.openPorts.map((p) => p.port)).to.deep.equal([9100]);
  });

  it('opted in to 9100-9107, a host its other ports show to be a printer (IPP on 631) is sent nothing there; another host is probed', async function () {
    const received: Record<string, number> = { '127.0.0.4': 0, '127.0.0.6': 0 };
    const raw = (ip: string) => net.createServer((sock) => { sock.on('error', () => undefined); sock.on('data', (d) => (received[ip]! += d.length)); });
    const cups = net.createServer((sock) => { sock.on('error', () => undefined); sock.once('data', () => sock.end('HTTP/1.1 200 OK\r\nServer: CUPS/2.4 IPP/2.1\r\nContent-Length: 26\r\n\r\n<title>Home - CUPS</title>')); });
    for (const [server, ip, port] of [[raw('127.0.0.4'), '127.0.0.4', 9100], [cups, '127.0.0.4', 631], [raw('127.0.0.6'), '127.0.0.6', 9100]] as const) {
      expect(await listen(server, ip, port).catch(() => null), `${ip}:${port} must be free for this test`).to.equal(port);
    }
    const printer = await scan({ targets: [{ cidr: '127.0.0.4/32' }], probeRawSocketPorts: true, extraPorts: [9100] }, { ports: [631] });
    expect(printer.hosts[0].openPorts.map((p) => p.port)).to.deep.equal([631, 9100]);
    expect(received['127.0.0.4'], 'bytes sent to the printer\'s 9100').to.equal(0);
    await scan({ targets: [{ cidr: '127.0.0.6/32' }], probeRawSocketPorts: true, extraPorts: [9100] }, { ports: [631] });
    expect(received['127.0.0.6'], 'bytes sent to a 9100 of a host not known to print').to.be.above(0);
  });

  it('a range where every address answers the same port and nothing validates: one warning, no phantom host', async () => {
    const port = await freePort('127.0.1.1');
    // 127.0.1.1-14 all accept on `port` and say nothing (a middlebox's handshakes); .5 greets like sshd.
    for (let i = 1; i <= 14; i++) await listen(i === 5 ? sshServer() : silentServer(), `127.0.1.${i}`, port);
    const seen: string[] = [];
    const report = await scan({ targets: [{ cidr: '127.0.1.0/28' }], onHost: (h) => void seen.push(h.ip) }, { ports: [port] });
    expect(report.addressesTried).to.equal(14);
    expect(report.hosts.map((h) => h.ip)).to.deep.equal(['127.0.1.5']);
    expect(seen).to.deep.equal(['127.0.1.5']);
    expect(report.hosts[0].services.map((s) => s.rule)).to.deep.equal(['ssh-greeting']);
    expect(report.warnings).to.deep.equal([`127.0.1.0/28: 13 addresses answered ${port}/tcp alike and nothing validated: a middlebox? none recorded`]);
  });

  it('a range where every address refuses every port (loopback answers for all of 127/8): one warning, no host', async () => {
    const report = await scan({ targets: [{ cidr: '127.0.5.0/28' }] }, { ports: [] });
    expect(report.addressesTried).to.equal(14);
    expect(report.hosts).to.deep.equal([]);
    expect(report.warnings).to.deep.equal(['127.0.5.0/28: 14 of 14 addresses refused every port (a reset) and nothing else: a firewall answering for the range? none recorded']);
  });

  it('one socket budget for the whole run: never more connections open at once than maxOpenSockets, across hosts', async () => {
    const port = await freePort('127.0.3.1');
    let open = 0;
    let most = 0;
    for (let i = 1; i <= 8; i++) {
      const server = silentServer();
      server.on('connection', (s) => {
        most = Math.max(most, ++open);
        s.once('close', () => open--);
      });
      await listen(server, `127.0.3.${i}`, port);
    }
    const report = await runScan(
      { targets: [{ cidr: '127.0.3.0/28' }], budget: { probesPerSecond: 1000, maxOpenSockets: 2 } },
      { ports: [port], probeTimeouts: { replyMs: 100, idleMs: 50 } },
    );
    expect(report.addressesTried).to.equal(14);
    // Each silent port gets five probes that each hold their connection; the servers see a close a
    // moment after the scanner freed its place, hence two of slack (sixteen hosts at once would be ~16).
    expect(most).to.be.within(1, 4);
  });

  it('cancel: a signal ends the run early with cancelled: true', async () => {
    const port = await freePort('127.0.2.1');
    for (let i = 1; i <= 14; i++) await listen(silentServer(), `127.0.2.${i}`, port);
    const ac = new AbortController();
    const report = await scan(
      { targets: [{ cidr: '127.0.2.0/28' }], signal: ac.signal, onProgress: (p) => p > 0 && ac.abort() },
      { ports: [port], hostsAtOnce: 1 },
    );
    expect(report.cancelled).to.equal(true);
    expect(report.hosts).to.deep.equal([]); // unvalidated hosts of an unfinished range are not recorded
    const before = new AbortController();
    before.abort();
    const none = await scan({ targets: [{ cidr: '127.0.2.0/28' }], signal: before.signal }, { ports: [port] });
    expect(none).to.deep.include({ cancelled: true, probesSent: 0, hosts: [] });
  });

  it('the run\'s signal: one abort listener per queued or running probe, none left after; no listener limit (no warning on Node < 21)', async () => {
    const signal = new AbortController().signal;
    setMaxListeners(10, signal); // Node 18/20's default for an AbortSignal (Node 21+ has none)
    let most = 0;
    const add = signal.addEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      add(...args);
      most = Math.max(most, getEventListeners(signal, 'abort').length);
    }) as typeof add;
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const report = await runScan({ targets: [{ cidr: '127.0.6.0/28' }], budget: { probesPerSecond: 1000, maxOpenSockets: 2 }, signal }, { ports: [] });
      expect(report.addressesTried).to.equal(14);
      await new Promise((r) => setImmediate(r)); // a warning is emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(most, 'listeners at once: the liveness connects queued for 2 sockets').to.be.above(10);
    expect(getEventListeners(signal, 'abort'), 'listeners left after the run').to.deep.equal([]);
    expect(getMaxListeners(signal)).to.equal(0);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map(String)).to.deep.equal([]);
  });

  it('explainAddress says what each probe answered and which rules matched or not', async () => {
    const ssh = await listen(sshServer(), '127.0.0.1');
    const closed = await freePort('127.0.0.1');
    const realRedis = loopbackPort('REDIS_URL', 6379);
    const text = await explainAddress('127.0.0.1', { ports: [ssh, closed, realRedis], budget: BUDGET, probeTimeouts: FAST.probeTimeouts });
    expect(text).to.contain(`explain 127.0.0.1:`);
    expect(text).to.match(new RegExp(`refused \\(a RST: alive, evidence tcp_refused\\) [0-9, ]*\\b${closed}\\b`));
    expect(text).to.contain(`port ${ssh}/tcp:\n  probe NULL (read the greeting): answered "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\\r\\n"`);
    expect(text).to.contain('rule ssh-greeting: MATCHED "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3"');
    const sshSection = text.slice(text.indexOf(`port ${ssh}/tcp:`)).split(/\n(?=port |probes sent)/)[0];
    expect(sshSection.match(/^  probe /gm)).to.have.length(1); // recognised (High) by the greeting: no further probe
    expect(text).to.contain(`=> OpenSSH [SSH] confidence High: rule ssh-greeting: probe NULL (read the greeting) on ${ssh}/tcp answered`);
    // On 6379 PING is the first probe (the port's own); on another port (the project's own 56379) it follows the generic ones.
    const redisSection = text.slice(text.indexOf(`port ${realRedis}/tcp:`)).split(/\n(?=port |probes sent)/)[0];
    expect(redisSection).to.contain('\n  probe "PING\\r\\n": answered "+PONG\\r\\n"');
    expect(redisSection).to.contain(`=> Redis [Redis] confidence High: rule redis-ping: probe "PING\\r\\n" on ${realRedis}/tcp answered "+PONG"`);
    expect(text).to.match(/rule ssh-greeting: no \(answer "\+PONG\\r\\n" does not match /);
    await explainAddress('127.0.0.0/30').then(() => expect.fail('a range was explained'), (err) => expect(String(err)).to.match(/not an IPv4 address/));
  });
});
