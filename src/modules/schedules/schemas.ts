import Joi from 'joi';
import { body, entityId, timestamp, uuid } from '../../http/schemas.js';
import { cronProblem, isTimeZone } from './timing.js';

export const MAX_EVERY_MINUTES = 366 * 24 * 60;
export const MAX_JITTER_SECONDS = 3600;
export const MAX_SCHEDULES_PER_DAEMON = 20;
export const SCHEDULE_OUTCOMES = ['queued', 'skipped', 'failed'] as const;

export const scheduleParams = Joi.object({ id: uuid().required(), schedule_id: uuid().required() });

const timeZone = () => Joi.string().max(64).custom((value: string, helpers) => (isTimeZone(value) ? value : helpers.error('timezone.unknown')))
  .messages({ 'timezone.unknown': '{{#label}} is not a known IANA time zone (e.g. UTC, Europe/Paris)' })
  .description('IANA time zone the cron expression is read in (default UTC)');

const cron = () => Joi.string().trim().max(120).description('A cron expression (minute hour day-of-month month day-of-week), read in `timezone`');
const everyMinutes = () => Joi.number().integer().min(1).max(MAX_EVERY_MINUTES).description('Run every N minutes (the first run one interval after it is set)');
const fields = {
  every_minutes: everyMinutes().allow(null),
  cron: cron().allow(null),
  timezone: timeZone(),
  jitter_seconds: Joi.number().integer().min(0).max(MAX_JITTER_SECONDS).description('Each run starts up to this many seconds after its interval begins (the same delay whichever worker runs it)'),
  subnet_ids: Joi.array().items(uuid()).min(1).max(256).unique().allow(null)
    .description('Scan only these of the daemon’s approved subnets (null: every subnet approved when it runs; those no longer approved are left out, none left is a failure)'),
  enabled: Joi.boolean().description('A disabled schedule does not run; enabling it again clears its failures and disabled_reason'),
  max_failures: Joi.number().integer().min(1).max(100).description('After this many consecutive failures the schedule disables itself and says why (default 3)'),
};

/** Exactly one of every_minutes and cron; a cron expression parsed in its time zone. */
function timingRule(value: { every_minutes?: number | null; cron?: string | null; timezone?: string }, helpers: Joi.CustomHelpers, partial: boolean) {
  const hasEvery = value.every_minutes != null;
  const hasCron = value.cron != null;
  if (hasEvery && hasCron) return helpers.error('timing.both');
  if (!partial && !hasEvery && !hasCron) return helpers.error('timing.none');
  if (hasCron) {
    const problem = cronProblem(value.cron!, value.timezone ?? 'UTC');
    if (problem) return helpers.error('cron.invalid', { reason: problem });
  }
  return value;
}

const TIMING_MESSAGES = {
  'timing.both': 'give either every_minutes or cron, not both',
  'timing.none': 'give every_minutes (a number of minutes) or cron (an expression)',
  'cron.invalid': 'cron is not a valid cron expression: {{#reason}}',
};

export const scheduleCreate = body({
  id: entityId(),
  ...fields,
  timezone: fields.timezone.default('UTC'),
  jitter_seconds: fields.jitter_seconds.default(0),
  subnet_ids: fields.subnet_ids.default(null),
  enabled: fields.enabled.default(true),
  max_failures: fields.max_failures.default(3),
}).custom((v, h) => timingRule(v, h, false)).messages(TIMING_MESSAGES).example({ every_minutes: 60, jitter_seconds: 30 });

/** What a PATCH may change; given every_minutes clears cron and the reverse (one timing at a time). */
export const schedulePatch = body({ ...fields }).min(1).custom((v, h) => timingRule(v, h, true)).messages(TIMING_MESSAGES).example({ enabled: false });

const ts = () => timestamp().allow(null);
export const scheduleResponse = Joi.object({
  id: uuid(), daemon_id: uuid(), network_id: uuid(),
  subnet_ids: Joi.array().items(uuid()).allow(null),
  every_minutes: Joi.number().integer().allow(null), cron: Joi.string().allow(null), timezone: Joi.string(), jitter_seconds: Joi.number().integer(),
  description: Joi.string().description('How it runs, in words: "every 15 minutes", "cron 0 3 * * * (Europe/Paris)"'),
  enabled: Joi.boolean(), max_failures: Joi.number().integer(), consecutive_failures: Joi.number().integer(),
  disabled_reason: Joi.string().allow(null).description('Why the schedule disabled itself (null when a person disabled it, or it is enabled)'),
  next_run_at: ts().description('When it runs next (null while disabled)'),
  last_run_at: ts(),
  last_outcome: Joi.string().valid(...SCHEDULE_OUTCOMES).allow(null)
    .description('queued: a Network session was queued; skipped: one was already pending or running (not a failure); failed: see last_error'),
  last_session_id: uuid().allow(null).description('The session its last queued run made'),
  last_error: Joi.string().allow(null),
  created_at: timestamp(), updated_at: timestamp(),
}).label('DiscoverySchedule');
