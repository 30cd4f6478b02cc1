// Webhook endpoints, Admin only: CRUD, secret rotation, the delivery log and
// redelivery. Delivery itself is src/modules/webhooks/delivery.ts, run by workers/webhookDelivery.ts.
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config.js';
import type { Db } from '../../core/db.js';
import { AppError, invalidReference, notFound } from '../../core/errors.js';
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import { OutboundRefused } from '../../core/outboundPolicy.js';
import type { Queues } from '../../core/queues.js';
import type { Scope } from '../../core/scope.js';
import { seal, WEBHOOK_SECRET } from '../../core/secretBox.js';
import { Page } from '../../http/envelope.js';
import { enqueueDeliveries, webhookPolicy } from './delivery.js';
import { newSecret } from './signature.js';

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_HOURS = 24;

export interface WebhookInput {
  name: string;
  url: string;
  event_types: string[];
  network_ids: string[] | null;
  enabled: boolean;
  preset?: string;
}

const COLUMNS = 'id, organization_id, name, url, event_types, network_ids, enabled, preset, disabled_reason, failing_since, created_at, updated_at';

function toResponse(row: Row): Row {
  const out = { ...row };
  for (const c of ['failing_since', 'created_at', 'updated_at', 'previous_secret_expires_at']) if (c in out) out[c] = isoTimestamp(out[c]);
  return out;
}

/** The URL is refused now (not only at delivery) when it is not http(s) or points where the server must not go. */
async function checkUrl(config: AppConfig, url: string): Promise<void> {
  try {
    await webhookPolicy(config).check(url);
  } catch (err) {
    if (err instanceof OutboundRefused) throw new AppError('outbound_address_refused', { reason: err.reason, detail: err.detail });
    throw err;
  }
}

async function checkNetworks(db: Db, scope: Scope, ids: string[] | null): Promise<void> {
  if (!ids?.length) return;
  const found = await db.query<{ id: string }>('select id from networks where organization_id = ? and id = any(?::uuid[])', [scope.organizationId, ids]);
  const known = new Set(found.map((r) => r.id));
  const missing = ids.find((id) => !known.has(id));
  if (missing) throw invalidReference('Network', missing, 'network_ids');
}

async function getRow(db: Db, scope: Scope, id: string, lock = false): Promise<Row> {
  const row = await db.one(`select ${COLUMNS}, secret, previous_secret, previous_secret_expires_at from webhooks where id = ? and organization_id = ?${lock ? ' for update' : ''}`, [id, scope.organizationId]);
  if (!row) throw notFound('Webhook', id);
  return row;
}

const publicView = (row: Row) => {
  const { secret: _s, previous_secret: _p, previous_secret_expires_at: _e, ...rest } = toResponse(row);
  return rest;
};

export const webhookService = {
  async create(db: Db, scope: Scope, config: AppConfig, input: WebhookInput) {
    await checkUrl(config, input.url);
    await checkNetworks(db, scope, input.network_ids);
    const secret = newSecret();
    const row = await db.one(
      `insert into webhooks (id, organization_id, name, url, event_types, network_ids, enabled, preset, secret)
       values (?, ?, ?, ?, ?::text[], ?::uuid[], ?, ?, ?) returning ${COLUMNS}`,
      [randomUUID(), scope.organizationId, input.name, input.url, input.event_types, input.network_ids, input.enabled, input.preset ?? 'generic', seal(secret, WEBHOOK_SECRET)],
    );
    return { ...toResponse(row!), secret };
  },

  async list(db: Db, scope: Scope, ids?: string[]) {
    const rows = await db.query(
      `select ${COLUMNS} from webhooks where organization_id = ?${ids ? ' and id = any(?::uuid[])' : ''} order by created_at, id`,
      ids ? [scope.organizationId, ids] : [scope.organizationId],
    );
    return rows.map(toResponse);
  },

  async get(db: Db, scope: Scope, id: string) {
    return publicView(await getRow(db, scope, id));
  },

  /** Replaces the endpoint's settings; enabling it again clears why it was disabled. */
  async update(db: Db, scope: Scope, config: AppConfig, id: string, input: WebhookInput) {
    await checkUrl(config, input.url);
    await checkNetworks(db, scope, input.network_ids);
    return db.transaction(async (tx) => {
      await getRow(tx, scope, id, true);
      const row = await tx.one(
        `update webhooks set name = ?, url = ?, event_types = ?::text[], network_ids = ?::uuid[], enabled = ?, preset = ?,
           disabled_reason = case when ? then null else disabled_reason end,
           failing_since = case when ? and not enabled then null else failing_since end, updated_at = now()
         where organization_id = ? and id = ? returning ${COLUMNS}`,
        [input.name, input.url, input.event_types, input.network_ids, input.enabled, input.preset ?? 'generic', input.enabled, input.enabled, scope.organizationId, id],
      );
      return toResponse(row!);
    });
  },

  async remove(db: Db, scope: Scope, id: string) {
    await getRow(db, scope, id);
    await db.query('delete from webhooks where organization_id = ? and id = ?', [scope.organizationId, id]);
  },

  /** A new secret, shown once; the previous one keeps signing beside it for 24 hours. */
  async rotateSecret(db: Db, scope: Scope, id: string) {
    return db.transaction(async (tx) => {
      await getRow(tx, scope, id, true);
      const secret = newSecret();
      const row = await tx.one(
        `update webhooks set previous_secret = secret, previous_secret_expires_at = now() + make_interval(hours => ?), secret = ?, updated_at = now()
         where organization_id = ? and id = ? returning ${COLUMNS}, previous_secret_expires_at`,
        [PREVIOUS_SECRET_HOURS, seal(secret, WEBHOOK_SECRET), scope.organizationId, id],
      );
      return { ...toResponse(row!), secret };
    });
  },

  /** A `webhook.ping` delivery, sent now (through the queue, signed and logged like any other). */
  async ping(db: Db, scope: Scope, queues: Pick<Queues, 'webhookDelivery'>, id: string) {
    const hook = await getRow(db, scope, id);
    const deliveryId = randomUUID();
    const payload = { type: 'webhook.ping', timestamp: new Date().toISOString(), data: { webhook_id: hook.id, name: hook.name } };
    await db.query(
      `insert into webhook_deliveries (id, webhook_id, organization_id, type, payload, next_attempt_at) values (?, ?, ?, 'webhook.ping', ?::jsonb, now())`,
      [deliveryId, id, scope.organizationId, payload],
    );
    await enqueueDeliveries(queues, [{ id: deliveryId, organizationId: scope.organizationId, attempt: 0 }]);
    return { id: hook.id as string, delivery_id: deliveryId };
  },

  async deliveries(db: Db, scope: Scope, id: string, q: { limit: number; offset: number; status?: string }) {
    await getRow(db, scope, id);
    const where = ['d.organization_id = ?', 'd.webhook_id = ?'];
    const params: unknown[] = [scope.organizationId, id];
    if (q.status) {
      where.push('d.status = ?');
      params.push(q.status);
    }
    const [rows, count] = await Promise.all([
      db.query(
        `select d.id, d.webhook_id, d.event_id::text as event_id, d.type, d.status, d.attempts, d.next_attempt_at, d.last_status_code, d.created_at, d.delivered_at,
                coalesce((select jsonb_agg(jsonb_build_object('attempt', a.attempt, 'started_at', a.started_at, 'status_code', a.status_code, 'latency_ms', a.latency_ms,
                                                              'error', a.error, 'response_excerpt', a.response_excerpt) order by a.attempt)
                          from webhook_attempts a where a.organization_id = d.organization_id and a.delivery_id = d.id), '[]') as attempt_log
         from webhook_deliveries d where ${where.join(' and ')} order by d.created_at desc, d.id limit ? offset ?`,
        [...params, q.limit || 50, q.offset],
      ),
      db.one<{ n: string }>(`select count(*) as n from webhook_deliveries d where ${where.join(' and ')}`, params),
    ]);
    const items = rows.map((r) => ({
      ...toResponse(r), next_attempt_at: isoTimestamp(r.next_attempt_at), delivered_at: isoTimestamp(r.delivered_at),
      attempt_log: (r.attempt_log as Row[]).map((a) => ({ ...a, started_at: isoTimestamp(a.started_at) })),
    }));
    return Page.of(items, Number(count!.n), q.limit || 50, q.offset);
  },

  /** Sends one delivery again (same webhook-id: receivers dedupe), whatever its state. */
  async redeliver(db: Db, scope: Scope, queues: Pick<Queues, 'webhookDelivery'>, id: string, deliveryId: string) {
    await getRow(db, scope, id);
    const row = await db.one<{ id: string; attempts: number }>(
      `update webhook_deliveries set status = 'pending', next_attempt_at = now() where organization_id = ? and id = ? and webhook_id = ? returning id, attempts`,
      [scope.organizationId, deliveryId, id],
    );
    if (!row) throw notFound('Webhook delivery', deliveryId);
    await enqueueDeliveries(queues, [{ id: row.id, organizationId: scope.organizationId, attempt: row.attempts }]);
    return { redelivered: 1 };
  },

  /** Sends again every delivery of the endpoint that failed since an instant. */
  async redeliverFailed(db: Db, scope: Scope, queues: Pick<Queues, 'webhookDelivery'>, id: string, since: string) {
    await getRow(db, scope, id);
    const rows = await db.query<{ id: string; attempts: number }>(
      `update webhook_deliveries set status = 'pending', next_attempt_at = now()
       where organization_id = ? and webhook_id = ? and status = 'failed' and created_at >= ?::timestamptz returning id, attempts`,
      [scope.organizationId, id, since],
    );
    await enqueueDeliveries(queues, rows.map((r) => ({ id: r.id, organizationId: scope.organizationId, attempt: r.attempts })));
    return { redelivered: rows.length };
  },
};
