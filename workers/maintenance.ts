// Queue `maintenance`: periodic housekeeping of the account tables (expired sessions).
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../src/core/logger.js';

export const MAINTENANCE_QUEUE = 'maintenance';

export async function purgeExpiredSessions(orm: MikroORM): Promise<number> {
  const res = await orm.em.fork().execute<{ affectedRows: number }>(`delete from sessions where expires_at <= now()`, [], 'run');
  return res.affectedRows ?? 0;
}

export async function startMaintenance(opts: { connection: ConnectionOptions; prefix: string; orm: MikroORM; logger: Logger; everyMs?: number }) {
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: opts.connection, prefix: opts.prefix });
  // A job scheduler is idempotent: every worker process may upsert it, only one job runs per period.
  await queue.upsertJobScheduler('purge-expired-sessions', { every: opts.everyMs ?? 3600_000 }, { name: 'purge-expired-sessions' });
  const worker = new Worker(
    MAINTENANCE_QUEUE,
    async () => {
      const purged = await purgeExpiredSessions(opts.orm);
      opts.logger.info({ purged }, 'expired sessions purged');
      return { purged };
    },
    { connection: opts.connection, prefix: opts.prefix, concurrency: 1 },
  );
  return { queue, worker };
}
