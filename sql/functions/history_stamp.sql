CREATE OR REPLACE FUNCTION public.history_stamp()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  volatile_cols text[] := coalesce(TG_ARGV::text[], '{}') || array['updated_at', 'valid_from'];
begin
  if TG_OP = 'INSERT' then
    NEW.created_at := coalesce(NEW.created_at, now());
    NEW.valid_from := now();
    NEW.updated_at := NEW.valid_from;
    NEW.lineage_id := coalesce(NEW.lineage_id, NEW.id);
    return NEW;
  end if;
  NEW.id := OLD.id;
  NEW.created_at := OLD.created_at;
  NEW.lineage_id := coalesce(NEW.lineage_id, OLD.lineage_id);
  if (to_jsonb(NEW) - volatile_cols) = (to_jsonb(OLD) - volatile_cols) or OLD.valid_from = now() then
    -- Nothing that matters changed, or a second write in the same transaction: same state.
    NEW.valid_from := OLD.valid_from;
    NEW.updated_at := OLD.updated_at;
  else
    -- Strictly after the previous state even if a concurrent transaction that started later
    -- committed first: valid ranges of one entity never overlap, and updated_at always moves.
    NEW.valid_from := greatest(now(), OLD.valid_from + interval '1 microsecond');
    NEW.updated_at := NEW.valid_from;
  end if;
  return NEW;
end $function$;
