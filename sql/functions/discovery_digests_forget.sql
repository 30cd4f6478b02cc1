CREATE OR REPLACE FUNCTION public.discovery_digests_forget()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  kind text := TG_ARGV[0];
begin
  if kind = 'hosts' then
    delete from host_discovery_digests where host_id = NEW.id;
    return null;
  elsif kind = 'bindings' then
    delete from host_discovery_digests d using digest_changed_rows c, services s
     where s.id = c.service_id and s.organization_id = c.organization_id and d.host_id = s.host_id;
  else
    delete from host_discovery_digests d using digest_changed_rows c where d.host_id = c.host_id;
  end if;
  if kind = 'ip_addresses' and TG_OP <> 'DELETE' then
    delete from host_discovery_digests where host_id in (
      select i.host_id from digest_changed_rows c join ip_addresses i on i.subnet_id = c.subnet_id and i.ip_address = c.ip_address and i.organization_id = c.organization_id where i.host_id <> c.host_id
      union
      select i.host_id from digest_changed_rows c join ip_addresses i on i.network_id = c.network_id and i.mac_address = c.mac_address and i.organization_id = c.organization_id where i.host_id <> c.host_id);
  end if;
  return null;
end $function$;
