// Queue `alert-delivery`: one job scheduler (`alert-sweep`, every ALERT_SWEEP_MS) so
// each interval runs once however many worker processes there are: hosts past their rule's offline
// delay are reported (src/modules/alerts/sweep.ts), and every due alert e-mail (quiet hours over,
// or a retry) is sent over SMTP. Digests are made when a session ends (in its transaction); their
// webhook deliveries are the webhook worker's.
import { Worker } from 'bullmq';
import { Db } from '../src/core/db.js';
import { QUEUE_NAMES } from '../src/core/queues.js';
import { sweepAlerts } from '../src/modules/alerts/sweep.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

export const ALERT_DELIVERY_QUEUE = QUEUE_NAMES.alertDelivery;

export async function startAlertDelivery(services: WorkerServices, opts: { sweepMs?: number } = {}): Promise<Worker> {
  const every = Math.max(100, opts.sweepMs ?? services.config.alertSweepMs);
  await services.queues.alertDelivery.upsertJobScheduler('alert-sweep', { every }, { name: 'alert-sweep', opts: { removeOnComplete: true, removeOnFail: { count: 100 } } });
  return new Worker(
    ALERT_DELIVERY_QUEUE,
    timed(services, ALERT_DELIVERY_QUEUE, async () => {
      const result = await sweepAlerts(new Db(services.orm.em.fork()), services.config, services.logger);
      if (result.offline_digests || result.sent || result.failed) services.logger.info(result, 'alerts swept');
      return result;
    }),
    workerOptions(services, QUEUE_NAMES.alertDelivery, 1),
  );
}
