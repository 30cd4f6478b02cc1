// Discovery schedules: a daemon's Network discovery every N minutes or by a cron
// expression in a time zone, optionally of a subset of its approved subnets. Read like the daemon
// (Viewer), written by Admins; after a committed change the worker is asked to make the schedule's
// job scheduler match (jobs.ts requestScheduleSync; it also re-registers every schedule at start).
// Settings, not inventory: plain rows (no history, no events). The runs: runner.ts.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, invalidReference, notFound } from '../../core/errors.js';
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { daemonTable } from '../daemons/table.js';
import { MAX_SCHEDULES_PER_DAEMON } from './schemas.js';
import { cronProblem, describeTiming, nextRunAfter, type Timing } from './timing.js';

export interface ScheduleInput {
  id?: string;
  every_minutes?: number | null;
  cron?: string | null;
  timezone?: string;
  jitter_seconds?: number;
  subnet_ids?: string[] | null;
  enabled?: boolean;
  max_failures?: number;
}

export const SCHEDULE_COLUMNS = `id, organization_id, network_id, daemon_id, subnet_ids, every_minutes, cron, timezone, jitter_seconds, enabled, max_failures,
  consecutive_failures, disabled_reason, next_run_at, last_run_at, last_outcome, last_session_id, last_error, created_at, updated_at`;

export interface ScheduleRow extends Timing {
  id: string; organization_id: string; network_id: string; daemon_id: string; subnet_ids: string[] | null; enabled: boolean; max_failures: number;
  consecutive_failures: number; disabled_reason: string | null; next_run_at: unknown; last_run_at: unknown; last_outcome: string | null;
  last_session_id: string | null; last_error: string | null; created_at: unknown; updated_at: unknown;
}

export function scheduleView(r: ScheduleRow): Row {
  return {
    id: r.id, daemon_id: r.daemon_id, network_id: r.network_id, subnet_ids: r.subnet_ids, every_minutes: r.every_minutes, cron: r.cron, timezone: r.timezone,
    jitter_seconds: r.jitter_seconds, description: describeTiming(r), enabled: r.enabled, max_failures: r.max_failures, consecutive_failures: r.consecutive_failures,
    disabled_reason: r.disabled_reason, next_run_at: isoTimestamp(r.next_run_at), last_run_at: isoTimestamp(r.last_run_at), last_outcome: r.last_outcome,
    last_session_id: r.last_session_id, last_error: r.last_error, created_at: isoTimestamp(r.created_at), updated_at: isoTimestamp(r.updated_at),
  };
}

/** The subnets a schedule names: subnets of the daemon's network (approval is checked when it runs). */
async function checkSubnets(db: Db, daemon: Row, subnetIds: string[] | null | undefined): Promise<void> {
  if (!subnetIds?.length) return;
  const found = await db.query<{ id: string; network_id: string }>(
    `select id, network_id from subnets where organization_id = ? and id = any(?::uuid[])`, [daemon.organization_id, subnetIds]);
  for (const id of subnetIds) {
    const s = found.find((f) => f.id === id);
    if (!s) throw invalidReference('Subnet', id, 'subnet_ids');
    if (s.network_id !== daemon.network_id) throw new AppError('entity_network_mismatch', { entity: 'Subnet', id });
  }
}

async function findSchedule(db: Db, organizationId: string, daemonId: string, scheduleId: string): Promise<ScheduleRow> {
  const row = await db.one<ScheduleRow>(
    `select ${SCHEDULE_COLUMNS} from discovery_schedules where organization_id = ? and id = ? and daemon_id = ?`, [organizationId, scheduleId, daemonId]);
  if (!row) throw notFound('DiscoverySchedule', scheduleId);
  return row;
}

export const scheduleService = {
  async list(db: Db, scope: Scope, daemonId: string) {
    await daemonTable.get(db, scope, daemonId); // 404 / 403 as every daemon read
    const rows = await db.query<ScheduleRow>(
      `select ${SCHEDULE_COLUMNS} from discovery_schedules where organization_id = ? and daemon_id = ? order by created_at, id limit ${MAX_SCHEDULES_PER_DAEMON}`,
      [scope.organizationId, daemonId]);
    return rows.map(scheduleView);
  },

  async get(db: Db, scope: Scope, daemonId: string, scheduleId: string) {
    await daemonTable.get(db, scope, daemonId);
    return scheduleView(await findSchedule(db, scope.organizationId, daemonId, scheduleId));
  },

  async create(db: Db, scope: Scope, daemonId: string, input: ScheduleInput) {
    const daemon = await daemonTable.get(db, scope, daemonId);
    await checkSubnets(db, daemon, input.subnet_ids);
    const count = await db.one<{ n: string }>(`select count(*) as n from discovery_schedules where organization_id = ? and daemon_id = ?`, [scope.organizationId, daemonId]);
    if (Number(count!.n) >= MAX_SCHEDULES_PER_DAEMON) {
      throw new AppError('validation_failed', { reason: `a daemon has at most ${MAX_SCHEDULES_PER_DAEMON} schedules` });
    }
    const timing: Timing = { every_minutes: input.every_minutes ?? null, cron: input.cron ?? null, timezone: input.timezone ?? 'UTC', jitter_seconds: input.jitter_seconds ?? 0 };
    const enabled = input.enabled ?? true;
    const row = await db.one<ScheduleRow>(
      `insert into discovery_schedules (id, organization_id, network_id, daemon_id, subnet_ids, every_minutes, cron, timezone, jitter_seconds, enabled, max_failures, next_run_at)
       values (?, ?, ?, ?, ?::uuid[], ?, ?, ?, ?, ?, ?, ?) returning ${SCHEDULE_COLUMNS}`,
      [randomUUID(), scope.organizationId, daemon.network_id, daemonId, input.subnet_ids ?? null, timing.every_minutes, timing.cron, timing.timezone,
        timing.jitter_seconds, enabled, input.max_failures ?? 3, enabled ? nextRunAfter(timing, new Date()) : null],
    );
    return scheduleView(row!);
  },

  async update(db: Db, scope: Scope, daemonId: string, scheduleId: string, input: ScheduleInput) {
    assertSameId(scheduleId, input.id);
    const daemon = await daemonTable.get(db, scope, daemonId);
    await checkSubnets(db, daemon, input.subnet_ids);
    const current = await findSchedule(db, scope.organizationId, daemonId, scheduleId);
    // One timing at a time: a new every_minutes replaces the cron expression, and the reverse.
    const timing: Timing = {
      every_minutes: input.every_minutes !== undefined ? input.every_minutes : input.cron ? null : current.every_minutes,
      cron: input.cron !== undefined ? input.cron : input.every_minutes ? null : current.cron,
      timezone: input.timezone ?? current.timezone,
      jitter_seconds: input.jitter_seconds ?? current.jitter_seconds,
    };
    if ((timing.every_minutes == null) === (timing.cron == null)) {
      throw new AppError('validation_failed', { reason: 'a schedule has either every_minutes or cron' });
    }
    const problem = timing.cron ? cronProblem(timing.cron, timing.timezone) : null;
    if (problem) throw new AppError('validation_failed', { reason: `cron is not a valid cron expression: ${problem}` });
    const enabled = input.enabled ?? current.enabled;
    const reEnabled = enabled && !current.enabled;
    const retimed = timing.every_minutes !== current.every_minutes || timing.cron !== current.cron || timing.timezone !== current.timezone;
    // The next run moves only when the timing does (else it is the job scheduler's, kept by the worker).
    const nextRunAt = !enabled ? null : retimed || reEnabled || current.next_run_at == null ? nextRunAfter(timing, new Date()) : current.next_run_at;
    const row = await db.one<ScheduleRow>(
      `update discovery_schedules set every_minutes = ?, cron = ?, timezone = ?, jitter_seconds = ?, subnet_ids = ?::uuid[], max_failures = ?, enabled = ?,
         consecutive_failures = case when ? then 0 else consecutive_failures end,
         disabled_reason = case when ? then disabled_reason else null end,
         next_run_at = ?, updated_at = now()
       where organization_id = ? and id = ? returning ${SCHEDULE_COLUMNS}`,
      [timing.every_minutes, timing.cron, timing.timezone, timing.jitter_seconds, input.subnet_ids !== undefined ? input.subnet_ids : current.subnet_ids,
        input.max_failures ?? current.max_failures, enabled, reEnabled, !enabled && !current.enabled,
        nextRunAt, scope.organizationId, scheduleId],
    );
    return scheduleView(row!);
  },

  async remove(db: Db, scope: Scope, daemonId: string, scheduleId: string) {
    await daemonTable.get(db, scope, daemonId);
    const row = await db.one(`delete from discovery_schedules where organization_id = ? and id = ? and daemon_id = ? returning id`, [scope.organizationId, scheduleId, daemonId]);
    if (!row) throw notFound('DiscoverySchedule', scheduleId);
    return null;
  },
};
