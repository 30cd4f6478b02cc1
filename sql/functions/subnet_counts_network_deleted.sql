CREATE OR REPLACE FUNCTION public.subnet_counts_network_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  delete from subnet_counts where organization_id = OLD.organization_id and network_id = OLD.id;
  return null;
end $function$;
