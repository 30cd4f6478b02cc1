// The probes a fingerprint rule can read: what each sends on a fresh TCP connection and what it
// collects (raw bytes, the HTTP answer parsed, the TLS certificate). One probe = one connection,
// counted in the run's budget.
import net from 'node:net';
import tls from 'node:tls';
import type { ProbeBudget } from '../scan/budget.js';
import { HANDSHAKE_PROBES } from './handshakes.js';

/** A probe's name: those below, and the handshakes of handshakes.ts. */
export type ProbeId = string;

export interface HttpAnswer {
  status: number;
  statusLine: string;
  /** Header names lower case; a repeated header keeps its first value. */
  headers: Record<string, string>;
  /** Every Set-Cookie header's cookie name=value (the part before the first ';'). */
  cookies: string[];
  title?: string;
  /** The body as text (de-chunked; at most what the answer held). */
  body: string;
  /** The path asked for, and the redirects followed to get here: "302 /login". */
  path?: string;
  redirects?: string[];
}

export interface CertFacts {
  /** Subject common name ('' when none). */
  subject: string;
  /** subjectAltName as Node gives it, e.g. "DNS:nas.lan, IP Address:198.18.10.11". */
  san: string;
  /** Issuer CN (or O when no CN). */
  issuer: string;
}

export interface ProbeAnswer {
  probe: ProbeId;
  port: number;
  /** What the service sent (at most MAX_ANSWER_BYTES). */
  bytes: Buffer;
  http?: HttpAnswer;
  cert?: CertFacts;
  /** MD5 of /favicon.ico, when the port serves one (Recog's favicon fingerprints). */
  faviconMd5?: string;
  /** A plain request answered as a TLS-only port answers it (a TLS alert, "…HTTP request to an HTTPS server"). */
  tlsOnly?: boolean;
  /** Why nothing (or not everything) came: "refused", "connect timeout", "no answer in 1500 ms", "tls: …". */
  error?: string;
}

export interface ProbeDefinition {
  /** How reasons name it. */
  label: string;
  /** Sent once connected (and, for tls, once the handshake is done); null: send nothing, read the greeting. */
  payload: ((host: string, port: number) => Buffer) | null;
  tls: boolean;
}

/** A GET of `path` as a browser-less client sends it (no credentials, ever). */
export const httpRequest = (host: string, port: number, path = '/') =>
  Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${port === 80 || port === 443 ? host : `${host}:${port}`}\r\nUser-Agent: netinv-agent\r\nAccept: */*\r\nConnection: close\r\n\r\n`, 'latin1');
const httpGet = (host: string, port: number) => httpRequest(host, port, '/');

export const PROBES: Record<string, ProbeDefinition> = {
  null: { label: 'NULL (read the greeting)', payload: null, tls: false },
  'redis-ping': { label: '"PING\\r\\n"', payload: () => Buffer.from('PING\r\n', 'latin1'), tls: false },
  // PostgreSQL's SSLRequest: length 8, code 80877103; a server answers one byte, 'S' or 'N'.
  'pg-sslrequest': { label: 'SSLRequest 00000008 04d2162f', payload: () => Buffer.from('0000000804d2162f', 'hex'), tls: false },
  'http-get': { label: '"GET / HTTP/1.1"', payload: httpGet, tls: false },
  tls: { label: 'TLS handshake + "GET / HTTP/1.1"', payload: httpGet, tls: true },
  ...HANDSHAKE_PROBES,
};

export const MAX_ANSWER_BYTES = 16 * 1024;

export interface ProbeTimeouts {
  /** How long a probe waits for an answer once connected (a greeting may come late). */
  replyMs: number;
  /** Once something came, this much silence ends the answer. */
  idleMs: number;
}

export const DEFAULT_PROBE_TIMEOUTS: ProbeTimeouts = { replyMs: 1500, idleMs: 250 };

/** Sends `probe` to ip:port on a new connection and collects the answer. */
export function runProbe(
  ip: string,
  port: number,
  probe: ProbeId,
  budget: ProbeBudget,
  signal?: AbortSignal,
  timeouts: ProbeTimeouts = DEFAULT_PROBE_TIMEOUTS,
): Promise<ProbeAnswer> {
  const def = PROBES[probe];
  if (!def) throw new Error(`unknown probe ${probe}`);
  return exchange(ip, port, probe, def, budget, signal, timeouts);
}

/** One GET of `path` (plain or over TLS) on a new connection: a follow-up of an HTTP probe. */
export function runHttp(
  ip: string, port: number, tlsToo: boolean, path: string, budget: ProbeBudget, signal?: AbortSignal,
  timeouts: ProbeTimeouts = DEFAULT_PROBE_TIMEOUTS, maxBytes = MAX_ANSWER_BYTES,
): Promise<ProbeAnswer> {
  const def: ProbeDefinition = { label: `${tlsToo ? 'TLS + ' : ''}"GET ${path}"`, payload: (h, p) => httpRequest(h, p, path), tls: tlsToo };
  return exchange(ip, port, tlsToo ? 'tls' : 'http-get', def, budget, signal, timeouts, maxBytes, true).then((a) => {
    if (a.http) a.http.path = path;
    return a;
  });
}

function exchange(
  ip: string, port: number, probe: ProbeId, def: ProbeDefinition, budget: ProbeBudget, signal: AbortSignal | undefined,
  timeouts: ProbeTimeouts, maxBytes = MAX_ANSWER_BYTES, isHttp = def.payload === httpGet,
): Promise<ProbeAnswer> {
  return budget.probe(
    () =>
      new Promise<ProbeAnswer>((resolve) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let cert: CertFacts | undefined;
        let connected = false;
        let timer: NodeJS.Timeout | undefined;
        let done = false;
        const arm = (ms: number, why: string) => {
          clearTimeout(timer);
          timer = setTimeout(() => finish(why), ms);
        };
        const finish = (error?: string) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          socket.destroy();
          const bytes = Buffer.concat(chunks, size).subarray(0, maxBytes);
          const answer: ProbeAnswer = { probe, port, bytes };
          if (cert) answer.cert = cert;
          if (isHttp) {
            const http = parseHttp(bytes);
            if (http) answer.http = http;
            if (!def.tls && looksTlsOnly(bytes, http)) answer.tlsOnly = true;
          }
          if (error && !(size && error.startsWith('idle'))) answer.error = error;
          resolve(answer);
        };
        const onAbort = () => finish('cancelled');
        const onReady = () => {
          connected = true;
          if (cert === undefined && def.tls) cert = certFacts(socket as tls.TLSSocket);
          if (def.payload) socket.write(def.payload(ip, port));
          if (!done) arm(timeouts.replyMs, `no answer in ${timeouts.replyMs} ms`);
        };
        const socket: net.Socket = def.tls
          ? tls.connect({ host: ip, port, rejectUnauthorized: false }, onReady)
          : net.connect({ host: ip, port }, onReady);
        arm(budget.roundTrips.connectTimeoutMs(), 'connect timeout');
        signal?.addEventListener('abort', onAbort, { once: true });
        socket.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= maxBytes) finish();
          else arm(timeouts.idleMs, 'idle');
        });
        socket.once('end', () => finish(size ? undefined : 'closed without a word'));
        socket.once('error', (err: NodeJS.ErrnoException) => {
          if (err.code === 'ECONNREFUSED') finish('refused');
          else finish(`${def.tls && !connected ? 'tls: ' : ''}${err.code ?? err.message}`);
        });
      }),
    signal,
  );
}

function certFacts(socket: tls.TLSSocket): CertFacts | undefined {
  const c = socket.getPeerCertificate();
  if (!c || !Object.keys(c).length) return undefined;
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? '';
  return {
    subject: first(c.subject?.CN),
    san: c.subjectaltname ?? '',
    issuer: first(c.issuer?.CN) || first(c.issuer?.O),
  };
}

/** An HTTP/1.x answer's status, headers, cookies, body and <title> (undefined when the bytes are not one). */
export function parseHttp(bytes: Buffer): HttpAnswer | undefined {
  const text = bytes.toString('latin1');
  const statusLine = /^HTTP\/\d(?:\.\d)? (\d{3})[^\r\n]*/.exec(text);
  if (!statusLine) return undefined;
  const end = text.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const line of text.slice(statusLine[0].length, end < 0 ? undefined : end).split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] ??= value;
    if (name === 'set-cookie') cookies.push(value.split(';')[0]!.trim());
  }
  let raw = end < 0 ? Buffer.alloc(0) : bytes.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) raw = dechunk(raw);
  const body = raw.toString('utf8');
  const answer: HttpAnswer = { status: Number(statusLine[1]), statusLine: statusLine[0], headers, cookies, body };
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(body);
  if (title) answer.title = decodeEntities(title[1]!).replace(/\s+/g, ' ').trim();
  return answer;
}

/** A chunked body's data (what arrived of it). */
export function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < raw.length) {
    const eol = raw.indexOf('\r\n', at, 'latin1');
    if (eol < 0) break;
    const size = parseInt(raw.subarray(at, eol).toString('latin1').split(';')[0]!.trim(), 16);
    if (!Number.isFinite(size) || size <= 0) break;
    parts.push(raw.subarray(eol + 2, Math.min(raw.length, eol + 2 + size)));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * A plain request answered as TLS-only ports answer it: a TLS record (an alert, 0x15 0x03), or an
 * HTTP error naming the mistake (nginx "The plain HTTP request was sent to HTTPS port", Apache and
 * Go "Client sent an HTTP request to an HTTPS server").
 */
export function looksTlsOnly(bytes: Buffer, http: HttpAnswer | undefined): boolean {
  if (bytes.length >= 2 && (bytes[0] === 0x15 || bytes[0] === 0x16) && bytes[1] === 0x03) return true;
  return !!http && http.status >= 400 && /plain HTTP request was sent to HTTPS port|HTTP request to an HTTPS server|speaking plain HTTP to an SSL-enabled server|This combination of host and port requires TLS/i.test(http.body);
}

function decodeEntities(s: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
  return s.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (m, e: string) =>
    e[0] === '#' ? String.fromCodePoint(parseInt(e.slice(e[1] === 'x' || e[1] === 'X' ? 2 : 1), e[1] === 'x' || e[1] === 'X' ? 16 : 10)) : named[e.toLowerCase()] ?? m);
}

/** Bytes as a readable quoted string: printable ASCII kept, the rest escaped, cut to `max` characters. */
export function escapeBytes(bytes: Buffer | string, max = 80): string {
  const text = typeof bytes === 'string' ? bytes : bytes.toString('latin1');
  let out = '';
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    const e = ch === '\\' ? '\\\\' : ch === '"' ? '\\"' : ch === '\r' ? '\\r' : ch === '\n' ? '\\n' : ch === '\t' ? '\\t'
      : c >= 0x20 && c < 0x7f ? ch : `\\x${c.toString(16).padStart(2, '0')}`;
    if (out.length + e.length > max) return `"${out}…"`;
    out += e;
  }
  return `"${out}"`;
}
