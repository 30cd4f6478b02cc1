// Helpers for worker tests: worker services over a test app's database and Redis prefix (so its own
// queues), daemons seeded straight into the tables, a stand-in Scanopy daemon (a local HTTP server),
// and the worker process run as a child (`node --import tsx workers/index.ts`).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Db } from '../../src/core/db.js';
import { processOutput, testLogger } from '../support/leakCapture.js';
import { loadQueueSettings, openQueues, SharedMetricsStore, type QueueSettings } from '../../src/core/queues.js';
import { DEFAULT_VERSION_POLICY } from '../../src/modules/daemons/versionStatus.js';
import type { WorkerServices } from '../../workers/context.js';
import type { TestApp } from '../support/app.js';
import { bundlePath } from '../../scripts/build.js';
import { DAEMON_SERVER_KEY, seal } from '../../src/core/secretBox.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The project's Node 22 (devDependency `node`) when present, as `npm run worker` would use. */
export const NODE = existsSync(join(ROOT, 'node_modules/.bin/node')) ? join(ROOT, 'node_modules/.bin/node') : process.execPath;

/** Worker services over the test app's database, Redis and prefix (the API's own objects are reused where shareable). */
export function workerServicesFor(app: TestApp, overrides: Partial<QueueSettings> = {}): WorkerServices & { close(): Promise<void> } {
  const settings = loadQueueSettings({}, { serverPollTimeoutMs: 2000, serverPollAckWaitMs: 5000, discoverySyncBackoffMs: 100, ...overrides });
  const queues = openQueues(app.services.config, settings);
  return {
    // Stand-in daemons listen on loopback, which the outbound policy refuses unless allowed.
    config: { ...app.services.config, daemonAllowedNetworks: ['127.0.0.0/8'] },
    orm: app.services.orm,
    redis: app.services.redis,
    logger: testLogger('an in-process worker'),
    queues,
    settings,
    metrics: new SharedMetricsStore(app.services.redis, app.services.config.redisPrefix),
    heavyReadBudget: app.services.heavyReadBudget,
    versionPolicy: DEFAULT_VERSION_POLICY,
    async close() {
      await queues.close();
    },
  };
}

export const db = (app: TestApp) => new Db(app.services.orm.em.fork());

export interface SeededDaemon {
  id: string;
  keyId: string;
  serverKey: string;
}

/** A daemon (and its key, sealed) inserted straight into the tables, as provisioning would leave it. */
export async function seedDaemon(
  app: TestApp,
  opts: { orgId: string; networkId: string; url: string; mode?: 'server_poll' | 'daemon_poll'; version?: string | null; lastSeen?: Date | null; name?: string; id?: string },
): Promise<SeededDaemon> {
  const id = opts.id ?? randomUUID();
  const keyId = randomUUID();
  const serverKey = `scp_d_${randomBytes(24).toString('base64url').replace(/[-_]/g, 'x').slice(0, 32)}`;
  const d = db(app);
  await d.query(
    `insert into daemon_api_keys (id, organization_id, network_id, name, key_hash, server_key) values (?, ?, ?, ?, ?, ?)`,
    [keyId, opts.orgId, opts.networkId, `${opts.name ?? 'daemon'} API Key`, createHash('sha256').update(serverKey).digest('hex'), seal(serverKey, DAEMON_SERVER_KEY)],
  );
  await d.query(
    `insert into daemons (id, organization_id, network_id, api_key_id, name, mode, url, version, last_seen, lineage_id)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [id, opts.orgId, opts.networkId, keyId, opts.name ?? 'scanopy-daemon-serverpoll', opts.mode ?? 'server_poll', opts.url, opts.version ?? null, opts.lastSeen ?? null, id],
  );
  return { id, keyId, serverKey };
}

export async function daemonRow(app: TestApp, id: string) {
  return (await db(app).one<{ last_seen: string | null; version: string | null; is_unreachable: boolean; consecutive_failures: number; capabilities: unknown }>(
    `select last_seen, version, is_unreachable, consecutive_failures, capabilities from daemons where id = ?`,
    [id],
  ))!;
}

export async function seedSession(
  app: TestApp,
  opts: { id?: string; orgId: string; networkId: string; daemonId: string; discoveryType: unknown; phase?: string; cancelRequested?: boolean; createdAt?: Date },
): Promise<string> {
  const id = opts.id ?? randomUUID();
  await db(app).query(
    `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, cancel_requested, created_at)
     values (?, ?, ?, ?, ?::jsonb, ?, ?, ?)`,
    [id, opts.orgId, opts.networkId, opts.daemonId, opts.discoveryType, opts.phase ?? 'Pending', opts.cancelRequested ?? false, opts.createdAt ?? new Date()],
  );
  return id;
}

// ---- Stand-in daemon --------------------------------------------------------------------------

export interface ReceivedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  /** Parsed JSON body; `undefined` when the request had none. */
  body: unknown;
}

export type Responder = (req: ReceivedRequest) => { status: number; body: unknown } | 'hang' | 'drop' | undefined;

export interface StandInDaemon {
  url: string;
  requests: ReceivedRequest[];
  /** Replaces how requests are answered (undefined from the responder: 404 plain text). */
  respond: Responder;
  close(): Promise<void>;
}

export async function startStandInDaemon(respond: Responder): Promise<StandInDaemon> {
  const hanging = new Set<ServerResponse>();
  const state: StandInDaemon = {
    url: '',
    requests: [],
    respond,
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        body,
      };
      state.requests.push(received);
      const answer = state.respond(received);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      if (answer === 'drop') {
        res.socket?.destroy();
        return;
      }
      if (!answer) {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not Found');
        return;
      }
      res.writeHead(answer.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

export const envelope = (data: unknown, version = '0.14.10') => ({ success: true, data, meta: { api_version: 1, server_version: version } });

// ---- Worker child process --------------------------------------------------------------------------

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The worker bundle (dist/worker.mjs) with the test app's database and Redis prefix. */
export function spawnWorker(app: TestApp, env: Record<string, string> = {}): WorkerProcess {
  return spawnBundle('worker', app, env);
}

/** A built bundle (dist/) as a child process over the test app's database and Redis prefix, its output kept. */
export function spawnBundle(bundle: 'server' | 'worker', app: TestApp, env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(NODE, ['--enable-source-maps', bundlePath(bundle)], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: app.databaseUrl,
      REDIS_URL: app.services.config.redisUrl,
      REDIS_PREFIX: app.redisPrefix,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const captured = processOutput(`a spawned ${bundle} process`); // searched for stored credentials (issue 37)
  child.stdout!.on('data', (c: Buffer) => { out += c.toString(); captured(c); });
  child.stderr!.on('data', (c: Buffer) => { out += c.toString(); captured(c); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => out, exited };
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
