CREATE OR REPLACE FUNCTION public.history_record_volatile()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  cols text[] := TG_ARGV[1:];
begin
  execute format(
    'update %s h set (%s) = row(%s) from history_new_rows n where h.id = n.id and h.organization_id = n.organization_id and h.valid_to is null and row(%s) is distinct from row(%s)',
    TG_ARGV[0],
    (select string_agg(quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('n.' || quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('h.' || quote_ident(c), ', ') from unnest(cols) c),
    (select string_agg('n.' || quote_ident(c), ', ') from unnest(cols) c));
  return null;
end $function$;
