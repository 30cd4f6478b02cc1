// Alert rules (CRUD, per network: read like the network, written by Admins) and the digests they
// made (listed newest first, acknowledged). Evaluation and delivery: ./evaluate.ts, ./email.ts,
// workers/alertDelivery.ts. Settings and notifications, not inventory: plain rows.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, accessDenied, invalidReference, notFound } from '../../core/errors.js';
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { Page } from '../../http/envelope.js';
import { describeItem, type AlertItem } from './evaluate.js';
import type { QuietHours } from './quietHours.js';
import { MAX_RULES_PER_NETWORK } from './schemas.js';

export interface AlertRuleInput {
  id?: string;
  network_id: string;
  kind: string;
  enabled: boolean;
  offline_delay_minutes: number;
  quiet_hours: QuietHours | null;
  webhook_ids: string[];
  email_to: string[];
}

const RULE_COLUMNS = 'id, organization_id, network_id, kind, enabled, offline_delay_minutes, quiet_hours, webhook_ids, email_to, created_at, updated_at';
const ALERT_COLUMNS = 'id, organization_id, network_id, session_id, items, held_until, created_at, acknowledged_at, acknowledged_by';

const ruleView = (r: Row) => ({ ...r, created_at: isoTimestamp(r.created_at), updated_at: isoTimestamp(r.updated_at) });
const alertView = (r: Row) => ({
  ...r, lines: (r.items as AlertItem[]).map(describeItem),
  held_until: isoTimestamp(r.held_until), created_at: isoTimestamp(r.created_at), acknowledged_at: isoTimestamp(r.acknowledged_at),
});

/** A network of the organization (404) that the caller may see (403). */
async function visibleNetwork(db: Db, scope: Scope, networkId: string): Promise<void> {
  const found = await db.one(`select id from networks where organization_id = ? and id = ?`, [scope.organizationId, networkId]);
  if (!found) throw notFound('Network', networkId);
  if (!canSeeNetwork(scope, networkId)) throw accessDenied('Network', networkId);
}

/** The networks a list may show: the one asked for (checked), else every network the caller sees. */
async function listedNetworks(db: Db, scope: Scope, networkId: string | undefined): Promise<{ where: string; params: unknown[] }> {
  if (networkId) {
    await visibleNetwork(db, scope, networkId);
    return { where: 'network_id = ?', params: [networkId] };
  }
  return scope.allNetworks ? { where: 'true', params: [] } : { where: 'network_id = any(?::uuid[])', params: [[...scope.networkIds]] };
}

/** A row of `table` of the organization whose network the caller sees (404 otherwise, as if absent). */
async function findVisible(db: Db, scope: Scope, table: 'alert_rules' | 'alerts', columns: string, id: string, entity: string, lock = false): Promise<Row> {
  const row = await db.one(`select ${columns} from ${table} where organization_id = ? and id = ?${lock ? ' for update' : ''}`, [scope.organizationId, id]);
  if (!row) throw notFound(entity, id);
  if (!canSeeNetwork(scope, row.network_id as string)) throw accessDenied(entity, id);
  return row;
}

/** The webhooks a rule names exist in the organization. */
async function checkChannels(db: Db, scope: Scope, input: AlertRuleInput): Promise<void> {
  if (!input.webhook_ids.length) return;
  const found = await db.query<{ id: string }>(`select id from webhooks where organization_id = ? and id = any(?::uuid[])`, [scope.organizationId, input.webhook_ids]);
  const missing = input.webhook_ids.find((id) => !found.some((f) => f.id === id));
  if (missing) throw invalidReference('Webhook', missing, 'webhook_ids');
}

export const alertRuleService = {
  async list(db: Db, scope: Scope, q: { limit: number; offset: number; network_id?: string }) {
    const { where, params } = await listedNetworks(db, scope, q.network_id);
    const limit = q.limit || 50;
    const [rows, count] = await Promise.all([
      db.query(`select ${RULE_COLUMNS} from alert_rules where organization_id = ? and ${where} order by created_at, id limit ? offset ?`,
        [scope.organizationId, ...params, limit, q.offset]),
      db.one<{ n: string }>(`select count(*) as n from alert_rules where organization_id = ? and ${where}`, [scope.organizationId, ...params]),
    ]);
    return Page.of(rows.map(ruleView), Number(count!.n), limit, q.offset);
  },

  async get(db: Db, scope: Scope, id: string) {
    return ruleView(await findVisible(db, scope, 'alert_rules', RULE_COLUMNS, id, 'AlertRule'));
  },

  async create(db: Db, scope: Scope, input: AlertRuleInput) {
    await visibleNetwork(db, scope, input.network_id);
    await checkChannels(db, scope, input);
    const count = await db.one<{ n: string }>(`select count(*) as n from alert_rules where organization_id = ? and network_id = ?`, [scope.organizationId, input.network_id]);
    if (Number(count!.n) >= MAX_RULES_PER_NETWORK) throw new AppError('validation_failed', { reason: `a network has at most ${MAX_RULES_PER_NETWORK} alert rules` });
    const row = await db.one(
      `insert into alert_rules (id, organization_id, network_id, kind, enabled, offline_delay_minutes, quiet_hours, webhook_ids, email_to)
       values (?, ?, ?, ?, ?, ?, ?::jsonb, ?::uuid[], ?::text[]) returning ${RULE_COLUMNS}`,
      [randomUUID(), scope.organizationId, input.network_id, input.kind, input.enabled, input.offline_delay_minutes,
        input.quiet_hours ? JSON.stringify(input.quiet_hours) : null, input.webhook_ids, input.email_to],
    );
    return ruleView(row!);
  },

  /** Replaces a rule's settings; its network stays (another network: 400). */
  async update(db: Db, scope: Scope, id: string, input: AlertRuleInput) {
    assertSameId(id, input.id);
    const current = await findVisible(db, scope, 'alert_rules', RULE_COLUMNS, id, 'AlertRule');
    if (current.network_id !== input.network_id) throw new AppError('validation_failed', { reason: 'an alert rule stays in its network (network_id cannot change)' });
    await checkChannels(db, scope, input);
    const row = await db.one(
      `update alert_rules set kind = ?, enabled = ?, offline_delay_minutes = ?, quiet_hours = ?::jsonb, webhook_ids = ?::uuid[], email_to = ?::text[], updated_at = now()
       where organization_id = ? and id = ? returning ${RULE_COLUMNS}`,
      [input.kind, input.enabled, input.offline_delay_minutes, input.quiet_hours ? JSON.stringify(input.quiet_hours) : null, input.webhook_ids, input.email_to,
        scope.organizationId, id],
    );
    return ruleView(row!);
  },

  async remove(db: Db, scope: Scope, id: string) {
    await findVisible(db, scope, 'alert_rules', RULE_COLUMNS, id, 'AlertRule');
    await db.query(`delete from alert_rules where organization_id = ? and id = ?`, [scope.organizationId, id]);
    return null;
  },
};

export const alertService = {
  /** Digests newest first (the Changes page). */
  async list(db: Db, scope: Scope, q: { limit: number; offset: number; network_id?: string; acknowledged?: boolean }) {
    const { where, params } = await listedNetworks(db, scope, q.network_id);
    const ack = q.acknowledged === undefined ? '' : q.acknowledged ? ' and acknowledged_at is not null' : ' and acknowledged_at is null';
    const limit = q.limit || 50;
    const [rows, count] = await Promise.all([
      db.query(`select ${ALERT_COLUMNS} from alerts where organization_id = ? and ${where}${ack} order by created_at desc, id limit ? offset ?`,
        [scope.organizationId, ...params, limit, q.offset]),
      db.one<{ n: string }>(`select count(*) as n from alerts where organization_id = ? and ${where}${ack}`, [scope.organizationId, ...params]),
    ]);
    return Page.of(rows.map(alertView), Number(count!.n), limit, q.offset);
  },

  async get(db: Db, scope: Scope, id: string) {
    return alertView(await findVisible(db, scope, 'alerts', ALERT_COLUMNS, id, 'Alert'));
  },

  /** Marks a digest seen, by whom; acknowledging again keeps the first time. */
  async acknowledge(db: Db, scope: Scope, id: string) {
    await findVisible(db, scope, 'alerts', ALERT_COLUMNS, id, 'Alert');
    const row = await db.one(
      `update alerts set acknowledged_at = coalesce(acknowledged_at, now()), acknowledged_by = coalesce(acknowledged_by, ?)
       where organization_id = ? and id = ? returning ${ALERT_COLUMNS}`,
      [scope.kind === 'session' ? scope.userId : null, scope.organizationId, id]);
    return alertView(row!);
  },
};
