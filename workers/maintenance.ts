// Queue `maintenance`: periodic housekeeping: expired login sessions and idempotency keys past their
// 24 hours, events past EVENT_RETENTION_DAYS (MAINTENANCE_INTERVAL_MS), and
// discovery sessions a daemon stopped reporting on (every 60 s, src/modules/discovery/sessions.ts).
import { Worker } from 'bullmq';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Db } from '../src/core/db.js';
import { QUEUE_NAMES } from '../src/core/queues.js';
import { purgeIdempotencyKeys } from '../src/core/idempotency.js';
import { sweepStalledSessions } from '../src/modules/discovery/sessions.js';
import { pruneEvents } from '../src/modules/events/service.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

export const MAINTENANCE_QUEUE = QUEUE_NAMES.maintenance;

export async function purgeExpiredSessions(orm: MikroORM): Promise<number> {
  const res = await orm.em.fork().execute<{ affectedRows: number }>(`delete from sessions where expires_at <= now()`, [], 'run');
  return res.affectedRows ?? 0;
}

export async function startMaintenance(services: WorkerServices): Promise<Worker> {
  // A job scheduler is idempotent: every worker process may upsert it, only one job runs per period.
  await services.queues.maintenance.upsertJobScheduler(
    'purge-expired-sessions',
    { every: services.settings.maintenanceIntervalMs },
    { name: 'purge-expired-sessions' },
  );
  await services.queues.maintenance.upsertJobScheduler('stalled-discovery-sessions', { every: 60_000 }, { name: 'stalled-discovery-sessions' });
  return new Worker(
    MAINTENANCE_QUEUE,
    timed(services, MAINTENANCE_QUEUE, async (job) => {
      if (job.name === 'stalled-discovery-sessions') {
        const swept = await sweepStalledSessions(new Db(services.orm.em.fork()));
        if (swept.cancelRequested || swept.failed) services.logger.warn(swept, 'stalled discovery sessions');
        return swept;
      }
      const purged = await purgeExpiredSessions(services.orm);
      const idempotencyKeys = await purgeIdempotencyKeys(new Db(services.orm.em.fork()));
      const events = await pruneEvents(new Db(services.orm.em.fork()), services.config.eventRetentionDays);
      services.logger.info({ purged, idempotency_keys: idempotencyKeys, events }, 'expired sessions, idempotency keys and events purged');
      return { purged, idempotencyKeys, events };
    }),
    workerOptions(services, QUEUE_NAMES.maintenance, 1),
  );
}
