import { Migration } from '@mikro-orm/migrations';

/**
 * Events (issue 13): every committed change of an inventory entity, derived from its history.
 *
 * - Statement-level triggers on every history-bearing table write one small `event_outbox` row
 *   per new history state, in the writer's own transaction (so a rolled-back change leaves none,
 *   and no code path can change an entity without one): created, updated (a new state: the
 *   columns that make no state, last_seen_at…, make no event) or deleted, with the actor and batch
 *   read from transaction settings (`netinv.actor_type`, `netinv.actor_id`, `netinv.batch_id`, set
 *   by src/core/db.ts; a transaction without a batch gets one of its own). The row names the
 *   state (entity id, valid_from); the event's data and its `changes {column: [before, after]}`
 *   are read from the history tables when the event is sequenced, off the writer's path.
 * - Outbox ids are not commit order (a transaction that started first may commit last), so a
 *   sequencer (`events_sequence()`, one at a time under an advisory lock) turns committed outbox
 *   rows into `events` with ids from a sequence: an event's id is greater than every id visible
 *   before it committed, so a reader's cursor never skips an event that commits later. An entity
 *   created and deleted in one transaction left no state, so it yields no event either.
 * - The outbox trigger NOTIFYs `netinv_outbox` (delivered at commit); the sequencer NOTIFYs
 *   `netinv_events` with the last id, which the SSE streams and the webhook dispatcher listen to.
 * - Events no table write yields (a version status, a disabled webhook) go into the outbox whole
 *   (op 'x', src/modules/events/service.ts recordEvent).
 */
const TABLES: Array<[table: string, entity: string, networkKey: string, volatile: string[]]> = [
  ['networks', 'network', 'id', []],
  ['tags', 'tag', '', []],
  ['subnets', 'subnet', 'network_id', []],
  ['hosts', 'host', 'network_id', ['last_seen_at', 'last_discovery_id']],
  ['ip_addresses', 'ip_address', 'network_id', ['last_seen_at', 'last_discovery_id']],
  ['ports', 'port', 'network_id', ['last_seen_at', 'last_discovery_id']],
  ['services', 'service', 'network_id', ['last_seen_at', 'last_discovery_id']],
  ['bindings', 'binding', 'network_id', ['last_seen_at', 'last_discovery_id']],
  ['interfaces', 'interface', 'network_id', ['last_seen_at', 'last_discovery_id']],
  ['dependencies', 'dependency', 'network_id', []],
  ['daemons', 'daemon', 'network_id', ['last_seen', 'consecutive_failures']],
];

const list = (items: string[]) => `array[${items.map((c) => `'${c}'`).join(', ')}]::text[]`;

/** One arm of the sequencer's union: the outbox rows of one table, with their states read from its history. */
const fromHistory = ([table, entity, networkKey, volatile]: (typeof TABLES)[number]) => `
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, '${entity}' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, ${networkKey ? `h.${networkKey}` : 'null::uuid'} as network_id,
           h.organization_id, ${list([...volatile, 'updated_at', 'valid_from', 'valid_to', 'lineage_id'])} as ignored
    from taken o
    join ${table}_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join ${table}_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = '${entity}'`;

export class Migration20261125000013Events extends Migration {
  override up(): void {
    // op: c(reated), u(pdated), d(eleted) name a history state (and u its previous one); x carries a whole event.
    this.addSql(`
create table event_outbox (
  seq bigserial primary key,
  op char(1) not null check (op in ('c', 'u', 'd', 'x')),
  occurred_at timestamptz not null default now(),
  entity varchar(30) not null,
  entity_id uuid not null,
  state_from timestamptz,
  prev_from timestamptz,
  actor_type varchar(10) not null,
  actor_id uuid,
  batch_id uuid not null,
  event jsonb
)`);
    this.addSql(`create sequence events_id_seq`);
    this.addSql(`
create table events (
  id bigint primary key,
  type varchar(60) not null,
  occurred_at timestamptz not null,
  organization_id uuid not null,
  network_id uuid,
  entity_type varchar(30) not null,
  entity_id uuid not null,
  actor_type varchar(10) not null,
  actor_id uuid,
  batch_id uuid not null,
  changes jsonb not null default '{}',
  data jsonb not null
)`);
    this.addSql(`create index events_org_idx on events (organization_id, id)`);
    this.addSql(`create index events_entity_idx on events (entity_id, id)`);
    // The highest id the retention job deleted: an older cursor is answered 410.
    this.addSql(`create table event_retention (pruned_through bigint not null, pruned_at timestamptz not null default now())`);

    // Argument: the entity name. Static statements: PL/pgSQL compiles this function once per table
    // it is a trigger of, so each table's statements are planned once per connection.
    this.addSql(`
create function events_capture() returns trigger language plpgsql as $$
declare
  entity text := TG_ARGV[0];
  actor_type text := coalesce(nullif(current_setting('netinv.actor_type', true), ''), 'system');
  actor_id uuid := nullif(current_setting('netinv.actor_id', true), '')::uuid;
  batch uuid := nullif(current_setting('netinv.batch_id', true), '')::uuid;
  written bigint;
begin
  if batch is null then
    batch := gen_random_uuid();
    perform set_config('netinv.batch_id', batch::text, true);
  end if;
  if TG_OP = 'INSERT' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    select 'c', entity, r.id, r.valid_from, actor_type, actor_id, batch from events_new r;
  elsif TG_OP = 'DELETE' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    select 'd', entity, r.id, r.valid_from, actor_type, actor_id, batch from events_old r;
  else
    -- A new state only (history_stamp moves valid_from when a tracked column changed; a second
    -- write in the same transaction rewrites the state this transaction already made).
    insert into event_outbox (op, entity, entity_id, state_from, prev_from, actor_type, actor_id, batch_id)
    select 'u', entity, n.id, n.valid_from, o.valid_from, actor_type, actor_id, batch
    from events_new n join events_old o on o.id = n.id where n.valid_from <> o.valid_from;
  end if;
  get diagnostics written = row_count;
  if written > 0 then
    perform pg_notify('netinv_outbox', '');
  end if;
  return null;
end $$`);

    // The sequencer: committed outbox rows, in outbox order, into events (at most max_rows a call),
    // each with its state read from history. Volatile target-list functions run after ORDER BY
    // (PostgreSQL ≥ 9.6): ids follow seq. A daemon whose reachability changed also gets
    // daemon.unreachable / daemon.reachable.
    this.addSql(`
create function events_sequence(max_rows integer default 5000) returns bigint language plpgsql as $$
declare
  moved bigint;
  last_id bigint;
begin
  perform pg_advisory_xact_lock(hashtext('netinv.events_sequence'));
  with taken as (
    delete from event_outbox where seq in (select seq from event_outbox order by seq limit max_rows) returning *
  ),
  states as (${TABLES.map(fromHistory).join('\n    union all')}
  ),
  built as (
    select s.seq, s.occurred_at, s.organization_id, s.network_id, s.entity, s.entity_id, s.actor_type, s.actor_id, s.batch_id, s.j,
           case s.op when 'c' then '.created' when 'd' then '.deleted' else '.updated' end as suffix,
           case when s.op = 'u' then coalesce((
             select jsonb_object_agg(k.key, jsonb_build_array(s.pj -> k.key, k.value))
             from jsonb_each(s.j) k where k.key <> all (s.ignored) and (s.pj -> k.key) is distinct from k.value), '{}'::jsonb)
           else '{}'::jsonb end as changes
    from states s
  ),
  rows as (
    select b.seq, 0 as sub, b.entity || b.suffix as type, b.occurred_at, b.organization_id, b.network_id, b.entity, b.entity_id,
           b.actor_type, b.actor_id, b.batch_id, b.changes, b.j as data
    from built b where b.suffix <> '.updated' or b.changes <> '{}'::jsonb
    union all
    select b.seq, 1, case when (b.changes -> 'is_unreachable' ->> 1)::boolean then 'daemon.unreachable' else 'daemon.reachable' end,
           b.occurred_at, b.organization_id, b.network_id, b.entity, b.entity_id, b.actor_type, b.actor_id, b.batch_id, b.changes, b.j
    from built b where b.entity = 'daemon' and b.changes ? 'is_unreachable'
    union all
    select t.seq, 0, t.event ->> 'type', t.occurred_at, (t.event ->> 'organization_id')::uuid, (t.event ->> 'network_id')::uuid, t.entity, t.entity_id,
           t.actor_type, t.actor_id, t.batch_id, coalesce(t.event -> 'changes', '{}'::jsonb), t.event -> 'data'
    from taken t where t.op = 'x'
  )
  insert into events (id, type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, changes, data)
  select nextval('events_id_seq'), type, occurred_at, organization_id, network_id, entity, entity_id, actor_type, actor_id, batch_id, changes, data
  from rows order by seq, sub;
  get diagnostics moved = row_count;
  if moved > 0 then
    last_id := currval('events_id_seq');
    perform pg_notify('netinv_events', last_id::text);
  end if;
  return moved;
end $$`);

    for (const [table, entity] of TABLES) {
      this.addSql(`create trigger events_insert after insert on ${table} referencing new table as events_new for each statement execute function events_capture('${entity}')`);
      this.addSql(`create trigger events_update after update on ${table} referencing old table as events_old new table as events_new for each statement execute function events_capture('${entity}')`);
      this.addSql(`create trigger events_delete after delete on ${table} referencing old table as events_old for each statement execute function events_capture('${entity}')`);
    }

    // ---- Webhooks ------------------------------------------------------------------------------
    this.addSql(`
create table webhooks (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  name varchar(100) not null,
  url text not null,
  event_types text[] not null default '{}',
  network_ids uuid[],
  enabled boolean not null default true,
  secret text not null,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  disabled_reason varchar(40),
  failing_since timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
)`);
    this.addSql(`create index webhooks_org_idx on webhooks (organization_id, created_at, id)`);
    // One message per (endpoint, event): its id is the webhook-id header, the same on every attempt.
    this.addSql(`
create table webhook_deliveries (
  id uuid primary key,
  webhook_id uuid not null references webhooks(id) on delete cascade,
  event_id bigint,
  type varchar(60) not null,
  payload jsonb not null,
  status varchar(10) not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_status_code integer,
  created_at timestamptz not null default now(),
  delivered_at timestamptz,
  constraint webhook_deliveries_event_uq unique (webhook_id, event_id)
)`);
    this.addSql(`create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'pending'`);
    this.addSql(`create index webhook_deliveries_webhook_idx on webhook_deliveries (webhook_id, created_at desc, id)`);
    this.addSql(`
create table webhook_attempts (
  id bigserial primary key,
  delivery_id uuid not null references webhook_deliveries(id) on delete cascade,
  attempt integer not null,
  started_at timestamptz not null,
  status_code integer,
  latency_ms integer not null,
  error text,
  response_excerpt text
)`);
    this.addSql(`create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id, attempt)`);
    // The dispatcher's cursor: the last event turned into deliveries (absent = from the start).
    this.addSql(`create table webhook_dispatch_cursor (singleton boolean primary key default true check (singleton), last_event_id bigint not null)`);
  }
}
