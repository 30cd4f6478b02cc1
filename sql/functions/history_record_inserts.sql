CREATE OR REPLACE FUNCTION public.history_record_inserts()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  execute format('insert into %s (%s) select %s from history_new_rows n', TG_ARGV[0], TG_ARGV[1], TG_ARGV[1]);
  return null;
end $function$;
