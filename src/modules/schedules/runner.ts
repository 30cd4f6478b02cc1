// One interval of a discovery schedule (workers/discoverySchedule.ts calls it for each job its
// scheduler makes): a Network session queued for the daemon, as "Scan now" would (request-work hands it
// to a daemon_poll daemon at its next request; the server_poll poller initiates it on a server_poll
// one), of the schedule's subnets still approved (null: every approved subnet, filled in at hand-out).
//
// Exactly once per interval: the job scheduler makes one job per interval whichever worker takes it,
// and the run's row (discovery_schedule_runs, unique per schedule and interval) is written in the
// run's transaction, so a job delivered again (its worker killed mid-job) finds its interval done.
//
// Outcomes: queued; skipped (a Network session of the daemon is already pending or running: not a
// failure); failed (nothing to scan, the daemon in standby, or the session the previous run queued
// ended Failed, learnt at this run). A Completed session clears the failures. After max_failures
// failures in a row the schedule disables itself and says why (disabled_reason).
import type { Db } from '../../core/db.js';
import { TERMINAL_PHASES } from '../discovery/schemas.js';
import { activeNetworkSession, insertNetworkSession } from '../discovery/sessions.js';
import { approvedSubnetIds } from '../daemons/targets.js';
import { SCHEDULE_COLUMNS, type ScheduleRow } from './service.js';
import { nextRunAfter } from './timing.js';

/** Runs kept per schedule (older ones are trimmed by each run). */
export const RUNS_KEPT = 100;

export interface RunResult {
  /** duplicate: this interval already ran; gone / disabled: nothing to run (its scheduler should go). */
  outcome: 'queued' | 'skipped' | 'failed' | 'duplicate' | 'gone' | 'disabled';
  scheduledFor: number;
  sessionId?: string;
  error?: string;
  /** The schedule disabled itself at this run. */
  disabledNow?: boolean;
  daemon?: { id: string; mode: string };
}

type Locked = ScheduleRow & { last_session_accounted: boolean };

/** What the session the previous run queued says now: a failure, a success (clears failures), or nothing yet. */
async function previousSession(db: Db, s: Locked): Promise<{ failed?: string; completed?: boolean }> {
  if (!s.last_session_id || s.last_session_accounted) return {};
  const session = await db.one<{ phase: string; error: string | null }>(
    `select phase, error from discovery_sessions where organization_id = ? and id = ?`, [s.organization_id, s.last_session_id]);
  if (!session) return { completed: false }; // gone (its daemon's sessions purged): nothing to learn
  if (!TERMINAL_PHASES.includes(session.phase)) return {};
  if (session.phase === 'Failed') return { failed: `the scheduled session ${s.last_session_id} failed: ${session.error ?? 'no reason given'}` };
  return { completed: session.phase === 'Complete' }; // Cancelled: a person's decision, neither
}

export async function runSchedule(db: Db, organizationId: string, scheduleId: string, scheduledFor: number, minuteMs = 60_000): Promise<RunResult> {
  return db.transaction(async (tx) => {
    // The daemon's row lock first (as request-work, Scan now and a daemon's deletion, which deletes
    // its schedules, take it), then the schedule's, which serialises its runs (and a PATCH of it).
    const owner = await tx.one<{ daemon_id: string }>(`select daemon_id from discovery_schedules where organization_id = ? and id = ?`, [organizationId, scheduleId]);
    if (!owner) return { outcome: 'gone', scheduledFor };
    const daemon = await tx.one<{ id: string; organization_id: string; network_id: string; mode: string; standby: boolean }>(
      `select id, organization_id, network_id, mode, standby from daemons where organization_id = ? and id = ? for update`, [organizationId, owner.daemon_id]);
    const s = await tx.one<Locked>(
      `select ${SCHEDULE_COLUMNS}, last_session_accounted from discovery_schedules where organization_id = ? and id = ? for update`, [organizationId, scheduleId]);
    if (!s) return { outcome: 'gone', scheduledFor };
    if (!s.enabled) return { outcome: 'disabled', scheduledFor };
    const claimed = await tx.query(
      `insert into discovery_schedule_runs (schedule_id, organization_id, scheduled_for, outcome) values (?, ?, ?, 'failed')
       on conflict do nothing returning schedule_id`,
      [scheduleId, organizationId, new Date(scheduledFor)],
    );
    if (!claimed.length) return { outcome: 'duplicate', scheduledFor };

    let failures = s.consecutive_failures;
    let lastError = s.last_error;
    let accounted = s.last_session_accounted;
    let error: string | undefined;
    let outcome: RunResult['outcome'] = 'failed';
    let sessionId: string | undefined;
    const before = await previousSession(tx, s);
    if (before.failed !== undefined || before.completed !== undefined) accounted = true;
    if (before.completed) {
      failures = 0;
      lastError = null;
    }
    if (before.failed) {
      failures += 1;
      lastError = before.failed;
      error = before.failed;
    }
    if (failures >= s.max_failures) {
      // The previous session's failure was the last one allowed: nothing more is queued.
    } else if (!daemon) {
      error = 'the daemon no longer exists';
    } else if (daemon.standby) {
      error = 'the daemon is in standby (another daemon took its place)';
    } else {
      const approved = await approvedSubnetIds(tx, organizationId, daemon.id);
      const targets = s.subnet_ids ? s.subnet_ids.filter((id) => approved.includes(id)) : approved;
      const busy = targets.length ? await activeNetworkSession(tx, daemon) : null;
      if (!targets.length) {
        error = s.subnet_ids
          ? 'nothing to scan: none of the schedule’s subnets is approved for the daemon now'
          : 'nothing to scan: no subnet is approved for the daemon';
      } else if (busy) {
        outcome = 'skipped';
        error = `a Network session of the daemon is already ${busy.phase} (${busy.id})`;
      } else {
        const session = await insertNetworkSession(tx, daemon, s.subnet_ids ? targets : null);
        outcome = 'queued';
        sessionId = session.id;
        error = undefined;
      }
    }
    if (outcome === 'failed' && error && error !== before.failed) {
      failures += 1;
      lastError = error;
    }
    const disableNow = failures >= s.max_failures;
    const disabledReason = disableNow ? `Disabled after ${failures} consecutive failures; the last: ${lastError}` : null;
    const after = new Date(Math.max(Date.now(), scheduledFor));
    const next = disableNow ? null : nextRunAfter(s, after, minuteMs, s.every_minutes != null ? new Date(scheduledFor) : undefined);
    await tx.query(
      `update discovery_schedules set last_run_at = now(), last_outcome = ?, consecutive_failures = ?, last_error = ?, next_run_at = ?,
         last_session_id = coalesce(?, last_session_id), last_session_accounted = ?,
         enabled = enabled and not ?, disabled_reason = coalesce(?, disabled_reason), updated_at = now()
       where organization_id = ? and id = ?`,
      [outcome, failures, lastError, next, sessionId ?? null, sessionId ? false : accounted, disableNow, disabledReason, organizationId, scheduleId],
    );
    await tx.query(
      `update discovery_schedule_runs set outcome = ?, session_id = ?, error = ? where organization_id = ? and schedule_id = ? and scheduled_for = ?`,
      [outcome, sessionId ?? null, error ?? null, organizationId, scheduleId, new Date(scheduledFor)],
    );
    await tx.query(
      `delete from discovery_schedule_runs where organization_id = ? and schedule_id = ? and scheduled_for < (
         select scheduled_for from discovery_schedule_runs where organization_id = ? and schedule_id = ? order by scheduled_for desc offset ${RUNS_KEPT - 1} limit 1)`,
      [organizationId, scheduleId, organizationId, scheduleId],
    );
    return {
      outcome: outcome as RunResult['outcome'], scheduledFor, sessionId, error, disabledNow: disableNow,
      daemon: daemon ? { id: daemon.id, mode: daemon.mode } : undefined,
    };
  });
}
