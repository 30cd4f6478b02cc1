// The agent's own HTTP API for server_poll mode (daemon-protocol.md §1.2, as the recorded
// server_to_daemon.json exchanges show): the server contacts the agent, pulls progress and found
// entities with GET /api/poll, confirms them with entities-created, and starts / cancels sessions.
// Answers use the server's envelope with meta.server_version = the agent's version; auth failures
// are 401 with a plain-text body, as upstream.
//
// Pairing (POST /api/initialize, unauthenticated as upstream): an agent without a key takes one only
// from a caller who knows its one-time pairing code, and keeps it only once its server has accepted
// it (the `initialize` hook checks); after PAIRING_ATTEMPTS wrong codes pairing is locked until a
// restart. A paired agent takes another key only from a caller presenting the current one.
import { spawnSync } from 'node:child_process';
import { createHash, randomInt, timingSafeEqual, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { AGENT_VERSION, normalisePairingCode, PAIRING_ALPHABET } from '../config.js';
import type { Log, Transport } from '../runner.js';
import type { DiscoveryType, WorkPayload } from './client.js';
import type { HostRequest, SubnetBody } from './entities.js';

const TERMINAL = ['Complete', 'Failed', 'Cancelled'];
/** How long a found entity waits for the server's confirmation (upstream SERVER_POLL_CONFIRMATION_TIMEOUT). */
export const CONFIRMATION_TIMEOUT_MS = 120_000;
const MAX_BODY = 1024 * 1024;
/** Wrong pairing codes after which pairing is locked until the agent restarts (a bound on guessing). */
export const PAIRING_ATTEMPTS = 5;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Why initialize did not take a key: the answer's status and message (the key is not kept). */
export class PairingRefused extends Error {
  constructor(readonly status: number, message: string, readonly code: string) {
    super(message);
  }
}

export interface ServerPollHooks {
  /** The key the server must present (null: not paired yet). */
  key(): string | null;
  /**
   * POST /api/initialize once the caller may give a key (the pairing code, or the current key when
   * `replacing`): check it with the server and keep it, or throw PairingRefused (nothing kept).
   */
  initialize(networkId: string, apiKey: string, replacing: boolean): Promise<void>;
  /** POST /api/first-contact: the id the server gave this daemon. */
  firstContact(daemonId: string): void;
  /** POST /api/discovery/initiate: run the session (not awaited); throws when the agent cannot run one. */
  initiate(work: { session_id: string; discovery_type: DiscoveryType }, signal: AbortSignal): Promise<unknown>;
  status(): { name: string; mode: string; version: string; capabilities: { has_docker_socket: boolean; interfaced_subnet_ids: string[] } };
}

interface Pending {
  kind: 'subnets' | 'hosts';
  entity: SubnetBody | HostRequest;
  resolve(answer: unknown): void;
}

export const envelope = (data: unknown) => ({ success: true, data, meta: { api_version: 1, server_version: AGENT_VERSION } });
/** An error answer; `code` (ours: pairing) lets a caller tell refusals apart without reading the text. */
export const errorEnvelope = (error: string, code?: string) => ({ success: false, error, ...(code ? { code } : {}), meta: { api_version: 1, server_version: AGENT_VERSION } });

const sha256 = (text: string) => createHash('sha256').update(text).digest();
/** Equal strings, in a time that does not depend on where they differ. */
const sameSecret = (a: string, b: string) => timingSafeEqual(sha256(a), sha256(b));

/** A one-time pairing code: 12 characters of a 32-letter alphabet (60 bits) in groups of four, XXXX-XXXX-XXXX. */
export function generatePairingCode(): string {
  const chars = Array.from({ length: 12 }, () => PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)]!);
  return [0, 4, 8].map((i) => chars.slice(i, i + 4).join('')).join('-');
}

/** A PEM certificate's SHA-256 fingerprint as openssl and Node print it (AB:CD:…). */
export const certificateFingerprint = (pem: string | Buffer) => new X509Certificate(pem).fingerprint256;

/**
 * --tls-self-signed: a certificate and key made once with openssl (no dependency of ours makes
 * certificates) in `dir`, beside the state file, and kept, so the fingerprint the server pinned at
 * pairing stays the same across restarts. Throws when openssl is missing or fails.
 */
export function selfSignedCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'agent-tls-cert.pem');
  const key = join(dir, 'agent-tls-key.pem');
  if (existsSync(cert) && existsSync(key)) return { cert, key };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(key, '', { mode: 0o600 }); // openssl writes into it, keeping the mode: never readable by others
  const made = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650',
    '-subj', '/CN=netinventory-agent', '-keyout', key, '-out', cert,
  ], { encoding: 'utf8', timeout: 30_000 });
  if (made.error || made.status !== 0) {
    const why = made.error ? (made.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'openssl is not installed' : made.error.message : made.stderr.trim().split('\n').pop();
    throw new Error(`--tls-self-signed: could not make a certificate (${why}); give one with --tls-cert and --tls-key`);
  }
  return { cert, key };
}

export interface ServerPollOptions {
  /** The pairing code initialize needs while the agent has no key (normalised or as printed). */
  pairingCode?: string | null;
  /** Refusals and pairing are logged (who tried, and the lock). */
  log?: Pick<Log, 'info' | 'warn' | 'error'>;
}

export class ServerPollApi {
  private server: Server | null = null;
  private progress: WorkPayload | null = null;
  private readonly pending = new Map<string, Pending>();
  private running: { sessionId: string; controller: AbortController; done: Promise<unknown> } | null = null;
  /** Null once used, or when there is none (a key from the configuration). */
  private pairingCode: string | null;
  private pairingAttemptsLeft = PAIRING_ATTEMPTS;
  /** One initialize at a time: another one while a key is being checked with the server is 409. */
  private initializing = false;

  constructor(private readonly hooks: ServerPollHooks, private readonly options: ServerPollOptions = {}) {
    this.pairingCode = options.pairingCode ? normalisePairingCode(options.pairingCode) : null;
  }

  /** With `tls` (PEM certificate and key) the API is served over HTTPS. */
  async listen(host: string, port: number, tls?: { cert: string | Buffer; key: string | Buffer }): Promise<number> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res).catch(() => this.send(res, 500, errorEnvelope('internal error')));
    this.server = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, handler) : createServer(handler);
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.running?.controller.abort();
    await this.running?.done.catch(() => undefined);
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }

  /** The running session's promise (tests and shutdown wait on it). */
  get current(): Promise<unknown> | null {
    return this.running?.done ?? null;
  }

  /**
   * The runner's transport in this mode: progress and entities wait here for the server's poll. A
   * session's waits end when its signal aborts (the entities stay offered until confirmed).
   */
  transport(
    outbound: Pick<Transport, 'listSubnets'>,
    onCapabilities: (c: { has_docker_socket: boolean; interfaced_subnet_ids: string[] }) => void,
    signal?: AbortSignal,
  ): Transport & { flush(): Promise<void> } {
    const waiting = new Set<Promise<unknown>>();
    const buffer = (kind: 'subnets' | 'hosts', id: string, entity: SubnetBody | HostRequest) => {
      let resolve!: (answer: unknown) => void;
      const answered = new Promise<unknown>((ok) => { resolve = ok; });
      this.pending.set(id, { kind, entity, resolve });
      const confirmed = new Promise<unknown>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`the server did not confirm ${kind} ${id} within ${CONFIRMATION_TIMEOUT_MS / 1000} s`)), CONFIRMATION_TIMEOUT_MS);
        timer.unref?.();
        const stop = () => fail(new Error('session cancelled'));
        if (signal?.aborted) stop();
        signal?.addEventListener('abort', stop, { once: true });
        answered.then((answer) => { clearTimeout(timer); signal?.removeEventListener('abort', stop); ok(answer); });
      });
      waiting.add(confirmed);
      confirmed.catch(() => undefined).finally(() => waiting.delete(confirmed));
      return confirmed;
    };
    return {
      postSubnet: async (body) => (await buffer('subnets', body.id, body)) as { id: string; cidr: string },
      listSubnets: () => outbound.listSubnets(),
      // A host waits in the buffer; the session's end waits for every confirmation (flush).
      postHost: async (request) => { buffer('hosts', request.host.id, request).catch(() => undefined); },
      update: async (payload) => {
        // A late progress report never hides the session's end before the server has polled it.
        const ended = this.progress && TERMINAL.includes(this.progress.phase) && this.progress.session_id === payload.session_id;
        if (!ended) this.progress = payload;
      },
      updateCapabilities: async (c) => onCapabilities(c),
      flush: async () => { await Promise.all([...waiting]); },
    };
  }

  private send(res: ServerResponse, status: number, body: unknown, plain = false): void {
    if (res.headersSent) return;
    if (plain) res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' }).end(String(body));
    else res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  }

  private authorised(req: IncomingMessage, res: ServerResponse): boolean {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer (\S+)$/.exec(header);
    if (!m) return this.send(res, 401, 'Missing or invalid Authorization header', true), false;
    const key = this.hooks.key();
    if (!key) return this.send(res, 401, 'Daemon not configured', true), false;
    if (!timingSafeEqual(sha256(m[1]!), sha256(key))) return this.send(res, 401, 'Invalid API key', true), false;
    return true;
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw new Error('body too large');
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    const route = `${req.method} ${path}`;
    if (route === 'GET /api/health') return this.send(res, 200, envelope('OK'));
    let body: unknown;
    try {
      body = await this.body(req);
    } catch {
      return this.send(res, 400, errorEnvelope('Invalid JSON body'));
    }
    if (route === 'POST /api/initialize') return this.initialize(req, res, body);
    const known = ['GET /api/status', 'GET /api/poll', 'POST /api/first-contact', 'POST /api/discovery/initiate', 'POST /api/discovery/cancel', 'POST /api/discovery/entities-created'];
    if (!known.includes(route)) return this.send(res, 404, errorEnvelope(`No route ${route}`));
    if (!this.authorised(req, res)) return;
    const b = body as Record<string, any> | undefined;
    switch (route) {
      case 'GET /api/status':
        return this.send(res, 200, envelope(this.hooks.status()));
      case 'POST /api/first-contact':
        if (typeof b?.daemon_id !== 'string') return this.send(res, 400, errorEnvelope('daemon_id is required'));
        this.hooks.firstContact(b.daemon_id);
        return this.send(res, 200, envelope(this.hooks.status()));
      case 'GET /api/poll':
        return this.send(res, 200, envelope(this.poll()));
      case 'POST /api/discovery/entities-created':
        return this.send(res, 200, envelope(this.confirm(b)));
      case 'POST /api/discovery/initiate':
        return this.initiate(res, b);
      default: // POST /api/discovery/cancel, the body a bare JSON string
        if (typeof body !== 'string' || !this.running || this.running.sessionId !== body) return this.send(res, 409, errorEnvelope('Discovery session not currently running'));
        this.running.controller.abort();
        return this.send(res, 200, envelope(body));
    }
  }

  /**
   * POST /api/initialize {network_id, api_key, pairing_code}. Not paired: the pairing code (403
   * without it or with a wrong one; locked after PAIRING_ATTEMPTS wrong ones). Paired: 409 unless
   * `Authorization: Bearer <current key>` (then the key is replaced). Either way the hook checks the
   * key with the server before keeping it; 200 only once it is kept.
   */
  private async initialize(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const b = body as { network_id?: unknown; api_key?: unknown; pairing_code?: unknown } | undefined;
    if (typeof b?.network_id !== 'string' || !UUID.test(b.network_id) || typeof b.api_key !== 'string' || !/^\S{1,200}$/.test(b.api_key)) {
      return this.send(res, 400, errorEnvelope('network_id (a UUID), api_key and pairing_code are required'));
    }
    const from = req.socket.remoteAddress ?? 'unknown';
    if (this.initializing) return this.send(res, 409, errorEnvelope('Another initialize is being checked with the server: try again in a moment', 'initialize_in_progress'));
    const current = this.hooks.key();
    const replacing = current !== null;
    if (replacing) {
      const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!bearer || !sameSecret(bearer, current)) {
        this.options.log?.warn('initialize refused: already paired', { from });
        return this.send(res, 409, errorEnvelope('Daemon already initialized: to replace its API key, send Authorization: Bearer <its current key>', 'already_initialized'));
      }
    } else {
      const refusal = this.checkPairingCode(b.pairing_code, from);
      if (refusal) return this.send(res, 403, errorEnvelope(refusal.message, refusal.code));
    }
    this.initializing = true;
    try {
      await this.hooks.initialize(b.network_id.toLowerCase(), b.api_key, replacing);
    } catch (err) {
      if (!(err instanceof PairingRefused)) throw err;
      this.options.log?.warn('initialize refused', { from, reason: err.message });
      return this.send(res, err.status, errorEnvelope(err.message, err.code));
    } finally {
      this.initializing = false;
    }
    if (!replacing) this.pairingCode = null; // used: a pairing code pairs once
    this.options.log?.info(replacing ? 'API key replaced' : 'paired', { from, network_id: b.network_id });
    this.send(res, 200, envelope(replacing ? 'Daemon API key replaced' : 'Daemon initialized successfully'));
  }

  /** Null when `given` is the pairing code; else why not (a wrong code counts toward the lock). */
  private checkPairingCode(given: unknown, from: string): { message: string; code: string } | null {
    const where = 'the agent logs it at start ("pairing code XXXX-XXXX-XXXX"), or it was given one with --pairing-code / AGENT_PAIRING_CODE';
    if (this.pairingCode === null || this.pairingAttemptsLeft <= 0) {
      return { message: `Pairing is locked after ${PAIRING_ATTEMPTS} wrong pairing codes: restart the agent for a new code (${where})`, code: 'pairing_locked' };
    }
    if (typeof given !== 'string' || !given.trim()) return { message: `A pairing code is needed (pairing_code): ${where}`, code: 'pairing_code_required' };
    if (sameSecret(normalisePairingCode(given), this.pairingCode)) return null;
    this.pairingAttemptsLeft -= 1;
    if (this.pairingAttemptsLeft > 0) {
      this.options.log?.warn('initialize refused: wrong pairing code', { from, attempts_left: this.pairingAttemptsLeft });
      return { message: `Wrong pairing code (${this.pairingAttemptsLeft} more tries before pairing is locked): ${where}`, code: 'pairing_code_wrong' };
    }
    this.options.log?.error(`pairing locked after ${PAIRING_ATTEMPTS} wrong pairing codes: restart the agent to pair it`, { from });
    return { message: `Wrong pairing code: pairing is now locked; restart the agent for a new code (${where})`, code: 'pairing_locked' };
  }

  /** Progress (a terminal one is handed out once, then dropped) and every entity not yet confirmed. */
  private poll() {
    const progress = this.progress;
    if (progress && TERMINAL.includes(progress.phase)) this.progress = null;
    const list = [...this.pending.values()];
    return {
      progress,
      entities: {
        hosts: list.filter((p) => p.kind === 'hosts').map((p) => p.entity),
        subnets: list.filter((p) => p.kind === 'subnets').map((p) => p.entity),
      },
    };
  }

  private confirm(body: Record<string, any> | undefined): string {
    for (const [id, answer] of [...(Array.isArray(body?.subnets) ? body.subnets : []), ...(Array.isArray(body?.hosts) ? body.hosts : [])]) {
      const p = this.pending.get(id);
      if (!p) continue;
      this.pending.delete(id);
      p.resolve(answer);
    }
    return 'Created entities acknowledged';
  }

  private initiate(res: ServerResponse, b: Record<string, any> | undefined): void {
    if (typeof b?.session_id !== 'string' || !b.discovery_type || typeof b.discovery_type.type !== 'string') return this.send(res, 400, errorEnvelope('session_id and discovery_type are required'));
    if (this.running) return this.send(res, 409, errorEnvelope('Discovery session already in progress'));
    const controller = new AbortController();
    const sessionId = b.session_id as string;
    let started: Promise<unknown>;
    try {
      started = this.hooks.initiate({ session_id: sessionId, discovery_type: b.discovery_type }, controller.signal);
    } catch (err) {
      return this.send(res, 500, errorEnvelope((err as Error).message));
    }
    const done = started.finally(() => {
      if (this.running?.sessionId === sessionId) this.running = null;
    });
    this.running = { sessionId, controller, done };
    done.catch(() => undefined);
    this.send(res, 200, envelope({ session_id: sessionId }));
  }
}
