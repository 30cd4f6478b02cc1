CREATE OR REPLACE FUNCTION public.organization_from_parent()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if NEW.organization_id is null then
    execute format('select organization_id from %s where id = $1', TG_ARGV[0]) into NEW.organization_id using (to_jsonb(NEW) ->> TG_ARGV[1])::uuid;
  end if;
  return NEW;
end $function$;
