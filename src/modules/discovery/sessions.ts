// Discovery sessions (reference §3.3): the work queued for a daemon and the progress it reports.
// Kept in the database (table discovery_sessions) so that every API and worker process sees one
// queue per daemon. A session starts Pending; handing it to the daemon moves it to Starting; the
// daemon's updates (ingest.ts applySessionUpdate) carry it to a terminal phase, where a Network
// session gets its summary (./sessionSummary.ts).
import { randomUUID } from 'node:crypto';
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import { AppError, notFound } from '../../core/errors.js';
import { openSecrets, sealSecrets } from '../../core/secretBox.js';
import { maskSecrets } from '../../core/secretFields.js';
import { isoTimestamp } from '../../core/historyTable.js';
import { approvedSubnetIds, withApprovedTargets } from '../daemons/targets.js';
import { AGENT_VERSION_MARK } from '../daemons/view.js';
import { withServiceDefinitions } from '../serviceDefinitions/work.js';
import { TERMINAL_PHASES } from './schemas.js';
import { summarizeSession } from './sessionSummary.js';
import { evaluateSessionAlerts } from '../alerts/evaluate.js';

/** Phases in which a session occupies its daemon. */
export const RUNNING_PHASES = ['Starting', 'Started', 'Scanning'];

export interface DaemonRef {
  id: string;
  organization_id: string;
  network_id: string;
  host_id: string | null;
  capabilities: { has_docker_socket?: boolean };
}

/**
 * The discovery types every new daemon gets at once (reference §3.3): SelfReport of its own host
 * (which tells the server the subnets it is on: the suggested targets), and Docker when it can see a
 * Docker socket. Its Network discovery waits for a subnet to be approved for it (networkDiscovery).
 */
export function defaultDiscoveryTypes(daemon: DaemonRef): Array<Record<string, unknown>> {
  const types: Array<Record<string, unknown>> = [{ type: 'SelfReport', host_id: daemon.host_id }];
  if (daemon.capabilities.has_docker_socket) types.push({ type: 'Docker', host_id: daemon.host_id, host_naming_fallback: 'BestService' });
  return types;
}

/**
 * A Network discovery of the daemon's approved subnets: subnet_ids null is filled in with them when
 * the work is handed out (request-work, the server_poll poller), so an approval made while it waits
 * counts. Queued only once a subnet is approved: before that the daemon has nothing it may scan (our
 * agent would end it "nothing to scan"; a Scanopy daemon would scan every subnet it is on, unasked).
 */
export function networkDiscovery(): Record<string, unknown> {
  return {
    type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService',
    snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false,
  };
}

/**
 * Queues the sessions of a daemon's first contact (register, or the server_poll poller's first
 * contact), in that order (created_at one microsecond apart keeps the FIFO total): the default ones,
 * then a Network one when a subnet is already approved for it (a server_poll daemon can be given its
 * targets before the server first reaches it).
 */
export async function queueDefaultSessions(db: Db, daemon: DaemonRef): Promise<void> {
  const types = defaultDiscoveryTypes(daemon);
  if ((await approvedSubnetIds(db, daemon.organization_id, daemon.id)).length) types.push(networkDiscovery());
  const sessions = types.map((discovery_type, n) => ({ id: randomUUID(), n, discovery_type: sealSecrets(discovery_type) }));
  await db.query(
    `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, created_at, updated_at)
     select x.id, ?, ?, ?, x.discovery_type, now() + x.n * interval '1 microsecond', now()
     from jsonb_to_recordset(?::jsonb) as x(id uuid, n int, discovery_type jsonb)`,
    [daemon.organization_id, daemon.network_id, daemon.id, JSON.stringify(sessions)],
  );
}

interface SessionRow {
  id: string; daemon_id: string; network_id: string; discovery_type: unknown; progress: number; error: string | null;
  started_at: unknown; finished_at: unknown;
}

/** DiscoveryUpdatePayload as handed out by request-work: always phase Pending, progress 0. */
function workPayload(s: SessionRow) {
  return {
    session_id: s.id, daemon_id: s.daemon_id, network_id: s.network_id, phase: 'Pending', discovery_type: s.discovery_type,
    progress: 0, error: null, started_at: isoTimestamp(s.started_at), finished_at: isoTimestamp(s.finished_at),
  };
}

/**
 * request-work's answer (reference §1.1 step 3): `[work | null, cancel]`. Work is the oldest
 * Pending session, only while none runs (it moves to Starting); `cancel` is true while a running
 * session has a cancellation requested. The caller holds the daemon's row lock, so two polls of
 * one daemon never both take work.
 */
export async function nextWork(db: Db, organizationId: string, daemonId: string): Promise<[ReturnType<typeof workPayload> | null, boolean]> {
  const running = await db.query<{ cancel_requested: boolean }>(
    `select cancel_requested from discovery_sessions where organization_id = ? and daemon_id = ? and phase = any(?::text[])`, [organizationId, daemonId, RUNNING_PHASES],
  );
  if (running.length) return [null, running.some((r) => r.cancel_requested)];
  const taken = await db.one<SessionRow>(
    `update discovery_sessions set phase = 'Starting', updated_at = now()
     where organization_id = ? and id = (select id from discovery_sessions where organization_id = ? and daemon_id = ? and phase = 'Pending' order by created_at, id limit 1)
     returning id, daemon_id, network_id, discovery_type, progress, error, started_at, finished_at`,
    [organizationId, organizationId, daemonId],
  );
  if (!taken) return [null, false];
  // A Network discovery of "every subnet" goes out with the subnets approved for this daemon.
  // With it, the organization's custom service definitions (an extra field our agent reads).
  const approved = await withApprovedTargets(db, organizationId, daemonId, taken.discovery_type);
  return [workPayload({ ...taken, discovery_type: openSecrets(await withServiceDefinitions(db, organizationId, approved)) }), false];
}

/**
 * A session update is contact too: its last_seen moves (a volatile column: no new state). An agent
 * run with --once asks for no work, and its keep-alive updates are then what says it is running.
 */
export async function noteDaemonContact(db: Db, organizationId: string, daemonId: string): Promise<void> {
  await db.query(`update daemons set last_seen = now() where organization_id = ? and id = ?`, [organizationId, daemonId]);
}

/** The session a daemon is running now (its reports belong to it), if any. */
export async function currentSessionId(db: Db, organizationId: string, daemonId: string): Promise<string | undefined> {
  const row = await db.one<{ id: string }>(
    `select id from discovery_sessions where organization_id = ? and daemon_id = ? and phase = any(?::text[]) order by updated_at desc, id limit 1`,
    [organizationId, daemonId, RUNNING_PHASES],
  );
  return row?.id;
}

/** Why a session ends when its daemon announces it restarted. */
export const RESTARTED_ERROR = 'Stalled: the daemon restarted during the session';
/** The same of this project's agent, named as such (it announces AGENT_VERSION_MARK in its version). */
export const AGENT_RESTARTED_ERROR = 'Stalled: the NetInventory agent restarted during the session (it was stopped or killed before the run ended)';

/** Said of the daemon that ran a session: our agent by name, any other as "the daemon" (SQL over the daemon's row `d`). */
const byDaemon = (agentText: string, otherText: string) =>
  [`case when d.version like ? then ? else ? end`, [`%${AGENT_VERSION_MARK}%`, agentText, otherText]] as const;

/**
 * A daemon announcing its startup runs nothing (it just restarted: a killed agent, a reboot), so
 * the sessions it was running are over: Failed, saying why, at once (not after the stalled sweep's
 * 10 minutes), and its next request-work hands out the next session. Answers how many.
 */
export async function failSessionsOfRestartedDaemon(db: Db, organizationId: string, daemonId: string): Promise<number> {
  const [why, whyParams] = byDaemon(AGENT_RESTARTED_ERROR, RESTARTED_ERROR);
  const failed = await db.query<{ id: string }>(
    `update discovery_sessions s set phase = 'Failed', error = ${why}, cancel_requested = false, finished_at = now(), updated_at = now()
     from daemons d where d.organization_id = ? and d.id = s.daemon_id
       and s.organization_id = ? and s.daemon_id = ? and s.phase = any(?::text[]) returning s.id`,
    [...whyParams, organizationId, organizationId, daemonId, RUNNING_PHASES],
  );
  // What it found before the restart is in the inventory: a Network session's summary says so.
  for (const { id } of failed) {
    await summarizeSession(db, organizationId, id);
    await evaluateSessionAlerts(db, organizationId, id); // what it found is alerted on
  }
  return failed.length;
}

/** A running session with no update for this long is asked to stop (reference §3.3: 5 min). */
export const STALLED_AFTER_MS = 5 * 60_000;

/**
 * The stalled-session check (reference §3.3, every 60 s): a running session with no update for 5 min
 * gets a cancellation request (the daemon learns it from request-work or a cancel call); one still
 * without an update 5 min after that request (a daemon that restarted, or lost the work in transit)
 * becomes Failed, so its daemon can take the next session. Answers how many of each.
 */
export async function sweepStalledSessions(db: Db, stalledAfterMs = STALLED_AFTER_MS): Promise<{ cancelRequested: number; failed: number }> {
  // Across organizations: the maintenance worker's one sweep over every daemon's sessions.
  const [why, whyParams] = byDaemon('No progress from the NetInventory agent after a cancellation request', 'No progress from the daemon after a cancellation request');
  const failed = await db.query<{ id: string; organization_id: string }>(
    `${ACROSS_ORGANIZATIONS} update discovery_sessions s set phase = 'Failed', error = ${why}, finished_at = now(), updated_at = now()
     from daemons d where d.organization_id = s.organization_id and d.id = s.daemon_id
       and s.phase = any(?::text[]) and s.cancel_requested and s.updated_at < now() - make_interval(secs => ?)
     returning s.id, s.organization_id`,
    [...whyParams, RUNNING_PHASES, stalledAfterMs / 1000],
  );
  for (const f of failed) {
    await summarizeSession(db, f.organization_id, f.id);
    await db.transaction((tx) => evaluateSessionAlerts(tx, f.organization_id, f.id)); // what it found is alerted on
  }
  const cancelRequested = await db.query(
    `${ACROSS_ORGANIZATIONS} update discovery_sessions set cancel_requested = true, updated_at = now()
     where phase = any(?::text[]) and not cancel_requested and updated_at < now() - make_interval(secs => ?)
     returning id`,
    [RUNNING_PHASES, stalledAfterMs / 1000],
  );
  return { cancelRequested: cancelRequested.length, failed: failed.length };
}

/** Sessions a daemon's page shows: the newest first, at most this many (every read has a bound). */
export const SESSIONS_SHOWN = 100;

const SESSION_COLUMNS = 'id, daemon_id, network_id, discovery_type, phase, progress, error, cancel_requested, started_at, finished_at, created_at, updated_at, report, summary';
type SessionListRow = SessionRow & { phase: string; cancel_requested: boolean; created_at: unknown; updated_at: unknown; report: unknown; summary: unknown };

/**
 * A session as users see it (GET /api/v1/daemons/:id/sessions and the scan and cancel routes): its
 * credentials' secrets masked (core/secretFields.ts); only the work handed to the daemon has them.
 */
function sessionView(s: SessionListRow) {
  return {
    id: s.id, daemon_id: s.daemon_id, network_id: s.network_id, discovery_type: maskSecrets(s.discovery_type), phase: s.phase, progress: s.progress,
    error: s.error, cancel_requested: s.cancel_requested, started_at: isoTimestamp(s.started_at), finished_at: isoTimestamp(s.finished_at),
    created_at: isoTimestamp(s.created_at), updated_at: isoTimestamp(s.updated_at), report: s.report ?? null, summary: s.summary ?? null,
  };
}

/**
 * A daemon's discovery sessions as users see them, newest first: what ran, how it ended and why
 * (`error`: a failure's reason, a stalled session's, or a warning a daemon sent with Complete), the
 * server's summary of an ended Network session, and the run's report when our agent sent one.
 */
export async function listDaemonSessions(db: Db, organizationId: string, daemonId: string) {
  const rows = await db.query<SessionListRow>(
    `select ${SESSION_COLUMNS} from discovery_sessions where organization_id = ? and daemon_id = ? order by created_at desc, id desc limit ${SESSIONS_SHOWN}`,
    [organizationId, daemonId],
  );
  return rows.map(sessionView);
}

// ---- Operators' sessions: "scan now" and cancel -----------------------------------------
// The caller holds the daemon's row lock (as request-work does), so a scan queued or a session
// cancelled never races a hand-out of the same daemon's work.

/** The daemon's Network session that is pending or running, if any: one at a time. */
export async function activeNetworkSession(db: Db, daemon: Pick<DaemonRef, 'id' | 'organization_id'>) {
  return db.one<{ id: string; phase: string }>(
    `select id, phase from discovery_sessions where organization_id = ? and daemon_id = ? and discovery_type->>'type' = 'Network' and phase = any(?::text[])
     order by created_at limit 1`,
    [daemon.organization_id, daemon.id, ['Pending', ...RUNNING_PHASES]],
  );
}

/** A Network session of the daemon: of `subnetIds` (a schedule's subset), else of every approved subnet (null: filled in at hand-out). */
export async function insertNetworkSession(db: Db, daemon: Pick<DaemonRef, 'id' | 'organization_id' | 'network_id'>, subnetIds: string[] | null = null) {
  const type = { ...networkDiscovery(), subnet_ids: subnetIds };
  const [row] = await db.query<SessionListRow>(
    `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type) values (?, ?, ?, ?, ?::jsonb) returning ${SESSION_COLUMNS}`,
    [randomUUID(), daemon.organization_id, daemon.network_id, daemon.id, JSON.stringify(sealSecrets(type))],
  );
  return sessionView(row!);
}

/**
 * "Scan now": queues a Network session of every approved target (subnet_ids null: request-work and
 * the server_poll poller fill in the approved subnets at hand-out, so an approval made while it
 * waits counts). 409 when no subnet is approved (there would be nothing to scan) and while the
 * daemon has a Network session pending or running (one at a time).
 */
export async function queueNetworkScan(db: Db, daemon: DaemonRef) {
  if (!(await approvedSubnetIds(db, daemon.organization_id, daemon.id)).length) {
    throw new AppError('discovery_no_target', { daemon_id: daemon.id });
  }
  const busy = await activeNetworkSession(db, daemon);
  if (busy) throw new AppError('discovery_session_active', { daemon_id: daemon.id, session_id: busy.id, phase: busy.phase });
  return insertNetworkSession(db, daemon);
}

/**
 * A daemon's first approved subnet starts its first scan: when an approval gives a daemon that had
 * none a subnet to scan, a Network session is queued (unless one is already pending or running).
 * A server_poll daemon the server has not reached yet has no session at all: its first contact
 * queues the Network session after its SelfReport (queueDefaultSessions). The caller holds the
 * daemon's row lock. Answers the queued session, if any.
 */
export async function queueScanOfFirstTarget(db: Db, daemon: DaemonRef) {
  const contacted = await db.one(`select 1 from discovery_sessions where organization_id = ? and daemon_id = ? limit 1`, [daemon.organization_id, daemon.id]);
  if (!contacted || (await activeNetworkSession(db, daemon))) return null;
  return insertNetworkSession(db, daemon);
}

/**
 * Cancels a session: a Pending one is Cancelled at once (it was never handed out); a running one
 * gets a cancellation request, which the daemon learns from request-work's cancel flag or the
 * server_poll poller's cancel call, and ends with its Cancelled update (the stalled sweep fails it
 * if none comes). A finished session: 409. Another daemon's session is not found.
 */
export async function cancelSession(db: Db, organizationId: string, daemonId: string, sessionId: string) {
  const session = await db.one<{ phase: string }>(
    `select phase from discovery_sessions where organization_id = ? and id = ? and daemon_id = ? for update`, [organizationId, sessionId, daemonId]);
  if (!session) throw notFound('DiscoverySession', sessionId);
  if (TERMINAL_PHASES.includes(session.phase)) throw new AppError('discovery_session_finished', { id: sessionId, phase: session.phase });
  const [row] = await db.query<SessionListRow>(
    session.phase === 'Pending'
      ? `update discovery_sessions set phase = 'Cancelled', finished_at = now(), updated_at = now() where organization_id = ? and id = ? returning ${SESSION_COLUMNS}`
      // updated_at: the stalled sweep's wait for the daemon's answer starts now.
      : `update discovery_sessions set cancel_requested = true, updated_at = now() where organization_id = ? and id = ? returning ${SESSION_COLUMNS}`,
    [organizationId, sessionId],
  );
  return sessionView(row!);
}
