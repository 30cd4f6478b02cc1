import { Migration } from '@mikro-orm/migrations';

/**
 * The kept counts' hosts with no address (kind 'b') by host: one delta row carries the host's id,
 * so that the live l3 map reads which hosts are bare from the network's few kept rows instead of
 * an anti-join of all its hosts and addresses (which cost what the network holds even for one bare
 * host). The other kinds leave host_id null.
 */
export class Migration20261203133000BareHostsKept extends Migration {
  override up(): void {
    this.addSql(`alter table subnet_counts add column host_id uuid`);

    this.addSql(`
create or replace function subnet_counts_addresses(p_org uuid[], p_net uuid[], p_host uuid[], p_subnet uuid[], p_d int[], applied boolean) returns void
language plpgsql as $f$
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
end $f$`);

    this.addSql(`
create or replace function subnet_counts_host(p_org uuid, p_net uuid, p_host uuid, p_hidden boolean, sign int) returns void language sql as $f$
  insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
  select p_org, p_net, null::uuid, null::uuid, p_hidden, 'h', sign
  union all
  select p_org, p_net, a.subnet_id, null::uuid, p_hidden, 'a', sign * count(*)::int from ip_addresses a
   where a.organization_id = p_org and a.host_id = p_host and a.network_id = p_net group by a.subnet_id
  union all
  select p_org, p_net, null::uuid, p_host, p_hidden, 'b', sign
   where not exists (select 1 from ip_addresses a where a.organization_id = p_org and a.host_id = p_host and a.network_id = p_net)
$f$`);

    this.addSql(`
create or replace function subnet_counts_hosts_changed() returns trigger language plpgsql as $f$
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
end $f$`);

    // Today's bare hosts, one row each, in place of their counts (the functions above lock nothing
    // more than before; this runs in the migration's transaction, which the writes wait for).
    this.addSql(`lock table subnet_counts in exclusive mode`);
    this.addSql(`delete from subnet_counts where kind = 'b'`);
    this.addSql(`
insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
select h.organization_id, h.network_id, null, h.id, h.hidden, 'b', 1 from hosts h
 where not exists (select 1 from ip_addresses a where a.organization_id = h.organization_id and a.host_id = h.id and a.network_id = h.network_id)`);
  }
}
