// Handshake probes and rules (agent/fingerprint/handshakes.ts): (a) each payload is the bytes its
// specification gives; (b) a loopback server answering recorded bytes is recognised with the right
// facts, and so are the real daemons when their Debian package is installed (each is started here
// on a free 127.0.0.1 port with a throw-away config, then stopped); (c) near misses are not.
// Network: 127.0.0.1 only, listeners this file starts.
//
// Where the recorded answers come from:
// - MQTT: mosquitto 2.0.11 (Debian 12 package), CONNECT of this probe; anonymous allowed → 20020000,
//   allow_anonymous false → 20020005 (return code 5, not authorized). Identifier rejected (2):
//   built from MQTT 3.1.1 §3.2.2.3.
// - IMAP / POP3: Dovecot 2.3.19.1 (Debian 12 dovecot-imapd / dovecot-pop3d), greetings.
// - LDAP: OpenLDAP slapd 2.5.13 (Debian 12), answer to this probe's root DSE search (suffix
//   dc=example,dc=org; OpenLDAP publishes no vendorName). Active Directory style answer with
//   vendorName: built from RFC 4511 / RFC 3045.
// - SMB: Samba smbd 4.17.12 (Debian 12), answer to this probe's SMB2 NEGOTIATE (dialect 3.1.1).
// - RDP: xrdp 0.9.21.1 (Debian 12 package xrdp), answers to this probe: security_layer=negotiate → RDP_NEG_RSP
//   selecting TLS; security_layer=rdp → selecting standard RDP security. CredSSP, RDP_NEG_FAILURE and the
//   old answer without negotiation data: built from MS-RDPBCGR 2.2.1.2.
// - VNC, MongoDB, Telnet, RTSP, SIP, MikroTik: built from their specifications (RFC 6143, MongoDB
//   wire protocol + hello command docs, RFC 854, RFC 2326, RFC 3261, the RouterOS API docs).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import {
  HANDSHAKE_PARSERS, HANDSHAKE_PROBES, HANDSHAKE_RULES, ldapRootDseSearch, mikrotikLogin, mongoIsMaster, mqttConnect,
  parseLdapSearch, parseMongoReply, parseMqttConnack, parseRdpConnectionConfirm, parseSmb2Negotiate, rdpConnectionRequest,
  rtspOptions, sipOptions, smb2Negotiate,
} from '../../agent/fingerprint/handshakes.js';
import { matchRule } from '../../agent/fingerprint/match.js';
import type { ProbeAnswer, ProbeId } from '../../agent/fingerprint/probes.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function answerOf(probe: string, port: number, bytes: Buffer | string, more: Partial<ProbeAnswer> = {}): ProbeAnswer {
  return { probe: probe as ProbeId, port, bytes: typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes, ...more };
}

/** The first handshake rule that matches (as recognise() tries them), its facts merged with its parser's. */
function identify(answer: ProbeAnswer): { rule: string; definition: string; confidence: string; facts: Record<string, string> } | null {
  for (const rule of HANDSHAKE_RULES) {
    const outcome = matchRule(rule, answer);
    if (!outcome.matched) continue;
    const facts = { ...outcome.facts, ...HANDSHAKE_PARSERS[rule.id]?.(answer.bytes) };
    return { rule: rule.id, definition: rule.definition, confidence: rule.confidence, facts };
  }
  return null;
}

/** No fact may carry a control byte (they are shown in the web app and in explain lines). */
function expectPrintable(facts: Record<string, string>) {
  for (const [k, v] of Object.entries(facts)) expect(v, k).to.match(/^[^\x00-\x1f\x7f-\x9f]*$/);
}

/** A loopback server answering `reply` (after the first request chunk, or at once when it talks first). */
async function replayServer(reply: Buffer, talksFirst = false): Promise<{ port: number; requests: Buffer[]; close: () => Promise<void> }> {
  const requests: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    if (talksFirst) socket.write(reply);
    socket.once('data', (chunk) => {
      requests.push(chunk);
      if (!talksFirst) socket.write(reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    requests,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

/** Sends the probe's payload to 127.0.0.1:port on a new connection; the answer once 300 ms pass without bytes (or the peer closes). */
function exchange(probe: string, port: number): Promise<Buffer> {
  const def = HANDSHAKE_PROBES[probe] ?? { payload: null };
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      if (def.payload) socket.write(def.payload('127.0.0.1', port));
    });
    let timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (c) => {
      chunks.push(c);
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(), 300);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    socket.on('error', reject);
  });
}

async function roundTrip(probe: string, reply: Buffer, talksFirst = false): Promise<{ request: Buffer; answer: ProbeAnswer }> {
  const server = await replayServer(reply, talksFirst);
  try {
    const bytes = await exchange(probe, server.port);
    return { request: server.requests[0] ?? Buffer.alloc(0), answer: answerOf(probe, server.port, bytes) };
  } finally {
    await server.close();
  }
}

// ---- real daemons: started on a free loopback port with a config of our own ----

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, ms = 15000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until && child.exitCode === null) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

interface Daemon { child: ChildProcess; dir: string; log: () => string }

async function startDaemon(bin: string, args: (dir: string) => string[], files: (dir: string) => Record<string, string>, port: number): Promise<Daemon | string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'netinv-hs-'));
  for (const [name, text] of Object.entries(files(dir))) writeFileSync(path.join(dir, name), text);
  let out = '';
  // Its own process group: smbd signals its whole group when it stops, and the daemons' children go with them.
  const child = spawn(bin, args(dir), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout!.on('data', (c) => { out += c; });
  child.stderr!.on('data', (c) => { out += c; });
  child.on('error', (e) => { out += String(e); });
  if (await waitForPort(port, child)) return { child, dir, log: () => out };
  await stopDaemon({ child, dir, log: () => out });
  return `${path.basename(bin)} did not listen on 127.0.0.1:${port}: ${out.slice(-300)}`;
}

async function stopDaemon(d: Daemon) {
  if (d.child.exitCode === null && d.child.pid) {
    try {
      process.kill(-d.child.pid, 'SIGTERM'); // the group of the daemon this file started
    } catch {
      d.child.kill('SIGTERM');
    }
  }
  if (d.child.exitCode === null && d.child.signalCode === null) {
    await Promise.race([new Promise((r) => d.child.once('exit', r)), new Promise((r) => setTimeout(r, 5000))]);
  }
  try {
    rmSync(d.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch {
    // a child of the daemon still writing there: left in the temp dir
  }
}

/** Runs `body` against a daemon, or skips (saying why) when its package is missing or it does not start. */
async function withDaemon(ctx: Mocha.Context, pkg: string, bin: string, args: (dir: string, port: number) => string[], files: (dir: string, port: number) => Record<string, string>, body: (port: number) => Promise<void>) {
  if (!existsSync(bin)) {
    console.log(`      (skipped: Debian package ${pkg} is not installed, ${bin} missing)`);
    ctx.skip();
  }
  const port = await freePort();
  const d = await startDaemon(bin, (dir) => args(dir, port), (dir) => files(dir, port), port);
  if (typeof d === 'string') {
    console.log(`      (skipped: ${d})`);
    ctx.skip();
    return;
  }
  try {
    await body(port);
  } finally {
    await stopDaemon(d);
  }
}

// ---- recorded answers ----

const MOSQUITTO_ACCEPTED = hex('20020000'); // mosquitto 2.0.11, allow_anonymous true
const MOSQUITTO_NOT_AUTHORIZED = hex('20020005'); // mosquitto 2.0.11, allow_anonymous false
const DOVECOT_IMAP = '* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ AUTH=PLAIN] Dovecot (Debian) ready.\r\n';
const DOVECOT_POP3 = '+OK Dovecot (Debian) ready.\r\n';
// slapd 2.5.13: SearchResultEntry (namingContexts, supportedLDAPVersion) then SearchResultDone success.
const SLAPD_ROOTDSE = hex(`304d0201016448040030443025040e6e616d696e67436f6e74657874733113041164633d6578616d706c652c64633d6f7267
  301b0414737570706f727465644c44415056657273696f6e3103040133 300c02010165070a010004000400`);
// smbd 4.17.12: NEGOTIATE response, dialect 0x0311, ServerGuid "vm" + zeros, SPNEGO token, 2 negotiate contexts.
const SAMBA_NEGOTIATE = hex(`000000fefe534d4240000000000000000000010001000000000000000000000000000000000000000000000000000000000000000000000000000000
  00000000000000004100010011030100766d0000000000000000000000000000070000000000800000008000000080006e016072da81dd0100000000
  0000000080004a00d0000000604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65
  645f696e5f5246433431373840706c656173655f69676e6f72650000000000000100260000000000010020000100cd9a1a3e09e875e4bdc3413290f0
  bfcf6d0bc7adfed698daec98b874551baf8e`);

const XRDP_TLS = hex('030000130ed000001234000201080001000000'); // xrdp, security_layer=negotiate: NEG_RSP flags 0x01, TLS
const XRDP_RDP = hex('030000130ed000001234000201080000000000'); // xrdp, security_layer=rdp: NEG_RSP, PROTOCOL_RDP

// ---- answers built from the specifications ----

/** A small BSON encoder for the MongoDB replies (bsonspec.org): strings, int32, double, booleans, dates, documents. */
function bson(doc: Record<string, string | number | boolean | Date | { $double: number } | Record<string, unknown>>): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(doc)) {
    const key = Buffer.from(`${k}\0`, 'utf8');
    if (typeof v === 'string') {
      const s = Buffer.from(`${v}\0`, 'utf8');
      const n = Buffer.alloc(4); n.writeInt32LE(s.length);
      parts.push(Buffer.from([0x02]), key, n, s);
    } else if (typeof v === 'number') {
      const n = Buffer.alloc(4); n.writeInt32LE(v);
      parts.push(Buffer.from([0x10]), key, n);
    } else if (typeof v === 'boolean') {
      parts.push(Buffer.from([0x08]), key, Buffer.from([v ? 1 : 0]));
    } else if (v instanceof Date) {
      const n = Buffer.alloc(8); n.writeBigInt64LE(BigInt(v.getTime()));
      parts.push(Buffer.from([0x09]), key, n);
    } else if ('$double' in v) {
      const n = Buffer.alloc(8); n.writeDoubleLE(v.$double as number);
      parts.push(Buffer.from([0x01]), key, n);
    } else {
      parts.push(Buffer.from([0x03]), key, bson(v as Record<string, string>));
    }
  }
  const body = Buffer.concat(parts);
  const len = Buffer.alloc(4); len.writeInt32LE(body.length + 5);
  return Buffer.concat([len, body, Buffer.from([0])]);
}

function opReply(doc: Buffer, responseTo = 1): Buffer {
  const fields = Buffer.alloc(20); // responseFlags (AwaitCapable 8), cursorID 0, startingFrom 0, numberReturned 1
  fields.writeInt32LE(8, 0);
  fields.writeInt32LE(1, 16);
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + 20 + doc.length, 0);
  header.writeInt32LE(4242, 4); // the server's requestID
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(1, 12); // OP_REPLY
  return Buffer.concat([header, fields, doc]);
}

function opMsg(doc: Buffer, responseTo = 1): Buffer {
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + 5 + doc.length, 0);
  header.writeInt32LE(4243, 4);
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(2013, 12); // OP_MSG
  return Buffer.concat([header, Buffer.alloc(4) /* flagBits */, Buffer.from([0]) /* section kind 0 */, doc]);
}

// A standalone mongod 7.0 style answer to isMaster (fields as the hello command page lists them).
const MONGO_STANDALONE = opReply(bson({
  ismaster: true, topologyVersion: { processId: 'x', counter: 0 }, maxBsonObjectSize: 16777216, maxMessageSizeBytes: 48000000,
  maxWriteBatchSize: 100000, localTime: new Date('2026-11-30T12:00:00Z'), logicalSessionTimeoutMinutes: 30, connectionId: 7,
  minWireVersion: 0, maxWireVersion: 21, readOnly: false, ok: { $double: 1 },
}));
const MONGO_SECONDARY_MSG = opMsg(bson({ isWritablePrimary: false, secondary: true, setName: 'rs0', maxWireVersion: 17, minWireVersion: 0, ok: { $double: 1 } }));

/** LDAP SearchResultEntry with vendorName/vendorVersion/namingContexts (BER by hand, RFC 4511 §4.5.2). */
function ldapEntry(attrs: Record<string, string[]>): Buffer {
  const tlv = (tag: number, ...c: Buffer[]) => {
    const b = Buffer.concat(c);
    return Buffer.concat([Buffer.from(b.length < 0x80 ? [tag, b.length] : [tag, 0x81, b.length]), b]); // lengths below 256 here
  };
  const os_ = (s: string) => tlv(0x04, Buffer.from(s, 'utf8'));
  const list = Object.entries(attrs).map(([k, vs]) => tlv(0x30, os_(k), tlv(0x31, ...vs.map(os_))));
  const entry = tlv(0x30, tlv(0x02, Buffer.from([1])), tlv(0x64, os_(''), tlv(0x30, ...list)));
  const done = hex('300c02010165070a010004000400');
  return Buffer.concat([entry, done]);
}

// RDP Connection Confirm, MS-RDPBCGR 2.2.1.2: TPKT len 19, LI 14, CC, DST-REF 0, SRC-REF 0x1234, class 0,
// then RDP_NEG_RSP (flags 0x1f, selectedProtocol) or RDP_NEG_FAILURE (failureCode).
const rdpConfirm = (type: number, value: number) => Buffer.concat([hex('030000130ed000001234 00'), Buffer.from([type, type === 2 ? 0x1f : 0, 8, 0, value, 0, 0, 0])]);
const TELNET_LINUX = hex('fffd18 fffd20 fffd23 fffd27'); // DO TTYPE, TSPEED, XDISPLOC, NEW-ENVIRON
const TELNET_BUSYBOX_STYLE = Buffer.concat([hex('fffd01 fffd1f fffb01 fffb03'), Buffer.from('\r\nOpenWrt login: ', 'latin1')]); // DO ECHO, DO NAWS, WILL ECHO, WILL SGA
const RTSP_CAMERA = 'RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: OPTIONS, DESCRIBE, SETUP, TEARDOWN, PLAY, PAUSE, GET_PARAMETER, SET_PARAMETER\r\nServer: Hipcam RealServer/V1.0\r\n\r\n';
const RTSP_401 = 'RTSP/1.0 401 Unauthorized\r\nCSeq: 1\r\nWWW-Authenticate: Digest realm="IP Camera", nonce="abc"\r\n\r\n';
const SIP_OK = 'SIP/2.0 200 OK\r\nVia: SIP/2.0/TCP netinv.invalid;branch=z9hG4bK-netinv-1;received=127.0.0.1\r\nFrom: <sip:netinv@netinv.invalid>;tag=netinv1\r\n'
  + 'To: <sip:127.0.0.1:5060>;tag=as1\r\nCall-ID: netinv-probe-1@netinv.invalid\r\nCSeq: 1 OPTIONS\r\nServer: Asterisk PBX 20.5.0\r\nAllow: INVITE, ACK, CANCEL, OPTIONS, BYE\r\nContent-Length: 0\r\n\r\n';
const MIKROTIK_TRAP = Buffer.from('\x05!trap\x2a=message=invalid user name or password (6)\x00', 'latin1');
const MIKROTIK_DONE = Buffer.from('\x05!done\x25=ret=0123456789abcdef0123456789abcdef\x00', 'latin1');
const HTTP_400 = 'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request';
const MONGO_HTTP = 'HTTP/1.0 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 84\r\n\r\nIt looks like you are trying to access MongoDB over HTTP on the native driver port.\n';

describe('agent fingerprint: handshake probes and rules', () => {
  describe('(a) payloads are the bytes of their specifications', () => {
    it('MQTT 3.1.1 CONNECT (§3.1): type 1, remaining length 24, "MQTT" level 4, Clean Session, keep alive 60, client id', () => {
      expect(mqttConnect().toString('hex')).to.equal(hex(`10 18   0004 4d515454   04   02   003c
        000c 6e6574696e762d70726f6265`).toString('hex')); // 0x0c bytes "netinv-probe"
      expect(HANDSHAKE_PROBES['mqtt-connect'].payload!('h', 1883)).to.deep.equal(mqttConnect());
      expect(HANDSHAKE_PROBES['mqtt-connect-tls']).to.include({ tls: true });
    });

    it('RDP (MS-RDPBCGR 2.2.1.1): TPKT v3 length 19, X.224 CR (LI 14, 0xE0, refs 0, class 0), RDP_NEG_REQ TLS|CredSSP', () => {
      expect(rdpConnectionRequest().toString('hex')).to.equal(
        '03000013' // TPKT: version 3, reserved, length 0x0013
        + '0ee00000000000' // LI 14, CR CDT, DST-REF, SRC-REF, class option
        + '01000800' + '03000000', // TYPE_RDP_NEG_REQ, flags 0, length 8, requestedProtocols PROTOCOL_SSL|PROTOCOL_HYBRID (LE)
      );
    });

    it('MongoDB OP_QUERY (wire protocol): length 58, requestID 1, opCode 2004, "admin.$cmd", numberToReturn -1, {isMaster: 1}', () => {
      expect(mongoIsMaster().toString('hex')).to.equal(hex(`3a000000 01000000 00000000 d4070000
        00000000  61646d696e2e24636d6400  00000000  ffffffff
        13000000 10 69734d617374657200 01000000 00`).toString('hex')); // BSON: length 19, int32 "isMaster" = 1, end
    });

    it('LDAP (RFC 4511 §4.5.1): message 1, SearchRequest base "" baseObject, (objectClass=*), four root DSE attributes', () => {
      expect(ldapRootDseSearch().toString('hex')).to.equal(hex(`3066 020101 6361
        0400 0a0100 0a0100 020100 020100 010100
        870b 6f626a656374436c617373
        3041 040e 6e616d696e67436f6e7465787473 040a 76656e646f724e616d65
             040d 76656e646f7256657273696f6e 0414 737570706f727465644c44415056657273696f6e`).toString('hex'));
      // SEQUENCE(102) { INTEGER 1, [APPLICATION 3](97) { "" , ENUM 0, ENUM 0, INT 0, INT 0, FALSE, present[7] "objectClass",
      // SEQUENCE OF { "namingContexts", "vendorName", "vendorVersion", "supportedLDAPVersion" } } }
    });

    it('SMB2 NEGOTIATE (MS-SMB2 2.1, 2.2.1.2, 2.2.3, 2.2.3.1.1): direct TCP length 158, header, 5 dialects, preauth context', () => {
      expect(smb2Negotiate().toString('hex')).to.equal(hex(`
        0000009e
        fe534d42 4000 0000 00000000 0000 0100 00000000 00000000 0000000000000000 00000000 00000000 0000000000000000
        00000000000000000000000000000000
        2400 0500 0100 0000 00000000 6e6574696e762d70726f626500000000 70000000 0100 0000
        0202 1002 0003 0203 1103 0000
        0100 2600 00000000 0100 2000 0100 ${'00'.repeat(32)}`).toString('hex'));
      // NBSS: 0x00 + 24-bit length 158. SMB2 header: ProtocolId, StructureSize 64, CreditCharge 0, Status 0, Command
      // NEGOTIATE (0), CreditRequest 1, Flags, NextCommand, MessageId 0, Reserved, TreeId, SessionId, Signature.
      // Request: StructureSize 36, DialectCount 5, SecurityMode SIGNING_ENABLED, Reserved, Capabilities 0, ClientGuid
      // "netinv-probe", NegotiateContextOffset 0x70 (8-aligned), NegotiateContextCount 1, Reserved2; dialects 2.0.2,
      // 2.1, 3.0, 3.0.2, 3.1.1, 2 bytes padding; SMB2_PREAUTH_INTEGRITY_CAPABILITIES: DataLength 38, HashAlgorithmCount
      // 1, SaltLength 32, SHA-512, salt.
    });

    it('RTSP OPTIONS (RFC 2326 §10.1, CSeq §12.17), SIP OPTIONS (RFC 3261 §8.1.1), MikroTik "/login" sentence', () => {
      expect(rtspOptions().toString('latin1')).to.equal('OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: netinv-agent\r\n\r\n');
      const sip = sipOptions('192.0.2.7', 5060).toString('latin1');
      expect(sip.startsWith('OPTIONS sip:192.0.2.7:5060 SIP/2.0\r\nVia: SIP/2.0/TCP netinv.invalid;branch=z9hG4bK')).to.equal(true);
      for (const h of ['Max-Forwards: 70', 'To: <sip:192.0.2.7:5060>', 'From: <sip:netinv@netinv.invalid>;tag=', 'Call-ID: ', 'CSeq: 1 OPTIONS', 'Content-Length: 0']) {
        expect(sip).to.include(`\r\n${h}`);
      }
      expect(sip.endsWith('\r\n\r\n')).to.equal(true);
      expect(mikrotikLogin().toString('hex')).to.equal('062f6c6f67696e00'); // word length 6, "/login", empty word ends the sentence
    });

    it('every probe has a label; the TLS variants and the greeting probe', () => {
      for (const [id, def] of Object.entries(HANDSHAKE_PROBES)) expect(def.label, id).to.be.a('string').and.not.equal('');
      expect(HANDSHAKE_PROBES['tls-greeting']).to.deep.equal({ label: 'TLS handshake (read the greeting)', payload: null, tls: true });
      expect(HANDSHAKE_PROBES['ldap-rootdse-tls'].tls).to.equal(true);
    });
  });

  describe('(b) answers are recognised with their facts (loopback replay of recorded / specified bytes)', () => {
    it('MQTT: mosquitto accepting and refusing (not authorized); identifier rejected', async () => {
      const { request, answer } = await roundTrip('mqtt-connect', MOSQUITTO_ACCEPTED);
      expect(request).to.deep.equal(mqttConnect());
      expect(identify(answer)).to.deep.equal({ rule: 'mqtt-connack', definition: 'MQTT', confidence: 'High', facts: { returnCode: '0', result: 'accepted', sessionPresent: 'no' } });
      expect(identify(answerOf('mqtt-connect', 1883, MOSQUITTO_NOT_AUTHORIZED))!.facts).to.deep.equal({ returnCode: '5', result: 'not authorized', sessionPresent: 'no' });
      expect(identify(answerOf('mqtt-connect', 1883, hex('20020002')))!.facts.result).to.equal('identifier rejected');
      const tls = identify(answerOf('mqtt-connect-tls', 8883, MOSQUITTO_NOT_AUTHORIZED, { cert: { subject: 'broker.lan', san: 'DNS:broker.lan', issuer: 'Lab CA' } }))!;
      expect(tls).to.deep.include({ rule: 'mqtt-connack-tls', definition: 'MQTT' });
      expect(tls.facts).to.include({ subject: 'broker.lan', result: 'not authorized' });
    });

    it('VNC: the server talks first, "RFB 003.008\\n" (RFC 6143 §7.1.1); read by any probe', async () => {
      const { answer } = await roundTrip('null', Buffer.from('RFB 003.008\n', 'latin1'), true);
      expect(identify(answer)).to.deep.equal({ rule: 'rfb-version', definition: 'VNC', confidence: 'High', facts: { version: '003.008' } });
      expect(identify(answerOf('http-get', 5901, 'RFB 003.889\n'))!.facts).to.deep.equal({ version: '003.889' }); // Apple Remote Desktop
    });

    it('RDP: Connection Confirm with RDP_NEG_RSP (TLS, CredSSP), RDP_NEG_FAILURE, and an old server without negotiation', async () => {
      const { request, answer } = await roundTrip('rdp-x224', rdpConfirm(2, 2));
      expect(request).to.deep.equal(rdpConnectionRequest());
      expect(identify(answer)).to.deep.equal({ rule: 'rdp-connection-confirm', definition: 'RDP', confidence: 'High', facts: { selectedProtocol: 'CredSSP' } });
      expect(identify(answerOf('rdp-x224', 3389, XRDP_TLS))!.facts).to.deep.equal({ selectedProtocol: 'TLS' });
      expect(identify(answerOf('rdp-x224', 3389, XRDP_RDP))!.facts).to.deep.equal({ selectedProtocol: 'RDP' });
      expect(identify(answerOf('rdp-x224', 3389, rdpConfirm(3, 5)))!.facts).to.deep.equal({ failure: 'HYBRID_REQUIRED_BY_SERVER' });
      expect(identify(answerOf('rdp-x224', 3389, hex('0300000b06d00000123400')))!.facts).to.deep.equal({ selectedProtocol: 'RDP' });
    });

    it('MongoDB: OP_REPLY of a standalone (ismaster, maxWireVersion 21) and an OP_MSG of a replica set secondary', async () => {
      const { request, answer } = await roundTrip('mongodb-hello', MONGO_STANDALONE);
      expect(request).to.deep.equal(mongoIsMaster());
      expect(identify(answer)).to.deep.equal({
        rule: 'mongodb-reply', definition: 'MongoDB', confidence: 'High',
        facts: { isWritablePrimary: 'true', maxWireVersion: '21', minWireVersion: '0', ok: '1' },
      });
      expect(identify(answerOf('mongodb-hello', 27017, MONGO_SECONDARY_MSG))!.facts).to.deep.equal({
        isWritablePrimary: 'false', secondary: 'true', maxWireVersion: '17', minWireVersion: '0', setName: 'rs0', ok: '1',
      });
    });

    it('LDAP: slapd\'s root DSE (namingContexts, supportedLDAPVersion) and a vendorName/vendorVersion answer', async () => {
      const { request, answer } = await roundTrip('ldap-rootdse', SLAPD_ROOTDSE);
      expect(request).to.deep.equal(ldapRootDseSearch());
      expect(identify(answer)).to.deep.equal({
        rule: 'ldap-search-result', definition: 'LDAP', confidence: 'High',
        facts: { namingContexts: 'dc=example,dc=org', supportedLDAPVersion: '3', resultCode: '0 success' },
      });
      const vendor = ldapEntry({ namingContexts: ['dc=corp,dc=lan', 'o=netscaperoot'], vendorName: ['Red Hat, Inc.'], vendorVersion: ['389-Directory/2.4.4 B2024'], supportedLDAPVersion: ['2', '3'] });
      expect(identify(answerOf('ldap-rootdse', 389, vendor))!.facts).to.deep.equal({
        namingContexts: 'dc=corp,dc=lan | o=netscaperoot', vendorName: 'Red Hat, Inc.', vendorVersion: '389-Directory/2.4.4 B2024', supportedLDAPVersion: '2,3', resultCode: '0 success',
      });
      // A refusal is still LDAP: SearchResultDone insufficientAccessRights with a message.
      const refused = hex(`302602010165 21 0a0132 0400 041a ${Buffer.from('anonymous access disabled!').toString('hex')}`);
      expect(identify(answerOf('ldap-rootdse-tls', 636, refused))).to.deep.include({ rule: 'ldap-search-result-tls' });
      expect(parseLdapSearch(refused)).to.deep.equal({ resultCode: '50 insufficientAccessRights', diagnosticMessage: 'anonymous access disabled!' });
    });

    it('SMB: Samba\'s NEGOTIATE response → dialect 3.1.1, ServerGuid, signing', async () => {
      const { request, answer } = await roundTrip('smb-negotiate', SAMBA_NEGOTIATE);
      expect(request).to.deep.equal(smb2Negotiate());
      expect(identify(answer)).to.deep.equal({
        rule: 'smb2-negotiate', definition: 'SMB', confidence: 'High',
        facts: { dialect: '3.1.1', serverGuid: '00006d76-0000-0000-0000-000000000000', signing: 'enabled' },
      });
      expect(identify(answerOf('smb-negotiate', 139, hex('8300000180')))).to.deep.include({ rule: 'netbios-session-refused', confidence: 'Medium' });
    });

    it('IMAP and POP3: Dovecot greetings (product, capability, greeting); TLS variants read the tls probes', async () => {
      const imap = await roundTrip('null', Buffer.from(DOVECOT_IMAP, 'latin1'), true);
      expect(identify(imap.answer)).to.deep.equal({
        rule: 'imap-greeting', definition: 'IMAP', confidence: 'High',
        facts: { state: 'OK', capability: 'IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ AUTH=PLAIN', product: 'Dovecot', greeting: 'Dovecot (Debian) ready.' },
      });
      const pop3 = await roundTrip('null', Buffer.from(DOVECOT_POP3, 'latin1'), true);
      expect(identify(pop3.answer)).to.deep.equal({ rule: 'pop3-greeting', definition: 'POP3', confidence: 'High', facts: { product: 'Dovecot', greeting: 'Dovecot (Debian) ready.' } });
      // Over TLS the existing 'tls' probe gets the greeting first (then the server's complaint about GET).
      const imaps = identify(answerOf('tls', 993, `${DOVECOT_IMAP}GET BAD Error in IMAP command received by server.\r\n`, { cert: { subject: 'mail.lan', san: '', issuer: 'mail.lan' } }))!;
      expect(imaps).to.deep.include({ rule: 'imap-greeting-tls' });
      expect(imaps.facts).to.include({ product: 'Dovecot', subject: 'mail.lan' });
      expect(identify(answerOf('tls-greeting', 995, DOVECOT_POP3))).to.deep.include({ rule: 'pop3-greeting-tls' });
      // Greetings with no known product, an APOP timestamp, non-ASCII bytes: the fact keeps the printable part only.
      expect(identify(answerOf('null', 110, '+OK POP3 server ready <1896.697170952@dbc.mtview.ca.us>\r\n'))!.facts).to.deep.equal({ greeting: 'POP3 server ready <1896.697170952@dbc.mtview.ca.us>' });
      const odd = identify(answerOf('null', 143, Buffer.from('* OK Courier-IMAP ready \x01\xc3\xa9t\xc3\xa9\r\n', 'latin1')))!;
      expect(odd.facts).to.deep.equal({ state: 'OK', product: 'Courier', greeting: 'Courier-IMAP ready ' });
      expectPrintable(odd.facts);
    });

    it('Telnet: IAC option negotiation (RFC 854), with the first printable line when one came', async () => {
      const { answer } = await roundTrip('null', TELNET_LINUX, true);
      expect(identify(answer)).to.deep.equal({ rule: 'telnet-negotiation', definition: 'Telnet', confidence: 'High', facts: {} });
      expect(identify(answerOf('null', 23, TELNET_BUSYBOX_STYLE))!.facts).to.deep.equal({ banner: 'OpenWrt login: ' });
      expect(identify(answerOf('null', 23, hex('fffa1801fff0 fffb01 0d0a 4c6f67696e3a20')))!.facts).to.deep.equal({ banner: 'Login: ' }); // SB TTYPE SEND … SE
    });

    it('RTSP: OPTIONS answered 200 with a Server header, or 401 by a camera wanting credentials; an RTSP answer to GET', async () => {
      const { request, answer } = await roundTrip('rtsp-options', Buffer.from(RTSP_CAMERA, 'latin1'));
      expect(request).to.deep.equal(rtspOptions());
      expect(identify(answer)).to.deep.equal({ rule: 'rtsp-status', definition: 'RTSP', confidence: 'High', facts: { version: '1.0', status: '200', server: 'Hipcam RealServer/V1.0' } });
      expect(identify(answerOf('rtsp-options', 554, RTSP_401))!.facts).to.deep.equal({ version: '1.0', status: '401' });
      expect(identify(answerOf('http-get', 554, 'RTSP/1.0 400 Bad Request\r\nServer: GStreamer RTSP server\r\n\r\n'))!.facts).to.include({ status: '400', server: 'GStreamer RTSP server' });
    });

    it('SIP over TCP: a 200 to OPTIONS with its Server header', async () => {
      const { request, answer } = await roundTrip('sip-options', Buffer.from(SIP_OK, 'latin1'));
      expect(request.toString('latin1')).to.equal(sipOptions('127.0.0.1', answer.port).toString('latin1'));
      expect(identify(answer)).to.deep.equal({ rule: 'sip-status', definition: 'SIP', confidence: 'High', facts: { status: '200', server: 'Asterisk PBX 20.5.0' } });
    });

    it('MikroTik API: !trap and !done sentences', async () => {
      const { answer } = await roundTrip('mikrotik-login', MIKROTIK_TRAP);
      expect(identify(answer)).to.deep.include({ rule: 'mikrotik-api', definition: 'MikroTik', confidence: 'High' });
      expect(identify(answerOf('mikrotik-login', 8728, MIKROTIK_DONE))).to.deep.include({ rule: 'mikrotik-api' });
    });

    it('every recorded or specified answer is recognised by its own rule only, and no fact holds a control byte', () => {
      const cases: [string, ProbeAnswer][] = [
        ['mqtt-connack', answerOf('mqtt-connect', 1883, MOSQUITTO_ACCEPTED)],
        ['rfb-version', answerOf('null', 5900, 'RFB 003.008\n')],
        ['rdp-connection-confirm', answerOf('rdp-x224', 3389, XRDP_TLS)],
        ['mongodb-reply', answerOf('mongodb-hello', 27017, MONGO_STANDALONE)],
        ['ldap-search-result', answerOf('ldap-rootdse', 389, SLAPD_ROOTDSE)],
        ['smb2-negotiate', answerOf('smb-negotiate', 445, SAMBA_NEGOTIATE)],
        ['imap-greeting', answerOf('null', 143, DOVECOT_IMAP)],
        ['pop3-greeting', answerOf('null', 110, DOVECOT_POP3)],
        ['telnet-negotiation', answerOf('null', 23, TELNET_BUSYBOX_STYLE)],
        ['rtsp-status', answerOf('rtsp-options', 554, RTSP_CAMERA)],
        ['sip-status', answerOf('sip-options', 5060, SIP_OK)],
        ['mikrotik-api', answerOf('mikrotik-login', 8728, MIKROTIK_TRAP)],
      ];
      for (const [ruleId, answer] of cases) {
        const matching = HANDSHAKE_RULES.filter((r) => matchRule(r, answer).matched).map((r) => r.id);
        expect(matching, ruleId).to.deep.equal([ruleId]);
        expectPrintable(identify(answer)!.facts);
        // The same bytes handed to every other probe's rule: only rules reading any probe may match.
        for (const other of HANDSHAKE_RULES) {
          if (other.id === ruleId || other.anyProbe || other.definition === identify(answer)!.definition) continue; // a TLS variant reads the same bytes
          expect(matchRule(other, { ...answer, probe: other.probes[0] }).matched, `${other.id} on ${ruleId}'s answer`).to.equal(false);
        }
      }
    });
  });

  describe('(b) real daemons on loopback (skipped when the Debian package is missing)', function () {
    this.timeout(60000);

    it('mosquitto: anonymous broker accepts, allow_anonymous false refuses with return code 5', async function () {
      for (const [anonymous, result] of [['true', 'accepted'], ['false', 'not authorized']]) {
        await withDaemon(this, 'mosquitto', '/usr/sbin/mosquitto', (dir) => ['-c', path.join(dir, 'm.conf')],
          (_dir, port) => ({ 'm.conf': `listener ${port} 127.0.0.1\nallow_anonymous ${anonymous}\npersistence false\n` }),
          async (port) => {
            const found = identify(answerOf('mqtt-connect', port, await exchange('mqtt-connect', port)));
            expect(found).to.deep.include({ rule: 'mqtt-connack', definition: 'MQTT' });
            expect(found!.facts.result).to.equal(result);
          });
      }
    });

    it('dovecot: IMAP and POP3 greetings', async function () {
      await withDaemon(this, 'dovecot-imapd and dovecot-pop3d', '/usr/sbin/dovecot', (dir) => ['-F', '-c', path.join(dir, 'dovecot.conf')],
        (dir, port) => ({
          'dovecot.conf': [
            `base_dir = ${dir}/run`, `state_dir = ${dir}/state`, `log_path = ${dir}/dovecot.log`, 'protocols = imap pop3', 'listen = 127.0.0.1',
            'ssl = no', 'passdb {\n  driver = static\n  args = nopassword=y\n}', `userdb {\n  driver = static\n  args = uid=nobody gid=nogroup home=${dir}/home/%u\n}`,
            // POP3 listens on the port after IMAP's (freePort gave IMAP's; a collision only makes the POP3 check fail loudly).
            `service imap-login {\n  inet_listener imap {\n    address = 127.0.0.1\n    port = ${port}\n  }\n  inet_listener imaps {\n    port = 0\n  }\n}`,
            `service pop3-login {\n  inet_listener pop3 {\n    address = 127.0.0.1\n    port = ${port + 1}\n  }\n  inet_listener pop3s {\n    port = 0\n  }\n}`,
            '',
          ].join('\n'),
        }),
        async (port) => {
          const imap = identify(answerOf('null', port, await exchange('null', port)));
          expect(imap).to.deep.include({ rule: 'imap-greeting', definition: 'IMAP' });
          expect(imap!.facts).to.include({ state: 'OK', product: 'Dovecot' });
          const pop3 = identify(answerOf('null', port + 1, await exchange('null', port + 1)));
          expect(pop3).to.deep.include({ rule: 'pop3-greeting', definition: 'POP3' });
          expect(pop3!.facts).to.include({ product: 'Dovecot' });
        });
    });

    it('slapd: the root DSE search is answered with namingContexts', async function () {
      await withDaemon(this, 'slapd', '/usr/sbin/slapd', (dir, port) => ['-d', '0', '-f', path.join(dir, 'slapd.conf'), '-h', `ldap://127.0.0.1:${port}/`],
        (dir) => ({
            'slapd.conf': ['include /etc/ldap/schema/core.schema', `pidfile ${dir}/slapd.pid`, 'modulepath /usr/lib/ldap', 'moduleload back_mdb',
              'database mdb', 'suffix "dc=example,dc=org"', 'rootdn "cn=admin,dc=example,dc=org"', `directory ${dir}`, ''].join('\n'),
        }),
        async (port) => {
          const found = identify(answerOf('ldap-rootdse', port, await exchange('ldap-rootdse', port)));
          expect(found).to.deep.include({ rule: 'ldap-search-result', definition: 'LDAP' });
          expect(found!.facts).to.include({ namingContexts: 'dc=example,dc=org', supportedLDAPVersion: '3', resultCode: '0 success' });
        });
    });

    it('smbd: the SMB2 NEGOTIATE is answered with dialect 3.1.1', async function () {
      await withDaemon(this, 'samba', '/usr/sbin/smbd', (dir) => ['--foreground', '--no-process-group', '-s', path.join(dir, 'smb.conf')],
        (dir, port) => ({
          'smb.conf': ['[global]', `smb ports = ${port}`, 'interfaces = 127.0.0.1', 'bind interfaces only = yes',
            ...['lock directory', 'state directory', 'cache directory', 'pid directory', 'private dir', 'ncalrpc dir'].map((k) => `${k} = ${dir}`),
            `log file = ${dir}/log.%m`, 'disable netbios = yes', 'server role = standalone server', 'load printers = no', 'printcap name = /dev/null', ''].join('\n'),
        }),
        async (port) => {
          const found = identify(answerOf('smb-negotiate', port, await exchange('smb-negotiate', port)));
          expect(found).to.deep.include({ rule: 'smb2-negotiate', definition: 'SMB' });
          expect(found!.facts.dialect).to.equal('3.1.1');
          expect(found!.facts.serverGuid).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        });
    });

    it('xrdp: the X.224 Connection Request is confirmed selecting TLS', async function () {
      const ini = existsSync('/etc/xrdp/xrdp.ini') ? readFileSync('/etc/xrdp/xrdp.ini', 'utf8') : '';
      await withDaemon(this, 'xrdp', '/usr/sbin/xrdp', (dir) => ['--nodaemon', '-c', path.join(dir, 'xrdp.ini')],
        (dir, port) => ({
          'xrdp.ini': ini.replace(/^port=3389$/m, `port=tcp://127.0.0.1:${port}`).replace(/^security_layer=.*$/m, 'security_layer=negotiate')
            .replace(/^LogFile=.*$/m, `LogFile=${dir}/xrdp.log`).replace(/^EnableSyslog=.*$/m, 'EnableSyslog=false'),
        }),
        async (port) => {
          const found = identify(answerOf('rdp-x224', port, await exchange('rdp-x224', port)));
          expect(found).to.deep.equal({ rule: 'rdp-connection-confirm', definition: 'RDP', confidence: 'High', facts: { selectedProtocol: 'TLS' } });
        });
    });
  });

  describe('(c) near misses are not recognised', () => {
    const none = (probe: string, port: number, bytes: Buffer | string) => expect(identify(answerOf(probe, port, bytes)), `${probe} on ${port}: ${JSON.stringify(Buffer.from(bytes as string, 'latin1').toString('latin1'))}`).to.equal(null);

    it('an HTTP 400 page on each protocol\'s port and probe', () => {
      for (const [probe, port] of [['mqtt-connect', 1883], ['rdp-x224', 3389], ['mongodb-hello', 27017], ['ldap-rootdse', 389], ['smb-negotiate', 445],
        ['null', 143], ['null', 110], ['null', 23], ['rtsp-options', 554], ['sip-options', 5060], ['mikrotik-login', 8728], ['null', 5900]] as const) {
        none(probe, port, HTTP_400);
      }
    });

    it('protocol look-alikes', () => {
      none('mqtt-connect', 1883, hex('20030000')); // remaining length 3 (an MQTT 5 CONNACK would have properties: not what a 3.1.1 CONNECT gets)
      none('mqtt-connect', 1883, hex('20020006')); // return code 6 does not exist in 3.1.1
      none('mqtt-connect', 1883, hex('30020000')); // PUBLISH, not CONNACK
      none('null', 5900, 'RFB 3.8\n');
      none('null', 5900, 'SSH-2.0-OpenSSH_9.2p1\r\n');
      none('rdp-x224', 3389, hex('0300000b06f00000123400')); // X.224 DT, not CC
      none('rdp-x224', 3389, hex('030000130ed00000123400 04000800 01000000')); // unknown negotiation type 4
      none('mongodb-hello', 27017, MONGO_HTTP); // what mongod answers an HTTP GET
      none('mongodb-hello', 27017, opReply(bson({ ismaster: true, ok: { $double: 1 } }), 99)); // responseTo is not our requestID
      none('mongodb-hello', 27017, opReply(bson({ ok: { $double: 0 }, errmsg: 'no such command' })));
      none('ldap-rootdse', 389, hex('300c02010265070a010004000400')); // messageID 2
      none('ldap-rootdse', 389, hex('300c020101 78070a010004000400')); // ExtendedResponse, not a search result
      none('smb-negotiate', 445, hex('00000055ff534d4272000000008801c8')); // an SMB1 answer (0xFF 'SMB')
      none('smb-negotiate', 445, hex('8300000180')); // the NetBIOS refusal counts on 139 only
      none('null', 143, '* OKAY ready\r\n');
      none('null', 110, '+OKAY\r\n');
      none('null', 110, '+PONG\r\n');
      none('null', 25, '220 mail.lan ESMTP Postfix\r\n');
      none('null', 23, hex('fffb')); // IAC WILL without its option
      none('null', 23, hex('fff4fffd06')); // IAC IP first
      none('null', 23, 'login: ');
      none('rtsp-options', 554, 'HTTP/1.1 200 OK\r\nServer: RTSP\r\n\r\n');
      none('sip-options', 5060, 'SIP/1.0 200 OK\r\n\r\n');
      none('mikrotik-login', 8728, '!done\x00');
      none('mikrotik-login', 8728, '\x06!done\x00');
    });

    it('parsers return null on bytes that are not their answer', () => {
      expect(parseMqttConnack(Buffer.from(HTTP_400))).to.equal(null);
      expect(parseRdpConnectionConfirm(Buffer.from(HTTP_400))).to.equal(null);
      expect(parseMongoReply(Buffer.from(MONGO_HTTP))).to.equal(null);
      expect(parseLdapSearch(Buffer.from(HTTP_400))).to.equal(null);
      expect(parseSmb2Negotiate(Buffer.from(HTTP_400))).to.equal(null);
      expect(parseSmb2Negotiate(Buffer.alloc(0))).to.equal(null);
      expect(parseLdapSearch(hex('3084ffffffff020101'))).to.equal(null); // a length beyond the bytes
      expect(parseMongoReply(hex('ffffff7f0000000001000000010000000000'))).to.equal(null);
    });

    it('every pattern is anchored and fails fast on 16 KiB of hostile bytes', () => {
      const hostile = [
        '\xff\xfb'.repeat(8192) + '\xff', '\xff\xfa' + 'a'.repeat(16380), `* OK [${'a'.repeat(16000)}`, `* OK ${'a'.repeat(16000)}\x01`,
        `+OK ${' '.repeat(16000)}`, `RTSP/1.0 200${'\r\nX: y'.repeat(3000)}`, `SIP/2.0 200${'\r\n'.repeat(8000)}`,
        `${'\x00'.repeat(4)}\x01\x00\x00\x00\x01\x00\x00\x00${'\x08ismaste'.repeat(2000)}`, '\x30\x84' + '\x02'.repeat(16000),
        ...['a', ' ', '\x00', '\xff', '\r\n', 'x\n', 'aA0 .'].map((unit) => unit.repeat(Math.ceil(16384 / unit.length))),
      ];
      for (const rule of HANDSHAKE_RULES) {
        for (const { pattern } of rule.match) {
          expect(pattern.source.startsWith('^'), rule.id).to.equal(true);
          for (const text of hostile) {
            const started = process.hrtime.bigint();
            pattern.exec(text);
            expect(Number(process.hrtime.bigint() - started) / 1e6, `${rule.id} on ${JSON.stringify(text.slice(0, 20))}`).to.be.below(50);
          }
        }
      }
    });
  });
});
