// Webhook delivery. PostgreSQL is the source of truth: the dispatcher turns
// events into `webhook_deliveries` rows (one per endpoint and event, under a cursor, in one
// transaction), and BullMQ only carries "attempt these deliveries now" jobs, each naming the one
// organization they belong to so that an attempt reads that organization's rows only (a retry's id is
// derived from the delivery and its attempt number, so adding it twice is a no-op). An attempt claims its
// delivery in PostgreSQL first, so two jobs never attempt one delivery at once. The sweep re-adds a
// job for every delivery due and not delivered: after a Redis flush or a worker killed mid-attempt,
// every event is still delivered (at least once; receivers dedupe by webhook-id).
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config.js';
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';
import { OutboundPolicy } from '../../core/outboundPolicy.js';
import type { Queues } from '../../core/queues.js';
import { open, WEBHOOK_SECRET } from '../../core/secretBox.js';
import { eventResponse, recordEvent, visibleTo, webhookAudience, type Event, type EventRow } from '../events/service.js';
import { presetRequest } from '../alerts/presets.js';
import { signatureHeader } from './signature.js';

/** Where webhooks may go: the one outbound policy, private ranges refused too, unless WEBHOOK_ALLOWED_NETWORKS allows them. */
export function webhookPolicy(config: Pick<AppConfig, 'webhookAllowedNetworks'>): OutboundPolicy {
  let policy = policies.get(config);
  if (!policy) policies.set(config, (policy = new OutboundPolicy(config.webhookAllowedNetworks, { denyPrivate: true })));
  return policy;
}
/** One policy per configuration (its address lists are built once, not at every POST). */
const policies = new WeakMap<object, OutboundPolicy>();

/** One job: deliveries of one organization to attempt now (a dispatched batch of up to DISPATCH_BATCH, or one). */
export interface DeliveryJob {
  deliveryIds: string[];
  /** Absent in jobs queued before jobs named the organization (their deliveries are then found by id alone). */
  organizationId?: string;
}

/** A delivery to attempt: its id and its organization. */
export interface DeliveryRef {
  id: string;
  organizationId: string;
}

/** Deliveries per job from the dispatcher: fewer queue round trips per delivery, POSTs of a job in parallel. */
export const DISPATCH_BATCH = 25;

/** An endpoint failing without a single success for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;
const EXCERPT_BYTES = 1024;

const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: { count: 1000 } };

/** Attempts to make, one job each, in one Redis round trip; a job already queued for the same attempt is kept as it is. */
export async function enqueueDeliveries(queues: Pick<Queues, 'webhookDelivery'>, attempts: Array<DeliveryRef & { attempt: number; delayMs?: number }>): Promise<void> {
  if (!attempts.length) return;
  await queues.webhookDelivery.addBulk(attempts.map((a) => ({
    name: 'deliver',
    data: { deliveryIds: [a.id], organizationId: a.organizationId } satisfies DeliveryJob,
    opts: { ...JOB_OPTIONS, jobId: `d-${a.id}-${a.attempt}`, delay: Math.max(0, a.delayMs ?? 0) },
  })));
}

/** New deliveries from the dispatcher, DISPATCH_BATCH a job, each job one organization's (its claim reads one partition). */
export async function enqueueDispatched(queues: Pick<Queues, 'webhookDelivery'>, deliveries: DeliveryRef[]): Promise<void> {
  const byOrganization = new Map<string, string[]>();
  for (const d of deliveries) {
    const ids = byOrganization.get(d.organizationId) ?? [];
    byOrganization.set(d.organizationId, ids);
    ids.push(d.id);
  }
  const jobs = [];
  for (const [organizationId, ids] of byOrganization) {
    for (let i = 0; i < ids.length; i += DISPATCH_BATCH) {
      const batch = ids.slice(i, i + DISPATCH_BATCH);
      jobs.push({ name: 'deliver', data: { deliveryIds: batch, organizationId } satisfies DeliveryJob, opts: { ...JOB_OPTIONS, jobId: `b-${batch[0]}` } });
    }
  }
  if (jobs.length) await queues.webhookDelivery.addBulk(jobs);
}

interface Endpoint {
  id: string;
  organization_id: string;
  event_types: string[];
  network_ids: string[] | null;
  created_at: Date;
}

/** The events' one visibility rule (src/modules/events/service.ts), with the endpoint as reader. */
const matches = (w: Endpoint, e: Event) =>
  new Date(e.occurred_at!) >= new Date(w.created_at) && visibleTo(webhookAudience(w), { types: w.event_types }, e);

/**
 * Moves the events after the dispatch cursor into deliveries (at most `batch` events a call; one
 * dispatcher at a time). Returns the new deliveries, to enqueue once committed.
 *
 * It reads the events and the endpoints of every organization on purpose: one dispatcher follows
 * the one global event order for all of them (per organization it would need a cursor and a scan
 * of the events each).
 */
export async function dispatchEvents(db: Db, batch = 1000): Promise<{ events: number; deliveries: DeliveryRef[] }> {
  return db.transaction(async (tx) => {
    await tx.query(`select pg_advisory_xact_lock(hashtext('netinv.webhook_dispatch'))`);
    const cursor = (await tx.one<{ id: string }>('select last_event_id::text as id from webhook_dispatch_cursor'))?.id ?? '0';
    const rows = await tx.query<EventRow>(`${ACROSS_ORGANIZATIONS} select * from events where id > ?::bigint order by id limit ?`, [cursor, batch]);
    if (!rows.length) return { events: 0, deliveries: [] };
    const orgs = [...new Set(rows.map((r) => r.organization_id))];
    const endpoints = await tx.query<Endpoint>(
      `${ACROSS_ORGANIZATIONS} select id, organization_id, event_types, network_ids, created_at from webhooks where enabled and organization_id = any(?::uuid[])`, [orgs],
    );
    const deliveries: Array<Record<string, unknown>> = [];
    if (endpoints.length) {
      for (const event of rows.map(eventResponse)) {
        for (const w of endpoints) {
          if (!matches(w, event)) continue;
          deliveries.push({
            id: randomUUID(), webhook_id: w.id, organization_id: w.organization_id, event_id: event.id, type: event.type,
            payload: { type: event.type, timestamp: event.occurred_at, data: event },
          });
        }
      }
    }
    // Written one organization at a time, each insert into its own partition (shard).
    const written: DeliveryRef[] = [];
    for (const organizationId of orgs) {
      const ofOrganization = deliveries.filter((d) => d.organization_id === organizationId);
      if (!ofOrganization.length) continue;
      // The endpoints were read in this transaction; the join keeps a delivery only for one still there.
      const rows = await tx.query<{ id: string }>(
        `insert into webhook_deliveries (id, webhook_id, organization_id, event_id, type, payload, next_attempt_at)
         select d.id, d.webhook_id, w.organization_id, d.event_id, d.type, d.payload, now()
           from jsonb_to_recordset(?::jsonb) as d(id uuid, webhook_id uuid, event_id bigint, type text, payload jsonb)
           join webhooks w on w.organization_id = ? and w.id = d.webhook_id
         on conflict (webhook_id, event_id, organization_id) do nothing returning id`,
        [JSON.stringify(ofOrganization), organizationId],
      );
      written.push(...rows.map((r) => ({ id: r.id, organizationId })));
    }
    await tx.query(
      `insert into webhook_dispatch_cursor (singleton, last_event_id) values (true, ?::bigint)
       on conflict (singleton) do update set last_event_id = excluded.last_event_id`,
      [rows[rows.length - 1]!.id],
    );
    return { events: rows.length, deliveries: written };
  });
}

/**
 * Deliveries due and not delivered (their job lost with Redis, or its worker killed): enqueued
 * again. Those of a disabled endpoint wait (until it is enabled again) instead of being picked up
 * and skipped every sweep. Every organization's, on purpose: one sweep looks after them all.
 */
export async function sweepDeliveries(db: Db, queues: Pick<Queues, 'webhookDelivery'>, graceMs = 2000): Promise<number> {
  const due = await db.query<DeliveryRef & { attempts: number }>(
    `${ACROSS_ORGANIZATIONS} select d.id, d.organization_id as "organizationId", d.attempts
     from webhook_deliveries d join webhooks w on w.organization_id = d.organization_id and w.id = d.webhook_id
     where d.status = 'pending' and w.enabled and d.next_attempt_at <= now() - make_interval(secs => ?) order by d.next_attempt_at limit 5000`,
    [graceMs / 1000],
  );
  await enqueueDeliveries(queues, due.map((d) => ({ id: d.id, organizationId: d.organizationId, attempt: d.attempts })));
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
  id: string;
  organizationId: string;
  status: 'delivered' | 'retry' | 'failed';
  retryInMs?: number;
  attempt: number;
}

interface Claimed {
  id: string; webhook_id: string; payload: unknown; attempts: number; url: string; preset: string; secret: string; previous_secret: string | null;
  previous_valid: boolean; organization_id: string; name: string;
}

/**
 * Attempts a set of deliveries (a job's: a dispatched batch, or one retry): claimed first, so a
 * delivery is never attempted twice at once (a sweep re-adding a job that is still queued, a
 * stalled job taken up again): claiming moves `next_attempt_at` past the attempt's time limit, and
 * only a due delivery of an enabled endpoint can be claimed; one whose worker died becomes due again
 * then. The POSTs run concurrently; successes are recorded in one statement (per organization),
 * failures one by one. Every statement names the organization: the job's, or for a job queued
 * before jobs named it, each claimed delivery's.
 */
export async function attemptDeliveries(db: Db, config: AppConfig, logger: Logger, job: DeliveryJob, now = () => new Date()): Promise<DeliveryOutcome[]> {
  const leaseSeconds = config.webhookTimeoutMs / 1000 + 5;
  const claim = `update webhook_deliveries d set next_attempt_at = now() + make_interval(secs => ?)
     from webhooks w
     where d.id = any(?::uuid[]) and w.organization_id = d.organization_id and w.id = d.webhook_id and w.enabled and d.status = 'pending'
       and d.next_attempt_at <= now() + interval '1 second'`;
  const returning = `returning d.id, d.webhook_id, d.payload, d.attempts, w.url, w.preset, w.secret, w.previous_secret,
               coalesce(w.previous_secret_expires_at > now(), false) as previous_valid, w.organization_id, w.name`;
  const claimed = job.organizationId
    ? await db.query<Claimed>(`${claim} and d.organization_id = ? and w.organization_id = ? ${returning}`, [leaseSeconds, job.deliveryIds, job.organizationId, job.organizationId])
    // A job without its organization (queued before jobs named it): its deliveries found by id alone.
    : await db.query<Claimed>(`${ACROSS_ORGANIZATIONS} ${claim} ${returning}`, [leaseSeconds, job.deliveryIds]);
  const attempts = await Promise.all(claimed.map(async (d) => {
    // The endpoint's preset shapes the body (and for ntfy the URL): src/modules/alerts/presets.ts.
    const { url, body } = presetRequest(d.preset, d.url, d.payload as Record<string, unknown>);
    const timestamp = Math.floor(now().getTime() / 1000);
    const secrets = (d.previous_secret && d.previous_valid ? [d.secret, d.previous_secret] : [d.secret]).map((s) => open(s, WEBHOOK_SECRET));
    const startedAt = now();
    const result = await post(config, url, {
      'Content-Type': 'application/json',
      'User-Agent': `netinventory-webhooks/${config.serverVersion}`,
      'webhook-id': d.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, d.id, timestamp, body),
    }, body);
    return { d, result, startedAt, attempt: d.attempts + 1, ok: result.status !== undefined && result.status >= 200 && result.status < 300 };
  }));
  const delivered = attempts.filter((a) => a.ok);
  for (const organizationId of new Set(delivered.map((a) => a.d.organization_id))) {
    await db.query(
      `with r as (select * from jsonb_to_recordset(?::jsonb) as r(id uuid, webhook_id uuid, attempt int, started_at timestamptz, status_code int, latency_ms int, response_excerpt text)),
            logged as (insert into webhook_attempts (delivery_id, organization_id, attempt, started_at, status_code, latency_ms, response_excerpt)
                       select r.id, d.organization_id, r.attempt, r.started_at, r.status_code, r.latency_ms, r.response_excerpt
                       from r join webhook_deliveries d on d.organization_id = ? and d.id = r.id),
            done as (update webhook_deliveries d set status = 'delivered', attempts = r.attempt, delivered_at = now(), next_attempt_at = null, last_status_code = r.status_code
                     from r where d.organization_id = ? and d.id = r.id)
       update webhooks set failing_since = null where organization_id = ? and id in (select webhook_id from r) and failing_since is not null`,
      [JSON.stringify(delivered.filter((a) => a.d.organization_id === organizationId).map((a) => ({
        id: a.d.id, webhook_id: a.d.webhook_id, attempt: a.attempt, started_at: a.startedAt.toISOString(), status_code: a.result.status,
        latency_ms: a.result.latencyMs, response_excerpt: a.result.excerpt ?? null,
      }))), organizationId, organizationId, organizationId],
    );
  }
  const outcomes: DeliveryOutcome[] = delivered.map((a) => ({ id: a.d.id, organizationId: a.d.organization_id, status: 'delivered', attempt: a.attempt }));
  for (const a of attempts.filter((x) => !x.ok)) outcomes.push(await recordFailure(db, config, logger, a.d, a.attempt, a.startedAt, a.result, now));
  return outcomes;
}

/** A failed attempt: logged, then retried on the schedule or failed; a 410 or 5 days failing disables the endpoint. */
async function recordFailure(db: Db, config: AppConfig, logger: Logger, d: Claimed, attempt: number, startedAt: Date, result: Attempt, now: () => Date): Promise<DeliveryOutcome> {
  const schedule = config.webhookRetrySchedule;
  return db.transaction(async (tx) => {
    await tx.query(
      `insert into webhook_attempts (delivery_id, organization_id, attempt, started_at, status_code, latency_ms, error, response_excerpt)
       select id, organization_id, ?, ?, ?, ?, ?, ? from webhook_deliveries where organization_id = ? and id = ?`,
      [attempt, startedAt.toISOString(), result.status ?? null, result.latencyMs, result.error ?? null, result.excerpt ?? null, d.organization_id, d.id],
    );
    const gone = result.status === 410;
    const retryInMs = !gone && attempt < schedule.length ? schedule[attempt]! * 1000 : undefined;
    await tx.query(
      `update webhook_deliveries set status = ?, attempts = ?, last_status_code = ?, next_attempt_at = ${retryInMs === undefined ? 'null' : 'now() + make_interval(secs => ?)'}
       where organization_id = ? and id = ?`,
      [...(retryInMs === undefined ? ['failed', attempt, result.status ?? null] : ['pending', attempt, result.status ?? null, retryInMs / 1000]), d.organization_id, d.id],
    );
    const hook = await tx.one<{ failing_since: Date }>(
      'update webhooks set failing_since = coalesce(failing_since, ?::timestamptz) where organization_id = ? and id = ? returning failing_since',
      [startedAt.toISOString(), d.organization_id, d.webhook_id],
    );
    const failingLong = now().getTime() - new Date(hook!.failing_since).getTime() >= DISABLE_AFTER_MS;
    if (gone || failingLong) {
      const reason = gone ? 'gone' : 'failing';
      await tx.query(`update webhooks set enabled = false, disabled_reason = ?, updated_at = now() where organization_id = ? and id = ?`, [reason, d.organization_id, d.webhook_id]);
      await recordEvent(tx, {
        type: 'webhook.disabled', organizationId: d.organization_id, networkId: null, entityType: 'webhook', entityId: d.webhook_id,
        changes: { enabled: [true, false] }, data: { id: d.webhook_id, name: d.name, url: d.url, disabled_reason: reason, last_status_code: result.status ?? null },
      });
      logger.warn({ webhook_id: d.webhook_id, reason }, 'webhook endpoint disabled');
      return { id: d.id, organizationId: d.organization_id, status: 'failed', attempt };
    }
    const outcome = { id: d.id, organizationId: d.organization_id, attempt };
    return retryInMs === undefined ? { ...outcome, status: 'failed' } : { ...outcome, status: 'retry', retryInMs };
  });
}
