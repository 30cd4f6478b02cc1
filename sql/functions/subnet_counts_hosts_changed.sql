CREATE OR REPLACE FUNCTION public.subnet_counts_hosts_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if TG_LEVEL = 'STATEMENT' then
    -- inserted hosts: each one more host, and one without an address (its addresses come after it).
    insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
    select n.organization_id, n.network_id, null::uuid, null::uuid, n.hidden, 'h', count(*)::int
      from subnet_counts_new n group by n.organization_id, n.network_id, n.hidden
    union all
    select n.organization_id, n.network_id, null::uuid, n.id, n.hidden, 'b', 1 from subnet_counts_new n;
    return null;
  end if;
  if TG_OP = 'INSERT' then
    insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
    values (NEW.organization_id, NEW.network_id, null, null, NEW.hidden, 'h', 1), (NEW.organization_id, NEW.network_id, null, NEW.id, NEW.hidden, 'b', 1);
    return null;
  elsif TG_OP = 'DELETE' then
    -- Not while its network is being deleted (the network's deltas go with it).
    if exists (select 1 from networks w where w.organization_id = OLD.organization_id and w.id = OLD.network_id) then
      perform subnet_counts_host(OLD.organization_id, OLD.network_id, OLD.id, OLD.hidden, -1);
    end if;
    return OLD;
  end if;
  perform subnet_counts_host(OLD.organization_id, OLD.network_id, OLD.id, OLD.hidden, -1);
  perform subnet_counts_host(NEW.organization_id, NEW.network_id, NEW.id, NEW.hidden, 1);
  return null;
end $function$;
