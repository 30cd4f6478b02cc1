// The server → daemon side of the Scanopy protocol (reference §1.2, recorded in the fixtures'
// server_to_daemon.json): what the server sends to a `server_poll` daemon at its `url`.
//
//   POST /api/first-contact            {daemon_id, server_capabilities: {server_version, minimum_daemon_version}}
//   GET  /api/status                   → DaemonStatus {name, mode, version, capabilities}
//   GET  /api/poll                     → {progress: DiscoveryUpdatePayload | null, entities: {hosts, subnets}}
//   POST /api/discovery/entities-created {subnets: [[pending_id, Subnet]], hosts: [[pending_id, HostResponse]]}
//   POST /api/discovery/initiate       {session_id, discovery_type}   (409 when the daemon is busy)
//   POST /api/discovery/cancel         "<session uuid>" (a bare JSON string; 409 when not running)
//   POST /api/initialize               {network_id, api_key, pairing_code} (pairing: ./pairing.ts; no Authorization)
//
// Every request carries `Authorization: Bearer <daemon_api_keys.server_key>` (pre-0.14 daemons take
// initiate/cancel without it) and is cut off after a timeout (10 s upstream). The daemon answers with
// the same envelope as the server: `{success, data, meta}` / `{success: false, error, meta}`.
//
// An https daemon whose certificate was pinned at pairing (daemon_api_keys.tls_fingerprint) is judged
// by that fingerprint alone (agents use self-signed certificates): another certificate ends the
// connection before the request, and its key, is sent.

import { request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { OutboundRefused, type OutboundPolicy } from '../../core/outboundPolicy.js';

/** A daemon's answers are small JSON documents; a larger one is cut off rather than buffered. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export interface DaemonStatus {
  name?: string;
  mode?: string;
  version?: string | null;
  capabilities?: { has_docker_socket?: boolean; interfaced_subnet_ids?: string[] } & Record<string, unknown>;
}

export interface PollResponse {
  progress: Record<string, unknown> | null;
  entities: { hosts: Record<string, unknown>[]; subnets: Record<string, unknown>[] };
}

export interface EntitiesCreated {
  subnets: [string, unknown][];
  hosts: [string, unknown][];
}

/** Why a request to a daemon failed: no answer at all, or an answer that is not a success. */
export class DaemonRequestError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly reason: 'timeout' | 'network' | 'http' | 'invalid_response' | 'certificate',
    readonly status?: number,
    /** What the daemon said (its error text), or what went wrong. */
    readonly detail?: string,
  ) {
    super(`${method} ${path}: ${reason}${status ? ` ${status}` : ''}${detail ? ` (${detail})` : ''}`);
  }
}

/** A SHA-256 fingerprint as Node and openssl print it: AB:CD:… (64 hex digits, any case and colons accepted). */
export function normaliseFingerprint(text: string): string {
  return text.replace(/:/g, '').toUpperCase().match(/../g)!.join(':');
}

class CertificateMismatch extends Error {}

/**
 * An https agent that judges the daemon's certificate by its fingerprint rather than by a CA:
 * `expected` null accepts any certificate and records it (pairing: the first answer is pinned),
 * else another one fails the connection before the request is written.
 */
class FingerprintAgent extends HttpsAgent {
  /** The certificate the daemon presented (after the handshake). */
  seen: string | null = null;
  private readonly connecting = new Set<TLSSocket>();

  constructor(private readonly expected: string | null) {
    super({ keepAlive: false });
  }

  override createConnection(options: HttpsRequestOptions, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    // Not verified against a CA: the fingerprint check below is the verification.
    const socket = tlsConnect({ ...(options as object), rejectUnauthorized: false });
    this.connecting.add(socket);
    socket.once('secureConnect', () => {
      this.connecting.delete(socket);
      this.seen = socket.getPeerCertificate().fingerprint256 ?? null;
      if (this.expected && this.seen !== this.expected) {
        socket.destroy();
        callback?.(new CertificateMismatch(`the daemon presented TLS certificate ${this.seen}, not the expected ${this.expected} (pinned when it was paired, or given as tls_fingerprint): `
          + 'nothing was sent to it; if the agent\'s certificate was replaced on purpose, provision the daemon again'), socket);
        return;
      }
      callback?.(null, socket);
    });
    socket.once('error', (err) => {
      this.connecting.delete(socket);
      callback?.(err, socket);
    });
    return undefined;
  }

  /** Also a connection still in its handshake (a request that timed out meanwhile). */
  override destroy(): void {
    for (const socket of this.connecting) socket.destroy();
    super.destroy();
  }
}

export interface DaemonClientOptions {
  /** The daemon's `url` (e.g. `http://10.0.0.5:60073`). */
  baseUrl: string;
  /** Where the server may connect (src/core/outboundPolicy.ts), checked at every request. */
  policy: OutboundPolicy;
  /** Plaintext key the daemon was configured with (daemon_api_keys.server_key). */
  apiKey: string | null;
  timeoutMs: number;
  /** Pre-0.14 daemons: initiate / cancel go without Authorization (reference §1.2 step 3). */
  legacy?: boolean;
  /**
   * https only: judge the daemon's certificate by its SHA-256 fingerprint, not by a CA. `expected`
   * null accepts any (pairing records it); a pin also refuses a plain-http url (no downgrade).
   * Unset: the usual CA verification.
   */
  certificate?: { expected: string | null };
}

interface Answer {
  status: number;
  body: unknown;
  /** https with `certificate`: the fingerprint the daemon presented. */
  certificate: string | null;
}

export class DaemonClient {
  constructor(private readonly opts: DaemonClientOptions) {}

  private async request(method: 'GET' | 'POST', path: string, body?: unknown, auth = true): Promise<Answer> {
    // Appended to the daemon's url as given, so a url behind a reverse-proxy path prefix works too.
    let url: URL;
    try {
      url = this.opts.policy.parse(`${this.opts.baseUrl.replace(/\/+$/, '')}${path}`);
    } catch (err) {
      const detail = err instanceof OutboundRefused ? err.message : `invalid daemon url '${this.opts.baseUrl}'`;
      throw new DaemonRequestError(method, path, 'network', undefined, detail);
    }
    const pinned = this.opts.certificate?.expected ?? null;
    if (pinned && url.protocol !== 'https:') {
      throw new DaemonRequestError(method, path, 'certificate', undefined, `the daemon was paired over https (its certificate ${pinned} is pinned): its url must stay https`);
    }
    const tlsAgent = this.opts.certificate && url.protocol === 'https:' ? new FingerprintAgent(pinned) : undefined;
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (auth && this.opts.apiKey) headers.Authorization = `Bearer ${this.opts.apiKey}`;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    if (payload) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) });
    return new Promise<Answer>((resolve, reject) => {
      const fail = (reason: 'timeout' | 'network' | 'certificate', detail: string) => {
        tlsAgent?.destroy();
        reject(new DaemonRequestError(method, path, reason, undefined, detail));
      };
      // node:http rather than fetch: the policy's lookup judges the address actually connected to
      // (an IP literal was judged by parse() above); redirects are not followed.
      const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method, headers, lookup: this.opts.policy.lookup as never, timeout: this.opts.timeoutMs, agent: tlsAgent ?? false,
      }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) { req.destroy(); fail('network', `answer larger than ${MAX_ANSWER_BYTES} bytes`); return; }
          chunks.push(chunk);
        });
        res.on('error', (err) => fail('network', err.message));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            /* a plain-text body (the daemon's 401s are plain text) */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, certificate: tlsAgent?.seen ?? null });
        });
      });
      const deadline = setTimeout(() => { req.destroy(); fail('timeout', `${this.opts.timeoutMs} ms`); }, this.opts.timeoutMs);
      req.on('close', () => clearTimeout(deadline));
      req.on('timeout', () => { req.destroy(); fail('timeout', `${this.opts.timeoutMs} ms`); });
      req.on('error', (err) => fail(err instanceof CertificateMismatch ? 'certificate' : 'network', err.message));
      req.end(payload);
    });
  }

  /** The `data` of a success envelope; anything else is a DaemonRequestError. */
  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown, auth = true): Promise<T> {
    const answer = await this.request(method, path, body, auth);
    return this.unwrap<T>(method, path, answer);
  }

  private unwrap<T>(method: string, path: string, { status, body }: Answer): T {
    const env = body as { success?: unknown; data?: unknown; error?: unknown } | undefined;
    if (status < 200 || status >= 300) {
      const detail = env && typeof env === 'object' && typeof env.error === 'string' ? env.error : typeof body === 'string' ? body.slice(0, 200) : undefined;
      throw new DaemonRequestError(method, path, 'http', status, detail);
    }
    if (!env || typeof env !== 'object' || env.success !== true || !('data' in env)) {
      throw new DaemonRequestError(method, path, 'invalid_response', status, 'not a success envelope');
    }
    return env.data as T;
  }

  firstContact(daemonId: string, capabilities: { server_version: string; minimum_daemon_version: string }): Promise<DaemonStatus> {
    return this.call<DaemonStatus>('POST', '/api/first-contact', { daemon_id: daemonId, server_capabilities: capabilities }).then((d) => this.status_(d, '/api/first-contact'));
  }

  status(): Promise<DaemonStatus> {
    return this.call<DaemonStatus>('GET', '/api/status').then((d) => this.status_(d, '/api/status'));
  }

  private status_(data: DaemonStatus, path: string): DaemonStatus {
    if (!data || typeof data !== 'object') throw new DaemonRequestError(path === '/api/status' ? 'GET' : 'POST', path, 'invalid_response', 200, 'status is not an object');
    return data;
  }

  async poll(): Promise<PollResponse> {
    const data = await this.call<Partial<PollResponse> | null>('GET', '/api/poll');
    if (!data || typeof data !== 'object') throw new DaemonRequestError('GET', '/api/poll', 'invalid_response', 200, 'poll data is not an object');
    const entities = data.entities ?? { hosts: [], subnets: [] };
    return {
      progress: data.progress && typeof data.progress === 'object' ? data.progress : null,
      entities: { hosts: Array.isArray(entities.hosts) ? entities.hosts : [], subnets: Array.isArray(entities.subnets) ? entities.subnets : [] },
    };
  }

  async entitiesCreated(body: EntitiesCreated): Promise<void> {
    await this.call('POST', '/api/discovery/entities-created', body);
  }

  /** `started` when the daemon took the session, `busy` on its 409 "already in progress". */
  async initiate(sessionId: string, discoveryType: unknown): Promise<'started' | 'busy'> {
    const answer = await this.request('POST', '/api/discovery/initiate', { session_id: sessionId, discovery_type: discoveryType }, !this.opts.legacy);
    if (answer.status === 409) return 'busy';
    this.unwrap('POST', '/api/discovery/initiate', answer);
    return 'started';
  }

  /**
   * Pairing: the daemon takes the key once the pairing code is right and its server accepted the key
   * (our agent; a Scanopy daemon takes it without a code). No Authorization: the daemon has no key yet.
   * Answers the daemon's message and, over https, the certificate it presented.
   */
  async initialize(body: { network_id: string; api_key: string; pairing_code: string }): Promise<{ message: string; certificate: string | null }> {
    const answer = await this.request('POST', '/api/initialize', body, false);
    const data = this.unwrap<unknown>('POST', '/api/initialize', answer);
    return { message: typeof data === 'string' ? data.slice(0, 200) : 'initialized', certificate: answer.certificate };
  }

  /** `cancelling` when the daemon stops the session, `not_running` on its 409. */
  async cancel(sessionId: string): Promise<'cancelling' | 'not_running'> {
    const answer = await this.request('POST', '/api/discovery/cancel', sessionId, !this.opts.legacy);
    if (answer.status === 409) return 'not_running';
    this.unwrap('POST', '/api/discovery/cancel', answer);
    return 'cancelling';
  }
}
