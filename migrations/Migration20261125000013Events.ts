import { Migration } from '@mikro-orm/migrations';

/**
 * Events (issue 13): every committed change of an inventory entity, derived in the database.
 *
 * - Statement-level triggers on every history-bearing table write `event_outbox` rows in the
 *   writer's own transaction (so a rolled-back change leaves none, and no code path can change an
 *   entity without one): `<entity>.created|updated|deleted`, `changes` = `{column: [before, after]}`
 *   without the columns that never make a history state (last_seen_at, …), the actor and batch read
 *   from transaction settings (`netinv.actor_type`, `netinv.actor_id`, `netinv.batch_id`, set by
 *   src/core/db.ts; a transaction without a batch gets one of its own).
 * - Outbox ids are not commit order (a transaction that started first may commit last), so a
 *   sequencer (`events_sequence()`, one at a time under an advisory lock) moves committed outbox
 *   rows into `events` with ids from a sequence: an event's id is greater than every id visible
 *   before it committed, so a reader's cursor never skips an event that commits later.
 * - The outbox trigger NOTIFYs `netinv_outbox` (delivered at commit); the sequencer NOTIFYs
 *   `netinv_events` with the last id, which the SSE streams and the webhook dispatcher listen to.
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

const EVENT_COLUMNS = `
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
  data jsonb not null`;

export class Migration20261125000013Events extends Migration {
  override up(): void {
    this.addSql(`create table event_outbox (seq bigserial primary key,${EVENT_COLUMNS})`);
    this.addSql(`create sequence events_id_seq`);
    this.addSql(`create table events (id bigint primary key,${EVENT_COLUMNS})`);
    this.addSql(`create index events_org_idx on events (organization_id, id)`);
    this.addSql(`create index events_entity_idx on events (entity_id, id)`);
    // The highest id the retention job deleted: an older cursor is answered 410.
    this.addSql(`create table event_retention (pruned_through bigint not null, pruned_at timestamptz not null default now())`);

    // Arguments: entity name, the row's JSON key holding its network ('' = none), ignored columns.
    this.addSql(`
create function events_capture() returns trigger language plpgsql as $$
declare
  entity text := TG_ARGV[0];
  network_key text := nullif(TG_ARGV[1], '');
  ignored text[] := TG_ARGV[2]::text[] || array['updated_at', 'valid_from', 'lineage_id'];
  actor_type text := coalesce(nullif(current_setting('netinv.actor_type', true), ''), 'system');
  actor_id uuid := nullif(current_setting('netinv.actor_id', true), '')::uuid;
  batch uuid := nullif(current_setting('netinv.batch_id', true), '')::uuid;
  written bigint;
begin
  if batch is null then
    batch := gen_random_uuid();
    perform set_config('netinv.batch_id', batch::text, true);
  end if;
  -- Static statements: PL/pgSQL compiles this function once per table it is a trigger of, so each
  -- table's statements are planned once per connection (EXECUTE would plan them at every call).
  if TG_OP = 'INSERT' then
    insert into event_outbox (type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, data)
    select entity || '.created', now(), (x.j ->> 'organization_id')::uuid, (x.j ->> network_key)::uuid, entity, (x.j ->> 'id')::uuid, actor_type, actor_id, batch, x.j - 'valid_from'
    from (select to_jsonb(r) as j from events_new r) x;
  elsif TG_OP = 'DELETE' then
    insert into event_outbox (type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, data)
    select entity || '.deleted', now(), (x.j ->> 'organization_id')::uuid, (x.j ->> network_key)::uuid, entity, (x.j ->> 'id')::uuid, actor_type, actor_id, batch, x.j - 'valid_from'
    from (select to_jsonb(r) as j from events_old r) x;
  else
    -- One updated event per row whose tracked columns changed; a daemon whose reachability
    -- changed also gets daemon.unreachable / daemon.reachable.
    insert into event_outbox (type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, changes, data)
    select t.type, now(), (c.j ->> 'organization_id')::uuid, (c.j ->> network_key)::uuid, entity, (c.j ->> 'id')::uuid, actor_type, actor_id, batch, c.changes, c.j - 'valid_from'
    from (select x.j, d.changes
            from (select to_jsonb(r) as j, to_jsonb(o) as oj from events_new r join events_old o on o.id = r.id) x
            cross join lateral (
              select jsonb_object_agg(k.key, jsonb_build_array(x.oj -> k.key, k.value)) as changes
              from jsonb_each(x.j) k where k.key <> all (ignored) and (x.oj -> k.key) is distinct from k.value) d
           where d.changes is not null) c
    cross join lateral (
      select entity || '.updated' as type
      union all
      select case when (c.changes -> 'is_unreachable' ->> 1)::boolean then 'daemon.unreachable' else 'daemon.reachable' end
      where entity = 'daemon' and c.changes ? 'is_unreachable') t;
  end if;
  get diagnostics written = row_count;
  if written > 0 then
    perform pg_notify('netinv_outbox', '');
  end if;
  return null;
end $$`);

    // The sequencer: committed outbox rows, in outbox order, into events (at most max_rows a call).
    // Volatile target-list functions run after ORDER BY (PostgreSQL ≥ 9.6): ids follow seq.
    this.addSql(`
create function events_sequence(max_rows integer default 5000) returns bigint language plpgsql as $$
declare
  moved bigint;
  last_id bigint;
begin
  perform pg_advisory_xact_lock(hashtext('netinv.events_sequence'));
  with taken as (
    delete from event_outbox where seq in (select seq from event_outbox order by seq limit max_rows) returning *
  )
  insert into events (id, type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, changes, data)
  select nextval('events_id_seq'), type, occurred_at, organization_id, network_id, entity_type, entity_id, actor_type, actor_id, batch_id, changes, data
  from taken order by seq;
  get diagnostics moved = row_count;
  if moved > 0 then
    last_id := currval('events_id_seq');
    perform pg_notify('netinv_events', last_id::text);
  end if;
  return moved;
end $$`);

    for (const [table, entity, networkKey, volatile] of TABLES) {
      const args = `'${entity}', '${networkKey}', '{${volatile.join(',')}}'`;
      this.addSql(`create trigger events_insert after insert on ${table} referencing new table as events_new for each statement execute function events_capture(${args})`);
      this.addSql(`create trigger events_update after update on ${table} referencing old table as events_old new table as events_new for each statement execute function events_capture(${args})`);
      this.addSql(`create trigger events_delete after delete on ${table} referencing old table as events_old for each statement execute function events_capture(${args})`);
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
