// When a discovery schedule runs: every N minutes, or a cron expression in an IANA time zone (the
// cron-parser BullMQ uses itself, so what we validate and show is what the job scheduler does), and
// the jitter that spreads one interval's run over up to jitter_seconds after it.
import { createHash } from 'node:crypto';
import { CronExpressionParser } from 'cron-parser';

export interface Timing {
  every_minutes: number | null;
  cron: string | null;
  timezone: string;
  jitter_seconds: number;
}

/** Whether `tz` is a time zone this runtime knows (IANA name, or UTC). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Why a cron expression is refused, or null when cron-parser accepts it (5 fields, or 6 with seconds first). */
export function cronProblem(expression: string, tz = 'UTC'): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length < 5 || fields.length > 6) return 'a cron expression has 5 fields (minute hour day month weekday), or 6 with seconds first';
  // Seconds would make a scan run more than once a minute: refused (a field of seconds must be one value).
  if (fields.length === 6 && !/^\d{1,2}$/.test(fields[0]!)) return 'the seconds field must be a single value (a schedule runs at most once a minute)';
  try {
    CronExpressionParser.parse(expression, { tz, strict: false }).next();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The BullMQ repeat options of a schedule; `minuteMs` is 60 000 but in tests (DISCOVERY_SCHEDULE_MINUTE_MS). */
export function repeatOptions(t: Timing, minuteMs: number): { every: number } | { pattern: string; tz: string } {
  return t.every_minutes != null ? { every: t.every_minutes * minuteMs } : { pattern: t.cron!, tz: t.timezone };
}

/** The first instant strictly after `after` at which the schedule's interval starts. */
export function nextRunAfter(t: Timing, after: Date, minuteMs = 60_000, anchor?: Date): Date {
  if (t.every_minutes != null) {
    const every = t.every_minutes * minuteMs;
    if (!anchor) return new Date(after.getTime() + every);
    const n = Math.floor((after.getTime() - anchor.getTime()) / every) + 1;
    return new Date(anchor.getTime() + Math.max(1, n) * every);
  }
  return CronExpressionParser.parse(t.cron!, { tz: t.timezone, currentDate: after }).next().toDate();
}

/**
 * The delay of one interval's run (ms, 0 ≤ d ≤ jitter): the same for the same schedule and interval,
 * whichever worker computes it, so a job delivered twice waits the same and is recognised as the same run.
 */
export function jitterMs(scheduleId: string, scheduledFor: number, jitterSeconds: number, minuteMs = 60_000): number {
  if (!jitterSeconds) return 0;
  const span = Math.round((jitterSeconds * minuteMs) / 60);
  const h = createHash('sha256').update(`${scheduleId}:${scheduledFor}`).digest().readUInt32BE(0);
  return h % (span + 1);
}

/** How a schedule reads: "every 15 minutes", "cron 0 3 * * * (Europe/Paris)". */
export function describeTiming(t: Timing): string {
  if (t.every_minutes != null) return t.every_minutes === 1 ? 'every minute' : `every ${t.every_minutes} minutes`;
  return `cron ${t.cron} (${t.timezone})`;
}
