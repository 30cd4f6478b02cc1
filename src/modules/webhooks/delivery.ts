// Webhook delivery (issue 13.4, 13.7). PostgreSQL is the source of truth: the dispatcher turns
// events into `webhook_deliveries` rows (one per endpoint and event, under a cursor, in one
// transaction), and BullMQ only carries "attempt this delivery now" jobs, whose ids are derived
// from the delivery and its attempt number, so adding one twice is a no-op. The sweep re-adds a
// job for every delivery due and not delivered: after a Redis flush or a worker killed mid-attempt,
// every event is still delivered (at least once; receivers dedupe by webhook-id).
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config.js';
import type { Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';
import { OutboundPolicy } from '../../core/outboundPolicy.js';
import type { Queues } from '../../core/queues.js';
import { eventResponse, recordEvent, typeMatches, type Event, type EventRow } from '../events/service.js';
import { signatureHeader } from './signature.js';

/** Where webhooks may go: the one outbound policy, private ranges refused too, unless WEBHOOK_ALLOWED_NETWORKS allows them. */
export const webhookPolicy = (config: Pick<AppConfig, 'webhookAllowedNetworks'>) => new OutboundPolicy(config.webhookAllowedNetworks, { denyPrivate: true });

export interface DeliveryJob {
  deliveryId: string;
}

/** An endpoint failing without a single success for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;
const EXCERPT_BYTES = 1024;

export async function enqueueDelivery(queues: Pick<Queues, 'webhookDelivery'>, deliveryId: string, attempt: number, delayMs: number): Promise<void> {
  await queues.webhookDelivery.add('deliver', { deliveryId } satisfies DeliveryJob, {
    jobId: `d-${deliveryId}-${attempt}`, delay: Math.max(0, delayMs), removeOnComplete: true, removeOnFail: { count: 1000 },
  });
}

interface Endpoint {
  id: string;
  organization_id: string;
  event_types: string[];
  network_ids: string[] | null;
  created_at: Date;
}

const matches = (w: Endpoint, e: Event) =>
  w.organization_id === e.organization_id
  && new Date(e.occurred_at!) >= new Date(w.created_at)
  && (w.network_ids === null || (e.network_id !== null && w.network_ids.includes(e.network_id)))
  && typeMatches(w.event_types, e.type);

/**
 * Moves the events after the dispatch cursor into deliveries (at most `batch` events a call; one
 * dispatcher at a time). Returns the new deliveries, to enqueue once committed.
 */
export async function dispatchEvents(db: Db, batch = 1000): Promise<{ events: number; deliveries: string[] }> {
  return db.transaction(async (tx) => {
    await tx.query(`select pg_advisory_xact_lock(hashtext('netinv.webhook_dispatch'))`);
    const cursor = (await tx.one<{ id: string }>('select last_event_id::text as id from webhook_dispatch_cursor'))?.id ?? '0';
    const rows = await tx.query<EventRow>('select * from events where id > ?::bigint order by id limit ?', [cursor, batch]);
    if (!rows.length) return { events: 0, deliveries: [] };
    const orgs = [...new Set(rows.map((r) => r.organization_id))];
    const endpoints = await tx.query<Endpoint>(
      'select id, organization_id, event_types, network_ids, created_at from webhooks where enabled and organization_id = any(?::uuid[])', [orgs],
    );
    const deliveries: Array<Record<string, unknown>> = [];
    if (endpoints.length) {
      for (const event of rows.map(eventResponse)) {
        for (const w of endpoints) {
          if (!matches(w, event)) continue;
          deliveries.push({ id: randomUUID(), webhook_id: w.id, event_id: event.id, type: event.type, payload: { type: event.type, timestamp: event.occurred_at, data: event } });
        }
      }
    }
    let ids: string[] = [];
    if (deliveries.length) {
      const written = await tx.query<{ id: string }>(
        `insert into webhook_deliveries (id, webhook_id, event_id, type, payload, next_attempt_at)
         select id, webhook_id, event_id, type, payload, now() from jsonb_to_recordset(?::jsonb) as d(id uuid, webhook_id uuid, event_id bigint, type text, payload jsonb)
         on conflict (webhook_id, event_id) do nothing returning id`,
        [JSON.stringify(deliveries)],
      );
      ids = written.map((w) => w.id);
    }
    await tx.query(
      `insert into webhook_dispatch_cursor (singleton, last_event_id) values (true, ?::bigint)
       on conflict (singleton) do update set last_event_id = excluded.last_event_id`,
      [rows[rows.length - 1]!.id],
    );
    return { events: rows.length, deliveries: ids };
  });
}

/**
 * Deliveries due and not delivered (their job lost with Redis, or its worker killed): enqueued
 * again. Those of a disabled endpoint wait (until it is enabled again) instead of being picked up
 * and skipped every sweep.
 */
export async function sweepDeliveries(db: Db, queues: Pick<Queues, 'webhookDelivery'>, graceMs = 2000): Promise<number> {
  const due = await db.query<{ id: string; attempts: number }>(
    `select d.id, d.attempts from webhook_deliveries d join webhooks w on w.id = d.webhook_id
     where d.status = 'pending' and w.enabled and d.next_attempt_at <= now() - make_interval(secs => ?) order by d.next_attempt_at limit 5000`,
    [graceMs / 1000],
  );
  for (const d of due) await enqueueDelivery(queues, d.id, d.attempts, 0);
  return due.length;
}

interface Attempt {
  status?: number;
  error?: string;
  excerpt?: string;
  latencyMs: number;
}

const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 50 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 50 }) };

/** One POST: the policy checks the address actually dialled; redirects are not followed (a 3xx is a failure). */
function post(config: AppConfig, url: string, headers: Record<string, string>, body: string): Promise<Attempt> {
  const started = performance.now();
  const policy = webhookPolicy(config);
  return new Promise((resolve) => {
    const done = (a: Omit<Attempt, 'latencyMs'>) => resolve({ ...a, latencyMs: Math.round(performance.now() - started) });
    let target: URL;
    try {
      target = policy.parse(url);
    } catch (err) {
      return done({ error: (err as Error).message });
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, {
      method: 'POST', headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) }, lookup: policy.lookup as never,
      agent: target.protocol === 'https:' ? agents.https : agents.http, timeout: config.webhookTimeoutMs,
    }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < EXCERPT_BYTES) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => done({ status: res.statusCode, excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8') }));
      res.on('error', (err) => done({ status: res.statusCode, error: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${config.webhookTimeoutMs} ms`)));
    req.on('error', (err) => done({ error: err.message })); // a refused address (OutboundRefused) too
    req.end(body);
  });
}

export interface DeliveryOutcome {
  status: 'delivered' | 'retry' | 'failed' | 'skipped';
  retryInMs?: number;
  attempt?: number;
}

/**
 * One attempt of one delivery: signed POST, logged; then delivered, retried on the schedule
 * (WEBHOOK_RETRY_SCHEDULE), or failed. A 410 disables the endpoint; so do 5 days without success.
 */
export async function attemptDelivery(db: Db, config: AppConfig, logger: Logger, deliveryId: string, now = () => new Date()): Promise<DeliveryOutcome> {
  const d = await db.one<{ id: string; webhook_id: string; payload: unknown; attempts: number; status: string; url: string; enabled: boolean; secret: string; previous_secret: string | null; previous_valid: boolean; organization_id: string; name: string }>(
    `select d.id, d.webhook_id, d.payload, d.attempts, d.status, w.url, w.enabled, w.secret, w.previous_secret,
            coalesce(w.previous_secret_expires_at > now(), false) as previous_valid, w.organization_id, w.name
     from webhook_deliveries d join webhooks w on w.id = d.webhook_id where d.id = ?`,
    [deliveryId],
  );
  if (!d || d.status !== 'pending' || !d.enabled) return { status: 'skipped' };
  const body = JSON.stringify(d.payload);
  const timestamp = Math.floor(now().getTime() / 1000);
  const secrets = d.previous_secret && d.previous_valid ? [d.secret, d.previous_secret] : [d.secret];
  const startedAt = now();
  const result = await post(config, d.url, {
    'Content-Type': 'application/json',
    'User-Agent': `netinventory-webhooks/${config.serverVersion}`,
    'webhook-id': d.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, d.id, timestamp, body),
  }, body);
  const attempt = d.attempts + 1;
  const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
  const schedule = config.webhookRetrySchedule;
  return db.transaction(async (tx) => {
    await tx.query(
      `insert into webhook_attempts (delivery_id, attempt, started_at, status_code, latency_ms, error, response_excerpt) values (?, ?, ?, ?, ?, ?, ?)`,
      [d.id, attempt, startedAt.toISOString(), result.status ?? null, result.latencyMs, result.error ?? null, result.excerpt ?? null],
    );
    if (ok) {
      await tx.query(`update webhook_deliveries set status = 'delivered', attempts = ?, delivered_at = now(), next_attempt_at = null, last_status_code = ? where id = ?`, [attempt, result.status, d.id]);
      await tx.query('update webhooks set failing_since = null where id = ? and failing_since is not null', [d.webhook_id]);
      return { status: 'delivered', attempt };
    }
    const gone = result.status === 410;
    const retryInMs = !gone && attempt < schedule.length ? schedule[attempt]! * 1000 : undefined;
    await tx.query(
      `update webhook_deliveries set status = ?, attempts = ?, last_status_code = ?, next_attempt_at = ${retryInMs === undefined ? 'null' : 'now() + make_interval(secs => ?)'} where id = ?`,
      retryInMs === undefined ? ['failed', attempt, result.status ?? null, d.id] : ['pending', attempt, result.status ?? null, retryInMs / 1000, d.id],
    );
    const hook = await tx.one<{ failing_since: Date }>(
      'update webhooks set failing_since = coalesce(failing_since, ?::timestamptz) where id = ? returning failing_since', [startedAt.toISOString(), d.webhook_id],
    );
    const failingLong = now().getTime() - new Date(hook!.failing_since).getTime() >= DISABLE_AFTER_MS;
    if (gone || failingLong) {
      const reason = gone ? 'gone' : 'failing';
      await tx.query(`update webhooks set enabled = false, disabled_reason = ?, updated_at = now() where id = ?`, [reason, d.webhook_id]);
      await recordEvent(tx, {
        type: 'webhook.disabled', organizationId: d.organization_id, networkId: null, entityType: 'webhook', entityId: d.webhook_id,
        changes: { enabled: [true, false] }, data: { id: d.webhook_id, name: d.name, url: d.url, disabled_reason: reason, last_status_code: result.status ?? null },
      });
      logger.warn({ webhook_id: d.webhook_id, reason }, 'webhook endpoint disabled');
      return { status: 'failed', attempt };
    }
    return retryInMs === undefined ? { status: 'failed', attempt } : { status: 'retry', retryInMs, attempt };
  });
}
