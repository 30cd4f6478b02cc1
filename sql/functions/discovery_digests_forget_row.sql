CREATE OR REPLACE FUNCTION public.discovery_digests_forget_row()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  kind text := TG_ARGV[0];
  r record;
begin
  if TG_OP = 'DELETE' then r := OLD; else r := NEW; end if;
  if kind = 'bindings' then
    delete from host_discovery_digests d using services s
     where s.id = r.service_id and s.organization_id = r.organization_id and d.host_id = s.host_id;
  else
    delete from host_discovery_digests where host_id = r.host_id;
  end if;
  if kind = 'ip_addresses' and TG_OP <> 'DELETE' then
    delete from host_discovery_digests where host_id in (
      select i.host_id from ip_addresses i where i.organization_id = r.organization_id and i.subnet_id = r.subnet_id and i.ip_address = r.ip_address and i.host_id <> r.host_id
      union
      select i.host_id from ip_addresses i where i.organization_id = r.organization_id and i.network_id = r.network_id and i.mac_address = r.mac_address and i.host_id <> r.host_id);
  end if;
  return null;
end $function$;
