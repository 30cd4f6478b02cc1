// What the agent does after a port's first answer (issue 38): redirects followed on the same host
// (at most 3), the favicon hashed, a plain answer that says "TLS only" retried over TLS, several
// findings on one port (an application behind a generic server), and bytes made text before they
// are facts. Against loopback servers answering as the products do.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { MAX_PATH_PROBES, PATH_RULES, pathPlan, pathProbeId } from '../../agent/fingerprint/appProbes.js';
import { identifyPort, recognise, sameHostTarget } from '../../agent/fingerprint/match.js';
import { parseHttp, type ProbeAnswer } from '../../agent/fingerprint/probes.js';
import { hostRequest } from '../../agent/protocol/entities.js';
import { ProbeBudget } from '../../agent/scan/budget.js';
import { parseCidr } from '../../agent/scan/targets.js';

const TIMEOUTS = { replyMs: 1500, idleMs: 100 };
const budget = () => new ProbeBudget({ probesPerSecond: 1000, maxOpenSockets: 16 });

/** An HTTP/1.1 server on loopback answering `routes[path]` (raw bytes), 404 otherwise; records the paths asked. */
async function httpServer(routes: Record<string, string | Buffer>): Promise<{ port: number; asked: string[]; close: () => Promise<void> }> {
  const asked: string[] = [];
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', (chunk) => {
      const pathAsked = /^GET (\S+)/.exec(chunk.toString('latin1'))?.[1];
      if (!pathAsked) return socket.end();
      asked.push(pathAsked);
      socket.end(routes[pathAsked] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, asked, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const page = (status: string, headers: string[], body = '') => `HTTP/1.1 ${status}\r\n${[...headers, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close'].join('\r\n')}\r\n\r\n${body}`;
// Grafana 11 answers `/` with a redirect to its login page (no Server header), whose title is "Grafana".
const GRAFANA = {
  '/': page('302 Found', ['Cache-Control: no-store', 'Content-Type: text/html; charset=utf-8', 'Location: /login', 'X-Content-Type-Options: nosniff', 'X-Frame-Options: deny'], '<a href="/login">Found</a>.\n\n'),
  '/login': page('200 OK', ['Cache-Control: no-store', 'Content-Type: text/html; charset=UTF-8', 'X-Frame-Options: deny'], '<!DOCTYPE html>\n<html lang="en">\n  <head>\n    <meta charset="utf-8" />\n    <title>Grafana</title>\n'),
};

describe('agent fingerprint: redirects, favicon, TLS-only ports, several findings per port', () => {
  let dir: string;
  let cert: { key: string; cert: string };
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'netinv-follow-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=pve.lab/O=Proxmox Virtual Environment',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
    cert = { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('follows a redirect to the login page and names the application from it (Grafana: / → /login)', async () => {
    const s = await httpServer(GRAFANA);
    try {
      const { service } = await identifyPort('127.0.0.1', s.port, budget(), { timeouts: TIMEOUTS });
      expect(service).to.deep.include({ rule: 'http-grafana', name: 'Grafana', definition: 'Grafana', confidence: 'High' });
      expect(service!.facts).to.deep.include({ title: 'Grafana', redirects: '302 /login' });
      expect(s.asked.slice(0, 2)).to.deep.equal(['/', '/login']);
    } finally {
      await s.close();
    }
  });

  it('follows at most 3 redirects, and never to another address', async () => {
    const hop = (to: string) => page('302 Found', [`Location: ${to}`]);
    const chain = await httpServer({ '/': hop('/a'), '/a': hop('/b'), '/b': hop('/c'), '/c': hop('/d'), '/d': page('200 OK', [], '<title>Far</title>') });
    const away = await httpServer({ '/': hop('http://198.18.99.1/login') });
    try {
      await identifyPort('127.0.0.1', chain.port, budget(), { timeouts: TIMEOUTS });
      const followed = (asked: string[]) => asked.filter((p) => p !== '/favicon.ico' && !PATH_RULES.some((r) => r.probes.includes(pathProbeId(p))));
      expect(followed(chain.asked)).to.deep.equal(['/', '/a', '/b', '/c']);
      await identifyPort('127.0.0.1', away.port, budget(), { timeouts: TIMEOUTS });
      expect(followed(away.asked)).to.deep.equal(['/']);
      expect(sameHostTarget('127.0.0.1', { port: 5000, tls: false }, 'https://127.0.0.1:5001/')).to.deep.equal({ port: 5001, tls: true, path: '/' });
      expect(sameHostTarget('127.0.0.1', { port: 80, tls: false }, '//198.18.99.1/x')).to.equal(null);
    } finally {
      await chain.close();
      await away.close();
    }
  });

  it('a web port whose first page names nothing gets its well-known paths, at most 3, until one names it (etcd\'s /version); a named one gets none', async () => {
    // etcd answers / with Go's plain 404 and /version with its versions.
    const goNotFound = page('404 Not Found', ['Content-Type: text/plain; charset=utf-8', 'X-Content-Type-Options: nosniff'], '404 page not found\n');
    const etcd = await httpServer({ '/': goNotFound, '/version': page('200 OK', ['Content-Type: application/json'], '{"etcdserver":"3.5.9","etcdcluster":"3.5.0"}') });
    const nothing = await httpServer({ '/': page('200 OK', ['Server: nginx'], '<title>Welcome</title>') });
    const grafana = await httpServer(GRAFANA);
    try {
      const { service } = await identifyPort('127.0.0.1', etcd.port, budget(), { timeouts: TIMEOUTS });
      expect(service).to.deep.include({ rule: 'etcd-version', name: 'etcd', definition: 'etcd', confidence: 'High' });
      expect(service!.reason).to.match(/^rule etcd-version: probe GET \/version on \d+\/tcp answered/);
      expect(service!.findings?.find((f) => f.layer === 'application')?.version).to.equal('3.5.9');
      expect(etcd.asked.filter((p) => p !== '/favicon.ico')).to.deep.equal(['/', '/api/health', '/version']); // stops at the one that named it
      await identifyPort('127.0.0.1', nothing.port, budget(), { timeouts: TIMEOUTS });
      const pathsAsked = nothing.asked.filter((p) => p !== '/' && p !== '/favicon.ico');
      expect(pathsAsked).to.have.length(MAX_PATH_PROBES);
      expect(pathPlan(5000, PATH_RULES)[0]).to.equal('/v2/'); // the product listening there is asked first
      await identifyPort('127.0.0.1', grafana.port, budget(), { timeouts: TIMEOUTS });
      expect(grafana.asked.filter((p) => p !== '/favicon.ico')).to.deep.equal(['/', '/login']);
    } finally {
      await Promise.all([etcd.close(), nothing.close(), grafana.close()]);
    }
  });

  it('hashes the favicon (MD5, as Recog\'s favicon fingerprints are written)', async () => {
    const icon = Buffer.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 0x68, 4, 0, 0, 0x16, 0, 0, 0]);
    const s = await httpServer({ '/': page('200 OK', ['Server: lighttpd/1.4.69'], '<title>Home</title>'), '/favicon.ico': Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: image/x-icon\r\nContent-Length: ${icon.length}\r\nConnection: close\r\n\r\n`), icon]) });
    try {
      const { answers } = await identifyPort('127.0.0.1', s.port, budget(), { timeouts: TIMEOUTS });
      expect(answers.find((a) => a.http)!.faviconMd5).to.equal(createHash('md5').update(icon).digest('hex'));
    } finally {
      await s.close();
    }
  });

  it('a port that answers plain HTTP as a TLS-only port does is read over TLS: HTTPS with the page\'s title, not "HTTP"', async () => {
    // Proxmox VE's 8006 (and Go servers): a plain request gets "Client sent an HTTP request to an HTTPS server."; TLS gets the UI.
    // One port for both: a TLS ClientHello (0x16) is relayed to a TLS server of its own.
    const secure = tls.createServer({ key: cert.key, cert: cert.cert }, (s) => {
      s.on('error', () => undefined);
      s.once('data', () => s.end(page('200 OK', ['Server: pve-api-daemon/3.0', 'Content-Type: text/html; charset=utf-8'], '<!DOCTYPE html>\n<html>\n<head>\n<title>pve - Proxmox Virtual Environment</title>')));
    });
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', (first) => {
        if (first[0] !== 0x16) return socket.end('HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n');
        const relay = net.connect((secure.address() as net.AddressInfo).port, '127.0.0.1', () => relay.write(first));
        relay.on('error', () => socket.destroy());
        socket.pipe(relay).pipe(socket);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { service, answers } = await identifyPort('127.0.0.1', (server.address() as net.AddressInfo).port, budget(), { timeouts: TIMEOUTS });
      expect(answers.find((a) => a.probe === 'http-get')!.tlsOnly).to.equal(true);
      expect(service!.findings!.find((f) => f.layer === 'protocol')).to.deep.include({ name: 'HTTPS', rule: 'https' });
      expect(service!.name).to.equal('Proxmox Virtual Environment'); // Recog's html_title, read over TLS
      expect(service!.facts).to.deep.include({ title: 'pve - Proxmox Virtual Environment', subject: 'pve.lab' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await new Promise((resolve) => secure.close(resolve));
    }
  });

  it('several findings on one port: the application behind nginx names the service, nginx stays as its server', () => {
    const bytes = Buffer.from(page('200 OK', ['Server: nginx/1.22.1', 'Content-Type: text/html'], '<title>Grafana</title>'), 'latin1');
    const answer: ProbeAnswer = { probe: 'http-get', port: 80, bytes, http: parseHttp(bytes)! };
    const { service } = recognise(80, [answer]);
    expect(service).to.deep.include({ name: 'Grafana', definition: 'Grafana', rule: 'http-grafana' });
    expect(service!.findings!.map((f) => `${f.layer} ${f.name}${f.version ? ` ${f.version}` : ''}`)).to.deep.equal(['application Grafana', 'server nginx 1.22.1', 'protocol HTTP']);
    expect(service!.reason).to.match(/; also server nginx 1\.22\.1 \(rule http-nginx\), protocol HTTP \(rule http\)$/);
  });

  it('bytes from the network are text before they are facts: an AMQP header\'s version bytes never reach a report as NUL', () => {
    const answer: ProbeAnswer = { probe: 'null', port: 5672, bytes: Buffer.from('AMQP\x00\x00\x09\x01', 'latin1') };
    const { service } = recognise(5672, [answer]);
    expect(service!.definition).to.equal('AMQP');
    const request = hostRequest({ ip: '198.18.30.9', mac: null, hostname: null, evidence: [], openPorts: [{ port: 5672, protocol: 'Tcp' }], services: [service!], target: { cidr: '198.18.30.0/24', subnetId: 'x', ...parseCidr('198.18.30.0/24') } as any },
      { networkId: 'n', daemonId: 'd', subnetId: 's', discoveryType: { type: 'Network' } as any, date: '2026-12-01T00:00:00Z', description: null });
    const text = JSON.stringify(request);
    expect(text).to.not.contain('\\u0000');
    expect(service!.facts).to.deep.include({ major: '\\x00', minor: '\\x09', revision: '\\x01' });
  });
});

describe('agent fingerprint: DNS over TCP', () => {
  it('version.bind CH TXT: a DNS server, its version as a fact, and Recog names the software (dnsmasq)', async () => {
    const { dnsVersionBind } = await import('../../agent/fingerprint/handshakes.js');
    // RFC 1035: the query as sent (length 0x001e, id "NI", one question version.bind TXT CH).
    expect(dnsVersionBind().toString('hex')).to.equal('001e4e49000000010000000000000776657273696f6e0462696e6400001000' + '03');
    const txt = 'dnsmasq-2.89';
    const message = Buffer.concat([Buffer.from('4e49840000010001000000000776657273696f6e0462696e64000010000' + '3', 'hex'),
      Buffer.from([0xc0, 0x0c, 0x00, 0x10, 0x00, 0x03, 0, 0, 0, 0, 0x00, txt.length + 1, txt.length]), Buffer.from(txt, 'latin1')]);
    const bytes = Buffer.concat([Buffer.from([0, message.length]), message]);
    const { service } = recognise(53, [{ probe: 'dns-version-bind', port: 53, bytes }]);
    expect(service).to.deep.include({ definition: 'Dns', confidence: 'High' });
    expect(service!.facts).to.deep.include({ rcode: 'NOERROR', version: 'dnsmasq-2.89' });
    expect(service!.name).to.match(/dnsmasq/i);
  });
});
