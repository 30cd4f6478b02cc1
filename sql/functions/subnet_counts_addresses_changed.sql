CREATE OR REPLACE FUNCTION public.subnet_counts_addresses_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  org uuid[]; net uuid[]; host uuid[]; subnet uuid[]; d int[];
begin
  if TG_LEVEL = 'STATEMENT' then
    if TG_OP = 'INSERT' then
      select array_agg(organization_id), array_agg(network_id), array_agg(host_id), array_agg(subnet_id), array_agg(1)
        into org, net, host, subnet, d from subnet_counts_new;
    else
      select array_agg(organization_id), array_agg(network_id), array_agg(host_id), array_agg(subnet_id), array_agg(-1)
        into org, net, host, subnet, d from subnet_counts_old;
    end if;
    if org is not null then perform subnet_counts_addresses(org, net, host, subnet, d, true); end if;
    return null;
  end if;
  if TG_OP = 'INSERT' then
    -- An upsert (INSERT … ON CONFLICT (id, organization_id) DO UPDATE, as ingest writes) fires this
    -- for a stored id too: that row is updated, not inserted (the update trigger counts a move).
    if exists (select 1 from ip_addresses a where a.organization_id = NEW.organization_id and a.id = NEW.id) then return NEW; end if;
    perform subnet_counts_addresses(array[NEW.organization_id], array[NEW.network_id], array[NEW.host_id], array[NEW.subnet_id], array[1], false);
    return NEW;
  elsif TG_OP = 'DELETE' then
    perform subnet_counts_addresses(array[OLD.organization_id], array[OLD.network_id], array[OLD.host_id], array[OLD.subnet_id], array[-1], false);
    return OLD;
  end if;
  perform subnet_counts_addresses(array[OLD.organization_id, NEW.organization_id], array[OLD.network_id, NEW.network_id],
                                  array[OLD.host_id, NEW.host_id], array[OLD.subnet_id, NEW.subnet_id], array[-1, 1], false);
  return NEW;
end $function$;
