// The agent → server half of the Scanopy 0.14 daemon protocol (daemon-protocol.md §0, §1.1): every
// call carries Authorization: Bearer <key>, X-Daemon-ID and X-Daemon-Version; answers are parsed as
// strictly as a real daemon does (meta with an integer api_version and a semver server_version in
// success AND error bodies), so an error body we cannot read has no code, as upstream.
import { AGENT_VERSION } from '../config.js';

export interface Envelope<T> {
  success: boolean;
  data?: T;
  error?: string;
  code?: string;
  params?: Record<string, unknown>;
  meta: { api_version: number; server_version: string };
}

/** A failed call: `code` only when the server's error envelope parsed (the daemon matches on it). */
export class ServerError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number | null,
    readonly code: string | null,
    message: string,
    /** A 429's or 503's Retry-After, ms. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(`${method} ${path}: ${message}`);
  }

  /** Worth trying again later: no answer, a server error, or "too many requests" (the server limits each daemon key). */
  get isTransient(): boolean {
    return this.status === null || this.status === 429 || this.status >= 500;
  }

  /** No answer at all (connection refused, timeout): worth retrying. */
  get isNetwork(): boolean {
    return this.status === null;
  }
}

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The envelope, or null when it is not one (strict: meta required, as upstream). */
export function parseEnvelope(body: unknown): Envelope<unknown> | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const env = body as Record<string, unknown>;
  const meta = env.meta as Record<string, unknown> | undefined;
  if (typeof env.success !== 'boolean' || !meta || typeof meta !== 'object') return null;
  if (!Number.isInteger(meta.api_version) || typeof meta.server_version !== 'string' || !SEMVER.test(meta.server_version)) return null;
  if (env.error !== undefined && typeof env.error !== 'string') return null;
  if (env.code !== undefined && typeof env.code !== 'string') return null;
  return env as unknown as Envelope<unknown>;
}

export interface Backoff {
  /** First wait, ms. */
  firstMs: number;
  maxMs: number;
  tries: number;
}

/** Upstream's retry policies (§1.1): request-work network errors, entity posts, register while the key is being created. */
export const RETRY = {
  network: { firstMs: 1000, maxMs: 30_000, tries: 30 },
  entities: { firstMs: 500, maxMs: 30_000, tries: 5 },
  register: { firstMs: 10_000, maxMs: 30_000, tries: 30 },
} satisfies Record<string, Backoff>;

export interface ClientOptions {
  server: string;
  key: string;
  daemonId: string;
  /** Total time per call (upstream: 30 s). */
  timeoutMs?: number;
  /** Multiplies every backoff wait (tests make retries instant). */
  backoffScale?: number;
  fetch?: typeof fetch;
  /** Stops retrying (the agent is stopping); a call under way still completes. */
  signal?: AbortSignal;
  log?: { debug?(msg: string, extra?: Record<string, unknown>): void };
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve) => {
  if (signal?.aborted) return resolve();
  const timer = setTimeout(done, ms);
  function done() {
    clearTimeout(timer);
    signal?.removeEventListener('abort', done);
    resolve();
  }
  signal?.addEventListener('abort', done, { once: true });
});

export class ServerClient {
  daemonId: string;
  private readonly base: string;

  constructor(private readonly opts: ClientOptions) {
    this.daemonId = opts.daemonId;
    this.base = opts.server.replace(/\/+$/, '');
  }

  /**
   * One call: the envelope's data, or a ServerError. A connection the server had already closed
   * (a kept-alive socket reused just as it timed out) is tried once more at once: every daemon call
   * is idempotent (updates replace, reports merge).
   */
  async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const started = performance.now();
    try {
      const data = await this.callOnce<T>(method, path, body).catch((err) => {
        if (err instanceof ServerError && err.isNetwork && /UND_ERR_SOCKET|ECONNRESET|EPIPE|other side closed/.test(err.message)) return this.callOnce<T>(method, path, body);
        throw err;
      });
      this.opts.log?.debug?.('call', { method, path, ms: Math.round(performance.now() - started) });
      return data;
    } catch (err) {
      this.opts.log?.debug?.('call failed', { method, path, ms: Math.round(performance.now() - started), err: (err as Error).message });
      throw err;
    }
  }

  private async callOnce<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.opts.key}`,
      'X-Daemon-ID': this.daemonId,
      'X-Daemon-Version': AGENT_VERSION,
      Accept: 'application/json',
    };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    let text: string;
    const timeout = AbortSignal.timeout(this.opts.timeoutMs ?? 30_000);
    try {
      res = await (this.opts.fetch ?? fetch)(this.base + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        signal: timeout, // not the stop signal: a stopping agent still sends its session's Cancelled
      });
      text = await res.text();
    } catch (err) {
      // fetch says only "fetch failed": the cause (ECONNREFUSED, ENOBUFS, a timeout) is what helps.
      const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
      const detail = cause ? `: ${cause.code ?? cause.message ?? String(cause)}` : '';
      throw new ServerError(method, path, null, null, `${(err as Error).message}${detail}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const env = parseEnvelope(parsed);
    const retryAfter = Number(res.headers.get('retry-after'));
    const retryAfterMs = retryAfter > 0 ? Math.min(retryAfter, 300) * 1000 : null;
    if (!env) throw new ServerError(method, path, res.status, null, `HTTP ${res.status}`, retryAfterMs);
    if (!res.ok || !env.success) throw new ServerError(method, path, res.status, env.code ?? null, env.error ?? `HTTP ${res.status}`, retryAfterMs);
    if (!('data' in env)) throw new ServerError(method, path, res.status, null, 'No data in response');
    return env.data as T;
  }

  /** Retries while `retryable` says so, waiting firstMs, doubling up to maxMs. */
  async withRetry<T>(policy: Backoff, retryable: (err: ServerError) => boolean, run: () => Promise<T>): Promise<T> {
    let wait = policy.firstMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (err) {
        if (!(err instanceof ServerError) || !retryable(err) || attempt >= policy.tries || this.opts.signal?.aborted) throw err;
        await sleep(Math.max(wait, err.retryAfterMs ?? 0) * (this.opts.backoffScale ?? 1), this.opts.signal);
        wait = Math.min(wait * 2, policy.maxMs);
      }
    }
  }

  /** Entity posts: retried on network errors, 5xx and 429 (§1.1 step 4: 5 tries). */
  postEntity<T>(path: string, body: unknown): Promise<T> {
    return this.withRetry(RETRY.entities, (e) => e.isTransient, () => this.call<T>('POST', path, body));
  }

  startup() {
    return this.call<Record<string, unknown>>('POST', `/api/daemons/${this.daemonId}/startup`, { daemon_version: AGENT_VERSION });
  }

  register(body: RegisterBody) {
    return this.withRetry(RETRY.register, (e) => e.code === 'auth_daemon_key_not_created', () => this.call<{ daemon: Record<string, unknown>; host_id: string }>('POST', '/api/daemons/register', body));
  }

  requestWork(status: { name: string; mode: string; version: string }) {
    return this.withRetry(RETRY.network, (e) => e.isNetwork || e.status === 429, () => this.call<[WorkPayload | null, boolean]>('POST', `/api/daemons/${this.daemonId}/request-work`, status));
  }

  updateCapabilities(capabilities: { has_docker_socket: boolean; interfaced_subnet_ids: string[] }) {
    return this.call<null>('POST', `/api/daemons/${this.daemonId}/update-capabilities`, capabilities);
  }

  /**
   * Progress of a session (the path id is the session's; the server reads the body's). Upstream
   * ignores a failed update; a terminal one is retried like an entity (a lost Complete would leave
   * the session running until the stalled sweep).
   */
  update(payload: WorkPayload) {
    const send = () => this.call<null>('POST', `/api/v1/discovery/${payload.session_id}/update`, payload);
    return ['Complete', 'Failed', 'Cancelled'].includes(payload.phase) ? this.withRetry(RETRY.entities, (e) => e.isTransient, send) : send();
  }

  /** Every subnet of the daemon's network (a paginated envelope, no paging applied). */
  listSubnets() {
    return this.withRetry(RETRY.entities, (e) => e.isTransient, () => this.call<Array<Record<string, unknown>>>('GET', '/api/v1/subnets'));
  }
}

export interface RegisterBody {
  daemon_id: string;
  network_id: string;
  name: string;
  mode: string;
  capabilities: { has_docker_socket: boolean; interfaced_subnet_ids: string[] };
  user_id: string;
  version: string;
}

/** DiscoveryUpdatePayload (§1.1 step 3/4): work handed out and progress reported. */
export interface WorkPayload {
  session_id: string;
  daemon_id: string;
  network_id: string;
  phase: 'Pending' | 'Starting' | 'Started' | 'Scanning' | 'Complete' | 'Failed' | 'Cancelled';
  discovery_type: DiscoveryType;
  progress: number;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  /** Our extension: the run's report, on a Network session's terminal update only. */
  report?: RunReport;
}

/** What a run did, as the server stores and shows it (src/modules/discovery/schemas.ts sessionReport: strict, bounded). */
export interface RunReport {
  addresses_tried: number;
  alive_by_evidence: Record<string, number>;
  services_by_rule: Record<string, number>;
  warnings: string[];
  incomplete: string[];
  probes_sent: number;
}

export type DiscoveryType =
  | { type: 'SelfReport'; host_id: string | null }
  | {
      type: 'Network';
      subnet_ids: string[] | null;
      host_naming_fallback?: 'Ip' | 'BestService';
      snmp_credentials?: { default_credential: null | Record<string, unknown>; ip_overrides: Array<Record<string, unknown>> };
      probe_raw_socket_ports?: boolean;
    }
  | { type: string; [key: string]: unknown };
