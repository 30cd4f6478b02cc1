CREATE OR REPLACE FUNCTION public.subnet_counts_addresses(p_org uuid[], p_net uuid[], p_host uuid[], p_subnet uuid[], p_d integer[], applied boolean)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  perform 1 from hosts h
   where h.organization_id = any(p_org) and h.id = any(p_host)
   order by h.id for no key update of h;
  with changed as (
    select * from unnest(p_org, p_net, p_host, p_subnet, p_d) as c(organization_id, network_id, host_id, subnet_id, d)
  ), owned as (
    select c.*, h.hidden from changed c
      join hosts h on h.organization_id = c.organization_id and h.id = c.host_id and h.network_id = c.network_id
  ), per_host as (
    select o.organization_id, o.network_id, o.host_id, o.hidden, sum(o.d)::int as delta,
           (select count(*) from ip_addresses a
             where a.organization_id = o.organization_id and a.host_id = o.host_id and a.network_id = o.network_id)::int as now
      from owned o group by o.organization_id, o.network_id, o.host_id, o.hidden
  ), bare as (
    select organization_id, network_id, host_id, hidden,
           case when (case when applied then now - delta else now end) = 0 and (case when applied then now else now + delta end) > 0 then -1
                when (case when applied then now - delta else now end) > 0 and (case when applied then now else now + delta end) = 0 then 1
                else 0 end as d
      from per_host
  )
  insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
  select organization_id, network_id, subnet_id, null::uuid, hidden, 'a', sum(d) from owned
   group by organization_id, network_id, subnet_id, hidden having sum(d) <> 0
  union all
  select organization_id, network_id, null::uuid, host_id, hidden, 'b', d from bare where d <> 0;
end $function$;
