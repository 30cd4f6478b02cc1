// Credentials are write-only (issue 37): once stored, a credential is shown again nowhere but in the
// one answer that made it (a key's or a webhook secret's creation or rotation) and in the work handed
// to the daemon that needs it (an SNMP credential in request-work, in a server_poll initiate; a
// daemon key in the pairing call to its agent). This module captures what the service puts out in
// every test of a run and searches it, grep-style, for every credential the tests stored:
//
// - answers: every HTTP answer of an in-process test app (test/support/app.ts), whatever the client
//   (call(), fetch, the browser, an agent), decompressed, streams (CSV exports, SSE frames) included;
//   and the answers call()/callFrom() read from spawned API processes;
// - sent: every request body an in-process server other than a test app receives (webhook
//   receivers, stand-in daemons and agents): what the service sends out;
// - logs: every line of the test apps' and in-process workers' loggers (at debug level, whatever
//   LOG_LEVEL shows) and the output of spawned bundles.
//
// Credentials are registered ("planted") as they are stored: secret fields of request bodies
// (SNMP `community`, `auth_password`, `priv_password`; `password`), the keys and secrets that
// creation and rotation answers show (scp_u_…, scp_d_…, whsec_…), and what a test plants itself
// (plantCredential). Outputs are kept, and searched in the root `after` hook (test/setup.ts): once
// per spec file with mocha --parallel, once per run without, so a credential generated after an
// output (a log line written before the creation answer) is searched for in it too. What one output
// sends past its first 256 K characters (a large export, the OpenAPI document) is not kept: it is
// searched as it streams, for the credentials planted by then (the memory of a streamed export
// stays flat). Binary answers (downloads, images, the web application's scripts and stylesheets)
// are not captured.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import zlib from 'node:zlib';
import { pino } from 'pino';
import { createLogger, type Logger } from '../../src/core/logger.js';
import { SECRET_FIELDS, SECRET_MASK } from '../../src/core/secretFields.js';

export type CredentialKind = 'snmp' | 'password' | 'api_key' | 'daemon_key' | 'webhook_secret';
export type OutputSource = 'answer' | 'sent' | 'log';

export interface CapturedOutput {
  source: OutputSource;
  /** What was sent past the first OUTPUT_KEEP_CHARS: its last characters (searched with what follows), and the credentials already reported in it. */
  overflow?: { tail: string; reported: Set<string> };
  /** `METHOD /path` of the answer or of the request sent (query left out); the logger's name for a log. */
  method?: string;
  path?: string;
  where: string;
  /** The test running when it was captured (or the last one started). */
  test: string;
  text: string;
}

export interface Leak {
  /** The credential (never printed: describeLeaks masks it). */
  value: string;
  kind: CredentialKind;
  plantedBy: string;
  where: string;
  test: string;
  /** The text around it, the credential replaced by <kind>. */
  context: string;
}

/**
 * Where a plaintext may be seen. Answers by route; `sent` by the path the service called (a
 * daemon's url may carry a prefix). Nothing is allowed in a log line.
 */
const ALLOWED: Array<{ source: OutputSource; method: string; path: RegExp; kinds: CredentialKind[] }> = [
  { source: 'answer', method: 'POST', path: /^\/api\/v1\/auth\/keys(\/[^/]+\/rotate)?$/, kinds: ['api_key'] },
  { source: 'answer', method: 'POST', path: /^\/api\/v1\/auth\/daemon(\/[^/]+\/rotate)?$/, kinds: ['daemon_key'] },
  { source: 'answer', method: 'POST', path: /^\/api\/v1\/daemons\/provision$/, kinds: ['daemon_key'] },
  { source: 'answer', method: 'POST', path: /^\/api\/v1\/webhooks(\/[^/]+\/rotate-secret)?$/, kinds: ['webhook_secret'] },
  { source: 'answer', method: 'POST', path: /^\/api\/daemons\/[^/]+\/request-work$/, kinds: ['snmp'] },
  { source: 'sent', method: 'POST', path: /\/api\/discovery\/initiate$/, kinds: ['snmp'] },
  { source: 'sent', method: 'POST', path: /\/api\/initialize$/, kinds: ['daemon_key'] },
];

export function allowedIn(kind: CredentialKind, o: Pick<CapturedOutput, 'source' | 'method' | 'path'>): boolean {
  return ALLOWED.some((a) => a.source === o.source && a.method === o.method && a.path.test(o.path ?? '') && a.kinds.includes(kind));
}

/** What the capture saw in this process since it started (the run's figures: LEAK_CAPTURE_STATS). */
export const stats = {
  answers: 0, answerBytes: 0, compressedAnswers: 0, binaryAnswersSkipped: 0, sseStreams: 0, sseFrames: 0,
  sent: 0, webhookBodies: 0, logLines: 0, spawnedOutputChunks: 0, credentialsPlanted: 0, searches: 0, leaks: 0,
  /** Characters searched as they streamed, past the part of their output that is kept. */
  charsSearchedStreaming: 0,
};

const enabled = process.env.LEAK_CAPTURE !== '0';
export const leakCaptureEnabled = () => enabled;

// ---- what is kept -----------------------------------------------------------------------------------

/** Kept outputs above this many characters are searched early (with the credentials known then) and dropped. */
const MAX_KEPT_CHARS = Number(process.env.LEAK_CAPTURE_MAX_CHARS ?? 256 * 1024 * 1024);
/** Kept of one output; the rest is searched as it streams. */
const OUTPUT_KEEP_CHARS = 256 * 1024;
/** Credentials are at most this long (longer values are not planted): the overlap of two streamed pieces. */
const MAX_CREDENTIAL = 512;
let outputs: CapturedOutput[] = [];
let keptChars = 0;
const planted = new Map<string, { kind: CredentialKind; by: string }>();
const found: Leak[] = [];
let currentTest = '(before the first test)';

export function setLeakCaptureTest(title: string): void {
  currentTest = title;
}

function keep(o: CapturedOutput): CapturedOutput {
  outputs.push(o);
  return o;
}

function grew(chars: number): void {
  keptChars += chars;
  if (keptChars <= MAX_KEPT_CHARS) return;
  const early = outputs.splice(0, Math.max(1, outputs.length - 100));
  found.push(...search(early));
  keptChars = outputs.reduce((n, o) => n + o.text.length, 0);
}

/** Adds what an output sent: kept up to OUTPUT_KEEP_CHARS, the rest searched now. */
function append(o: CapturedOutput, text: string): void {
  if (!text) return;
  if (!o.overflow) {
    const room = OUTPUT_KEEP_CHARS - o.text.length;
    if (text.length <= room) {
      o.text += text;
      grew(text.length);
      return;
    }
    o.text += text.slice(0, room);
    grew(room);
    text = text.slice(room);
    o.overflow = { tail: o.text.slice(-(MAX_CREDENTIAL - 1)), reported: new Set() };
  }
  const window = o.overflow.tail + text;
  stats.charsSearchedStreaming += text.length;
  for (const leak of search([{ ...o, text: window }])) {
    if (o.overflow.reported.has(leak.value)) continue;
    o.overflow.reported.add(leak.value);
    found.push(leak);
  }
  o.overflow.tail = window.slice(-(MAX_CREDENTIAL - 1));
}

// ---- planting -----------------------------------------------------------------------------------------

/** Registers a stored credential: from now on it may appear only where ALLOWED says. */
export function plantCredential(value: string, kind: CredentialKind, by = currentTest): void {
  if (!enabled || planted.has(value)) return;
  if (value.length > MAX_CREDENTIAL) throw new Error(`plantCredential: at most ${MAX_CREDENTIAL} characters`);
  planted.set(value, { kind, by });
  matcher = undefined;
  stats.credentialsPlanted++;
}

/** Credentials this process planted (a spec's own check searches for its own). */
export const plantedCredentials = (): ReadonlyMap<string, { kind: CredentialKind; by: string }> => planted;

const SNMP = new Set(SECRET_FIELDS);
const BODY_HINT = /"(community|auth_password|priv_password|password)"/;
// Short or placeholder values ("public", the mask) are everywhere: only values that cannot be mistaken.
const plantable = (v: unknown): v is string => typeof v === 'string' && v.length >= 8 && v.length <= MAX_CREDENTIAL && v !== SECRET_MASK && !/^(.)\1*$/.test(v) && !v.includes('[redacted]');

/** The secret fields of a request body a test sent (any route: stored, or refused and perhaps echoed). */
export function plantFromRequest(method: string, path: string, text: string): void {
  if (!enabled || !text || !BODY_HINT.test(text)) return;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return;
  }
  const walk = (v: unknown, depth: number): void => {
    if (depth > 40 || !v || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x, depth + 1);
      return;
    }
    for (const [k, x] of Object.entries(v)) {
      if (SNMP.has(k) && plantable(x)) plantCredential(x, 'snmp', `${currentTest} (${method} ${path}: ${k})`);
      else if (k === 'password' && plantable(x)) plantCredential(x, 'password', `${currentTest} (${method} ${path}: ${k})`);
      else walk(x, depth + 1);
    }
  };
  walk(body, 0);
}

const GENERATED = /\b(scp_u_[0-9A-Za-z]{32}|scp_d_[0-9A-Za-z]{32}|whsec_[A-Za-z0-9+/=]{16,})/g;
const kindOf = (secret: string): CredentialKind => (secret.startsWith('scp_u_') ? 'api_key' : secret.startsWith('scp_d_') ? 'daemon_key' : 'webhook_secret');

/** The keys and secrets an allowed answer shows (creation, rotation, provisioning) become planted credentials. */
function plantFromAnswer(o: CapturedOutput): void {
  if (o.source !== 'answer' || o.method !== 'POST') return;
  if (!ALLOWED.some((a) => a.source === 'answer' && a.method === 'POST' && a.path.test(o.path ?? '') && a.kinds.some((k) => k !== 'snmp'))) return;
  for (const [secret] of o.text.matchAll(GENERATED)) plantCredential(secret, kindOf(secret), `${currentTest} (${o.method} ${o.path})`);
}

// ---- searching ------------------------------------------------------------------------------------------

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One pass per text: a regular expression of the credentials' first 6 characters, each hit checked against those starting so. */
function compile(credentials: ReadonlyMap<string, unknown>): { re: RegExp; byPrefix: Map<string, string[]> } {
  const byPrefix = new Map<string, string[]>();
  for (const value of credentials.keys()) {
    const p = value.slice(0, 6);
    byPrefix.set(p, [...(byPrefix.get(p) ?? []), value]);
  }
  return { re: new RegExp([...byPrefix.keys()].map(escape).join('|'), 'g'), byPrefix };
}
/** The planted credentials' (rebuilt when one is planted). */
let matcher: ReturnType<typeof compile> | undefined;

/** Every planted credential found in `list` outside its allowed places. */
export function search(list: readonly CapturedOutput[], credentials: ReadonlyMap<string, { kind: CredentialKind; by: string }> = planted): Leak[] {
  if (!credentials.size || !list.length) return [];
  stats.searches++;
  const { re, byPrefix } = credentials === planted ? (matcher ??= compile(planted)) : compile(credentials);
  const leaks: Leak[] = [];
  for (const o of list) {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    const seen = new Set<string>();
    while ((m = re.exec(o.text))) {
      const at = m.index;
      re.lastIndex = at + 1;
      for (const value of byPrefix.get(m[0])!) {
        if (seen.has(value) || !o.text.startsWith(value, at)) continue;
        seen.add(value);
        const { kind, by } = credentials.get(value)!;
        if (allowedIn(kind, o)) continue;
        // Shown without any credential in it (a failing run's output is read and kept too).
        let context = o.text.slice(Math.max(0, at - 80), at + value.length + 80).split(value).join(`<${kind}>`);
        for (const [other, c] of credentials) if (context.includes(other.slice(0, 8))) context = context.split(other).join(`<${c.kind}>`);
        context = context.replace(/planted-cred-[a-z-]*[0-9a-f]{0,12}|scp_[ud]_[0-9A-Za-z]{1,32}|whsec_[A-Za-z0-9+/=]+/g, '<a credential>').replace(/\s+/g, ' ');
        leaks.push({ value, kind, plantedBy: by, where: o.where, test: o.test, context });
      }
    }
  }
  return leaks;
}

/** Searches everything kept for every credential planted, then forgets both (the next spec file starts afresh). */
export function takeLeaks(): Leak[] {
  const all = [...found.splice(0), ...search(outputs)];
  const once = new Set<string>();
  const leaks = all.filter((l) => !once.has(`${l.value}\0${l.where}\0${l.test}`) && once.add(`${l.value}\0${l.where}\0${l.test}`));
  stats.leaks += leaks.length;
  if (process.env.LEAK_CAPTURE_STATS) appendFileSync(process.env.LEAK_CAPTURE_STATS, `${JSON.stringify({ pid: process.pid, kept: outputs.length, keptChars, planted: planted.size, ...stats, leaksNow: leaks.length })}\n`);
  outputs = [];
  keptChars = 0;
  planted.clear();
  matcher = undefined;
  return leaks;
}

/** Leaks found so far in what was searched as it streamed (or early, past MAX_KEPT_CHARS): not in capturedOutputs(). */
export const leaksFoundStreaming = (): readonly Leak[] => [...found];

/** The outputs kept so far (a spec checks what it produced was captured). */
export const capturedOutputs = (): readonly CapturedOutput[] => outputs;

export function describeLeaks(leaks: Leak[]): string {
  const lines = leaks.map((l) => `- a ${l.kind} (planted in ${l.plantedBy}) in ${l.where}, during "${l.test}": …${l.context}…`);
  return `Stored credentials found where they must never be shown (issue 37; allowed only in test/support/leakCapture.ts ALLOWED):\n${[...new Set(lines)].join('\n')}`;
}

// ---- capturing: HTTP --------------------------------------------------------------------------------------

const serviceServers = new WeakSet<Server>();
const serviceHosts = new Set<string>();

/** A test app's server: its answers are outputs, the requests it receives are a test's inputs. */
export function markServiceServer(server: Server, url: string): void {
  serviceServers.add(server);
  serviceHosts.add(new URL(url).host);
}

const BINARY = /javascript|text\/css|^image\/|^font\/|octet-stream|wasm|zip|x-tar|gzip|x-executable/i;

/** A decoder of one answer's body as it streams: decompressed (koa-compress: gzip, br) and decoded as UTF-8. */
function bodyDecoder(encoding: string | undefined, onText: (text: string) => void, onEnd: () => void): { write(b: Buffer): void; end(): void } {
  const utf8 = new StringDecoder('utf8');
  const inflater = encoding === 'gzip' ? zlib.createGunzip() : encoding === 'br' ? zlib.createBrotliDecompress() : encoding === 'deflate' ? zlib.createInflate() : undefined;
  if (!inflater) return { write: (b) => onText(utf8.write(b)), end: () => { onText(utf8.end()); onEnd(); } };
  let ended = false;
  const finish = () => {
    if (ended) return;
    ended = true;
    onText(utf8.end());
    onEnd();
  };
  inflater.on('data', (b: Buffer) => onText(utf8.write(b)));
  inflater.on('end', finish);
  inflater.on('error', finish); // a body cut short: what came is searched
  return { write: (b) => inflater.write(b), end: () => inflater.end() };
}

const pathOf = (url: string | undefined) => (url ?? '').split('?')[0]!;
const toBuffer = (chunk: unknown, encoding?: unknown): Buffer | undefined => {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
  if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return undefined;
};

/** Every chunk pushed into a request's body, without touching how its handler reads it. */
function tapRequestBody(req: IncomingMessage, limit: number, done: (text: string) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const push = req.push;
  req.push = function (this: IncomingMessage, chunk: unknown, encoding?: BufferEncoding) {
    const b = toBuffer(chunk, encoding);
    if (b && size < limit) {
      chunks.push(Buffer.from(b)); // the parser reuses its buffer
      size += b.length;
    }
    if (chunk === null) done(Buffer.concat(chunks).toString('utf8'));
    return push.call(this, chunk as never, encoding);
  } as typeof req.push;
}

function captureAnswer(req: IncomingMessage, res: ServerResponse): void {
  const method = req.method ?? '';
  const path = pathOf(req.url);
  if (/json/i.test(String(req.headers['content-type'] ?? ''))) tapRequestBody(req, 4 * 1024 * 1024, (text) => plantFromRequest(method, path, text));
  let output: CapturedOutput | undefined;
  let decoder: ReturnType<typeof bodyDecoder> | undefined;
  let binary: boolean | undefined;
  let sse = false;
  const take = (chunk: unknown, enc?: unknown) => {
    if (binary === undefined) {
      const type = String(res.getHeader('content-type') ?? '');
      const encoding = res.getHeader('content-encoding') as string | undefined;
      binary = BINARY.test(type);
      sse = type.startsWith('text/event-stream');
      if (binary) stats.binaryAnswersSkipped++;
      else {
        stats.answers++;
        if (encoding) stats.compressedAnswers++;
        if (sse) stats.sseStreams++;
        const o = keep({ source: 'answer', method, path, where: `the answer to ${method} ${path}`, test: currentTest, text: '' });
        output = o;
        decoder = bodyDecoder(encoding, (text) => {
          if (sse) stats.sseFrames += text.match(/^data: /gm)?.length ?? 0;
          append(o, text);
        }, () => plantFromAnswer(o));
      }
    }
    const b = binary ? undefined : toBuffer(chunk, enc);
    if (!b) return;
    stats.answerBytes += b.length;
    decoder!.write(Buffer.from(b));
  };
  const write = res.write;
  const end = res.end;
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    take(chunk, rest[0]);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof res.write;
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    take(args[0], args[1]);
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof res.end;
  res.once('close', () => {
    if (!output) return;
    output.where = `the answer to ${method} ${path} (${res.statusCode})`;
    decoder!.end();
  });
}

function captureSent(req: IncomingMessage): void {
  const method = req.method ?? '';
  const path = pathOf(req.url);
  const webhook = req.headers['webhook-id'] !== undefined;
  tapRequestBody(req, 64 * 1024 * 1024, (text) => {
    stats.sent++;
    if (webhook) stats.webhookBodies++;
    append(keep({ source: 'sent', method, path, where: `${webhook ? 'a webhook body' : 'a request the service sent'}: ${method} ${path}`, test: currentTest, text: '' }), text);
  });
}

let installed = false;
/** Captures every in-process HTTP server's traffic (test/setup.ts installs it in every mocha process). */
export function installLeakCapture(): void {
  if (!enabled || installed) return;
  installed = true;
  subscribe('http.server.request.start', (message) => {
    const { request, response, server } = message as { request: IncomingMessage; response: ServerResponse; server: Server };
    if (serviceServers.has(server)) captureAnswer(request, response);
    else captureSent(request);
  });
}

/**
 * An answer a test client read from a process of its own (a spawned API): in-process apps' answers
 * are captured at their server already.
 */
export function captureClientExchange(baseUrl: string, method: string, path: string, requestText: string | undefined, status: number, responseText: string): void {
  if (!enabled || serviceHosts.has(new URL(baseUrl).host)) return;
  const p = pathOf(path);
  if (requestText) plantFromRequest(method, p, requestText);
  stats.answers++;
  stats.answerBytes += responseText.length;
  const o = keep({ source: 'answer', method, path: p, where: `the answer to ${method} ${p} (${status}) from a spawned process`, test: currentTest, text: '' });
  append(o, responseText);
  plantFromAnswer(o);
}

// ---- capturing: logs ----------------------------------------------------------------------------------

/** A pino destination: each line is kept as an output (`name`: whose logger). */
export function logSink(name: string): { write(line: string): boolean } {
  return {
    write(line: string) {
      stats.logLines++;
      append(keep({ source: 'log', where: `a log line of ${name}`, test: currentTest, text: '' }), line);
      return true;
    },
  };
}

/** A spawned process's output (its log lines): `(chunk) => void` appending to one output, searched whole. */
export function processOutput(name: string): (chunk: Buffer | string) => void {
  if (!enabled) return () => undefined;
  const o = keep({ source: 'log', where: `the output of ${name}`, test: currentTest, text: '' });
  const decoder = new StringDecoder('utf8');
  return (chunk) => {
    stats.spawnedOutputChunks++;
    append(o, typeof chunk === 'string' ? chunk : decoder.write(chunk));
  };
}

/**
 * The logger of a test app or in-process worker: every line at debug level and above is kept
 * (and shown on stdout as before when LOG_LEVEL asks for it).
 */
export function testLogger(name: string): Logger {
  const level = process.env.LOG_LEVEL ?? 'silent';
  if (!enabled) return createLogger(level);
  const streams: pino.StreamEntry[] = [{ level: 'debug', stream: logSink(name) as never }];
  if (level !== 'silent') streams.push({ level: level as pino.Level, stream: process.stdout });
  return createLogger(level === 'trace' ? 'trace' : 'debug', 'json', pino.multistream(streams) as never);
}
