CREATE OR REPLACE FUNCTION public.events_triggers(tbl text, entity text, mode text DEFAULT NULL::text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  per_row boolean := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
begin
  execute format('drop trigger if exists events_insert on %I', tbl);
  execute format('drop trigger if exists events_update on %I', tbl);
  execute format('drop trigger if exists events_delete on %I', tbl);
  if per_row then
    execute format('create trigger events_insert after insert on %I for each row execute function events_capture_row(%L)', tbl, entity);
    execute format('create trigger events_update after update on %I for each row when (old.valid_from is distinct from new.valid_from) execute function events_capture_row(%L)', tbl, entity);
    execute format('create trigger events_delete after delete on %I for each row execute function events_capture_row(%L)', tbl, entity);
  else
    execute format('create trigger events_insert after insert on %I referencing new table as events_new for each statement execute function events_capture(%L)', tbl, entity);
    execute format('create trigger events_update after update on %I referencing old table as events_old new table as events_new for each statement execute function events_capture(%L)', tbl, entity);
    execute format('create trigger events_delete after delete on %I referencing old table as events_old for each statement execute function events_capture(%L)', tbl, entity);
  end if;
end $function$;
