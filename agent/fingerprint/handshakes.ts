// Handshake probes and answer rules for common LAN protocols (MQTT, VNC, RDP, MongoDB, LDAP, SMB,
// IMAP, POP3, Telnet, RTSP, SIP, MikroTik API), to be merged into PROBES (probes.ts) and RULES
// (rules.ts). Written for this project from the public specifications below and from answers
// recorded from real daemons (test/agent/handshakes.spec.ts); nothing taken from nmap's
// nmap-service-probes (NPSL), Wappalyzer or Scanopy.
//
// Where each payload and answer layout comes from:
// - MQTT: OASIS MQTT Version 3.1.1 (2014), §2.2 fixed header, §3.1 CONNECT (protocol name "MQTT",
//   level 4, Clean Session flag, keep alive, client identifier of 1-23 characters), §3.2 CONNACK
//   (0x20 0x02, session present flag, return code 0-5, table 3.1). TLS on 8883: §5.1 / IANA.
// - VNC: RFC 6143 (The Remote Framebuffer Protocol) §7.1.1 ProtocolVersion: the server talks
//   first with the 12 bytes "RFB xxx.yyy\n". Ports 5900+display: RFC 6143 §1 / IANA "rfb".
// - RDP: [MS-RDPBCGR] 2.2.1.1 Client X.224 Connection Request PDU (tpktHeader per ITU-T T.123 §8 /
//   RFC 1006: 0x03 0x00 + 16-bit big-endian length; x224Crq per ITU-T X.224 §13.3: LI, 0xE0,
//   DST-REF, SRC-REF, class 0), 2.2.1.1.1 RDP Negotiation Request (type 0x01, length 8,
//   requestedProtocols little-endian); 2.2.1.2 Server X.224 Connection Confirm PDU (0xD0),
//   2.2.1.2.1 RDP_NEG_RSP (type 0x02, selectedProtocol), 2.2.1.2.2 RDP_NEG_FAILURE (type 0x03,
//   failureCode).
// - MongoDB: MongoDB Wire Protocol reference (mongodb.com/docs/manual/reference/mongodb-wire-protocol/):
//   MsgHeader {messageLength, requestID, responseTo, opCode} little-endian, OP_QUERY (2004, legacy
//   opcodes page) on "admin.$cmd" with numberToReturn -1 and the document {isMaster: 1}, answered by
//   OP_REPLY (1) {responseFlags, cursorID, startingFrom, numberReturned, documents}; OP_MSG (2013)
//   answers are parsed too. BSON: bsonspec.org/spec.html. Reply fields: the "hello" command page
//   (isWritablePrimary / legacy ismaster, maxWireVersion, minWireVersion, setName, msg "isdbgrid").
//   OP_QUERY isMaster is what drivers still send as the first (unversioned) handshake, so MongoDB
//   3.x-8.x all answer it; MongoDB < 3.6 would close the connection on an OP_MSG.
// - LDAP: RFC 4511 §4.1.1 LDAPMessage, §4.5.1 SearchRequest, §4.5.2 SearchResultEntry [APP 4] /
//   SearchResultDone [APP 5], §4.1.9 LDAPResult; RFC 4512 §5.1 the root DSE (namingContexts,
//   supportedLDAPVersion); RFC 3045 vendorName / vendorVersion; BER: ITU-T X.690 §8.1 (identifier,
//   definite lengths short and long form) as restricted by RFC 4511 §5.1. LDAPS 636: RFC 8314-era
//   practice / IANA "ldaps".
// - SMB: [MS-SMB2] 2.1 Direct TCP transport (a zero byte + 24-bit length before each message),
//   2.2.1.2 SYNC header (0xFE 'S' 'M' 'B', StructureSize 64), 2.2.3 SMB2 NEGOTIATE Request
//   (StructureSize 36, dialects 0x0202 0x0210 0x0300 0x0302 0x0311), 2.2.3.1.1
//   SMB2_PREAUTH_INTEGRITY_CAPABILITIES (required when 0x0311 is offered; SHA-512), 2.2.4 SMB2
//   NEGOTIATE Response (StructureSize 65, SecurityMode, DialectRevision, ServerGuid). The NetBIOS
//   negative session response on 139 (0x83): RFC 1002 §4.3.4.
// - IMAP: RFC 9051 §7.1 / RFC 3501 §7.1 server greeting "* OK" / "* PREAUTH" / "* BYE", optional
//   [CAPABILITY …] response code (§7.1 / §7.2.1). IMAPS 993: RFC 8314 §3.
// - POP3: RFC 1939 §4 greeting "+OK …" (optionally an APOP timestamp <…>). POP3S 995: RFC 8314 §3.
// - Telnet: RFC 854 (IAC 255, WILL 251, WONT 252, DO 253, DONT 254, SB 250 … IAC SE 240).
// - RTSP: RFC 2326 §10.1 OPTIONS (Request-URI "*" allowed), §12.17 CSeq required, §7.1 status line
//   "RTSP/1.0 200 OK", §12.36 Server header. RTSP 2.0 status lines (RFC 7826) are accepted too.
// - SIP: RFC 3261 §11 OPTIONS, §8.1.1 mandatory headers (Via with "z9hG4bK" branch, Max-Forwards,
//   From with tag, To, Call-ID, CSeq), §18.2.2 responses on the same TCP connection, §7.2 status line,
//   §20.35 Server / §20.41 User-Agent.
// - MikroTik RouterOS API (help.mikrotik.com "API"): sentences of length-prefixed words ending with
//   an empty word; "/login"; replies start with the word "!done", "!trap" or "!fatal".
//
// Binary answers carry their facts in bytes a regex cannot turn into text (BSON integers, BER,
// GUIDs, return codes), so those rules only recognise the framing, and HANDSHAKE_PARSERS (also
// exported one by one as parse<Protocol>) turn the answer's bytes into printable facts.
import type { AnswerRule, Field } from './rules.js';
import type { ProbeDefinition, ProbeId } from './probes.js';

// probes.ts is about to make ProbeId a plain string; until then our ids are not in its union.
const ids = (...probes: string[]) => probes as ProbeId[];

// ---------------------------------------------------------------------------------------------
// Payloads

/** MQTT 3.1.1 CONNECT, client id "netinv-probe", Clean Session, keep alive 60 s, no will/user/password. */
export function mqttConnect(clientId = 'netinv-probe'): Buffer {
  const id = Buffer.from(clientId, 'utf8');
  const variable = Buffer.from([0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c]); // "MQTT", level 4, flags, keep alive
  const rest = Buffer.concat([variable, Buffer.from([id.length >> 8, id.length & 0xff]), id]);
  return Buffer.concat([Buffer.from([0x10, rest.length]), rest]); // remaining length < 128: one byte
}

/** RDP: TPKT + X.224 Connection Request + RDP_NEG_REQ asking for TLS or CredSSP (requestedProtocols 0x00000003). */
export function rdpConnectionRequest(requestedProtocols = 0x00000003): Buffer {
  const neg = Buffer.alloc(8);
  neg.writeUInt8(0x01, 0); // TYPE_RDP_NEG_REQ
  neg.writeUInt8(0x00, 1); // flags
  neg.writeUInt16LE(8, 2); // length
  neg.writeUInt32LE(requestedProtocols, 4);
  const x224 = Buffer.concat([Buffer.from([6 + neg.length, 0xe0, 0x00, 0x00, 0x00, 0x00, 0x00]), neg]); // LI, CR|CDT, DST-REF, SRC-REF, class 0
  const tpkt = Buffer.from([0x03, 0x00, 0x00, 0x00]);
  tpkt.writeUInt16BE(4 + x224.length, 2);
  return Buffer.concat([tpkt, x224]);
}

/** MongoDB: OP_QUERY {isMaster: 1} on admin.$cmd, requestID 1, numberToReturn -1. */
export function mongoIsMaster(): Buffer {
  const doc = Buffer.concat([Buffer.alloc(4), Buffer.from([0x10]), Buffer.from('isMaster\0', 'latin1'), int32(1), Buffer.from([0x00])]);
  doc.writeInt32LE(doc.length, 0);
  const body = Buffer.concat([int32(0) /* flags */, Buffer.from('admin.$cmd\0', 'latin1'), int32(0) /* numberToSkip */, int32(-1) /* numberToReturn */, doc]);
  const header = Buffer.concat([int32(16 + body.length), int32(1) /* requestID */, int32(0) /* responseTo */, int32(2004) /* OP_QUERY */]);
  return Buffer.concat([header, body]);
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n, 0);
  return b;
}

/** BER TLV with a definite length (short form below 128, else long form). */
function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}
const octets = (s: string) => tlv(0x04, Buffer.from(s, 'utf8'));

export const LDAP_ROOTDSE_ATTRIBUTES = ['namingContexts', 'vendorName', 'vendorVersion', 'supportedLDAPVersion'];

/** LDAP: messageID 1, anonymous SearchRequest base "" scope baseObject, filter (objectClass=*), the root DSE attributes. */
export function ldapRootDseSearch(): Buffer {
  const search = tlv(0x63, // [APPLICATION 3] SearchRequest
    octets(''), // baseObject ""
    tlv(0x0a, Buffer.from([0x00])), // scope baseObject
    tlv(0x0a, Buffer.from([0x00])), // derefAliases neverDerefAliases
    tlv(0x02, Buffer.from([0x00])), // sizeLimit 0
    tlv(0x02, Buffer.from([0x00])), // timeLimit 0
    tlv(0x01, Buffer.from([0x00])), // typesOnly FALSE
    tlv(0x87, Buffer.from('objectClass', 'latin1')), // filter present [7] "objectClass"
    tlv(0x30, ...LDAP_ROOTDSE_ATTRIBUTES.map(octets)), // attributes
  );
  return tlv(0x30, tlv(0x02, Buffer.from([0x01])), search);
}

export const SMB2_DIALECTS = [0x0202, 0x0210, 0x0300, 0x0302, 0x0311];

/** SMB2 NEGOTIATE over direct TCP: dialects 2.0.2-3.1.1, signing enabled, a fixed ClientGuid and a preauth integrity context. */
export function smb2Negotiate(): Buffer {
  const header = Buffer.alloc(64);
  header.write('\xfeSMB', 0, 'latin1');
  header.writeUInt16LE(64, 4); // StructureSize
  header.writeUInt16LE(0, 12); // Command NEGOTIATE
  header.writeUInt16LE(1, 14); // CreditRequest
  // Flags, NextCommand, MessageId 0, Reserved, TreeId, SessionId, Signature: zero.
  const fixed = Buffer.alloc(36);
  fixed.writeUInt16LE(36, 0); // StructureSize
  fixed.writeUInt16LE(SMB2_DIALECTS.length, 2); // DialectCount
  fixed.writeUInt16LE(0x0001, 4); // SecurityMode: SMB2_NEGOTIATE_SIGNING_ENABLED
  fixed.writeUInt32LE(0, 8); // Capabilities
  fixed.write('netinv-probe\0\0\0\0', 12, 'latin1'); // ClientGuid (16 bytes)
  const dialects = Buffer.alloc(SMB2_DIALECTS.length * 2);
  SMB2_DIALECTS.forEach((d, i) => dialects.writeUInt16LE(d, i * 2));
  const contextOffset = 64 + 36 + dialects.length;
  const padded = Math.ceil(contextOffset / 8) * 8; // negotiate contexts are 8-byte aligned
  fixed.writeUInt32LE(padded, 28); // NegotiateContextOffset (from the SMB2 header)
  fixed.writeUInt16LE(1, 32); // NegotiateContextCount
  const data = Buffer.alloc(6 + 32); // HashAlgorithmCount 1, SaltLength 32, SHA-512, 32-byte salt (zeros)
  data.writeUInt16LE(1, 0);
  data.writeUInt16LE(32, 2);
  data.writeUInt16LE(0x0001, 4);
  const context = Buffer.alloc(8);
  context.writeUInt16LE(0x0001, 0); // SMB2_PREAUTH_INTEGRITY_CAPABILITIES
  context.writeUInt16LE(data.length, 2);
  const smb = Buffer.concat([header, fixed, dialects, Buffer.alloc(padded - contextOffset), context, data]);
  const nbss = Buffer.alloc(4);
  nbss.writeUInt32BE(smb.length, 0); // first byte 0 (session message), then the 24-bit length
  return Buffer.concat([nbss, smb]);
}

export function rtspOptions(): Buffer {
  return Buffer.from('OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: netinv-agent\r\n\r\n', 'latin1');
}

export function sipOptions(host: string, port: number): Buffer {
  const target = host.includes(':') ? `[${host}]` : host;
  return Buffer.from([
    `OPTIONS sip:${target}:${port} SIP/2.0`,
    'Via: SIP/2.0/TCP netinv.invalid;branch=z9hG4bK-netinv-1',
    'Max-Forwards: 70',
    `To: <sip:${target}:${port}>`,
    'From: <sip:netinv@netinv.invalid>;tag=netinv1',
    'Call-ID: netinv-probe-1@netinv.invalid',
    'CSeq: 1 OPTIONS',
    'Accept: application/sdp',
    'User-Agent: netinv-agent',
    'Content-Length: 0',
    '', '',
  ].join('\r\n'), 'latin1');
}

/** MikroTik API: the sentence ["/login", ""] (word lengths below 0x80 take one byte). */
export function mikrotikLogin(): Buffer {
  return Buffer.from('\x06/login\x00', 'latin1');
}

/**
 * DNS over TCP (RFC 1035 §4.2.2: a 2-byte length, then the message): one question, version.bind
 * TXT in class CHAOS, the name BIND, dnsmasq, Unbound and Knot answer with their version (or refuse:
 * still a DNS answer). Id 0x4e49 ("NI"), recursion not asked.
 */
export function dnsVersionBind(): Buffer {
  const question = Buffer.concat([Buffer.from('\x07version\x04bind\x00', 'latin1'), Buffer.from([0x00, 0x10, 0x00, 0x03])]);
  const message = Buffer.concat([Buffer.from([0x4e, 0x49, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]), question]);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(message.length);
  return Buffer.concat([length, message]);
}

/** A DNS answer to dnsVersionBind: its response code, and the TXT it gave (the server's version). */
export function parseDnsVersionBind(bytes: Buffer): Record<string, string> | null {
  if (bytes.length < 14 || bytes[2] !== 0x4e || bytes[3] !== 0x49 || !(bytes[4]! & 0x80)) return null;
  const rcodes = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];
  const out: Record<string, string> = { rcode: rcodes[bytes[5]! & 0x0f] ?? String(bytes[5]! & 0x0f) };
  const answers = bytes.readUInt16BE(8);
  let at = 14;
  const skipName = () => {
    while (at < bytes.length) {
      const len = bytes[at]!;
      if (len === 0) return void at++;
      if ((len & 0xc0) === 0xc0) return void (at += 2);
      at += len + 1;
    }
  };
  skipName();
  at += 4; // the question's type and class
  if (answers > 0 && at < bytes.length) {
    skipName();
    const type = at + 2 <= bytes.length ? bytes.readUInt16BE(at) : 0;
    at += 8;
    const rdLength = at + 2 <= bytes.length ? bytes.readUInt16BE(at) : 0;
    at += 2;
    if (type === 16 && rdLength > 0 && at < bytes.length) {
      const txtLength = bytes[at]!;
      const txt = printable(bytes.subarray(at + 1, Math.min(bytes.length, at + 1 + txtLength)).toString('latin1'));
      if (txt) out.version = txt;
    }
  }
  return out;
}

export const HANDSHAKE_PROBES: Record<string, ProbeDefinition> = {
  'mqtt-connect': { label: 'MQTT 3.1.1 CONNECT', payload: () => mqttConnect(), tls: false },
  'mqtt-connect-tls': { label: 'TLS handshake + MQTT 3.1.1 CONNECT', payload: () => mqttConnect(), tls: true },
  'rdp-x224': { label: 'RDP X.224 Connection Request (TLS|CredSSP)', payload: () => rdpConnectionRequest(), tls: false },
  'mongodb-hello': { label: 'MongoDB OP_QUERY isMaster', payload: () => mongoIsMaster(), tls: false },
  'ldap-rootdse': { label: 'LDAP search of the root DSE', payload: () => ldapRootDseSearch(), tls: false },
  'ldap-rootdse-tls': { label: 'TLS handshake + LDAP search of the root DSE', payload: () => ldapRootDseSearch(), tls: true },
  'smb-negotiate': { label: 'SMB2 NEGOTIATE (2.0.2-3.1.1)', payload: () => smb2Negotiate(), tls: false },
  'tls-greeting': { label: 'TLS handshake (read the greeting)', payload: null, tls: true },
  'rtsp-options': { label: '"OPTIONS * RTSP/1.0"', payload: () => rtspOptions(), tls: false },
  'sip-options': { label: 'SIP OPTIONS over TCP', payload: sipOptions, tls: false },
  'mikrotik-login': { label: 'MikroTik API "/login"', payload: () => mikrotikLogin(), tls: false },
  'dns-version-bind': { label: 'DNS over TCP: version.bind CH TXT', payload: () => dnsVersionBind(), tls: false },
};

// ---------------------------------------------------------------------------------------------
// Parsers: answer bytes → printable facts (null when the bytes are not the expected answer).

/** A string safe for a fact: control characters escaped as \xNN, at most `max` characters. */
export function printable(s: string, max = 200): string {
  const out = s.replace(/[\x00-\x1f\x7f-\x9f\\]/g, (c) => (c === '\\' ? '\\\\' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
  return out.length > max ? `${out.slice(0, max - 1)}…` : out;
}

const MQTT_RETURN_CODES = ['accepted', 'unacceptable protocol version', 'identifier rejected', 'server unavailable', 'bad user name or password', 'not authorized'];

/** MQTT 3.1.1 CONNACK → { returnCode, result, sessionPresent }. */
export function parseMqttConnack(bytes: Buffer): Record<string, string> | null {
  if (bytes.length < 4 || bytes[0] !== 0x20 || bytes[1] !== 0x02 || bytes[2] > 1 || bytes[3] > 5) return null;
  return { returnCode: String(bytes[3]), result: MQTT_RETURN_CODES[bytes[3]], sessionPresent: bytes[2] ? 'yes' : 'no' };
}

const RDP_PROTOCOLS: Record<number, string> = { 0: 'RDP', 1: 'TLS', 2: 'CredSSP', 4: 'RDSTLS', 8: 'CredSSP (early user auth)', 0x10: 'RDSAAD' };
const RDP_FAILURES: Record<number, string> = {
  1: 'SSL_REQUIRED_BY_SERVER', 2: 'SSL_NOT_ALLOWED_BY_SERVER', 3: 'SSL_CERT_NOT_ON_SERVER', 4: 'INCONSISTENT_FLAGS',
  5: 'HYBRID_REQUIRED_BY_SERVER', 6: 'SSL_WITH_USER_AUTH_REQUIRED_BY_SERVER',
};

/** RDP X.224 Connection Confirm → { selectedProtocol } (RDP_NEG_RSP), { failure } (RDP_NEG_FAILURE) or { selectedProtocol: 'RDP' } (no negotiation data: an old server). */
export function parseRdpConnectionConfirm(bytes: Buffer): Record<string, string> | null {
  if (bytes.length < 11 || bytes[0] !== 0x03 || bytes[1] !== 0x00 || bytes[5] !== 0xd0) return null;
  const length = bytes.readUInt16BE(2);
  if (length === 11) return { selectedProtocol: 'RDP' };
  if (length < 19 || bytes.length < 19 || bytes.readUInt16LE(13) !== 8) return null;
  const value = bytes.readUInt32LE(15);
  if (bytes[11] === 0x02) return { selectedProtocol: RDP_PROTOCOLS[value] ?? `0x${value.toString(16).padStart(8, '0')}` };
  if (bytes[11] === 0x03) return { failure: RDP_FAILURES[value] ?? `0x${value.toString(16).padStart(8, '0')}` };
  return null;
}

type Bson = Map<string, string | number | boolean | null>;

/** A BSON document's top-level scalars (strings, numbers, booleans, null); embedded documents are skipped. */
function readBson(bytes: Buffer, at: number): Bson | null {
  if (at + 5 > bytes.length) return null;
  const end = at + bytes.readInt32LE(at);
  if (end > bytes.length || end < at + 5 || bytes[end - 1] !== 0) return null;
  const out: Bson = new Map();
  let i = at + 4;
  while (i < end - 1) {
    const type = bytes[i++];
    const nul = bytes.indexOf(0, i);
    if (nul < 0 || nul >= end) return null;
    const key = bytes.toString('utf8', i, nul);
    i = nul + 1;
    switch (type) {
      case 0x01: out.set(key, bytes.readDoubleLE(i)); i += 8; break; // double
      case 0x02: case 0x0d: case 0x0e: { // string, JavaScript code, symbol
        const n = bytes.readInt32LE(i);
        if (n < 1 || i + 4 + n > end) return null;
        if (type === 0x02) out.set(key, bytes.toString('utf8', i + 4, i + 4 + n - 1));
        i += 4 + n;
        break;
      }
      case 0x03: case 0x04: { // embedded document, array
        const n = bytes.readInt32LE(i);
        if (n < 5 || i + n > end) return null;
        i += n;
        break;
      }
      case 0x05: { // binary
        const n = bytes.readInt32LE(i);
        if (n < 0 || i + 5 + n > end) return null;
        i += 5 + n;
        break;
      }
      case 0x06: case 0x0a: case 0x7f: case 0xff: out.set(key, null); break; // undefined, null, max/min key
      case 0x07: i += 12; break; // ObjectId
      case 0x08: out.set(key, bytes[i] === 1); i += 1; break; // boolean
      case 0x09: case 0x11: i += 8; break; // UTC datetime, timestamp
      case 0x10: out.set(key, bytes.readInt32LE(i)); i += 4; break; // int32
      case 0x12: out.set(key, Number(bytes.readBigInt64LE(i))); i += 8; break; // int64
      case 0x13: i += 16; break; // decimal128
      default: return out.size ? out : null; // unknown type: keep what was read
    }
    if (i > end) return null;
  }
  return out;
}

/**
 * MongoDB reply (OP_REPLY to the isMaster query, or OP_MSG) → { isWritablePrimary, secondary,
 * maxWireVersion, minWireVersion, setName, msg, ok, errmsg } (those present).
 */
export function parseMongoReply(bytes: Buffer): Record<string, string> | null {
  if (bytes.length < 21) return null;
  const length = bytes.readInt32LE(0);
  const opCode = bytes.readInt32LE(12);
  if (length < 21 || length > 48 * 1024 * 1024) return null;
  const doc = opCode === 1 ? readBson(bytes, 36) : opCode === 2013 && bytes[20] === 0 ? readBson(bytes, 21) : null;
  if (!doc) return null;
  const facts: Record<string, string> = {};
  const primary = doc.get('isWritablePrimary') ?? doc.get('ismaster');
  if (typeof primary === 'boolean') facts.isWritablePrimary = String(primary);
  for (const key of ['secondary', 'maxWireVersion', 'minWireVersion', 'setName', 'msg', 'ok', 'errmsg', 'codeName']) {
    const v = doc.get(key);
    if (v !== undefined && v !== null) facts[key] = printable(String(v));
  }
  return Object.keys(facts).length ? facts : null;
}

interface Ber { tag: number; start: number; end: number; next: number }

/** One BER TLV at `at` (definite lengths only, as RFC 4511 §5.1 requires), or null. */
function ber(bytes: Buffer, at: number, limit = bytes.length): Ber | null {
  if (at + 2 > limit) return null;
  const tag = bytes[at];
  let len = bytes[at + 1];
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n < 1 || n > 4 || start + n > limit) return null;
    len = 0;
    for (let k = 0; k < n; k++) len = len * 256 + bytes[start + k];
    start += n;
  }
  const end = start + len;
  return end > limit ? null : { tag, start, end, next: end };
}

const LDAP_RESULT_CODES: Record<number, string> = {
  0: 'success', 1: 'operationsError', 2: 'protocolError', 8: 'strongerAuthRequired', 13: 'confidentialityRequired',
  32: 'noSuchObject', 48: 'inappropriateAuthentication', 49: 'invalidCredentials', 50: 'insufficientAccessRights',
  52: 'unavailable', 53: 'unwillingToPerform',
};

/**
 * LDAP answer to the root DSE search → { vendorName, vendorVersion, namingContexts (joined with
 * " | "), supportedLDAPVersion (joined with ","), resultCode, diagnosticMessage } (those present).
 */
export function parseLdapSearch(bytes: Buffer): Record<string, string> | null {
  const facts: Record<string, string> = {};
  let seen = false;
  for (let at = 0; at < bytes.length;) {
    const msg = ber(bytes, at);
    if (!msg || msg.tag !== 0x30) break;
    at = msg.next;
    const id = ber(bytes, msg.start, msg.end);
    if (!id || id.tag !== 0x02) break;
    const op = ber(bytes, id.next, msg.end);
    if (!op) break;
    if (op.tag === 0x64) { // SearchResultEntry
      seen = true;
      const name = ber(bytes, op.start, op.end);
      const attrs = name && ber(bytes, name.next, op.end);
      if (!attrs || attrs.tag !== 0x30) continue;
      for (let a = attrs.start; a < attrs.end;) {
        const attr = ber(bytes, a, attrs.end);
        if (!attr || attr.tag !== 0x30) break;
        a = attr.next;
        const type = ber(bytes, attr.start, attr.end);
        const vals = type && ber(bytes, type.next, attr.end);
        if (!type || !vals || type.tag !== 0x04 || vals.tag !== 0x31) continue;
        const values: string[] = [];
        for (let v = vals.start; v < vals.end;) {
          const val = ber(bytes, v, vals.end);
          if (!val || val.tag !== 0x04) break;
          values.push(bytes.toString('utf8', val.start, val.end));
          v = val.next;
        }
        const key = LDAP_ROOTDSE_ATTRIBUTES.find((k) => k.toLowerCase() === bytes.toString('latin1', type.start, type.end).toLowerCase());
        if (key && values.length) facts[key] = printable(values.join(key === 'supportedLDAPVersion' ? ',' : ' | '));
      }
    } else if (op.tag === 0x65) { // SearchResultDone
      seen = true;
      const code = ber(bytes, op.start, op.end);
      if (code?.tag === 0x0a && code.end > code.start) {
        const n = bytes[code.end - 1];
        facts.resultCode = LDAP_RESULT_CODES[n] ? `${n} ${LDAP_RESULT_CODES[n]}` : String(n);
        const matched = ber(bytes, code.next, op.end);
        const diag = matched && ber(bytes, matched.next, op.end);
        if (diag?.tag === 0x04 && diag.end > diag.start) facts.diagnosticMessage = printable(bytes.toString('utf8', diag.start, diag.end));
      }
    }
  }
  return seen ? facts : null;
}

const SMB2_DIALECT_NAMES: Record<number, string> = { 0x0202: '2.0.2', 0x0210: '2.1', 0x0300: '3.0', 0x0302: '3.0.2', 0x0311: '3.1.1', 0x02ff: '2.x (wildcard)' };

/** A GUID as Windows writes it (the first three fields little-endian). */
function guid(b: Buffer): string {
  const h = (x: Buffer) => x.toString('hex');
  return `${h(Buffer.from(b.subarray(0, 4)).reverse())}-${h(Buffer.from(b.subarray(4, 6)).reverse())}-${h(Buffer.from(b.subarray(6, 8)).reverse())}-${h(b.subarray(8, 10))}-${h(b.subarray(10, 16))}`;
}

/** SMB2 NEGOTIATE response (after the 4-byte direct TCP header) → { dialect, serverGuid, signing } or { status } when refused. */
export function parseSmb2Negotiate(bytes: Buffer): Record<string, string> | null {
  if (bytes.length < 4 + 64 || bytes[0] !== 0 || bytes.toString('latin1', 4, 8) !== '\xfeSMB' || bytes.readUInt16LE(4 + 12) !== 0) return null;
  const status = bytes.readUInt32LE(4 + 8);
  if (status !== 0) return { status: `0x${status.toString(16).padStart(8, '0')}` };
  const r = 4 + 64;
  if (bytes.length < r + 40 || bytes.readUInt16LE(r) !== 65) return null;
  const dialect = bytes.readUInt16LE(r + 4);
  return {
    dialect: SMB2_DIALECT_NAMES[dialect] ?? `0x${dialect.toString(16).padStart(4, '0')}`,
    serverGuid: guid(bytes.subarray(r + 8, r + 24)),
    signing: bytes.readUInt16LE(r + 2) & 0x0002 ? 'required' : 'enabled',
  };
}

/** Parsers by rule id: facts = { ...regexFacts, ...HANDSHAKE_PARSERS[rule.id]?.(answer.bytes) }. */
export const HANDSHAKE_PARSERS: Record<string, (bytes: Buffer) => Record<string, string> | null> = {
  'mqtt-connack': parseMqttConnack,
  'mqtt-connack-tls': parseMqttConnack,
  'rdp-connection-confirm': parseRdpConnectionConfirm,
  'mongodb-reply': parseMongoReply,
  'ldap-search-result': parseLdapSearch,
  'ldap-search-result-tls': parseLdapSearch,
  'smb2-negotiate': parseSmb2Negotiate,
  'dns-response': parseDnsVersionBind,
};

// ---------------------------------------------------------------------------------------------
// Rules

const CERT_FACTS: Record<string, Field> = { subject: 'cert.subject', san: 'cert.san', issuer: 'cert.issuer' };

// MQTT 3.1.1 CONNACK: 0x20, remaining length 2, flags 0/1, return code 0-5 (a refusal is still MQTT).
const CONNACK = /^\x20\x02[\x00\x01][\x00-\x05]/;
// Connection Confirm: without negotiation data (length 11, LI 6) or with RDP_NEG_RSP / RDP_NEG_FAILURE (length 19, LI 14).
const RDP_CC = /^\x03\x00(?:\x00\x0b\x06\xd0[\s\S]{5}|\x00\x13\x0e\xd0[\s\S]{5}[\x02\x03][\s\S]\x08\x00[\s\S]{4})/;
// OP_REPLY (opCode 1) or OP_MSG (2013) answering requestID 1, whose document has an ismaster /
// isWritablePrimary boolean (the lazy scan stops at its first occurrence).
const MONGO_REPLY = /^[\s\S]{4}[\s\S]{4}\x01\x00\x00\x00(?:\x01\x00\x00\x00|\xdd\x07\x00\x00)[\s\S]*?\x08(?:ismaster|isWritablePrimary)\x00[\x00\x01]/;
// LDAPMessage SEQUENCE (any definite length form), messageID 1, SearchResultEntry or SearchResultDone.
const LDAP_RESULT = /^\x30(?:[\x00-\x7f]|\x81[\s\S]|\x82[\s\S]{2}|\x83[\s\S]{3}|\x84[\s\S]{4})\x02\x01\x01[\x64\x65]/;
// The printable part of a greeting line: ASCII up to the first control byte or line end; a
// non-ASCII rest of the line is allowed but left out of the fact.
const REST_OF_LINE = '(?:[^\\x20-\\x7e\\r\\n][^\\r\\n]*)?\\r?\\n';
const IMAP_PRODUCTS = 'Dovecot|Cyrus|Courier|Zimbra|Microsoft Exchange|hMailServer|MDaemon|Kerio|Gimap|Stalwart|CommuniGate|UW IMAP|Openwave';
const POP3_PRODUCTS = 'Dovecot|Cyrus|Courier|Zimbra|Microsoft Exchange|hMailServer|MDaemon|Kerio|Gpop|Stalwart|CommuniGate|Qpopper|UW POP';
const IMAP_GREETING = new RegExp(`^\\* (?<state>OK|PREAUTH|BYE)(?: \\[CAPABILITY (?<capability>[\\x20-\\x5c\\x5e-\\x7e]*)\\])?(?: (?=(?:[^\\r\\n]*?(?<product>${IMAP_PRODUCTS}))?)(?<greeting>[\\x20-\\x7e]*))?${REST_OF_LINE}`);
const POP3_GREETING = new RegExp(`^\\+OK(?: (?=(?:[^\\r\\n]*?(?<product>${POP3_PRODUCTS}))?)(?<greeting>[\\x20-\\x7e]*))?${REST_OF_LINE}`);
// Telnet: one or more option negotiations (IAC WILL/WONT/DO/DONT option, or IAC SB … IAC SE),
// then maybe a first printable line (a banner or the login prompt).
const TELNET = /^(?:\xff(?:[\xfb-\xfe][\s\S]|\xfa[^\xff]*\xff\xf0))+(?:[\r\n\x00]*(?<banner>[\x20-\x7e]+))?/;
// A status line, then (looked ahead, optional) the Server header within the answer.
const RTSP_STATUS = /^RTSP\/(?<version>[12]\.0) (?<status>\d{3})(?=(?:[\s\S]*?\r\nServer: ?(?<server>[\x20-\x7e]+))?)/i;
const SIP_STATUS = /^SIP\/2\.0 (?<status>\d{3})(?=(?:[\s\S]*?\r\n(?:Server|User-Agent): ?(?<server>[\x20-\x7e]+))?)/i;
// RouterOS API reply: the first word of the sentence, length-prefixed.
const MIKROTIK = /^(?:\x05!done|\x05!trap|\x06!fatal)/;

export const HANDSHAKE_RULES: AnswerRule[] = [
  {
    evidence: 'answer', id: 'dns-response', name: 'DNS server', definition: 'Dns',
    probes: ids('dns-version-bind'), ports: [53],
    // The length, our id "NI", and the QR bit of a response.
    match: [{ field: 'answer', pattern: /^[\s\S]{2}NI[\x80-\xff]/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'mqtt-connack', name: 'MQTT broker', definition: 'MQTT',
    probes: ids('mqtt-connect'), ports: [1883],
    match: [{ field: 'answer', pattern: CONNACK }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'mqtt-connack-tls', name: 'MQTT broker (TLS)', definition: 'MQTT',
    probes: ids('mqtt-connect-tls'), ports: [8883],
    match: [{ field: 'answer', pattern: CONNACK }],
    record: CERT_FACTS, confidence: 'High',
  },
  {
    evidence: 'answer', id: 'rfb-version', name: 'VNC', definition: 'VNC',
    probes: ids('null'), anyProbe: true, ports: [5900, 5901, 5902, 5903],
    match: [{ field: 'answer', pattern: /^RFB (?<version>\d{3}\.\d{3})\n/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'rdp-connection-confirm', name: 'RDP', definition: 'RDP',
    probes: ids('rdp-x224'), ports: [3389],
    match: [{ field: 'answer', pattern: RDP_CC }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'mongodb-reply', name: 'MongoDB', definition: 'MongoDB',
    probes: ids('mongodb-hello'), ports: [27017, 27018, 27019],
    match: [{ field: 'answer', pattern: MONGO_REPLY }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'ldap-search-result', name: 'LDAP', definition: 'LDAP',
    probes: ids('ldap-rootdse'), ports: [389, 3268],
    match: [{ field: 'answer', pattern: LDAP_RESULT }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'ldap-search-result-tls', name: 'LDAP (TLS)', definition: 'LDAP',
    probes: ids('ldap-rootdse-tls'), ports: [636, 3269],
    match: [{ field: 'answer', pattern: LDAP_RESULT }],
    record: CERT_FACTS, confidence: 'High',
  },
  {
    evidence: 'answer', id: 'smb2-negotiate', name: 'SMB', definition: 'SMB',
    probes: ids('smb-negotiate'), ports: [445, 139],
    // Direct TCP header (0x00 + length), SMB2 header with StructureSize 64, Command NEGOTIATE.
    match: [{ field: 'answer', pattern: /^\x00[\s\S]{3}\xfeSMB\x40\x00[\s\S]{6}\x00\x00/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'netbios-session-refused', name: 'NetBIOS session service', definition: 'SMB',
    probes: ids('smb-negotiate'), onlyPorts: [139],
    // RFC 1002 NEGATIVE SESSION RESPONSE (0x83, length 1, error code 0x80-0x8f): 139 wants a session request first.
    match: [{ field: 'answer', pattern: /^\x83\x00\x00\x01[\x80-\x8f]/ }],
    confidence: 'Medium',
  },
  {
    evidence: 'answer', id: 'imap-greeting', name: 'IMAP', definition: 'IMAP',
    probes: ids('null'), ports: [143],
    match: [{ field: 'answer', pattern: IMAP_GREETING }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'imap-greeting-tls', name: 'IMAP (TLS)', definition: 'IMAP',
    probes: ids('tls-greeting', 'tls'), ports: [993],
    match: [{ field: 'answer', pattern: IMAP_GREETING }],
    record: CERT_FACTS, confidence: 'High',
  },
  {
    evidence: 'answer', id: 'pop3-greeting', name: 'POP3', definition: 'POP3',
    probes: ids('null'), ports: [110],
    match: [{ field: 'answer', pattern: POP3_GREETING }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'pop3-greeting-tls', name: 'POP3 (TLS)', definition: 'POP3',
    probes: ids('tls-greeting', 'tls'), ports: [995],
    match: [{ field: 'answer', pattern: POP3_GREETING }],
    record: CERT_FACTS, confidence: 'High',
  },
  {
    evidence: 'answer', id: 'telnet-negotiation', name: 'Telnet', definition: 'Telnet',
    probes: ids('null'), anyProbe: true, ports: [23, 2323],
    match: [{ field: 'answer', pattern: TELNET }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'rtsp-status', name: 'RTSP', definition: 'RTSP',
    probes: ids('rtsp-options', 'http-get'), ports: [554, 8554],
    match: [{ field: 'answer', pattern: RTSP_STATUS }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'sip-status', name: 'SIP', definition: 'SIP',
    probes: ids('sip-options'), ports: [5060],
    match: [{ field: 'answer', pattern: SIP_STATUS }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'mikrotik-api', name: 'MikroTik RouterOS API', definition: 'MikroTik',
    probes: ids('mikrotik-login'), ports: [8728],
    match: [{ field: 'answer', pattern: MIKROTIK }],
    confidence: 'High',
  },
];
