CREATE OR REPLACE FUNCTION public.history_record_volatile_row()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  cols text := (select string_agg(quote_ident(c), ', ') from unnest(TG_ARGV[1:]) c);
begin
  execute format('update %s h set (%s) = (select %s from (select ($1).*) n) where h.id = $2 and h.organization_id = $3 and h.valid_to is null', TG_ARGV[0], cols, cols)
    using NEW, NEW.id, NEW.organization_id;
  return null;
end $function$;
