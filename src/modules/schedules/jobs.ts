// The discovery-schedule queue's vocabulary, shared by the API (which asks for a sync after a change)
// and the worker (workers/discoverySchedule.ts, which owns the job schedulers).
import type { Queues } from '../../core/queues.js';

/** One BullMQ job scheduler per schedule, keyed by the schedule's id: one job per interval however many workers run. */
export const SCHEDULER_PREFIX = 'schedule-';
export const scheduleSchedulerId = (scheduleId: string) => `${SCHEDULER_PREFIX}${scheduleId}`;
export const SCHEDULE_RECONCILE_ID = 'reconcile-discovery-schedules';

/** A `tick` (the scheduler's job of one interval) and a `run` (a tick's run delayed by its jitter) carry this. */
export interface ScheduleJob {
  scheduleId: string;
  organizationId: string;
  /** A `run` only: the interval's instant (ms) of the tick that delayed it. */
  scheduledFor?: number;
}

/**
 * Asks the worker to make the schedule's job scheduler match its row now (made, re-timed, or removed
 * when the schedule is disabled or deleted). One job per change: each reads the row as it is then.
 */
export async function requestScheduleSync(queues: Pick<Queues, 'discoverySchedule'>, scheduleId: string, organizationId: string): Promise<void> {
  await queues.discoverySchedule.add('sync', { scheduleId, organizationId } satisfies ScheduleJob, { removeOnComplete: true, removeOnFail: { count: 100 } });
}

/** The interval a scheduler's job stands for: its id is `repeat:<scheduler id>:<ms>`. */
export function intervalOf(job: { id?: string | undefined; timestamp: number; opts: { delay?: number; prevMillis?: number } }): number {
  const tail = Number(job.id?.split(':').pop());
  if (Number.isSafeInteger(tail) && tail > 0) return tail;
  return job.opts.prevMillis ?? job.timestamp + (job.opts.delay ?? 0);
}
