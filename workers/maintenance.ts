// Queue `maintenance`: periodic housekeeping of the account tables (expired sessions).
import { Worker } from 'bullmq';
import type { MikroORM } from '@mikro-orm/postgresql';
import { QUEUE_NAMES } from '../src/core/queues.js';
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
  return new Worker(
    MAINTENANCE_QUEUE,
    timed(services, MAINTENANCE_QUEUE, async () => {
      const purged = await purgeExpiredSessions(services.orm);
      services.logger.info({ purged }, 'expired sessions purged');
      return { purged };
    }),
    workerOptions(services, 1),
  );
}
