// The probes a fingerprint rule can read: what each sends on a fresh TCP connection and what it
// collects (raw bytes, the HTTP answer parsed, the TLS certificate). One probe = one connection,
// counted in the run's budget.
import net from 'node:net';
import tls from 'node:tls';
import type { ProbeBudget } from '../scan/budget.js';

export type ProbeId = 'null' | 'redis-ping' | 'pg-sslrequest' | 'http-get' | 'tls';

export interface HttpAnswer {
  status: number;
  statusLine: string;
  /** Header names lower case; a repeated header keeps its first value. */
  headers: Record<string, string>;
  title?: string;
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

const httpGet = (host: string, port: number) =>
  Buffer.from(`GET / HTTP/1.1\r\nHost: ${port === 80 || port === 443 ? host : `${host}:${port}`}\r\nUser-Agent: netinv-agent\r\nAccept: */*\r\nConnection: close\r\n\r\n`, 'latin1');

export const PROBES: Record<ProbeId, ProbeDefinition> = {
  null: { label: 'NULL (read the greeting)', payload: null, tls: false },
  'redis-ping': { label: '"PING\\r\\n"', payload: () => Buffer.from('PING\r\n', 'latin1'), tls: false },
  // PostgreSQL's SSLRequest: length 8, code 80877103; a server answers one byte, 'S' or 'N'.
  'pg-sslrequest': { label: 'SSLRequest 00000008 04d2162f', payload: () => Buffer.from('0000000804d2162f', 'hex'), tls: false },
  'http-get': { label: '"GET / HTTP/1.1"', payload: httpGet, tls: false },
  tls: { label: 'TLS handshake + "GET / HTTP/1.1"', payload: httpGet, tls: true },
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
          const bytes = Buffer.concat(chunks, size).subarray(0, MAX_ANSWER_BYTES);
          const answer: ProbeAnswer = { probe, port, bytes };
          if (cert) answer.cert = cert;
          if (def.payload === httpGet) {
            const http = parseHttp(bytes);
            if (http) answer.http = http;
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
          if (size >= MAX_ANSWER_BYTES) finish();
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

/** An HTTP/1.x answer's status, headers and <title> (undefined when the bytes are not one). */
export function parseHttp(bytes: Buffer): HttpAnswer | undefined {
  const text = bytes.toString('latin1');
  const statusLine = /^HTTP\/\d(?:\.\d)? (\d{3})[^\r\n]*/.exec(text);
  if (!statusLine) return undefined;
  const end = text.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of text.slice(statusLine[0].length, end < 0 ? undefined : end).split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] ??= line.slice(colon + 1).trim();
  }
  const answer: HttpAnswer = { status: Number(statusLine[1]), statusLine: statusLine[0], headers };
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(end < 0 ? '' : bytes.subarray(end + 4).toString('utf8')); // latin1: a char per byte
  if (title) answer.title = decodeEntities(title[1]).replace(/\s+/g, ' ').trim();
  return answer;
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
