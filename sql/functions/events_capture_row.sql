CREATE OR REPLACE FUNCTION public.events_capture_row()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  actor_type text := coalesce(nullif(current_setting('netinv.actor_type', true), ''), 'system');
  actor_id uuid := nullif(current_setting('netinv.actor_id', true), '')::uuid;
  batch uuid := nullif(current_setting('netinv.batch_id', true), '')::uuid;
begin
  if TG_OP = 'UPDATE' and NEW.valid_from = OLD.valid_from then
    return null;
  end if;
  if batch is null then
    batch := gen_random_uuid();
    perform set_config('netinv.batch_id', batch::text, true);
  end if;
  if TG_OP = 'INSERT' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    values ('c', TG_ARGV[0], NEW.id, NEW.valid_from, actor_type, actor_id, batch);
  elsif TG_OP = 'DELETE' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    values ('d', TG_ARGV[0], OLD.id, OLD.valid_from, actor_type, actor_id, batch);
  else
    insert into event_outbox (op, entity, entity_id, state_from, prev_from, actor_type, actor_id, batch_id)
    values ('u', TG_ARGV[0], NEW.id, NEW.valid_from, OLD.valid_from, actor_type, actor_id, batch);
  end if;
  return null;
end $function$;
