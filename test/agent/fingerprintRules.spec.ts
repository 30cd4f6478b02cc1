// Fingerprint rules on recorded answers (greetings of real servers, an HTTP answer, a TLS
// certificate): no network.
import { expect } from 'chai';
import { probePlan, recognise } from '../../agent/fingerprint/match.js';
import { escapeBytes, parseHttp, type ProbeAnswer, type ProbeId } from '../../agent/fingerprint/probes.js';
import { RULES } from '../../agent/fingerprint/rules.js';

function answer(probe: ProbeId, port: number, bytes: string | Buffer, more: Partial<ProbeAnswer> = {}): ProbeAnswer {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes;
  const a: ProbeAnswer = { probe, port, bytes: buf, ...more };
  if (probe === 'http-get' || probe === 'tls') {
    const http = parseHttp(buf);
    if (http) a.http = http;
  }
  return a;
}

// Recorded from servers: OpenSSH 9.2p1 on Debian 12, Redis 7.0, PostgreSQL 15, MariaDB 10.11 (127.0.0.1:3306 here),
// Python 3.11's http.server, nginx 1.22 (Debian 12).
const OPENSSH = 'SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n';
const MARIADB = Buffer.concat([Buffer.from('6400000000', 'hex').subarray(0, 4), Buffer.from('\n5.5.5-10.11.19-MariaDB-0+deb12u1\0\t\0\0\0X)^!)Hmo\0', 'latin1')]);
const MYSQL = Buffer.concat([Buffer.from([0x4a, 0, 0, 0, 0x0a]), Buffer.from('8.0.36\0', 'latin1'), Buffer.from([0x0d, 0, 0, 0]), Buffer.from('abcdefgh\0', 'latin1')]);
const PYTHON_HTTP = 'HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6 Python/3.11.2\r\nDate: Wed, 25 Nov 2026 18:00:00 GMT\r\n'
  + 'Content-type: text/html; charset=utf-8\r\nContent-Length: 200\r\n\r\n<!DOCTYPE HTML>\n<html lang="en">\n<head>\n'
  + '<meta charset="utf-8">\n<title>Directory listing for /</title>\n</head>';
const NGINX_HTTP = 'HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n'
  + '<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>';

describe('agent fingerprint: rules on recorded answers', () => {
  it('OpenSSH greeting: SSH, High, product, version and OS (three findings), and a reason with rule, probe, port and bytes', () => {
    const { service } = recognise(2222, [answer('null', 2222, OPENSSH)]);
    expect(service).to.deep.include({ rule: 'ssh-greeting', name: 'OpenSSH', definition: 'SSH', port: 2222, protocol: 'Tcp', confidence: 'High' });
    expect(service!.facts).to.deep.equal({ protocol: '2.0', product: 'OpenSSH', version: '9.2p1', os: 'Debian' });
    expect(service!.findings!.map((f) => [f.layer, f.name, f.version ?? null, f.confidence])).to.deep.equal([
      ['server', 'OpenSSH', '9.2p1', 'High'], ['protocol', 'SSH', null, 'High'], ['os', 'Debian', null, 'Medium'],
    ]);
    expect(service!.reason).to.equal('rule ssh-greeting: probe NULL (read the greeting) on 2222/tcp answered "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3"');
  });

  it('an SSH greeting is read whatever probe got it (a server that talks first)', () => {
    const { service } = recognise(80, [answer('http-get', 80, `${OPENSSH}Invalid SSH identification string.\r\n`)]);
    expect(service?.definition).to.equal('SSH');
  });

  it('Redis: +PONG, -NOAUTH and -DENIED are Redis; an unrelated answer to PING is not', () => {
    for (const text of ['+PONG\r\n', '-NOAUTH Authentication required.\r\n', '-DENIED Redis is running in protected mode because protected mode is enabled\r\n']) {
      const { service } = recognise(6380, [answer('redis-ping', 6380, text)]);
      expect(service, text).to.deep.include({ rule: 'redis-ping', definition: 'Redis', confidence: 'High' });
    }
    expect(recognise(6380, [answer('redis-ping', 6380, '-ERR unknown command\r\n')]).service).to.equal(null);
    expect(recognise(6379, [answer('redis-ping', 6379, '+PONG\r\n')]).service!.reason).to.equal('rule redis-ping: probe "PING\\r\\n" on 6379/tcp answered "+PONG"');
  });

  it('PostgreSQL: one byte S or N to the SSLRequest; anything longer is not', () => {
    for (const b of ['S', 'N']) {
      const { service } = recognise(5432, [answer('pg-sslrequest', 5432, b)]);
      expect(service).to.deep.include({ rule: 'postgresql-sslrequest', definition: 'PostgreSQL', confidence: 'High' });
      expect(service!.reason).to.equal(`rule postgresql-sslrequest: probe SSLRequest 00000008 04d2162f on 5432/tcp answered "${b}"`);
    }
    expect(recognise(15432, [answer('pg-sslrequest', 15432, 'NO')]).service).to.equal(null);
  });

  it('MySQL and MariaDB handshakes (protocol 10) with their versions', () => {
    const mariadb = recognise(3306, [answer('null', 3306, MARIADB)]).service!;
    expect(mariadb).to.deep.include({ name: 'MariaDB', definition: 'MariaDB' });
    expect(mariadb.facts).to.deep.include({ version: '5.5.5-10.11.19-MariaDB-0+deb12u1' });
    expect(mariadb.findings!.find((f) => f.layer === 'protocol')!.rule).to.equal('mariadb-handshake');
    const mysql = recognise(3307, [answer('null', 3307, MYSQL)]).service!;
    expect(mysql).to.deep.include({ name: 'MySQL', definition: 'MySQL', confidence: 'High' });
    expect(mysql.facts).to.deep.include({ version: '8.0.36' });
    expect(mysql.findings!.find((f) => f.layer === 'protocol')).to.deep.include({ rule: 'mysql-handshake', evidence: '"J\\x00\\x00\\x00\\n8.0.36\\x00"' });
  });

  it('SMTP and FTP greetings; a bare 220 counts only on its port, with less confidence', () => {
    const postfix = recognise(2525, [answer('null', 2525, '220 mail.lab ESMTP Postfix (Debian/GNU)\r\n')]).service!;
    expect(postfix).to.deep.include({ name: 'Postfix', definition: 'SMTP', confidence: 'High' }); // the server by Recog's smtp.banner, on the SMTP rule's protocol
    expect(postfix.facts).to.deep.include({ greeting: 'mail.lab ESMTP Postfix (Debian/GNU)', os: 'Debian Linux' });
    expect(recognise(2121, [answer('null', 2121, '220 (vsFTPd 3.0.3)\r\n')]).service).to.deep.include({ definition: 'FTP', confidence: 'High' });
    expect(recognise(21, [answer('null', 21, '220 Welcome\r\n')]).service).to.deep.include({ rule: 'ftp-220-on-21', confidence: 'Medium' });
    expect(recognise(25, [answer('null', 25, '220 Welcome\r\n')]).service).to.deep.include({ rule: 'smtp-220-on-mail-ports', confidence: 'Medium' });
    expect(recognise(2100, [answer('null', 2100, '220 Welcome\r\n')]).service).to.equal(null);
  });

  it('HTTP: Server header and title; Python http.server and nginx by their Server header', () => {
    const python = recognise(8000, [answer('http-get', 8000, PYTHON_HTTP)]).service!;
    expect(python).to.deep.include({ rule: 'http-python', definition: 'HTTP', confidence: 'High' });
    expect(python.facts).to.deep.include({ version: '0.6', python: '3.11.2', server: 'SimpleHTTP/0.6 Python/3.11.2', title: 'Directory listing for /' });
    expect(python.reason).to.equal('rule http-python: probe "GET / HTTP/1.1" on 8000/tcp answered Server "SimpleHTTP/0.6 Python/3.11.2"; also protocol HTTP (rule http)');
    const nginx = recognise(80, [answer('http-get', 80, NGINX_HTTP)]).service!;
    expect(nginx).to.deep.include({ rule: 'http-nginx', definition: 'Nginx', facts: { status: '200', version: '1.22.1', server: 'nginx/1.22.1', title: 'Welcome to nginx!' } });
    const express = recognise(3000, [answer('http-get', 3000, 'HTTP/1.1 200 OK\r\nX-Powered-By: Express\r\nContent-Type: text/html\r\n\r\n<title>App</title>')]).service!;
    expect(express).to.deep.include({ rule: 'http-express', definition: 'Node.js', facts: { status: '200', title: 'App' } });
    expect(express.reason).to.equal('rule http-express: probe "GET / HTTP/1.1" on 3000/tcp answered header x-powered-by "Express"; also protocol HTTP (rule http)');
    const plain = recognise(8081, [answer('http-get', 8081, 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n')]).service!;
    expect(plain).to.deep.include({ rule: 'http', definition: 'HTTP', facts: { status: '404' } });
  });

  it('TLS: HTTPS with the certificate subject, SAN and issuer; a certificate alone is a TLS service (Medium)', () => {
    const cert = { subject: 'nas.lab', san: 'DNS:nas.lab, IP Address:198.18.10.11', issuer: 'Lab CA' };
    const https = recognise(443, [answer('tls', 443, 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>NAS</title>', { cert })]).service!;
    expect(https).to.deep.include({ rule: 'https', definition: 'HTTPS', confidence: 'High' });
    expect(https.facts).to.deep.equal({ status: '200', title: 'NAS', subject: 'nas.lab', san: 'DNS:nas.lab, IP Address:198.18.10.11', issuer: 'Lab CA' });
    const bare = recognise(4433, [answer('tls', 4433, 'BYE\r\n', { cert })]).service!;
    expect(bare).to.deep.include({ rule: 'tls-certificate', definition: 'TLS', confidence: 'Medium' });
    expect(bare.reason).to.equal('rule tls-certificate: probe TLS handshake + "GET / HTTP/1.1" on 4433/tcp answered certificate issuer "Lab CA"');
    // An IMAPS greeting over TLS is IMAP (handshakes.ts), not "a certificate".
    expect(recognise(993, [answer('tls', 993, '* OK IMAP ready\r\n', { cert })]).service).to.deep.include({ definition: 'IMAP', confidence: 'High' });
  });

  it('port number only: Low, and says so; the best answer wins over a port guess', () => {
    const guess = recognise(22, [answer('null', 22, '')]).service!;
    expect(guess).to.deep.include({ rule: 'ssh-port', definition: 'SSH', confidence: 'Low' });
    expect(guess.reason).to.equal('rule ssh-port: port 22/tcp open (port number only: no probe answer matched a rule)');
    expect(recognise(22, [answer('null', 22, ''), answer('http-get', 22, OPENSSH)]).service!.confidence).to.equal('High');
    const cert = { subject: 'x', san: '', issuer: 'y' };
    expect(recognise(22, [answer('null', 22, OPENSSH), answer('tls', 22, '', { cert })]).service!.rule).to.equal('ssh-greeting'); // a later, weaker match does not replace it
    expect(recognise(40000, [answer('null', 40000, 'hello')]).service).to.equal(null);
  });

  it('reasons escape and cut the matched bytes', () => {
    expect(escapeBytes(Buffer.from([0x41, 0x00, 0x0d, 0x0a, 0x22, 0xff]))).to.equal('"A\\x00\\r\\n\\"\\xff"');
    expect(escapeBytes('x'.repeat(200))).to.equal(`"${'x'.repeat(80)}…"`);
  });

  it('probe plan: a hinted port gets its probe first; an unknown port starts with the greeting', () => {
    expect(probePlan(6379)[0]).to.equal('redis-ping');
    expect(probePlan(5432)[0]).to.equal('pg-sslrequest');
    expect(probePlan(443)[0]).to.equal('tls');
    expect(probePlan(8080)[0]).to.equal('http-get');
    expect(probePlan(40000)).to.deep.equal(['null', 'http-get', 'tls', 'redis-ping', 'pg-sslrequest']);
  });

  it('every rule has a unique id, a definition, and a pattern or ports', () => {
    expect(new Set(RULES.map((r) => r.id)).size).to.equal(RULES.length);
    for (const r of RULES) {
      expect(r.definition, r.id).to.be.a('string').and.not.equal('');
      if (r.evidence === 'answer') expect(r.match.length, r.id).to.be.above(0);
      else expect(r.ports.length, r.id).to.be.above(0);
    }
  });
});
