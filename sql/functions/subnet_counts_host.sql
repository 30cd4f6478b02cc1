CREATE OR REPLACE FUNCTION public.subnet_counts_host(p_org uuid, p_net uuid, p_host uuid, p_hidden boolean, sign integer)
 RETURNS void
 LANGUAGE sql
AS $function$
  insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
  select p_org, p_net, null::uuid, null::uuid, p_hidden, 'h', sign
  union all
  select p_org, p_net, a.subnet_id, null::uuid, p_hidden, 'a', sign * count(*)::int from ip_addresses a
   where a.organization_id = p_org and a.host_id = p_host and a.network_id = p_net group by a.subnet_id
  union all
  select p_org, p_net, null::uuid, p_host, p_hidden, 'b', sign
   where not exists (select 1 from ip_addresses a where a.organization_id = p_org and a.host_id = p_host and a.network_id = p_net)
$function$;
