CREATE OR REPLACE FUNCTION public.dependency_members_forget()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  kind text := TG_ARGV[0];
  field text := TG_ARGV[1];
begin
  update dependencies
     set members = jsonb_set(members, array[field], (members -> field) - OLD.id::text)
   where organization_id = OLD.organization_id and network_id = OLD.network_id and members ->> 'type' = kind and jsonb_exists(members -> field, OLD.id::text);
  return null;
end $function$;
