/**
 * The products lab's emulated services (test/lab/products.ts): one Node process per host namespace,
 * `node --import tsx test/lab/productServices.ts '<json ServiceHostSpec>'`, listening on that host's
 * address and ports and answering with the bytes the real product sends. Every emulation says where
 * its bytes come from: the product's own documentation or source, a protocol specification, or
 * Recog's examples (/work/shared/reference/recog/xml: banners, titles and headers of real products).
 * Nothing here is taken from nmap's nmap-service-probes, Wappalyzer or Scanopy.
 *
 * Where a detail was not known for certain (a header's exact position, a build string), the lab
 * uses the product's usual shape and says so in the comment: the fingerprints judged here must not
 * depend on such a detail anyway.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';

export type ProductId =
  | 'mikrotik-webfig' | 'mikrotik-ftp' | 'mikrotik-ssh' | 'mikrotik-api' | 'mikrotik-winbox'
  | 'synology-http' | 'synology-https' | 'synology-ftp' | 'samba' | 'windows-smb'
  | 'pihole-web' | 'pihole-dns' | 'homeassistant' | 'jellyfin' | 'plex' | 'nextcloud'
  | 'portainer-http' | 'portainer-https' | 'grafana' | 'prometheus' | 'proxmox'
  | 'unifi-http' | 'unifi-https' | 'luci' | 'dropbear' | 'busybox-telnet' | 'truenas'
  | 'gitea' | 'jenkins' | 'elasticsearch' | 'kibana' | 'cups' | 'hp-ews' | 'hp-ews-tls' | 'raw9100'
  | 'hikvision-web' | 'hikvision-rtsp' | 'hikvision-sdk' | 'nginx-vaultwarden' | 'vault'
  | 'iis' | 'rdp' | 'apple-vnc' | 'apple-ssh' | 'airplay' | 'tigervnc' | 'rabbitmq-amqp' | 'rabbitmq-mgmt'
  | 'mongodb' | 'postfix' | 'dovecot-imap' | 'dovecot-pop3' | 'dovecot-imaps' | 'mariadb' | 'slapd' | 'apache-default'
  | 'etcd' | 'docker-registry' | 'spring-boot';

export interface EmulatedService { port: number; product: ProductId; cert?: { cert: string; key: string } }
export interface ServiceHostSpec { ip: string; hostname: string; services: EmulatedService[] }

/**
 * How long a connection may stay silent before the service closes it: real servers wait long
 * (nginx and Apache 60 s, Go and Jetty longer); one that closes a silent connection early looks
 * like a TCP wrapper to a scanner that waits for a greeting first.
 */
const IDLE_MS = 30_000;

// ---- HTTP ------------------------------------------------------------------------------------------

interface Req { method: string; path: string; version: string; headers: Record<string, string>; raw: Buffer; tls: boolean; port: number; ip: string }
/** An answer: the status line, headers in the product's order ('$date' and '$len' filled in), the body. */
interface Resp { status: string; headers: Array<[string, string]>; body?: string | Buffer; keepOpen?: boolean }
type Route = Resp | ((req: Req) => Resp);
interface HttpApp { routes: Record<string, Route>; fallback: Route; badRequest?: Route }

const date = () => new Date().toUTCString();
const html = (title: string, extra = '') => `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${title}</title>${extra}</head><body></body></html>\n`;
/** Go's http.Redirect body (net/http/server.go: `<a href="…">Found</a>.\n\n`), as Grafana, Prometheus and Vault send it. */
const goRedirectBody = (location: string, text: string) => `<a href="${location}">${text}</a>.\n\n`;
/** nginx's built-in error page (ngx_http_special_response.c), server_tokens off or on. */
const nginxPage = (code: string, server = 'nginx') => `<html>\r\n<head><title>${code}</title></head>\r\n<body>\r\n<center><h1>${code}</h1></center>\r\n<hr><center>${server}</center>\r\n</body>\r\n</html>\r\n`;
const hostOf = (req: Req) => req.headers.host ?? `${req.ip}${req.port === (req.tls ? 443 : 80) ? '' : `:${req.port}`}`;
const hostOnly = (req: Req) => hostOf(req).replace(/:\d+$/, '');

function render(r: Resp): Buffer {
  const body = typeof r.body === 'string' ? Buffer.from(r.body, 'utf8') : (r.body ?? Buffer.alloc(0));
  const lines = r.headers.map(([k, v]) => `${k}: ${v === '$date' ? date() : v === '$len' ? body.length : v}`);
  return Buffer.concat([Buffer.from(`${r.status}\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`, 'latin1'), body]);
}

function parseRequest(raw: Buffer, port: number, ip: string, isTls: boolean): Req | null {
  const text = raw.toString('latin1');
  const m = /^([A-Z]+) (\S+) (HTTP\/\d\.\d)\r?\n/.exec(text);
  if (!m) return null;
  const headers: Record<string, string> = {};
  for (const line of text.split(/\r?\n/).slice(1)) {
    const c = line.indexOf(':');
    if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
  }
  return { method: m[1]!, path: m[2]!.replace(/^https?:\/\/[^/]+/, '') || '/', version: m[3]!, headers, raw, tls: isTls, port, ip };
}

/** Reads one request (until a blank line, or 2 s), answers it, closes (the agent and nmap ask for that anyway). */
function serveHttp(socket: net.Socket, app: HttpApp, port: number, ip: string, isTls: boolean, first?: Buffer): void {
  let buf = first ?? Buffer.alloc(0);
  let answered = false;
  const answer = () => {
    if (answered) return;
    answered = true;
    const req = parseRequest(buf, port, ip, isTls);
    const route = req ? (app.routes[req.path.split('?')[0]!] ?? app.fallback) : (app.badRequest ?? BAD_REQUEST);
    const resp = typeof route === 'function' ? route(req ?? { method: '', path: '', version: '', headers: {}, raw: buf, tls: isTls, port, ip }) : route;
    socket.end(render(resp));
  };
  const check = () => { if (buf.includes('\r\n\r\n') || buf.includes('\n\n')) answer(); };
  socket.setTimeout(buf.length ? 2000 : IDLE_MS, () => (buf.length ? answer() : socket.destroy()));
  socket.once('data', () => socket.setTimeout(2000));
  socket.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]); check(); });
  check();
}
const BAD_REQUEST: Resp = { status: 'HTTP/1.1 400 Bad Request', headers: [['Content-Type', 'text/plain; charset=utf-8'], ['Connection', 'close']], body: '400 Bad Request' };

// ---- the products -------------------------------------------------------------------------------

type Handler = (socket: net.Socket, svc: EmulatedService, spec: ServiceHostSpec) => void;

const http = (app: (spec: ServiceHostSpec) => HttpApp): Handler => (socket, svc, spec) => serveHttp(socket, app(spec), svc.port, spec.ip, false);

/**
 * A TLS port: a ClientHello (first byte 0x16, RFC 8446 §5.1) gets the handshake, then `app`; any
 * other first bytes get `plain` (what the product answers to cleartext on its TLS port), or a close.
 */
const https = (app: (spec: ServiceHostSpec) => HttpApp, plain?: (spec: ServiceHostSpec) => HttpApp, afterHandshake?: (s: tls.TLSSocket) => void): Handler => (socket, svc, spec) => {
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  socket.once('data', (first: Buffer) => {
    if (first[0] === 0x16) {
      // The bytes already read go first through a stream of our own: a TLSSocket over a net.Socket
      // reads its handle directly and would never see the ClientHello taken off it here.
      const carrier = new Duplex({
        read() {},
        write(chunk: Buffer, _enc, done) { socket.write(chunk, done); },
        final(done) { socket.end(); done(); },
      });
      carrier.push(first);
      socket.on('data', (d: Buffer) => carrier.push(d));
      socket.on('end', () => carrier.push(null));
      socket.on('close', () => carrier.destroy());
      const secure = new tls.TLSSocket(carrier, { isServer: true, secureContext: tls.createSecureContext({ cert: fs.readFileSync(svc.cert!.cert), key: fs.readFileSync(svc.cert!.key) }) });
      secure.on('error', () => socket.destroy());
      secure.on('close', () => socket.destroy());
      if (afterHandshake) secure.once('secure', () => afterHandshake(secure));
      else serveHttp(secure, app(spec), svc.port, spec.ip, true);
    } else if (plain) {
      serveHttp(socket, plain(spec), svc.port, spec.ip, false, first);
    } else {
      socket.destroy();
    }
  });
};

/** Sends `greeting` at once; `onData` (optional) answers what the client sends. */
const banner = (greeting: Buffer | string | ((spec: ServiceHostSpec) => string), onData?: (socket: net.Socket, data: Buffer) => void): Handler => (socket, _svc, spec) => {
  const text = typeof greeting === 'function' ? greeting(spec) : greeting;
  socket.write(typeof text === 'string' ? Buffer.from(text, 'latin1') : text);
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  if (onData) socket.on('data', (d: Buffer) => onData(socket, d));
};
/** Accepts and says nothing (a binary protocol that waits for its own client's first message). */
const silent: Handler = (socket) => {
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  socket.on('data', () => undefined);
};

/** Waits for a whole message (`complete` says when), then `reply` (null: close). */
const requestReply = (complete: (b: Buffer) => boolean, reply: (b: Buffer, socket: net.Socket) => Buffer | null, keepOpen = false): Handler => (socket) => {
  let buf = Buffer.alloc(0);
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    if (!complete(buf)) return;
    const out = reply(buf, socket);
    buf = Buffer.alloc(0);
    if (!out) socket.destroy();
    else if (keepOpen) socket.write(out);
    else socket.end(out);
  });
};

// -- DER/BER (SPNEGO in SMB, LDAP) --
function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const len = body.length < 0x80 ? Buffer.from([body.length]) : body.length < 0x100 ? Buffer.from([0x81, body.length]) : Buffer.from([0x82, body.length >> 8, body.length & 255]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}
const berInt = (tag: number, n: number) => der(tag, n < 0x80 ? Buffer.from([n]) : n < 0x8000 ? Buffer.from([n >> 8, n & 255]) : Buffer.from([(n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255]));
const octets = (s: string) => der(0x04, Buffer.from(s, 'utf8'));
const oid = (hex: string) => der(0x06, Buffer.from(hex, 'hex'));
/** Reads a BER length at `at`: [length, header size]. */
function berLen(b: Buffer, at: number): [number, number] | null {
  if (at >= b.length) return null;
  const first = b[at]!;
  if (first < 0x80) return [first, 1];
  const n = first & 0x7f;
  if (n === 0 || n > 3 || at + n >= b.length) return null;
  let len = 0;
  for (let i = 1; i <= n; i += 1) len = len * 256 + b[at + i]!;
  return [len, 1 + n];
}

// -- SMB2 NEGOTIATE response ([MS-SMB2] 2.2.4), for an SMB1 negotiate naming "SMB 2.???" / "SMB 2.002"
// ([MS-SMB2] 3.3.5.3.1: dialect 0x02FF, or 0x0202) or an SMB2 NEGOTIATE (the highest common dialect
// up to 3.0.2; 3.1.1 needs negotiate contexts, not emulated). SPNEGO NegTokenInit (RFC 4178) as a
// security blob: Samba's names NTLMSSP and adds the "not_defined_in_RFC4178@please_ignore" hint
// (Samba's source, auth/gensec/spnego.c; Recog's smb_native_* for the OS strings SMB1 would send);
// Windows' names NEGOEX, NTLMSSP and Kerberos. An SMB1-only negotiate is closed (Samba ≥ 4.11 and
// Windows 10+ have SMB1 off).
function smbNegotiate(flavour: 'samba' | 'windows'): Handler {
  const guid = randomBytes(16);
  const mech = (flavour === 'samba'
    ? [oid('2b0601040182370202 0a'.replace(/ /g, ''))]
    : [oid('2b0601040182370202 1e'.replace(/ /g, '')), oid('2b06010401823702020a'.replace(/ /g, '')), oid('2a864882f712010202'), oid('2a864886f712010202')]);
  const hints = flavour === 'samba' ? [der(0xa3, der(0x30, der(0xa0, der(0x1b, Buffer.from('not_defined_in_RFC4178@please_ignore')))))] : [];
  const blob = der(0x60, oid('2b0601050502'), der(0xa0, der(0x30, der(0xa0, der(0x30, ...mech)), ...hints)));
  return requestReply(
    (b) => b.length >= 4 && b.length >= 4 + b.readUIntBE(1, 3),
    (b) => {
      const msg = b.subarray(4);
      let dialect = 0;
      let messageId = Buffer.alloc(8);
      if (msg.subarray(0, 4).equals(Buffer.from('ff534d42', 'hex'))) {
        const dialects = msg.toString('latin1');
        if (dialects.includes('SMB 2.???')) dialect = 0x02ff;
        else if (dialects.includes('SMB 2.002')) dialect = 0x0202;
        else return null;
      } else if (msg.subarray(0, 4).equals(Buffer.from('fe534d42', 'hex')) && msg.readUInt16LE(12) === 0) {
        messageId = Buffer.from(msg.subarray(24, 32));
        const body = msg.subarray(64);
        const count = body.readUInt16LE(2);
        const offered = Array.from({ length: count }, (_, i) => body.readUInt16LE(36 + i * 2));
        dialect = [0x0302, 0x0300, 0x0210, 0x0202].find((d) => offered.includes(d)) ?? 0;
        if (!dialect) return null;
      } else {
        return null;
      }
      const header = Buffer.alloc(64);
      header.write('fe534d42', 0, 'hex');
      header.writeUInt16LE(64, 4);
      header.writeUInt16LE(1, 14); // credits granted
      header.writeUInt32LE(1, 16); // SMB2_FLAGS_SERVER_TO_REDIR
      messageId.copy(header, 24);
      const body = Buffer.alloc(64);
      body.writeUInt16LE(65, 0);
      body.writeUInt16LE(1, 2); // signing enabled
      body.writeUInt16LE(dialect, 4);
      guid.copy(body, 8);
      body.writeUInt32LE(flavour === 'samba' ? 0x2f : 0x7f, 24);
      body.writeUInt32LE(8_388_608, 28);
      body.writeUInt32LE(8_388_608, 32);
      body.writeUInt32LE(8_388_608, 36);
      body.writeBigUInt64LE(BigInt(Date.now()) * 10_000n + 116_444_736_000_000_000n, 40); // FILETIME
      body.writeUInt16LE(64 + 64, 56);
      body.writeUInt16LE(blob.length, 58);
      const smb = Buffer.concat([header, body, blob]);
      const nb = Buffer.alloc(4);
      nb.writeUIntBE(smb.length, 1, 3);
      return Buffer.concat([nb, smb]);
    },
    true,
  );
}

// -- BSON (bsonspec.org) for MongoDB's hello --
type Bson = number | string | boolean | Date | bigint | Bson[] | { [k: string]: Bson } | { $double: number } | { $oid: string };
function bson(doc: Record<string, Bson>): Buffer {
  const parts: Buffer[] = [];
  const el = (type: number, key: string, value: Buffer) => parts.push(Buffer.from([type]), Buffer.from(`${key}\0`, 'utf8'), value);
  for (const [k, v] of Object.entries(doc)) {
    if (typeof v === 'string') { const s = Buffer.from(`${v}\0`, 'utf8'); const l = Buffer.alloc(4); l.writeInt32LE(s.length); el(2, k, Buffer.concat([l, s])); }
    else if (typeof v === 'boolean') el(8, k, Buffer.from([v ? 1 : 0]));
    else if (typeof v === 'bigint') { const b = Buffer.alloc(8); b.writeBigInt64LE(v); el(18, k, b); }
    else if (typeof v === 'number') { const b = Buffer.alloc(4); b.writeInt32LE(v); el(16, k, b); }
    else if (v instanceof Date) { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v.getTime())); el(9, k, b); }
    else if (Array.isArray(v)) el(4, k, bson(Object.fromEntries(v.map((x, i) => [String(i), x]))));
    else if ('$oid' in v && typeof v.$oid === 'string') el(7, k, Buffer.from(v.$oid, 'hex'));
    else if ('$double' in v && typeof v.$double === 'number') { const b = Buffer.alloc(8); b.writeDoubleLE(v.$double); el(1, k, b); }
    else el(3, k, bson(v as Record<string, Bson>));
  }
  const body = Buffer.concat([...parts, Buffer.from([0])]);
  const len = Buffer.alloc(4);
  len.writeInt32LE(body.length + 4);
  return Buffer.concat([len, body]);
}
/** The first key of a BSON document (the command's name). */
const firstKey = (b: Buffer, at: number) => b.toString('latin1', at + 5, b.indexOf(0, at + 5));

/**
 * MongoDB 7.0: OP_QUERY (2004) on admin.$cmd with isMaster/ismaster gets an OP_REPLY (1); OP_MSG
 * (2013) with hello/isMaster/buildInfo an OP_MSG (MongoDB's wire protocol documentation, "Legacy
 * Opcodes" and "OP_MSG"; the hello fields from its "hello" command reference). Plain HTTP on the
 * port gets MongoDB's own answer (src/mongo/transport/service_state_machine / message_compressor:
 * "It looks like you are trying to access MongoDB over HTTP on the native driver port.").
 */
function mongodb(): Handler {
  let connections = 0;
  const hello = (): Record<string, Bson> => ({
    helloOk: true, ismaster: true, topologyVersion: { processId: { $oid: '66f1c2a9e4b0c1d2e3f4a5b6' }, counter: 0n },
    maxBsonObjectSize: 16_777_216, maxMessageSizeBytes: 48_000_000, maxWriteBatchSize: 100_000, localTime: new Date(),
    logicalSessionTimeoutMinutes: 30, connectionId: ++connections, minWireVersion: 0, maxWireVersion: 21, readOnly: false, ok: { $double: 1 },
  });
  const buildInfo = (): Record<string, Bson> => ({
    version: '7.0.14', gitVersion: 'ce59cfc6a3c5e5c067dca0d30697edd68d4f5188', modules: [], allocator: 'tcmalloc', javascriptEngine: 'mozjs',
    sysInfo: 'deprecated', versionArray: [7, 0, 14, 0], bits: 64, debug: false, maxBsonObjectSize: 16_777_216, ok: { $double: 1 },
  });
  return requestReply(
    (b) => b.subarray(0, 4).toString('latin1') === 'GET ' || (b.length >= 16 && b.length >= b.readInt32LE(0)),
    (b) => {
      if (b.subarray(0, 4).toString('latin1') === 'GET ') {
        const text = 'It looks like you are trying to access MongoDB over HTTP on the native driver port.\n';
        return Buffer.from(`HTTP/1.0 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${text.length}\r\n\r\n${text}`, 'latin1');
      }
      const requestId = b.readInt32LE(4);
      const opCode = b.readInt32LE(12);
      const header = (len: number, op: number) => { const h = Buffer.alloc(16); h.writeInt32LE(len); h.writeInt32LE(Math.floor(Math.random() * 1e9), 4); h.writeInt32LE(requestId, 8); h.writeInt32LE(op, 12); return h; };
      if (opCode === 2004) {
        const docAt = b.indexOf(0, 20) + 1 + 8;
        const cmd = firstKey(b, docAt).toLowerCase();
        const doc = bson(cmd === 'buildinfo' ? buildInfo() : hello());
        const fixed = Buffer.alloc(20);
        fixed.writeInt32LE(8, 0); // AwaitCapable
        fixed.writeInt32LE(1, 16); // numberReturned
        return Buffer.concat([header(16 + 20 + doc.length, 1), fixed, doc]);
      }
      if (opCode === 2013) {
        const cmd = firstKey(b, 21).toLowerCase();
        const doc = bson(cmd === 'buildinfo' ? buildInfo() : cmd === 'hello' || cmd === 'ismaster' ? hello()
          : { ok: { $double: 0 }, errmsg: `no such command: '${firstKey(b, 21)}'`, code: 59, codeName: 'CommandNotFound' });
        return Buffer.concat([header(16 + 5 + doc.length, 2013), Buffer.from([0, 0, 0, 0, 0]), doc]);
      }
      return null;
    },
    true,
  );
}

/**
 * OpenLDAP slapd 2.5: a BindRequest gets a BindResponse (success for an anonymous simple bind), a
 * SearchRequest for the root DSE its entry (objectClass top/OpenLDAProotDSE, namingContexts,
 * supportedLDAPVersion: slapd's root DSE, as Recog's ldap_searchresult examples show it) then
 * SearchResultDone; anything that is not BER (0x30) is closed, as slapd does (RFC 4511 §4.1.1).
 */
function slapd(): Handler {
  return requestReply(
    (b) => b[0] !== 0x30 || ((l) => l !== null && b.length >= 1 + l[1] + l[0])(berLen(b, 1)),
    (b) => {
      if (b[0] !== 0x30) return null;
      const [, lenSize] = berLen(b, 1)!;
      let at = 1 + lenSize;
      if (b[at] !== 0x02) return null;
      const idLen = b[at + 1]!;
      const id = b.readUIntBE(at + 2, idLen);
      at += 2 + idLen;
      const op = b[at];
      const result = (tag: number) => der(tag, der(0x0a, Buffer.from([0])), octets(''), octets(''));
      const message = (...ops: Buffer[]) => der(0x30, berInt(0x02, id), ...ops);
      if (op === 0x60) return message(result(0x61));
      if (op === 0x63) {
        const attr = (name: string, ...values: string[]) => der(0x30, octets(name), der(0x31, ...values.map(octets)));
        const entry = message(der(0x64, octets(''), der(0x30, attr('objectClass', 'top', 'OpenLDAProotDSE'), attr('namingContexts', 'dc=lab,dc=example'), attr('supportedLDAPVersion', '3'))));
        return Buffer.concat([entry, message(result(0x65))]);
      }
      return null;
    },
    true,
  );
}

/** A Hikvision camera's RTSP server: OPTIONS answered, the rest asks for Digest (its realm "IP Camera(…)"), as the camera's RTSP API documentation shows it. */
function hikvisionRtsp(): Handler {
  return requestReply((b) => b.includes('\r\n\r\n') || b.includes('\n\n'), (b) => {
    const text = b.toString('latin1');
    const m = /^([A-Z_]+) \S+ (RTSP|HTTP)\/\d\.\d/.exec(text);
    const cseq = /^CSeq:\s*(\d+)/im.exec(text)?.[1] ?? '0';
    const when = new Date();
    const rtspDate = `${when.toUTCString().slice(0, 3)}, ${when.toUTCString().slice(8, 11)} ${when.toUTCString().slice(5, 7)} ${when.toUTCString().slice(12)}`;
    if (!m || m[2] !== 'RTSP') return Buffer.from(`RTSP/1.0 400 Bad Request\r\nCSeq: ${cseq}\r\nDate:  ${rtspDate}\r\n\r\n`, 'latin1');
    if (m[1] === 'OPTIONS') return Buffer.from(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\nPublic: OPTIONS, DESCRIBE, PLAY, PAUSE, SETUP, TEARDOWN, SET_PARAMETER, GET_PARAMETER\r\nDate:  ${rtspDate}\r\n\r\n`, 'latin1');
    return Buffer.from(`RTSP/1.0 401 Unauthorized\r\nCSeq: ${cseq}\r\nWWW-Authenticate: Digest realm="IP Camera(K1234)", nonce="${randomBytes(16).toString('hex')}", stale="FALSE"\r\nDate:  ${rtspDate}\r\n\r\n`, 'latin1');
  }, true);
}

/** Pi-hole FTL (dnsmasq inside): DNS over TCP (RFC 1035 §4.2.2, length-prefixed); version.bind CH TXT named as dnsmasq names itself; the rest SERVFAIL (no upstream in the lab). */
function piholeDns(): Handler {
  return requestReply((b) => b.length >= 2 && b.length >= 2 + b.readUInt16BE(0), (b) => {
    const q = b.subarray(2, 2 + b.readUInt16BE(0));
    if (q.length < 12) return null;
    let end = 12;
    while (end < q.length && q[end] !== 0) end += q[end]! + 1;
    const question = q.subarray(12, end + 5);
    const name = q.subarray(12, end + 1).toString('latin1').toLowerCase();
    const isVersion = name === '\x07version\x04bind\x00' && q.readUInt16BE(end + 1) === 16 && q.readUInt16BE(end + 3) === 3;
    const head = Buffer.alloc(12);
    q.copy(head, 0, 0, 2);
    head.writeUInt16BE(isVersion ? 0x8580 : 0x8182 | (q.readUInt16BE(2) & 0x0100), 2);
    head.writeUInt16BE(1, 4);
    head.writeUInt16BE(isVersion ? 1 : 0, 6);
    const txt = 'dnsmasq-pi-hole-v2.90+1';
    const answer = isVersion ? Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 16, 0, 3, 0, 0, 0, 0, 0, txt.length + 1, txt.length]), Buffer.from(txt, 'latin1')]) : Buffer.alloc(0);
    const msg = Buffer.concat([head, question, answer]);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(msg.length);
    return Buffer.concat([len, msg]);
  }, true);
}

/** MariaDB 10.11 (Debian 12): its initial handshake packet (MariaDB's documentation, "Connection: Initial Handshake Packet"; the "5.5.5-" prefix MariaDB sends to old clients). NULs inside. */
function mariadbHandshake(): Buffer {
  const printable = () => Buffer.from(Array.from(randomBytes(20), (x) => 33 + (x % 94)));
  const scramble = printable();
  const payload = Buffer.concat([
    Buffer.from([0x0a]), Buffer.from('5.5.5-10.11.6-MariaDB-0+deb12u1\0', 'latin1'),
    Buffer.from([0x1f, 0x00, 0x00, 0x00]), scramble.subarray(0, 8), Buffer.from([0x00]),
    Buffer.from([0xfe, 0xf7, 0x2d, 0x02, 0x00, 0xff, 0x81, 0x15]), Buffer.alloc(6), Buffer.from([0x1d, 0x00, 0x00, 0x00]),
    scramble.subarray(8, 20), Buffer.from([0x00]), Buffer.from('mysql_native_password\0', 'latin1'),
  ]);
  const head = Buffer.alloc(4);
  head.writeUIntLE(payload.length, 0, 3);
  return Buffer.concat([head, payload]);
}

/**
 * RDP (Windows 11 / Server 2022): an X.224 Connection Request (TPKT 03 00, [MS-RDPBCGR] 2.2.1.1) gets
 * a Connection Confirm, with an RDP Negotiation Response selecting TLS when the request carried a
 * negotiation request ([MS-RDPBCGR] 2.2.1.2.1); anything else is closed.
 */
const rdp = requestReply((b) => b[0] !== 0x03 || (b.length >= 4 && b.length >= b.readUInt16BE(2)), (b) => {
  if (b[0] !== 0x03 || b[1] !== 0x00 || b[5] !== 0xe0) return null;
  if (!(b.length >= 19 && b[b.length - 8] === 0x01)) return Buffer.from('0300000b06d00000123400', 'hex'); // no RDP_NEG_REQ: a bare Connection Confirm
  const requested = b.readUInt32LE(b.length - 4);
  // RDP_NEG_RSP (type 02, flags 1f, length 8) selecting CredSSP (2) or TLS (1); a request for neither: RDP_NEG_FAILURE HYBRID_REQUIRED_BY_SERVER (5).
  if (requested & 2) return Buffer.from('030000130ed00000123400021f080002000000', 'hex');
  if (requested & 1) return Buffer.from('030000130ed00000123400021f080001000000', 'hex');
  return Buffer.from('030000130ed000001234000300080005000000', 'hex');
});

// The products, by id. HTTP header orders follow each server's usual output (e.g. Go's net/http
// sorts headers alphabetically; nginx puts Server, Date, Content-Type, Content-Length, Connection first).
const PRODUCTS: Record<ProductId, Handler> = {
  // MikroTik RouterOS 7: webfig has no Server header; its title is Recog's html_title example
  // "RouterOS router configuration page". FTP greeting: Recog ftp_banners ("… FTP server (MikroTik 6.43.16) ready").
  'mikrotik-webfig': http(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Content-Length', '$len'], ['Content-Type', 'text/html'], ['Date', '$date'], ['Expires', 'Thu, 01 Jan 1970 00:00:00 GMT']],
      body: html('RouterOS router configuration page', '<link rel="stylesheet" href="/webfig/default.css">') },
  })),
  'mikrotik-ftp': banner((s) => `220 ${s.hostname} FTP server (MikroTik 7.14.3) ready\r\n`),
  // RouterOS's own SSH server names itself ROSSSH (no version), as RouterOS 6/7 send it.
  'mikrotik-ssh': banner('SSH-2.0-ROSSSH\r\n'),
  // The RouterOS API (8728) and Winbox (8291) wait for their client's first message: nothing to read.
  'mikrotik-api': silent,
  'mikrotik-winbox': silent,

  // Synology DSM 7 with "redirect HTTP to HTTPS": its nginx (server_tokens off) answers 5000 with a redirect to 5001.
  'synology-http': http(() => ({
    routes: {},
    fallback: (req) => ({ status: 'HTTP/1.1 301 Moved Permanently', headers: [['Server', 'nginx'], ['Date', '$date'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Connection', 'close'], ['Location', `https://${hostOnly(req)}:5001${req.path}`]], body: nginxPage('301 Moved Permanently') }),
  })),
  // DSM's login page: title as Recog's html_title example ("DS218&nbsp;-&nbsp;Synology&nbsp;DiskStation");
  // cleartext on the TLS port: nginx's own "400 The plain HTTP request was sent to HTTPS port".
  'synology-https': https(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Server', 'nginx'], ['Date', '$date'], ['Content-Type', 'text/html; charset="UTF-8"'], ['Content-Length', '$len'], ['Connection', 'close'], ['Cache-control', 'no-store'], ['X-Content-Type-Options', 'nosniff'], ['X-XSS-Protection', '1; mode=block']],
      body: html('DS920plus&nbsp;-&nbsp;Synology&nbsp;DiskStation') },
  }), () => ({ routes: {}, fallback: { status: 'HTTP/1.1 400 Bad Request', headers: [['Server', 'nginx'], ['Date', '$date'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Connection', 'close']], body: nginxPage('400 The plain HTTP request was sent to HTTPS port').replace('<center><h1>400 The plain', '<center><h1>400 Bad Request</h1></center>\r\n<center>The plain').replace('port</h1>', 'port') } })),
  'synology-ftp': banner('220 Synology FTP server ready.\r\n'),
  samba: smbNegotiate('samba'),
  'windows-smb': smbNegotiate('windows'),

  // Pi-hole v6: FTL's embedded web server, its default webserver.headers (pihole.toml); / → /admin/ → /admin/login (2 hops).
  'pihole-web': http((spec) => {
    const headers = (extra: Array<[string, string]>): Array<[string, string]> => [...extra, ['X-DNS-Prefetch-Control', 'off'], ['Content-Security-Policy', "default-src 'self' 'unsafe-inline';"],
      ['X-Frame-Options', 'DENY'], ['X-XSS-Protection', '0'], ['X-Content-Type-Options', 'nosniff'], ['Referrer-Policy', 'strict-origin-when-cross-origin'], ['Content-Length', '$len']];
    const redirect = (to: string): Resp => ({ status: 'HTTP/1.1 302 Found', headers: headers([['Location', to], ['Content-Type', 'text/plain']]) });
    return {
      routes: { '/': redirect('/admin/'), '/admin': redirect('/admin/'), '/admin/': redirect('/admin/login'),
        '/admin/login': { status: 'HTTP/1.1 200 OK', headers: headers([['Content-Type', 'text/html; charset=utf-8'], ['Cache-Control', 'no-cache']]), body: html(`Pi-hole - ${spec.hostname}`) } },
      fallback: { status: 'HTTP/1.1 404 Not Found', headers: headers([['Content-Type', 'text/html']]), body: '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>' },
    };
  }),
  'pihole-dns': piholeDns(),

  // Home Assistant 2024.x (aiohttp): the frontend's index, title "Home Assistant" (its frontend's index.html).
  homeassistant: http(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Content-Type', 'text/html; charset=utf-8'], ['Referrer-Policy', 'no-referrer'], ['X-Content-Type-Options', 'nosniff'], ['Server', ''], ['X-Frame-Options', 'SAMEORIGIN'], ['Content-Length', '$len'], ['Date', '$date']].filter(([k]) => k !== 'Server') as Array<[string, string]>,
      body: html('Home Assistant', '<link rel="manifest" href="/manifest.json" crossorigin="use-credentials">') },
  })),

  // Jellyfin 10.9 (Kestrel): / → web/index.html (its ASP.NET redirect), the web client's title "Jellyfin" (Recog html_title).
  jellyfin: http(() => ({
    routes: { '/web/index.html': { status: 'HTTP/1.1 200 OK', headers: [['Content-Type', 'text/html'], ['Date', '$date'], ['Server', 'Kestrel'], ['Accept-Ranges', 'bytes'], ['Content-Length', '$len'], ['Last-Modified', 'Mon, 07 Oct 2024 18:20:11 GMT']], body: html('Jellyfin') } },
    fallback: { status: 'HTTP/1.1 302 Found', headers: [['Content-Length', '0'], ['Date', '$date'], ['Server', 'Kestrel'], ['Location', '/web/index.html']] },
  })),
  // Plex Media Server: / without a token is 401 with X-Plex-Protocol; the web app at /web/index.html.
  plex: http(() => ({
    routes: { '/web/index.html': { status: 'HTTP/1.1 200 OK', headers: [['X-Plex-Protocol', '1.0'], ['Content-Length', '$len'], ['Content-Type', 'text/html'], ['Connection', 'close'], ['Cache-Control', 'no-cache'], ['Date', '$date']], body: html('Plex') } },
    fallback: { status: 'HTTP/1.1 401 Unauthorized', headers: [['X-Plex-Protocol', '1.0'], ['Content-Length', '$len'], ['Content-Type', 'text/html'], ['Connection', 'close'], ['Cache-Control', 'no-cache'], ['Date', '$date']],
      body: '<html><head><title>Unauthorized</title></head><body><h1>401 Unauthorized</h1></body></html>' },
  })),

  // Nextcloud 29 on Apache + PHP (Debian): / → /login with its instance cookie oc<instanceid> and the passphrase cookie.
  nextcloud: http(() => {
    const base: Array<[string, string]> = [['Date', '$date'], ['Server', 'Apache/2.4.62 (Debian)']];
    const security: Array<[string, string]> = [['Referrer-Policy', 'no-referrer'], ['X-Content-Type-Options', 'nosniff'], ['X-Frame-Options', 'SAMEORIGIN'],
      ['X-Permitted-Cross-Domain-Policies', 'none'], ['X-Robots-Tag', 'noindex, nofollow'], ['X-XSS-Protection', '1; mode=block']];
    const cookies = (): Array<[string, string]> => [['Set-Cookie', `ocq3x9k2m1ab=${randomBytes(13).toString('hex')}; path=/; HttpOnly; SameSite=Lax`],
      ['Set-Cookie', `oc_sessionPassphrase=${randomBytes(32).toString('base64url')}; path=/; HttpOnly; SameSite=Lax`], ['Expires', 'Thu, 19 Nov 1981 08:52:00 GMT'],
      ['Cache-Control', 'no-store, no-cache, must-revalidate'], ['Pragma', 'no-cache']];
    return {
      routes: { '/login': () => ({ status: 'HTTP/1.1 200 OK', headers: [...base, ...cookies(), ['Content-Security-Policy', "default-src 'self'"], ...security, ['Content-Length', '$len'], ['Content-Type', 'text/html;charset=UTF-8']], body: html('Login – Nextcloud') }) },
      fallback: (req) => ({ status: 'HTTP/1.1 302 Found', headers: [...base, ...cookies(), ...security, ['Location', `http://${hostOf(req)}/login`], ['Content-Length', '0'], ['Content-Type', 'text/html; charset=UTF-8']] }),
    };
  }),

  // Portainer CE 2.21 (Go): its index.html, title "Portainer"; headers sorted as Go writes them.
  'portainer-http': http(() => ({ routes: {}, fallback: PORTAINER_INDEX })),
  'portainer-https': https(() => ({ routes: {}, fallback: PORTAINER_INDEX }), () => ({ routes: {}, fallback: { status: 'HTTP/1.0 400 Bad Request', headers: [], body: 'Client sent an HTTP request to an HTTPS server.\n' } })),
  // Grafana 11 (Go): / → /login (Go's redirect body), the login page's title "Grafana".
  grafana: http(() => ({
    routes: { '/login': { status: 'HTTP/1.1 200 OK', headers: [['Cache-Control', 'no-store'], ['Content-Type', 'text/html; charset=UTF-8'], ['X-Content-Type-Options', 'nosniff'], ['X-Frame-Options', 'deny'], ['X-Xss-Protection', '1; mode=block'], ['Date', '$date'], ['Content-Length', '$len']], body: html('Grafana') } },
    fallback: { status: 'HTTP/1.1 302 Found', headers: [['Cache-Control', 'no-store'], ['Content-Type', 'text/html; charset=utf-8'], ['Location', '/login'], ['X-Content-Type-Options', 'nosniff'], ['X-Frame-Options', 'deny'], ['X-Xss-Protection', '1; mode=block'], ['Date', '$date'], ['Content-Length', '$len']], body: goRedirectBody('/login', 'Found') },
  })),
  // Prometheus 3 (Go): / → /query, its UI's title.
  prometheus: http(() => ({
    routes: { '/query': { status: 'HTTP/1.1 200 OK', headers: [['Content-Type', 'text/html; charset=utf-8'], ['Date', '$date'], ['Content-Length', '$len']], body: html('Prometheus Time Series Collection and Processing Server') } },
    fallback: { status: 'HTTP/1.1 302 Found', headers: [['Content-Type', 'text/html; charset=utf-8'], ['Location', '/query'], ['Date', '$date'], ['Content-Length', '$len']], body: goRedirectBody('/query', 'Found') },
  })),

  // Proxmox VE 8: pveproxy, TLS only on 8006; Server "pve-api-daemon/3.0" (Recog http_servers); title "<node> - Proxmox Virtual Environment"
  // (Recog html_title). Cleartext to 8006 gets a redirect to https on the same port (pve-http-server's plain-HTTP answer).
  proxmox: https((spec) => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Cache-Control', 'max-age=0'], ['Connection', 'close'], ['Date', '$date'], ['Pragma', 'no-cache'], ['Server', 'pve-api-daemon/3.0'], ['Content-Length', '$len'], ['Content-Type', 'text/html;charset=UTF-8'], ['Expires', '$date']],
      body: html(`${spec.hostname} - Proxmox Virtual Environment`) },
  }), () => ({ routes: {}, fallback: (req) => ({ status: 'HTTP/1.1 301 Moved Permanently', headers: [['Cache-Control', 'max-age=0'], ['Connection', 'close'], ['Date', '$date'], ['Location', `https://${hostOf(req)}${req.path}`], ['Pragma', 'no-cache'], ['Server', 'pve-api-daemon/3.0'], ['Expires', '$date']] }) })),

  // UniFi Network Application 8 (Tomcat): 8080 → https://…:8443/ → /manage → /manage/account/login (the 2-hop chain from 8443's /);
  // title "UniFi Network" (Recog html_title); the default self-signed certificate CN "UniFi", O "Ubiquiti Inc.".
  'unifi-http': http(() => ({ routes: {}, fallback: (req) => ({ status: 'HTTP/1.1 302 ', headers: [['Location', `https://${hostOnly(req)}:8443${req.path === '/' ? '/manage' : req.path}`], ['Content-Length', '0'], ['Date', '$date']] }) })),
  'unifi-https': https(() => ({
    routes: {
      '/': { status: 'HTTP/1.1 302 ', headers: [['X-Frame-Options', 'SAMEORIGIN'], ['Location', '/manage'], ['Content-Length', '0'], ['Date', '$date']] },
      '/manage': { status: 'HTTP/1.1 302 ', headers: [['X-Frame-Options', 'SAMEORIGIN'], ['Location', '/manage/account/login?redirect=%2Fmanage'], ['Content-Length', '0'], ['Date', '$date']] },
      '/manage/account/login': { status: 'HTTP/1.1 200 ', headers: [['X-Frame-Options', 'SAMEORIGIN'], ['Content-Type', 'text/html;charset=UTF-8'], ['Content-Length', '$len'], ['Date', '$date']], body: html('UniFi Network') },
    },
    fallback: { status: 'HTTP/1.1 404 ', headers: [['Content-Length', '0'], ['Date', '$date']] },
  }), () => ({ routes: {}, fallback: { status: 'HTTP/1.1 400 ', headers: [['Content-Type', 'text/html;charset=utf-8'], ['Content-Language', 'en'], ['Content-Length', '$len'], ['Date', '$date'], ['Connection', 'close']], body: '<!doctype html><html lang="en"><head><title>HTTP Status 400 – Bad Request</title></head><body><h1>HTTP Status 400 – Bad Request</h1></body></html>' } })),

  // OpenWrt 23.05: uhttpd (no Server header), /index.html refreshes to cgi-bin/luci/ (luci-base's index.html); LuCI's login is a 403 titled "<host> - LuCI".
  luci: http((spec) => ({
    routes: { '/cgi-bin/luci': (req) => ({ status: 'HTTP/1.1 302 Found', headers: [['Connection', 'close'], ['Location', `http://${hostOf(req)}/cgi-bin/luci/`], ['Content-Length', '0']] }),
      '/cgi-bin/luci/': { status: 'HTTP/1.1 403 Forbidden', headers: [['Connection', 'close'], ['Cache-Control', 'no-cache'], ['Expires', '0'], ['Content-Type', 'text/html; charset=UTF-8'], ['Content-Length', '$len']], body: html(`${spec.hostname} - LuCI`) } },
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Connection', 'close'], ['ETag', '"5b1-2e7-6620f1a8"'], ['Last-Modified', 'Thu, 18 Apr 2024 10:05:28 GMT'], ['Date', '$date'], ['Content-Type', 'text/html'], ['Content-Length', '$len']],
      body: '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">\n<head>\n<meta http-equiv="Cache-Control" content="no-cache" />\n<meta http-equiv="refresh" content="0; URL=cgi-bin/luci/" />\n</head>\n<body style="background-color: white">\n<a style="color: black; font-family: arial, helvetica, sans-serif;" href="cgi-bin/luci/">LuCI - Lua Configuration Interface</a>\n</body>\n</html>\n' },
  })),
  // Dropbear (OpenWrt's SSH server; Recog ssh_banners "dropbear_2015.67" shape).
  dropbear: banner('SSH-2.0-dropbear\r\n'),
  // BusyBox telnetd: its option negotiation first (busybox networking/telnetd.c: IAC DO ECHO, IAC DO NAWS, IAC WILL ECHO,
  // IAC WILL SGA — bytes 0xff, not UTF-8), then login's prompt.
  'busybox-telnet': banner((s) => `\xff\xfd\x01\xff\xfd\x1f\xff\xfb\x01\xff\xfb\x03\r\n${s.hostname} login: `),

  // TrueNAS SCALE 24: nginx (server_tokens off) sends / to /ui/; the web UI's title "TrueNAS".
  truenas: http(() => ({
    routes: { '/ui/': { status: 'HTTP/1.1 200 OK', headers: [['Server', 'nginx'], ['Date', '$date'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Connection', 'close'], ['Strict-Transport-Security', 'max-age=0; includeSubDomains; preload'], ['X-Content-Type-Options', 'nosniff'], ['X-Frame-Options', 'SAMEORIGIN']], body: html('TrueNAS') } },
    fallback: (req) => ({ status: 'HTTP/1.1 302 Moved Temporarily', headers: [['Server', 'nginx'], ['Date', '$date'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Connection', 'close'], ['Location', `http://${hostOf(req)}/ui/`]], body: nginxPage('302 Found') }),
  })),

  // Gitea 1.22 (Go): the explore page; its session cookie i_like_gitea and _csrf; title "Gitea: Git with a cup of tea" (Recog html_title).
  gitea: http(() => ({
    routes: {},
    fallback: () => ({ status: 'HTTP/1.1 200 OK', headers: [['Cache-Control', 'max-age=0, private, must-revalidate, no-transform'], ['Content-Type', 'text/html; charset=utf-8'],
      ['Set-Cookie', `i_like_gitea=${randomBytes(8).toString('hex')}; Path=/; HttpOnly; SameSite=Lax`], ['Set-Cookie', `_csrf=${randomBytes(20).toString('base64url')}; Path=/; Max-Age=86400; HttpOnly; SameSite=Lax`],
      ['X-Frame-Options', 'SAMEORIGIN'], ['Date', '$date'], ['Content-Length', '$len']], body: html('Gitea: Git with a cup of tea') }),
  })),
  // Jenkins 2.462 LTS (Jetty 10): / is 403 with X-Jenkins and X-Hudson, a refresh to /login.
  jenkins: http(() => ({
    routes: {},
    fallback: () => ({ status: 'HTTP/1.1 403 Forbidden', headers: [['Date', '$date'], ['X-Content-Type-Options', 'nosniff'], ['Set-Cookie', `JSESSIONID.4c5a1b2e=node0${randomBytes(10).toString('hex')}0.node0; Path=/; HttpOnly`],
      ['Expires', 'Thu, 01 Jan 1970 00:00:00 GMT'], ['Content-Type', 'text/html;charset=utf-8'], ['X-Hudson', '1.395'], ['X-Jenkins', '2.462.3'], ['X-Jenkins-Session', '4b7d7e3c'], ['X-Frame-Options', 'sameorigin'], ['Content-Length', '$len'], ['Server', 'Jetty(10.0.24)']],
      body: "<html><head><meta http-equiv='refresh' content='1;url=/login?from=%2F'/><script id='redirect' data-redirect-url='/login?from=%2F' src='/static/ad5ea8ef/scripts/redirect.js'></script></head><body style='background-color:white; color:white;'>\nAuthentication required\n<!--\n-->\n\n</body></html>" }),
  })),

  // Elasticsearch 8.15: / is its JSON with "tagline" : "You Know, for Search" (Elasticsearch's REST documentation), pretty-printed with " : ".
  elasticsearch: http((spec) => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['X-elastic-product', 'Elasticsearch'], ['content-type', 'application/json'], ['content-length', '$len']],
      body: `{\n  "name" : "${spec.hostname}",\n  "cluster_name" : "elasticsearch",\n  "cluster_uuid" : "Qm1hT0tSRk2xZ0VnN3p6Ww",\n  "version" : {\n    "number" : "8.15.2",\n    "build_flavor" : "default",\n    "build_type" : "deb",\n    "build_hash" : "98adf7bf6bb69b66ab95b761c9e5aadb0bb059a3",\n    "build_date" : "2024-09-19T10:06:03.564235954Z",\n    "build_snapshot" : false,\n    "lucene_version" : "9.11.1",\n    "minimum_wire_compatibility_version" : "7.17.0",\n    "minimum_index_compatibility_version" : "7.0.0"\n  },\n  "tagline" : "You Know, for Search"\n}\n` },
  })),
  // Kibana 8.15: / → /spaces/enter, kbn-name and kbn-license-sig headers (lower case: Node's http via hapi); the app's title "Elastic".
  kibana: http((spec) => {
    const head = (extra: Array<[string, string]>): Array<[string, string]> => [...extra, ['x-content-type-options', 'nosniff'], ['referrer-policy', 'strict-origin-when-cross-origin'],
      ['permissions-policy', 'camera=(), display-capture=(), fullscreen=(self), geolocation=(), microphone=(), web-share=()'], ['cross-origin-opener-policy', 'same-origin'],
      ['kbn-name', spec.hostname], ['kbn-license-sig', 'da420c53321c02c93e2ba8a2b2b1ac4ef0e2a0fc9e6a7a2a4c1e3a5b6c7d8e9f'], ['cache-control', 'private, no-cache, no-store, must-revalidate'], ['content-length', '$len'], ['Date', '$date'], ['Connection', 'close']];
    return {
      routes: { '/spaces/enter': { status: 'HTTP/1.1 302 Found', headers: head([['location', '/app/home']]) },
        '/app/home': { status: 'HTTP/1.1 200 OK', headers: head([['content-type', 'text/html; charset=utf-8']]), body: html('Elastic') } },
      fallback: { status: 'HTTP/1.1 302 Found', headers: head([['location', '/spaces/enter']]) },
    };
  }),

  // CUPS 2.4 (Debian 12): "Server: CUPS/2.4 IPP/2.1" (Recog http_servers "CUPS/1.7 IPP/2.1" shape), the home page's title.
  cups: http(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Connection', 'close'], ['Content-Language', 'en_US'], ['Content-Length', '$len'], ['Content-Type', 'text/html; charset=utf-8'], ['Date', '$date'],
      ['Accept-Encoding', 'gzip, deflate, identity'], ['Server', 'CUPS/2.4 IPP/2.1'], ['X-Frame-Options', 'DENY'], ['Content-Security-Policy', "frame-ancestors 'none'"]], body: html('Home - CUPS 2.4.2') },
  })),
  // HP Color LaserJet MFP: its Server header as Recog's http_servers examples ("HP HTTP Server; HP <model> - <product no>; Serial Number: …; Built:…").
  'hp-ews': http(() => HP_EWS),
  'hp-ews-tls': https(() => HP_EWS),
  raw9100: silent,

  // Hikvision IP camera: Server "App-webs/" (newer firmware; Recog has "Hikvision-Webs", "DNVRS-Webs" for older ones),
  // / sends the browser to /doc/page/login.asp by script; the login page's title is empty of the brand.
  'hikvision-web': http(() => ({
    routes: { '/doc/page/login.asp': { status: 'HTTP/1.1 200 OK', headers: [['Date', '$date'], ['Server', 'App-webs/'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Connection', 'close']], body: html('') } },
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Date', '$date'], ['Server', 'App-webs/'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Connection', 'close'], ['X-Frame-Options', 'SAMEORIGIN'], ['Cache-Control', 'no-cache']],
      body: '<!DOCTYPE html>\n<html>\n<head>\n<meta http-equiv="Content-Type" content="text/html; charset=utf-8" />\n<script>\nwindow.location.href = "/doc/page/login.asp?_" + (new Date()).getTime();\n</script>\n</head>\n<body>\n</body>\n</html>\n' },
  })),
  'hikvision-rtsp': hikvisionRtsp(),
  // The camera's SDK port (8000): a binary protocol that waits for its client.
  'hikvision-sdk': silent,

  // nginx 1.22.1 (Debian 12) as a reverse proxy in front of Vaultwarden: nginx's Server header, the app's title (Recog html_title "Vaultwarden Web Vault").
  'nginx-vaultwarden': http(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Server', 'nginx/1.22.1'], ['Date', '$date'], ['Content-Type', 'text/html; charset=utf-8'], ['Content-Length', '$len'], ['Connection', 'close'], ['cache-control', 'no-cache'], ['x-content-type-options', 'nosniff'], ['referrer-policy', 'same-origin'], ['x-frame-options', 'SAMEORIGIN'], ['x-robots-tag', 'noindex, nofollow']], body: html('Vaultwarden Web Vault') },
  })),
  // HashiCorp Vault 1.17 (Go): / → /ui/ (307, Go's redirect body) names nothing; /v1/sys/health is its health JSON (Vault's API documentation).
  vault: http(() => ({
    routes: {
      '/v1/sys/health': () => ({ status: 'HTTP/1.1 200 OK', headers: [['Cache-Control', 'no-store'], ['Content-Type', 'application/json'], ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'], ['Date', '$date'], ['Content-Length', '$len']],
        body: `{"initialized":true,"sealed":false,"standby":false,"performance_standby":false,"replication_performance_mode":"disabled","replication_dr_mode":"disabled","server_time_utc":${Math.floor(Date.now() / 1000)},"version":"1.17.6","enterprise":false,"cluster_name":"vault-cluster-5d3e1a2b","cluster_id":"1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901","echo_duration_ms":0,"clock_skew_ms":0,"replication_primary_canary_age_ms":0}\n` }),
      '/ui/': { status: 'HTTP/1.1 200 OK', headers: [['Cache-Control', 'no-store'], ['Content-Type', 'text/html; charset=utf-8'], ['Date', '$date'], ['Content-Length', '$len']], body: html('Vault') },
    },
    fallback: { status: 'HTTP/1.1 307 Temporary Redirect', headers: [['Cache-Control', 'no-store'], ['Content-Type', 'text/html; charset=utf-8'], ['Location', '/ui/'], ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'], ['Date', '$date'], ['Content-Length', '$len']], body: goRedirectBody('/ui/', 'Temporary Redirect') },
  })),

  // IIS 10 (Windows Server 2022): iisstart.htm, title "IIS Windows Server" (Recog html_title).
  iis: http(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['Content-Type', 'text/html'], ['Last-Modified', 'Mon, 06 May 2024 09:12:41 GMT'], ['Accept-Ranges', 'bytes'], ['ETag', '"3b2f8e8e9fa9da1:0"'], ['Server', 'Microsoft-IIS/10.0'], ['Date', '$date'], ['Content-Length', '$len']],
      body: '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\r\n<html xmlns="http://www.w3.org/1999/xhtml">\r\n<head>\r\n<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1" />\r\n<title>IIS Windows Server</title>\r\n</head>\r\n<body>\r\n<div id="container">\r\n<a href="http://go.microsoft.com/fwlink/?linkid=66138&amp;clcid=0x409"><img src="iisstart.png" alt="IIS" width="960" height="600" /></a>\r\n</div>\r\n</body>\r\n</html>' },
    badRequest: { status: 'HTTP/1.1 400 Bad Request', headers: [['Content-Type', 'text/html; charset=us-ascii'], ['Server', 'Microsoft-HTTPAPI/2.0'], ['Date', '$date'], ['Connection', 'close'], ['Content-Length', '$len']], body: '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN""http://www.w3.org/TR/html4/strict.dtd">\r\n<HTML><HEAD><TITLE>Bad Request</TITLE>\r\n<META HTTP-EQUIV="Content-Type" Content="text/html; charset=us-ascii"></HEAD>\r\n<BODY><h2>Bad Request - Invalid Verb</h2>\r\n<hr><p>HTTP Error 400. The request verb is invalid.</p>\r\n</BODY></HTML>\r\n' },
  })),
  rdp,
  // VNC: the RFB ProtocolVersion message (RFC 6143 §7.1.1): macOS Screen Sharing sends "RFB 003.889\n", TigerVNC "RFB 003.008\n".
  'apple-vnc': banner('RFB 003.889\n'),
  'tigervnc': banner('RFB 003.008\n'),
  // macOS 15's OpenSSH (Apple's build: no distribution comment).
  'apple-ssh': banner('SSH-2.0-OpenSSH_9.8\r\n'),
  // AirPlay receiver (macOS): Server "AirTunes/<version>" (Recog http_servers "AirTunes/220.68"); / is forbidden.
  airplay: http(() => ({ routes: {}, fallback: { status: 'HTTP/1.1 403 Forbidden', headers: [['Content-Length', '0'], ['Server', 'AirTunes/845.5.1']] } })),

  // RabbitMQ 3.13: anything but the AMQP 0-9-1 protocol header gets its own header "AMQP\0\0\x09\x01" and a close (AMQP 0-9-1 §4.2.2).
  'rabbitmq-amqp': requestReply((b) => b.length >= 8 || b.includes('\n'), () => Buffer.from('AMQP\x00\x00\x09\x01', 'latin1')),
  // Its management plugin (Cowboy): title "RabbitMQ Management" (Recog html_title).
  'rabbitmq-mgmt': http(() => ({
    routes: {},
    fallback: { status: 'HTTP/1.1 200 OK', headers: [['accept-ranges', 'bytes'], ['content-length', '$len'], ['content-security-policy', "script-src 'self' 'unsafe-eval' 'unsafe-inline'; object-src 'self'"], ['content-type', 'text/html'], ['date', '$date'], ['etag', '"3421618431"'], ['last-modified', 'Thu, 19 Sep 2024 08:12:55 GMT'], ['vary', 'origin']],
      body: html('RabbitMQ Management', '<script src="js/ejs-1.0.min.js" type="text/javascript"></script>') },
  })),
  mongodb: mongodb(),

  // Postfix on Debian 12 (its default smtpd_banner "$myhostname ESMTP $mail_name (Debian/GNU)"; Recog smtp_banners shape).
  postfix: banner((s) => `220 ${s.hostname}.lab.example ESMTP Postfix (Debian/GNU)\r\n`, (socket, d) => {
    const cmd = d.toString('latin1').trim().split(/\s+/)[0]!.toUpperCase();
    if (cmd === 'QUIT') socket.end('221 2.0.0 Bye\r\n');
    else if (cmd === 'EHLO' || cmd === 'HELO') socket.write(`250-${'mail.lab.example'}\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-VRFY\r\n250-ETRN\r\n250-STARTTLS\r\n250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250-DSN\r\n250-SMTPUTF8\r\n250 CHUNKING\r\n`);
    else socket.write('502 5.5.2 Error: command not recognized\r\n');
  }),
  // Dovecot 2.3 (Debian): the greetings as Recog's imap_banners and pop_banners examples show them.
  'dovecot-imap': banner('* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ STARTTLS LOGINDISABLED] Dovecot (Debian) ready.\r\n'),
  'dovecot-pop3': banner('+OK Dovecot (Debian) ready.\r\n'),
  'dovecot-imaps': https(() => ({ routes: {}, fallback: { status: '', headers: [] } }), undefined, (s) => {
    s.write('* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ AUTH=PLAIN] Dovecot (Debian) ready.\r\n');
    s.on('data', (d: Buffer) => { if (/^\S+ /.test(d.toString('latin1'))) s.write(`${d.toString('latin1').split(' ')[0]} BAD Error in IMAP command received by server.\r\n`); });
  }),
  mariadb: banner(() => mariadbHandshake().toString('latin1')),
  slapd: slapd(),
  // Apache 2.4.62 on Debian 12: the default page (Debian's apache2 package, index.html), title as Recog's html_title example.
  'apache-default': http(() => ({
    routes: { '/': APACHE_DEFAULT, '/index.html': APACHE_DEFAULT },
    fallback: (req) => ({ status: 'HTTP/1.1 404 Not Found', headers: [['Date', '$date'], ['Server', 'Apache/2.4.62 (Debian)'], ['Content-Length', '$len'], ['Content-Type', 'text/html; charset=iso-8859-1']],
      body: `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n<p>The requested URL was not found on this server.</p>\n<hr>\n<address>Apache/2.4.62 (Debian) Server at ${hostOnly(req)} Port ${req.port}</address>\n</body></html>\n` }),
  })),
  // etcd 3.5 (Go net/http): no handler for / (Go's NotFound: "404 page not found\n", text/plain, nosniff); /version as
  // etcd's versionHandler writes it (etcd docs, "Version": curl http://…:2379/version).
  etcd: http(() => ({
    routes: { '/version': { status: 'HTTP/1.1 200 OK', headers: [['Content-Type', 'application/json'], ['Date', '$date'], ['Content-Length', '$len']], body: '{"etcdserver":"3.5.9","etcdcluster":"3.5.0"}' } },
    fallback: { status: 'HTTP/1.1 404 Not Found', headers: [['Content-Type', 'text/plain; charset=utf-8'], ['X-Content-Type-Options', 'nosniff'], ['Date', '$date'], ['Content-Length', '$len']], body: '404 page not found\n' },
  })),
  // Docker Registry 2.8 (distribution): / answers 200 with an empty body; /v2/ the API's base, `{}` with its version header
  // (distribution's docs, "API Version Check": Docker-Distribution-API-Version: registry/2.0).
  'docker-registry': http(() => ({
    routes: {
      '/': { status: 'HTTP/1.1 200 OK', headers: [['Cache-Control', 'no-cache'], ['Date', '$date'], ['Content-Length', '0']] },
      '/v2/': { status: 'HTTP/1.1 200 OK', headers: [['Content-Length', '$len'], ['Content-Type', 'application/json; charset=utf-8'], ['Docker-Distribution-Api-Version', 'registry/2.0'], ['X-Content-Type-Options', 'nosniff'], ['Date', '$date']], body: '{}' },
    },
    fallback: { status: 'HTTP/1.1 404 Not Found', headers: [['Content-Type', 'text/plain; charset=utf-8'], ['X-Content-Type-Options', 'nosniff'], ['Date', '$date'], ['Content-Length', '$len']], body: '404 page not found\n' },
  })),
  // A Spring Boot 3 application (embedded Tomcat, no Server header by default) serving its own static index; the Actuator's
  // health endpoint, exposed by default, answers in its own media type (Spring Boot docs, "Actuator API: health").
  'spring-boot': http(() => ({
    routes: {
      '/': { status: 'HTTP/1.1 200 ', headers: [['Vary', 'Origin'], ['Last-Modified', 'Mon, 02 Sep 2024 10:12:00 GMT'], ['Accept-Ranges', 'bytes'], ['Content-Type', 'text/html'], ['Content-Language', 'en-US'], ['Content-Length', '$len'], ['Date', '$date']], body: html('Orders') },
      '/actuator/health': { status: 'HTTP/1.1 200 ', headers: [['Content-Type', 'application/vnd.spring-boot.actuator.v3+json'], ['Transfer-Encoding', 'chunked'], ['Date', '$date']], body: 'f\r\n{"status":"UP"}\r\n0\r\n\r\n' },
    },
    fallback: (req) => ({ status: 'HTTP/1.1 404 ', headers: [['Vary', 'Origin'], ['Content-Type', 'application/json'], ['Content-Length', '$len'], ['Date', '$date']],
      body: JSON.stringify({ timestamp: new Date().toISOString().replace('Z', '+00:00'), status: 404, error: 'Not Found', path: req.path }) }),
  })),
};

const PORTAINER_INDEX: Resp = { status: 'HTTP/1.1 200 OK', headers: [['Accept-Ranges', 'bytes'], ['Cache-Control', 'max-age=31536000'], ['Content-Length', '$len'], ['Content-Type', 'text/html; charset=utf-8'], ['Last-Modified', 'Tue, 17 Sep 2024 21:56:09 GMT'], ['X-Content-Type-Options', 'nosniff'], ['X-Xss-Protection', '1; mode=block'], ['Date', '$date']], body: html('Portainer', '<meta name="description" content="">') };
const HP_EWS: HttpApp = {
  routes: { '/hp/device/start': { status: 'HTTP/1.1 200 OK', headers: [['Server', 'HP HTTP Server; HP Color LaserJet MFP M477fdw - CF379A; Serial Number: CNB8K1Q2RT; Built:Tue Mar 12, 2019 03:11:48PM {VE1CFN1911AR}'], ['Content-Type', 'text/html'], ['Content-Length', '$len'], ['Cache-Control', 'no-cache']], body: html('HP Color LaserJet MFP M477fdw&nbsp;&nbsp;&nbsp;NPI6A2B3C') } },
  fallback: { status: 'HTTP/1.1 301 Moved Permanently', headers: [['Server', 'HP HTTP Server; HP Color LaserJet MFP M477fdw - CF379A; Serial Number: CNB8K1Q2RT; Built:Tue Mar 12, 2019 03:11:48PM {VE1CFN1911AR}'], ['Location', '/hp/device/start'], ['Content-Length', '0'], ['Cache-Control', 'no-cache']] },
};
const APACHE_DEFAULT: Resp = { status: 'HTTP/1.1 200 OK', headers: [['Date', '$date'], ['Server', 'Apache/2.4.62 (Debian)'], ['Last-Modified', 'Fri, 06 Sep 2024 10:20:31 GMT'], ['ETag', '"29cd-621708f2c3b5e"'], ['Accept-Ranges', 'bytes'], ['Content-Length', '$len'], ['Vary', 'Accept-Encoding'], ['Content-Type', 'text/html']],
  body: '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">\n  <head>\n    <meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />\n    <title>Apache2 Debian Default Page: It works</title>\n  </head>\n  <body>\n    <div class="main_page">It works!</div>\n  </body>\n</html>\n' };

// ---- main ------------------------------------------------------------------------------------------

if (import.meta.url === `file://${process.argv[1]}`) {
  const spec = JSON.parse(process.argv[2]!) as ServiceHostSpec;
  let pending = spec.services.length;
  for (const svc of spec.services) {
    const handler = PRODUCTS[svc.product];
    const server = net.createServer((socket) => {
      socket.on('error', () => socket.destroy());
      handler(socket, svc, spec);
    });
    server.listen(svc.port, spec.ip, () => {
      pending -= 1;
      if (pending === 0) console.log(`ready: ${spec.hostname} ${spec.ip} ${spec.services.map((s) => `${s.port}/${s.product}`).join(' ')}`);
    });
  }
}
