// One poll cycle of one `server_poll` daemon (reference §1.2 step 2, decisions §7). Run by the
// server-poll worker (workers/serverPoll.ts) for every scheduled job, and callable directly by tests.
//
//  1. contact: POST /api/first-contact while `last_seen` is null, else GET /api/status. Failure (no
//     answer within the timeout, or no success envelope) counts one consecutive failure; the fifth
//     sets `is_unreachable`. Success resets both and keeps `last_seen`, `version`, `capabilities` current.
//     Unreachable daemons keep being polled, so they come back on their own (decisions §7).
//  2. GET /api/poll: discovered entities are handed to the discovery-sync queue (never ingested
//     here), and those whose jobs have completed are confirmed with POST /api/discovery/entities-created
//     (the daemon re-sends an entity on every poll until it is confirmed, so a confirmation missed now
//     goes out on a later cycle). A progress report is applied to its discovery session, the one that
//     ends a session after that poll's entities.
//  3. sessions: cancel_requested running sessions → POST /api/discovery/cancel; then, if the daemon
//     runs nothing, the oldest Pending session → POST /api/discovery/initiate (and it becomes Starting).
//
// Daemons older than 0.14.0 have no status/poll API: they only receive initiate/cancel, without
// Authorization (reference §1.2 step 3, §4 "supports_full_server_poll").
import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { RedisClient } from '../../core/redis.js';
import type { Job } from 'bullmq';
import type { AppConfig } from '../../config.js';
import { ACROSS_ORGANIZATIONS, Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';
import { discoverySyncBatches, discoverySyncJobId, type DiscoverySyncJob, type DiscoverySyncResult, type QueueSettings, type Queues, type SyncContext } from '../../core/queues.js';
import { withApprovedTargets } from '../daemons/targets.js';
import { compareVersions, DEFAULT_VERSION_POLICY, parseVersion, type VersionPolicy } from '../daemons/versionStatus.js';
import { applySessionUpdate } from '../discovery/ingest.js';
import { daemonHostRequestBody, daemonSubnetBody, discoveryUpdateBody, TERMINAL_PHASES } from '../discovery/schemas.js';
import { currentSessionId, queueDefaultSessions, RUNNING_PHASES } from '../discovery/sessions.js';
import { OutboundPolicy } from '../../core/outboundPolicy.js';
import { DAEMON_SERVER_KEY, open, openSecrets } from '../../core/secretBox.js';
import { maskSecrets } from '../../core/secretFields.js';
import { DaemonClient, DaemonRequestError, type DaemonStatus, type EntitiesCreated, type PollResponse } from './client.js';
import { withServiceDefinitions } from '../serviceDefinitions/work.js';

/** Consecutive failed polls after which a daemon is `is_unreachable` (decisions §7). */
export const UNREACHABLE_AFTER = 5;
const FULL_SERVER_POLL_VERSION: [number, number, number] = [0, 14, 0];
const VALIDATION = { abortEarly: true, convert: true } as const;

export interface PollerDeps {
  config: AppConfig;
  orm: MikroORM;
  redis: RedisClient;
  logger: Logger;
  queues: Queues;
  settings: QueueSettings;
  versionPolicy?: VersionPolicy;
}

export interface PollOutcome {
  daemonId: string;
  result: 'ok' | 'failed' | 'legacy' | 'skipped';
  reason?: string;
  consecutiveFailures?: number;
  isUnreachable?: boolean;
  entitiesQueued?: number;
  entitiesConfirmed?: number;
  initiated?: string[];
  cancelled?: string[];
}

interface DaemonRow {
  id: string;
  organization_id: string;
  network_id: string;
  mode: string;
  url: string;
  host_id: string | null;
  standby: boolean;
  last_seen: string | null;
  version: string | null;
  server_key: string | null;
  key_enabled: boolean | null;
  /** The certificate pinned at pairing (https); null: judged by its CA, if https at all. */
  tls_fingerprint: string | null;
}

interface SessionRow {
  id: string;
  discovery_type: unknown;
  phase: string;
  cancel_requested: boolean;
  started_at: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Only the protocol's fields of a daemon's capabilities are kept: whatever else an answer holds is
 * neither stored nor shown back (a daemon URL pointed at some other JSON service must not turn the
 * daemon's record into a window onto it).
 */
function protocolCapabilities(raw: unknown): { has_docker_socket: boolean; interfaced_subnet_ids: string[] } | null {
  if (!raw || typeof raw !== 'object') return null;
  const c = raw as { has_docker_socket?: unknown; interfaced_subnet_ids?: unknown };
  const ids = Array.isArray(c.interfaced_subnet_ids) ? c.interfaced_subnet_ids.filter((id): id is string => typeof id === 'string' && UUID.test(id)) : [];
  return { has_docker_socket: c.has_docker_socket === true, interfaced_subnet_ids: ids.slice(0, 1000) };
}

/** The daemon's last poll error, shown on it (`last_error`, `last_error_at`) until the next successful contact. */
async function recordPollError(db: Db, daemon: DaemonRow, message: string): Promise<void> {
  await db.query(
    `insert into daemon_poll_errors (daemon_id, organization_id, last_error, last_error_at)
     select id, organization_id, ?, now() from daemons where organization_id = ? and id = ?
     on conflict (daemon_id, organization_id) do update set last_error = excluded.last_error, last_error_at = excluded.last_error_at`,
    [message.slice(0, 500), daemon.organization_id, daemon.id],
  );
}

const isLegacy = (version: string | null) => {
  const v = parseVersion(version);
  return v !== null && compareVersions(v, FULL_SERVER_POLL_VERSION) < 0;
};

/**
 * Polls one daemon once. Never throws for daemon-side problems (they are the outcome).
 * `organizationId` (the daemon's, carried by its scheduler's jobs) makes every statement read one
 * organization's rows; without it (a job scheduled before jobs named it, a caller knowing only the
 * id) the daemon is first found by its id among every organization's.
 */
export async function pollDaemon(deps: PollerDeps, daemonId: string, organizationId?: string): Promise<PollOutcome> {
  const lockKey = `${deps.config.redisPrefix}serverpoll:lock:${daemonId}`;
  const token = randomUUID();
  const ttl = deps.settings.serverPollTimeoutMs * 10 + deps.settings.serverPollAckWaitMs + 5_000;
  // One poll per daemon at a time, across every worker process (a slow cycle must not overlap the next).
  const locked = await deps.redis.set(lockKey, token, 'PX', ttl, 'NX');
  if (locked !== 'OK') return { daemonId, result: 'skipped', reason: 'poll already running' };
  try {
    return await pollLocked(deps, daemonId, organizationId);
  } finally {
    await deps.redis
      .eval(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`, 1, lockKey, token)
      .catch(() => undefined);
  }
}

const DAEMON_COLUMNS = `d.id, d.organization_id, d.network_id, d.mode, d.url, d.host_id, d.standby, d.last_seen, d.version,
            k.server_key, k.is_enabled as key_enabled, k.tls_fingerprint
     from daemons d left join daemon_api_keys k on k.id = d.api_key_id`;

async function pollLocked(deps: PollerDeps, daemonId: string, organizationId: string | undefined): Promise<PollOutcome> {
  const db = new Db(deps.orm.em.fork());
  const log = deps.logger.child({ daemon_id: daemonId });
  const daemon = organizationId
    ? await db.one<DaemonRow>(`select ${DAEMON_COLUMNS} where d.organization_id = ? and d.id = ?`, [organizationId, daemonId])
    // Only the id (a job queued before jobs named the organization): the daemon directory is global (register gives an id
    // another organization used a fresh one), so the id alone finds the daemon, in every partition.
    : await db.one<DaemonRow>(`${ACROSS_ORGANIZATIONS} select ${DAEMON_COLUMNS} where d.id = ?`, [daemonId]);
  if (!daemon) return { daemonId, result: 'skipped', reason: 'daemon not found' };
  if (daemon.mode !== 'server_poll') return { daemonId, result: 'skipped', reason: 'not a server_poll daemon' };
  if (daemon.standby) return { daemonId, result: 'skipped', reason: 'standby' };
  if (!daemon.url) return { daemonId, result: 'skipped', reason: 'no url' };
  if (!daemon.server_key || daemon.key_enabled === false) {
    log.error('server_poll daemon has no usable key to call it with; not polled');
    return { daemonId, result: 'skipped', reason: 'no key' };
  }
  const legacy = isLegacy(daemon.version);
  const client = new DaemonClient({
    baseUrl: daemon.url, apiKey: open(daemon.server_key, DAEMON_SERVER_KEY), timeoutMs: deps.settings.serverPollTimeoutMs, legacy,
    policy: new OutboundPolicy(deps.config.daemonAllowedNetworks),
    // Another certificate (or a plain-http url) fails the contact like no answer, with its reason as last_error.
    certificate: daemon.tls_fingerprint ? { expected: daemon.tls_fingerprint } : undefined,
  });
  const ctx: SyncContext = { organizationId: daemon.organization_id, networkId: daemon.network_id, daemonId };

  if (legacy) {
    const sessions = await dispatchSessions(db, client, daemon, log);
    return { daemonId, result: 'legacy', ...sessions };
  }

  // 1. Contact.
  let status: DaemonStatus;
  try {
    const policy = deps.versionPolicy ?? DEFAULT_VERSION_POLICY;
    status = daemon.last_seen === null
      ? await client.firstContact(daemonId, { server_version: deps.config.serverVersion, minimum_daemon_version: policy.minimumSupported })
      : await client.status();
  } catch (err) {
    if (!(err instanceof DaemonRequestError)) throw err;
    const row = await db.one<{ consecutive_failures: number; is_unreachable: boolean }>(
      `update daemons set consecutive_failures = consecutive_failures + 1,
              is_unreachable = is_unreachable or consecutive_failures + 1 >= ?
       where organization_id = ? and id = ? returning consecutive_failures, is_unreachable`,
      [UNREACHABLE_AFTER, daemon.organization_id, daemonId],
    );
    await recordPollError(db, daemon, err.message);
    const failures = row?.consecutive_failures ?? 0;
    (failures >= UNREACHABLE_AFTER ? log.warn.bind(log) : log.info.bind(log))(
      { err: err.message, consecutive_failures: failures, is_unreachable: row?.is_unreachable },
      'server_poll daemon did not answer',
    );
    return { daemonId, result: 'failed', reason: err.message, consecutiveFailures: failures, isUnreachable: row?.is_unreachable ?? false };
  }
  const version = typeof status.version === 'string' && parseVersion(status.version) ? status.version.slice(0, 50) : null;
  const capabilities = protocolCapabilities(status.capabilities);
  await db.transaction(async (tx) => {
    await tx.query(
      `update daemons set last_seen = now(), consecutive_failures = 0, is_unreachable = false,
              version = coalesce(?, version), capabilities = coalesce(?::jsonb, capabilities)
       where organization_id = ? and id = ?`,
      [version, capabilities, daemon.organization_id, daemonId],
    );
    await tx.query(`delete from daemon_poll_errors where organization_id = ? and daemon_id = ?`, [daemon.organization_id, daemonId]);
    // First contact: the daemon gets its default discovery sessions (reference §1.2 d, §3.3), once.
    if (daemon.last_seen === null
        && !(await tx.one(`select 1 from discovery_sessions where organization_id = ? and daemon_id = ? limit 1`, [daemon.organization_id, daemonId]))) {
      await queueDefaultSessions(tx, { ...daemon, capabilities: capabilities ?? {} });
    }
  });

  // 2. Poll: progress and discovered entities. A failure here is logged, not counted (upstream).
  let entitiesQueued = 0;
  let entitiesConfirmed = 0;
  let poll: PollResponse | undefined;
  try {
    poll = await client.poll();
  } catch (err) {
    if (!(err instanceof DaemonRequestError)) throw err;
    log.warn({ err: err.message }, 'server_poll daemon poll failed');
    await recordPollError(db, daemon, `poll: ${err.message}`);
  }
  if (poll) {
    const progress = poll.progress;
    const apply = async () => {
      const { value, error } = discoveryUpdateBody.validate(toMicroseconds(progress!), VALIDATION);
      try {
        if (error) throw error;
        await db.transaction((tx) => applySessionUpdate(tx, { ...ctx, discoveryId: value.session_id }, value));
      } catch (err) {
        log.warn({ err: (err as Error).message, session_id: progress!.session_id }, 'progress report from daemon not applied');
      }
    };
    // A session's end is applied after the entities of the same poll: its last hosts belong to it
    // (found by it, counted in its summary) only while it still runs. Any other progress goes first,
    // so that a session the daemon started itself exists before its hosts arrive.
    const ends = !!progress && TERMINAL_PHASES.includes(String(progress.phase));
    if (progress && !ends) await apply();
    const synced = await syncEntities(deps, db, client, ctx, poll, log, ends ? SESSION_END_WAIT_MS : deps.settings.serverPollAckWaitMs);
    entitiesQueued = synced.queued;
    entitiesConfirmed = synced.confirmed;
    if (ends) await apply();
  }

  // 3. Sessions: cancel what was asked to stop, hand out the next pending one.
  const sessions = await dispatchSessions(db, client, daemon, log);
  return { daemonId, result: 'ok', consecutiveFailures: 0, isUnreachable: false, entitiesQueued, entitiesConfirmed, ...sessions };
}

/**
 * Daemons (Rust) send nanosecond timestamps (`…:02.844332097Z`); PostgreSQL keeps microseconds and
 * the shared timestamp schema takes at most 6 fractional digits, so the progress times are cut to µs.
 */
function toMicroseconds(progress: Record<string, unknown>): Record<string, unknown> {
  const cut = (v: unknown) => (typeof v === 'string' ? v.replace(/(\.\d{6})\d+(?=Z|[+-]\d\d:?\d\d$)/, '$1') : v);
  return { ...progress, started_at: cut(progress.started_at), finished_at: cut(progress.finished_at) };
}

interface PendingEntity {
  kind: 'host' | 'subnet';
  pendingId: string;
  payload: Record<string, unknown>;
}

/**
 * A poll that ends a session waits this long for its entities' discovery-sync jobs before the end is
 * applied: the end computes the session's summary, marks presence (a host not ingested yet would be
 * taken offline) and evaluates alerts, so the session's last hosts must be stored first.
 */
const SESSION_END_WAIT_MS = 60_000;

/** Entities of a poll → discovery-sync jobs; confirms the ones whose job has completed. */
async function syncEntities(
  deps: PollerDeps,
  db: Db,
  client: DaemonClient,
  ctx: SyncContext,
  poll: PollResponse,
  log: Logger,
  waitMs: number,
): Promise<{ queued: number; confirmed: number }> {
  // Validated here (the daemon routes validate the same bodies with the same schemas), so a job
  // never carries what ingest cannot take; an invalid or foreign-network entity is left unconfirmed.
  const items: PendingEntity[] = [];
  for (const [kind, list] of [['subnet', poll.entities.subnets], ['host', poll.entities.hosts]] as const) {
    for (const raw of list) {
      const { value, error } = (kind === 'subnet' ? daemonSubnetBody : daemonHostRequestBody).validate(raw, VALIDATION);
      const entity = value as { id?: string; network_id?: string; host?: { id: string; network_id: string } };
      const pendingId = kind === 'subnet' ? entity?.id : entity?.host?.id;
      const networkId = kind === 'subnet' ? entity?.network_id : entity?.host?.network_id;
      if (error || !pendingId) {
        log.warn({ kind, err: error?.message }, 'discovered entity rejected: invalid');
      } else if (networkId !== ctx.networkId) {
        log.warn({ kind, id: pendingId, network_id: networkId }, "discovered entity rejected: not the daemon's network");
      } else {
        // Masked before it is queued: a job's data stays in Redis for a day (ingest masks it anyway).
        items.push({ kind, pendingId, payload: maskSecrets(value as Record<string, unknown>) });
      }
    }
  }
  if (!items.length) return { queued: 0, confirmed: 0 };

  const running = await currentSessionId(db, ctx.organizationId, ctx.daemonId);
  const jobCtx: SyncContext = running ? { ...ctx, discoveryId: running } : ctx;
  const queue = deps.queues.discoverySync;
  const batches = discoverySyncBatches(
    items.filter((i) => i.kind === 'subnet').map((i) => i.payload),
    items.filter((i) => i.kind === 'host').map((i) => i.payload),
    deps.settings.discoverySyncBatch,
  );
  const jobs: Job<DiscoverySyncJob, DiscoverySyncResult>[] = [];
  for (const batch of batches) {
    const data: DiscoverySyncJob = { ctx: jobCtx, ...batch };
    const jobId = discoverySyncJobId(data);
    const existing = await queue.getJob(jobId);
    const state = existing ? await existing.getState() : undefined;
    if (existing && state === 'failed') {
      // The daemon asks again for entities whose job gave up: try again (fresh attempts).
      await existing.retry('failed');
      jobs.push(existing);
    } else if (existing && state === 'completed' && existing.data.ctx.discoveryId !== jobCtx.discoveryId) {
      // The same entities found by another session (an unchanged host rescanned): ingested again,
      // so that they count for this session (last_seen_at, last_discovery_id) and are not taken
      // offline at its end. Re-sends within one session stay one job.
      await existing.remove();
      jobs.push(await queue.add('sync', data, { jobId }));
    } else {
      jobs.push(existing ?? (await queue.add('sync', data, { jobId })));
    }
  }

  // Wait a little so most confirmations go out in this cycle; the rest go out on a later one. (Longer
  // when the poll also ends a session: see SESSION_END_WAIT_MS.)
  const deadline = Date.now() + waitMs;
  let states: string[] = [];
  for (;;) {
    states = await Promise.all(jobs.map((job) => job.getState()));
    if (states.every((s) => s === 'completed' || s === 'failed' || s === 'unknown') || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  // Entities a daemon sent are confirmed by their pending id (a subnet may be in several jobs: once);
  // a host with the answer its report got, kept in host_discovery_digests.
  const subnetsDone = new Map<string, unknown>();
  const hostIds = new Map<string, string>();
  const completed: Job<DiscoverySyncJob, DiscoverySyncResult>[] = [];
  for (let i = 0; i < jobs.length; i += 1) {
    if (states[i] !== 'completed') continue;
    const done = await queue.getJob(jobs[i]!.id!);
    const result = done?.returnvalue as DiscoverySyncResult | undefined;
    if (!done || !result) continue;
    completed.push(done);
    done.data.subnets.forEach((s, k) => result.subnets[k] != null && subnetsDone.set(s.id as string, result.subnets[k]));
    done.data.hosts.forEach((h, k) => result.hosts[k] && hostIds.set((h.host as { id: string }).id, result.hosts[k]!.id));
  }
  const answers = new Map((await db.query<{ host_id: string; response: string }>(
    `select host_id, response from host_discovery_digests where organization_id = ? and host_id = any(?::uuid[])`,
    [ctx.organizationId, [...new Set(hostIds.values())]],
  )).map((r) => [r.host_id, r.response]));
  const hostsDone = new Map<string, unknown>();
  for (const [pendingId, hostId] of hostIds) {
    const answer = answers.get(hostId);
    if (answer !== undefined) hostsDone.set(pendingId, JSON.parse(answer));
  }
  // A host changed since its job (its answer forgotten): that job goes, so the daemon's next
  // sending of the same entities is a new job that answers afresh.
  for (const done of completed) {
    if (done.data.hosts.some((h) => !hostsDone.has((h.host as { id: string }).id) && hostIds.has((h.host as { id: string }).id))) await done.remove();
  }
  const ack: EntitiesCreated = { subnets: [...subnetsDone], hosts: [...hostsDone] };
  const confirmed = ack.subnets.length + ack.hosts.length;
  if (confirmed) {
    try {
      await client.entitiesCreated(ack);
    } catch (err) {
      if (!(err instanceof DaemonRequestError)) throw err;
      log.warn({ err: err.message }, 'entities-created not delivered; the daemon will send them again');
      return { queued: items.length, confirmed: 0 };
    }
  }
  return { queued: items.length, confirmed };
}

async function dispatchSessions(db: Db, client: DaemonClient, daemon: DaemonRow, log: Logger): Promise<{ initiated: string[]; cancelled: string[] }> {
  const initiated: string[] = [];
  const cancelled: string[] = [];
  const sessions = await db.query<SessionRow>(
    `select id, discovery_type, phase, cancel_requested, started_at from discovery_sessions
     where organization_id = ? and daemon_id = ? and phase not in ('Complete', 'Failed', 'Cancelled')
     order by created_at, id`,
    [daemon.organization_id, daemon.id],
  );
  for (const s of sessions) {
    if (!s.cancel_requested) continue;
    if (s.phase === 'Pending') {
      // Never handed out: nothing to tell the daemon.
      await markCancelled(db, daemon.organization_id, s.id);
      cancelled.push(s.id);
      continue;
    }
    try {
      const answer = await client.cancel(s.id);
      // 409: the daemon does not run it (finished, lost on a restart): it is over.
      if (answer === 'not_running') await markCancelled(db, daemon.organization_id, s.id);
      cancelled.push(s.id);
    } catch (err) {
      if (!(err instanceof DaemonRequestError)) throw err;
      log.warn({ err: err.message, session_id: s.id }, 'cancel not delivered to daemon');
    }
  }
  const busy = sessions.some((s) => RUNNING_PHASES.includes(s.phase) && !cancelled.includes(s.id));
  const next = sessions.find((s) => s.phase === 'Pending' && !s.cancel_requested);
  if (!busy && next) {
    try {
      const answer = await client.initiate(next.id, openSecrets(await withServiceDefinitions(db, daemon.organization_id, await withApprovedTargets(db, daemon.organization_id, daemon.id, next.discovery_type))));
      if (answer === 'started') {
        await db.query(
          `update discovery_sessions set phase = 'Starting', updated_at = now() where organization_id = ? and id = ? and phase = 'Pending'`,
          [daemon.organization_id, next.id],
        );
        initiated.push(next.id);
      } else {
        log.info({ session_id: next.id }, 'daemon busy; session stays pending');
      }
    } catch (err) {
      if (!(err instanceof DaemonRequestError)) throw err;
      log.warn({ err: err.message, session_id: next.id }, 'initiate not delivered to daemon');
    }
  }
  return { initiated, cancelled };
}

async function markCancelled(db: Db, organizationId: string, sessionId: string): Promise<void> {
  await db.query(
    `update discovery_sessions set phase = 'Cancelled', cancel_requested = false, finished_at = coalesce(finished_at, now()), updated_at = now()
     where organization_id = ? and id = ? and phase not in (${TERMINAL_PHASES.map(() => '?').join(', ')})`,
    [organizationId, sessionId, ...TERMINAL_PHASES],
  );
}
