// Queue `discovery-schedule`: one BullMQ job scheduler per enabled discovery schedule (id
// `schedule-<schedule id>`, every N minutes or its cron expression in its time zone), so each interval
// makes one `tick` job however many worker processes run; the tick runs the interval
// (src/modules/schedules/runner.ts), or, with a jitter, queues its `run` delayed by the interval's
// jitter (job id per schedule and interval: added twice, kept once). `sync` (after an API change) makes
// one schedule's scheduler match its row; `reconcile` (at start, then every
// DISCOVERY_SCHEDULE_RECONCILE_MS) makes the set of schedulers match the table, so a Redis flush or a
// new deployment loses no schedule. Upserts only what differs: an unchanged scheduler keeps its next run.
import { Worker, type Job } from 'bullmq';
import { ACROSS_ORGANIZATIONS, Db } from '../src/core/db.js';
import { JOB_RETENTION, QUEUE_NAMES } from '../src/core/queues.js';
import { SCHEDULE_RECONCILE_ID, SCHEDULER_PREFIX, intervalOf, scheduleSchedulerId, type ScheduleJob } from '../src/modules/schedules/jobs.js';
import { runSchedule, type RunResult } from '../src/modules/schedules/runner.js';
import { jitterMs, nextRunAfter, repeatOptions, type Timing } from '../src/modules/schedules/timing.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

const JOB_OPTS = { removeOnComplete: { age: 3600, count: 1000 }, removeOnFail: JOB_RETENTION.removeOnFail };

interface Wanted extends Timing { id: string; organization_id: string; next_run_at: string | Date | null }

export interface ScheduleReconcileResult { added: string[]; removed: string[]; retimed: string[] }

type SchedulerInfo = { key: string; every?: number | string | null; pattern?: string | null; tz?: string | null; next?: number; template?: { data?: unknown } };

function matches(current: SchedulerInfo | undefined, s: Wanted, minuteMs: number): boolean {
  if (!current) return false;
  const want = repeatOptions(s, minuteMs);
  const data = current.template?.data as Partial<ScheduleJob> | undefined;
  if (data?.scheduleId !== s.id || data.organizationId !== s.organization_id) return false;
  if ('every' in want) return Number(current.every) === want.every && !current.pattern;
  return current.pattern === want.pattern && (current.tz ?? 'UTC') === want.tz && !current.every;
}

/** Makes the schedule's job scheduler what its row says, and stores the scheduler's next run. */
async function register(services: WorkerServices, db: Db, s: Wanted, current: SchedulerInfo | undefined): Promise<boolean> {
  const minuteMs = services.settings.scheduleMinuteMs;
  const queue = services.queues.discoverySchedule;
  let next = current?.next;
  const changed = !matches(current, s, minuteMs);
  if (changed) {
    const opts = repeatOptions(s, minuteMs);
    // An every-N schedule's first run is one interval after it is set, or at the next run the table
    // holds when that is sooner (a scheduler lost with Redis runs when it was due).
    const startDate = 'every' in opts
      ? Math.max(Date.now(), Math.min(s.next_run_at ? new Date(s.next_run_at).getTime() : Infinity, Date.now() + opts.every))
      : undefined;
    const data: ScheduleJob = { scheduleId: s.id, organizationId: s.organization_id };
    await queue.upsertJobScheduler(scheduleSchedulerId(s.id), { ...opts, ...(startDate ? { startDate } : {}) }, { name: 'tick', data, opts: JOB_OPTS });
    next = (await queue.getJobScheduler(scheduleSchedulerId(s.id)))?.next;
  }
  const nextRunAt = next ? new Date(next) : nextRunAfter(s, new Date(), minuteMs);
  await db.query(`update discovery_schedules set next_run_at = ? where organization_id = ? and id = ? and enabled and next_run_at is distinct from ?`,
    [nextRunAt, s.organization_id, s.id, nextRunAt]);
  return changed;
}

const WANTED_COLUMNS = 'id, organization_id, every_minutes, cron, timezone, jitter_seconds, next_run_at';

/** Makes the set of schedule schedulers equal to the set of enabled schedules (every organization's: one set for all). */
export async function reconcileSchedules(services: WorkerServices): Promise<ScheduleReconcileResult> {
  const queue = services.queues.discoverySchedule;
  const db = new Db(services.orm.em.fork());
  const schedules = await db.query<Wanted>(`${ACROSS_ORGANIZATIONS} select ${WANTED_COLUMNS} from discovery_schedules where enabled order by id`);
  const wanted = new Map(schedules.map((s) => [scheduleSchedulerId(s.id), s]));
  const existing = ((await queue.getJobSchedulers(0, -1)) as SchedulerInfo[]).filter((s) => s.key.startsWith(SCHEDULER_PREFIX));
  const result: ScheduleReconcileResult = { added: [], removed: [], retimed: [] };
  for (const s of existing) {
    if (!wanted.has(s.key)) {
      await queue.removeJobScheduler(s.key);
      result.removed.push(s.key.slice(SCHEDULER_PREFIX.length));
    }
  }
  const have = new Map(existing.map((s) => [s.key, s]));
  for (const [key, s] of wanted) {
    if (await register(services, db, s, have.get(key))) (have.has(key) ? result.retimed : result.added).push(s.id);
  }
  if (result.added.length || result.removed.length || result.retimed.length) services.logger.info(result, 'discovery schedules reconciled');
  return result;
}

/** One schedule's scheduler made to match its row (after an API change). */
export async function syncSchedule(services: WorkerServices, scheduleId: string, organizationId: string): Promise<'registered' | 'removed'> {
  const db = new Db(services.orm.em.fork());
  const s = await db.one<Wanted & { enabled: boolean }>(
    `select ${WANTED_COLUMNS}, enabled from discovery_schedules where organization_id = ? and id = ?`, [organizationId, scheduleId]);
  if (!s?.enabled) {
    await services.queues.discoverySchedule.removeJobScheduler(scheduleSchedulerId(scheduleId));
    return 'removed';
  }
  const current = await services.queues.discoverySchedule.getJobScheduler(scheduleSchedulerId(scheduleId));
  await register(services, db, s, current ? { ...(current as SchedulerInfo), key: scheduleSchedulerId(scheduleId) } : undefined);
  return 'registered';
}

/** One interval: run now, or (jitter) queue its run delayed; what happened after, for a server_poll daemon, a poll now. */
async function runInterval(services: WorkerServices, data: ScheduleJob, scheduledFor: number): Promise<RunResult> {
  const db = new Db(services.orm.em.fork());
  const result = await runSchedule(db, data.organizationId, data.scheduleId, scheduledFor, services.settings.scheduleMinuteMs);
  if (result.outcome === 'gone' || result.outcome === 'disabled' || result.disabledNow) {
    await services.queues.discoverySchedule.removeJobScheduler(scheduleSchedulerId(data.scheduleId));
  }
  if (result.outcome === 'queued' && result.daemon?.mode === 'server_poll') {
    // The poller initiates the pending session at this daemon's next poll: that is now, not in up to 30 s.
    await services.queues.serverPoll.add('poll', { daemonId: result.daemon.id, organizationId: data.organizationId },
      { jobId: `scheduled-${result.sessionId}`, removeOnComplete: true, removeOnFail: { count: 100 } });
  }
  if (result.outcome === 'failed') services.logger.warn({ schedule_id: data.scheduleId, error: result.error, disabled: result.disabledNow }, 'scheduled discovery failed');
  return result;
}

export async function processDiscoverySchedule(services: WorkerServices, job: Job<ScheduleJob | Record<string, never>>): Promise<unknown> {
  if (job.name === 'reconcile') return reconcileSchedules(services);
  const data = job.data as ScheduleJob;
  if (job.name === 'sync') return syncSchedule(services, data.scheduleId, data.organizationId);
  if (job.name === 'run') return runInterval(services, data, data.scheduledFor!);
  // tick: the scheduler's job of one interval.
  const scheduledFor = intervalOf(job);
  const db = new Db(services.orm.em.fork());
  const s = await db.one<{ jitter_seconds: number }>(
    `select jitter_seconds from discovery_schedules where organization_id = ? and id = ?`, [data.organizationId, data.scheduleId]);
  const delay = s ? jitterMs(data.scheduleId, scheduledFor, s.jitter_seconds, services.settings.scheduleMinuteMs) : 0;
  if (!delay) return runInterval(services, data, scheduledFor);
  await services.queues.discoverySchedule.add('run', { ...data, scheduledFor }, { ...JOB_OPTS, delay, jobId: `run-${data.scheduleId}-${scheduledFor}` });
  return { outcome: 'delayed', scheduledFor, delay };
}

export async function startDiscoverySchedule(services: WorkerServices): Promise<Worker> {
  await services.queues.discoverySchedule.upsertJobScheduler(
    SCHEDULE_RECONCILE_ID, { every: services.settings.scheduleReconcileMs }, { name: 'reconcile', data: {}, opts: JOB_OPTS });
  // At once rather than after the first period; a failure (database not migrated yet…) is retried by the reconcile scheduler.
  await reconcileSchedules(services).catch((err: Error) => services.logger.warn({ err: err.message }, 'initial discovery schedule reconcile failed'));
  return new Worker(
    QUEUE_NAMES.discoverySchedule,
    timed(services, QUEUE_NAMES.discoverySchedule, (job: Job) => processDiscoverySchedule(services, job)),
    workerOptions(services, QUEUE_NAMES.discoverySchedule, 4),
  );
}
