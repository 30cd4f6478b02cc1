CREATE OR REPLACE FUNCTION public.events_sequence(max_rows integer DEFAULT 5000)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
declare
  moved bigint;
  last_id bigint;
begin
  perform pg_advisory_xact_lock(hashtext('netinv.events_sequence'));
  with taken as (
    delete from event_outbox where seq in (select seq from event_outbox order by seq limit max_rows) returning *
  ),
  states as (
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'network' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.id as network_id,
           h.organization_id, array['updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join networks_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join networks_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'network'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'tag' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, null::uuid as network_id,
           h.organization_id, array['updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join tags_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join tags_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'tag'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'subnet' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join subnets_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join subnets_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'subnet'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'host' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join hosts_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join hosts_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'host'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'ip_address' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join ip_addresses_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join ip_addresses_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'ip_address'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'port' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join ports_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join ports_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'port'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'service' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join services_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join services_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'service'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'binding' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join bindings_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join bindings_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'binding'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'interface' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join interfaces_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join interfaces_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'interface'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'dependency' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join dependencies_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join dependencies_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'dependency'
    union all
    select o.seq, o.op, o.occurred_at, o.entity_id, o.actor_type, o.actor_id, o.batch_id, 'daemon' as entity,
           to_jsonb(h) - array['valid_from', 'valid_to'] as j, to_jsonb(p) as pj, h.network_id as network_id,
           h.organization_id, array['last_seen', 'consecutive_failures', 'updated_at', 'valid_from', 'valid_to', 'lineage_id']::text[] as ignored
    from taken o
    join daemons_history h on h.id = o.entity_id and h.valid_from = o.state_from
    left join daemons_history p on o.op = 'u' and p.id = o.entity_id and p.valid_from = o.prev_from
    where o.entity = 'daemon'
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
end $function$;
