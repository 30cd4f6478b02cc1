// The agent's own HTTP API for server_poll mode (daemon-protocol.md §1.2, as the recorded
// server_to_daemon.json exchanges show): the server contacts the agent, pulls progress and found
// entities with GET /api/poll, confirms them with entities-created, and starts / cancels sessions.
// Answers use the server's envelope with meta.server_version = the agent's version; auth failures
// are 401 with a plain-text body, as upstream.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_VERSION } from '../config.js';
import type { Transport } from '../runner.js';
import type { DiscoveryType, WorkPayload } from './client.js';
import type { HostRequest, SubnetBody } from './entities.js';

const TERMINAL = ['Complete', 'Failed', 'Cancelled'];
/** How long a found entity waits for the server's confirmation (upstream SERVER_POLL_CONFIRMATION_TIMEOUT). */
export const CONFIRMATION_TIMEOUT_MS = 120_000;
const MAX_BODY = 1024 * 1024;

export interface ServerPollHooks {
  /** The key the server must present (null: not configured yet). */
  key(): string | null;
  /** POST /api/initialize: store the key and network; then announce startup (throws: initialise fails). */
  initialize(networkId: string, apiKey: string): Promise<'initialized' | 'already'>;
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
export const errorEnvelope = (error: string) => ({ success: false, error, meta: { api_version: 1, server_version: AGENT_VERSION } });

const sha256 = (text: string) => createHash('sha256').update(text).digest();

export class ServerPollApi {
  private server: Server | null = null;
  private progress: WorkPayload | null = null;
  private readonly pending = new Map<string, Pending>();
  private running: { sessionId: string; controller: AbortController; done: Promise<unknown> } | null = null;

  constructor(private readonly hooks: ServerPollHooks) {}

  async listen(host: string, port: number): Promise<number> {
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => this.send(res, 500, errorEnvelope('internal error'))));
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
    if (route === 'POST /api/initialize') return this.initialize(res, body);
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

  private async initialize(res: ServerResponse, body: unknown): Promise<void> {
    const b = body as { network_id?: unknown; api_key?: unknown } | undefined;
    if (typeof b?.network_id !== 'string' || typeof b.api_key !== 'string') return this.send(res, 400, errorEnvelope('network_id and api_key are required'));
    try {
      const outcome = await this.hooks.initialize(b.network_id, b.api_key);
      this.send(res, 200, envelope(outcome === 'already' ? 'Daemon already initialized' : 'Daemon initialized successfully'));
    } catch (err) {
      this.send(res, 500, errorEnvelope(`Startup announcement failed: ${(err as Error).message}`));
    }
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
