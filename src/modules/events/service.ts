// The change feed: events read in commit order after a cursor, filtered to what the
// caller may see. Events are written by the database itself (migration 13: outbox triggers and
// the sequencer); this module reads them, sequences the outbox when a reader is ahead of the
// sequencer, records the few events no table write yields, and applies retention.
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import { AppError, accessDenied, notFound } from '../../core/errors.js';
import { isoTimestamp } from '../../core/historyTable.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { readableEntityTypes, withoutSecrets } from './access.js';

export interface EventFilter {
  networkId?: string;
  types?: string[];
  entityId?: string;
}

export interface EventRow {
  id: string;
  type: string;
  occurred_at: unknown;
  organization_id: string;
  network_id: string | null;
  entity_type: string;
  entity_id: string;
  actor_type: string;
  actor_id: string | null;
  batch_id: string;
  changes: Record<string, [unknown, unknown]>;
  data: Record<string, unknown>;
}

export type Event = ReturnType<typeof eventResponse>;

const isTimeKey = (k: string) => k.endsWith('_at') || k === 'last_seen' || k === 'valid_from';
const timeOf = (v: unknown) => (typeof v === 'string' ? isoTimestamp(v) : v);

/** An event in API shape: timestamps as the API writes them everywhere else, no secret (access.ts). */
export function eventResponse(row: EventRow) {
  const data = Object.fromEntries(Object.entries(withoutSecrets(row.entity_type, row.data)).map(([k, v]) => [k, isTimeKey(k) ? timeOf(v) : v]));
  const changes = Object.fromEntries(Object.entries(withoutSecrets(row.entity_type, row.changes)).map(([k, pair]) => [k, isTimeKey(k) ? pair.map(timeOf) : pair]));
  return {
    id: String(row.id),
    type: row.type,
    occurred_at: isoTimestamp(row.occurred_at),
    organization_id: row.organization_id,
    network_id: row.network_id,
    entity_type: row.entity_type,
    entity_id: row.entity_id,
    actor: { type: row.actor_type, id: row.actor_id },
    batch_id: row.batch_id,
    changes,
    data,
  };
}

/** The filter's network, as on every list: another organization's (or none) is 404, one outside the caller's networks 403. */
export async function checkFilter(db: Db, scope: Scope, filter: EventFilter): Promise<void> {
  if (!filter.networkId) return;
  const known = await db.one('select 1 from networks_history where id = ? and organization_id = ? limit 1', [filter.networkId, scope.organizationId]);
  if (!known) throw notFound('Network', filter.networkId);
  if (!canSeeNetwork(scope, filter.networkId)) throw accessDenied('Network', filter.networkId);
}

/**
 * SQL over alias `e` for what a caller sees: its organization; the kinds of entity it may read
 * (access.ts); then the networks it sees (an Owner/Admin without a key limit: all, including
 * deleted ones); organization-wide events (tags) except for a key limited to some networks; then
 * the request's own filters. The feed, the stream (visibleTo) and the webhooks (webhookAudience)
 * all apply this one rule.
 */
export function visibleWhere(scope: Scope, filter: EventFilter): [string, unknown[]] {
  const where = ['e.organization_id = ?', 'e.entity_type = any(?::text[])'];
  const params: unknown[] = [scope.organizationId, readableEntityTypes(scope)];
  if (!scope.allNetworks) {
    where.push(scope.keyLimitedToNetworks ? 'e.network_id = any(?::uuid[])' : '(e.network_id = any(?::uuid[]) or e.network_id is null)');
    params.push([...scope.networkIds]);
  }
  if (filter.networkId) {
    where.push('e.network_id = ?');
    params.push(filter.networkId);
  }
  if (filter.entityId) {
    where.push('e.entity_id = ?');
    params.push(filter.entityId);
  }
  if (filter.types?.length && !filter.types.includes('*')) {
    where.push('e.type like any(?::text[])');
    params.push(filter.types.map((t) => t.replace(/_/g, '\\_').replace('*', '%')));
  }
  return [where.join(' and '), params];
}

/** The same predicate in memory, for events already read (the stream's fan-out). */
export function visibleTo(scope: Scope, filter: EventFilter, e: Event): boolean {
  if (e.organization_id !== scope.organizationId) return false;
  if (!readableEntityTypes(scope).includes(e.entity_type)) return false;
  if (!scope.allNetworks) {
    if (e.network_id === null ? scope.keyLimitedToNetworks : !scope.networkIds.has(e.network_id)) return false;
  }
  if (filter.networkId && e.network_id !== filter.networkId) return false;
  if (filter.entityId && e.entity_id !== filter.entityId) return false;
  return !filter.types?.length || typeMatches(filter.types, e.type);
}

/**
 * A webhook endpoint as a reader of events: its organization's Admins manage it and read its
 * deliveries, so it gets what an Admin's API key gets, limited to its networks when it lists some.
 */
export function webhookAudience(w: { organization_id: string; network_ids: string[] | null }): Scope {
  return {
    kind: 'api_key', organizationId: w.organization_id, userId: '', role: 'Admin',
    networkIds: new Set(w.network_ids ?? []), allNetworks: w.network_ids === null, keyLimitedToNetworks: w.network_ids !== null,
  };
}

/** Whether a type is one of the patterns (`*`, `host.*`, `host.created`): the in-memory twin of the SQL LIKE. */
export function typeMatches(patterns: string[], type: string): boolean {
  return patterns.some((t) => t === '*' || t === type || (t.endsWith('.*') && type.startsWith(t.slice(0, -1))));
}

/**
 * Moves committed outbox rows into the feed (the sequencer of migration 13), until none is left.
 * Any process may call it: calls are serialised by the function's advisory lock.
 */
export async function sequenceEvents(db: Db, batch = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const row = await db.one<{ n: string }>('select events_sequence(?) as n', [batch]);
    const n = Number(row!.n);
    total += n;
    if (n < batch) return total;
  }
}

/** A cursor older than what retention kept: the client has missed events and must resync. */
export async function assertCursorKept(db: Db, after: string): Promise<void> {
  const row = await db.one<{ pruned_through: string | null }>('select max(pruned_through) as pruned_through from event_retention');
  if (row?.pruned_through && BigInt(after) < BigInt(row.pruned_through)) {
    throw new AppError('event_cursor_expired', { after, oldest: String(BigInt(row.pruned_through) + 1n) });
  }
}

export async function listEvents(db: Db, scope: Scope, filter: EventFilter, after: string, limit: number) {
  await checkFilter(db, scope, filter);
  await assertCursorKept(db, after);
  // Read-your-writes: a change committed before this request is in the feed even if no
  // sequencer has run since.
  await sequencePending(db);
  return readEvents(db, scope, filter, after, limit);
}

export async function readEvents(db: Db, scope: Scope, filter: EventFilter, after: string, limit: number): Promise<{ events: Event[]; hasMore: boolean }> {
  const [where, params] = visibleWhere(scope, filter);
  const rows = await db.query<EventRow>(
    `select e.* from events e where e.id > ?::bigint and ${where} order by e.id limit ?`,
    [after, ...params, limit + 1],
  );
  return { events: rows.slice(0, limit).map(eventResponse), hasMore: rows.length > limit };
}

/**
 * One bounded batch of the outbox sequenced, for readers that want a fresh version cheaply (the
 * topology cache), not the whole backlog. A sequencer at work is waited for at most `waitMs`: the
 * one a write started in its own process after its commit (migration 21) is done in milliseconds,
 * a large backlog is not waited for.
 */
export async function sequenceSomeIfIdle(db: Db, batch = 1000, waitMs = 250): Promise<void> {
  const deadline = performance.now() + waitMs;
  while (await outboxPending(db)) {
    const ran = await db.transaction(async (tx) => {
      // The lock events_sequence() takes (migration 13); tried here first so that a busy sequencer is not queued behind.
      const lock = await tx.one<{ ok: boolean }>(`select pg_try_advisory_xact_lock(hashtext('netinv.events_sequence')) as ok`);
      if (lock?.ok) await tx.query('select events_sequence(?)', [batch]);
      return lock?.ok;
    });
    if (ran || performance.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sequences what is committed but not yet in the feed (almost always nothing: one index probe). */
export async function sequencePending(db: Db): Promise<void> {
  if (await outboxPending(db)) await sequenceEvents(db);
}

/**
 * Whether a committed change waits in the outbox. In index order: a sequential scan reads every
 * dead row a large batch left until autovacuum passes; the index scan marks them and skips them.
 */
export const OUTBOX_PENDING_SQL = '(select seq from event_outbox order by seq limit 1) is not null';
async function outboxPending(db: Db): Promise<boolean> {
  return (await db.one<{ pending: boolean }>(`select ${OUTBOX_PENDING_SQL} as pending`))!.pending;
}

/**
 * Where a stream without a cursor starts ("from now on"), everything committed included: the
 * organization's newest event id (read in its partition; no later event of it is older), or the
 * retention watermark when that is newer (an organization whose every event was pruned, or that has
 * none yet, would otherwise start before it and be told 410).
 */
export async function lastEventId(db: Db, organizationId: string): Promise<string> {
  await sequencePending(db);
  const row = await db.one<{ id: string | null }>(
    `select greatest((select max(id) from events where organization_id = ?), (select max(pruned_through) from event_retention)) as id`, [organizationId],
  );
  return String(row?.id ?? '0');
}

export interface RecordedEvent {
  type: string;
  organizationId: string;
  networkId: string | null;
  entityType: string;
  entityId: string;
  changes?: Record<string, [unknown, unknown]>;
  data: Record<string, unknown>;
}

/**
 * An event no table write yields (a daemon's version status changing with the policy, a webhook
 * disabled): written to the outbox like the triggers' own, in the caller's transaction (with no
 * NOTIFY, migration 21: the write wakes this process's hub after the commit, src/core/db.ts).
 */
export async function recordEvent(db: Db, e: RecordedEvent): Promise<void> {
  await db.query(
    `insert into event_outbox (op, entity, entity_id, actor_type, actor_id, batch_id, event)
     values ('x', ?, ?, ?, ?, coalesce(nullif(current_setting('netinv.batch_id', true), '')::uuid, gen_random_uuid()), ?::jsonb)`,
    [e.entityType, e.entityId, db.context.actor?.type ?? 'system', db.context.actor?.id ?? null,
      { type: e.type, organization_id: e.organizationId, network_id: e.networkId, changes: withoutSecrets(e.entityType, e.changes ?? {}), data: withoutSecrets(e.entityType, e.data) }],
  );
}

/**
 * Retention (EVENT_RETENTION_DAYS): events older than the window are deleted and the highest id
 * deleted is remembered, so an older cursor is told 410 rather than silently skipping.
 */
export async function pruneEvents(db: Db, retentionDays: number): Promise<number> {
  return db.transaction(async (tx) => {
    // Across organizations: the feed's ids are one sequence, and a cursor older than one watermark for all is told 410.
    const row = await tx.one<{ through: string | null }>(
      `${ACROSS_ORGANIZATIONS} select max(id) as through from events where occurred_at < now() - make_interval(days => ?)`, [retentionDays],
    );
    if (!row?.through) return 0;
    const deleted = await tx.one<{ n: string }>(
      `${ACROSS_ORGANIZATIONS} with d as (delete from events where id <= ?::bigint returning 1) select count(*) as n from d`, [row.through]);
    await tx.query(`insert into event_retention (pruned_through) values (?::bigint)`, [row.through]);
    return Number(deleted!.n);
  });
}
