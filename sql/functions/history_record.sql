CREATE OR REPLACE FUNCTION public.history_record()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  hist text := TG_ARGV[0];
  cols text := TG_ARGV[1];
  -- The volatile columns: the open state takes them from the live row when it closes.
  vols text := (select string_agg(quote_ident(c), ', ') from unnest(TG_ARGV[2:]) c);
  closing text;
begin
  if cols is null then
    raise exception 'history_record on %: needs the history table and its columns as arguments (history_triggers)', TG_RELID::regclass;
  end if;
  if TG_OP = 'UPDATE' and to_jsonb(NEW) = to_jsonb(OLD) then
    return null; -- an update that changes no column at all leaves the history alone
  end if;
  closing := case when vols is null then '' else format(', (%s) = (select %s from (select ($4).*) o)', vols, vols) end;
  if TG_OP in ('UPDATE', 'DELETE') then
    if OLD.valid_from = now() and TG_OP = 'DELETE' then
      -- Created (or changed) and deleted in one transaction: that state never was visible.
      execute format('delete from %s where id = $1 and organization_id = $2 and valid_to is null', hist) using OLD.id, OLD.organization_id;
      return null;
    elsif TG_OP = 'DELETE' then
      execute format('update %s set valid_to = greatest(now(), valid_from + interval ''1 microsecond'')%s where id = $1 and organization_id = $2 and valid_to is null', hist, closing)
        using OLD.id, OLD.organization_id, null::timestamptz, OLD;
      return null;
    elsif NEW.valid_from = OLD.valid_from then
      -- Same state (see history_stamp): replace the open state in place.
      execute format('delete from %s where id = $1 and organization_id = $2 and valid_to is null', hist) using OLD.id, OLD.organization_id;
    else
      execute format('update %s set valid_to = $3%s where id = $1 and organization_id = $2 and valid_to is null', hist, closing)
        using OLD.id, OLD.organization_id, NEW.valid_from, OLD;
    end if;
  end if;
  execute format('insert into %s (%s) select %s from (select ($1).*) n', hist, cols, cols) using NEW;
  return null;
end $function$;
