// Queue `webhook-delivery`: signed POSTs to webhook endpoints (src/modules/webhooks/delivery.ts).
// This process also runs the dispatcher: woken by every sequenced batch of events (LISTEN, through
// an EventHub, which also sequences the outbox when no API process does), it turns events into
// delivery rows and enqueues them. Every WEBHOOK_SWEEP_MS (5 s) it dispatches anyway and re-enqueues
// deliveries that are due but have no job (Redis flushed, a worker killed mid-attempt).
import { Worker, type Job } from 'bullmq';
import { coalescing } from '../src/core/coalescing.js';
import { Db } from '../src/core/db.js';
import { QUEUE_NAMES } from '../src/core/queues.js';
import { EventHub } from '../src/modules/events/hub.js';
import { attemptDeliveries, dispatchEvents, enqueueDeliveries, enqueueDispatched, sweepDeliveries, type DeliveryJob } from '../src/modules/webhooks/delivery.js';
import { timed, workerOptions, type WorkerServices } from './context.js';
import { setting } from '../src/core/settings.js';

export const WEBHOOK_DELIVERY_QUEUE = QUEUE_NAMES.webhookDelivery;

/** One job: its deliveries attempted, the failures that are retried enqueued again (with their organization). */
export async function processDeliveryJob(services: WorkerServices, job: Pick<Job<DeliveryJob>, 'data'>) {
  const { config, logger, queues } = services;
  const outcomes = await attemptDeliveries(new Db(services.orm.em.fork()), config, logger, job.data);
  const retries = outcomes.filter((o) => o.status === 'retry');
  await enqueueDeliveries(queues, retries.map((o) => ({ id: o.id, organizationId: o.organizationId, attempt: o.attempt, delayMs: o.retryInMs })));
  return { delivered: outcomes.filter((o) => o.status === 'delivered').length, retries: retries.length, failed: outcomes.filter((o) => o.status === 'failed').length };
}

export async function startWebhookDelivery(services: WorkerServices, opts: { sweepMs?: number } = {}): Promise<Worker> {
  const { config, logger, queues } = services;
  const db = () => new Db(services.orm.em.fork());
  const dispatcher = coalescing(async () => {
    try {
      for (;;) {
        const { events, deliveries } = await dispatchEvents(db());
        await enqueueDispatched(queues, deliveries);
        if (!events) return;
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'webhook dispatch failed (the sweep retries)');
    }
  });
  const dispatch = dispatcher.run;
  const hub = new EventHub({ databaseUrl: config.databaseUrl, orm: services.orm, logger, heartbeatMs: 60_000, onEvents: dispatch });
  const sweepMs = opts.sweepMs ?? setting('WEBHOOK_SWEEP_MS');
  const sweep = setInterval(() => {
    dispatch();
    void sweepDeliveries(db(), queues).catch((err: Error) => logger.warn({ err: err.message }, 'webhook sweep failed'));
  }, sweepMs);

  const worker = new Worker<DeliveryJob>(
    WEBHOOK_DELIVERY_QUEUE,
    timed(services, WEBHOOK_DELIVERY_QUEUE, (job) => processDeliveryJob(services, job)),
    // Jobs at once (a dispatched job holds up to DISPATCH_BATCH deliveries, POSTed in parallel).
    workerOptions(services, QUEUE_NAMES.webhookDelivery, setting('WEBHOOK_DELIVERY_CONCURRENCY')),
  );
  worker.on('closing', () => {
    clearInterval(sweep);
    void hub.stop();
  });
  await hub.start();
  return worker;
}
