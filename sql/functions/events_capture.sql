CREATE OR REPLACE FUNCTION public.events_capture()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
  return null;
end $function$;
