import { Migration } from '@mikro-orm/migrations';

/**
 * Kept counts for the budgeted l3 map (topology service, budgetedL3): per network, the addresses of
 * each subnet (kind 'a', by the hidden flag of their host), the hosts with no address (kind 'b',
 * subnet_id null) and the hosts (kind 'h'), so that the live map chooses which subnets to collapse
 * without reading every host and address of the network.
 *
 * Insert-only deltas, summed on read and compacted now and then (compactSubnetCounts): one counter
 * row per subnet updated in place would make every ingest transaction adding an address to that
 * subnet wait on its row lock until the other commits. Written by triggers, so every write path
 * (API, ingest, raw SQL) keeps them: on the plain schema statement-level ones with transition tables
 * for inserts and deletes (one delta row per subnet per statement); row-level ones on the
 * partitioned schema (no statement-level triggers there) and for the rare updates that move an
 * address or hide a host. Address changes are counted in BEFORE row triggers where row-level: there
 * a host's address count is the one before this row, even within a multi-row statement.
 *
 * An address counts where its host is in the same network (what the scan joins). The triggers lock
 * the hosts whose addresses change (FOR NO KEY UPDATE, as ingest and the API already do before
 * writing a host's addresses): two transactions cannot both see a host's first address as theirs,
 * and a hidden flag changed meanwhile is read after the other commits. A host delete takes its whole
 * contribution off before the row goes (its addresses' cascade then finds no host and counts
 * nothing); a network's deltas go with it. No foreign keys: a network or organization delete would
 * cascade into triggers writing rows for the network being deleted.
 */
export class Migration20261202110700SubnetCounts extends Migration {
  override up(): void {
    this.addSql(`
do $$
declare
  part text := case when schema_variant() = 'partitioned' then ' partition by hash (organization_id)' else '' end;
begin
  execute 'create table subnet_counts (
    organization_id uuid not null,
    network_id uuid not null,
    subnet_id uuid,
    hidden boolean not null,
    kind char(1) not null check (kind in (''a'', ''b'', ''h'')),
    n integer not null
  )' || part;
  if schema_variant() = 'partitioned' then
    for i in 0..7 loop
      execute format('create table %I partition of subnet_counts for values with (modulus 8, remainder %s)', 'subnet_counts_p' || i, i);
    end loop;
  end if;
end $$`);
    this.addSql(`create index subnet_counts_network_idx on subnet_counts (organization_id, network_id)`);

    // The deltas of address changes, as parallel arrays (one element per address row: -1 gone, +1
    // come). applied: the rows are already written (statement trigger) or not yet (BEFORE row trigger).
    this.addSql(`
create function subnet_counts_addresses(p_org uuid[], p_net uuid[], p_host uuid[], p_subnet uuid[], p_d int[], applied boolean) returns void
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
    select o.organization_id, o.network_id, o.hidden, sum(o.d)::int as delta,
           (select count(*) from ip_addresses a
             where a.organization_id = o.organization_id and a.host_id = o.host_id and a.network_id = o.network_id)::int as now
      from owned o group by o.organization_id, o.network_id, o.host_id, o.hidden
  ), bare as (
    select organization_id, network_id, hidden,
           case when (case when applied then now - delta else now end) = 0 and (case when applied then now else now + delta end) > 0 then -1
                when (case when applied then now - delta else now end) > 0 and (case when applied then now else now + delta end) = 0 then 1
                else 0 end as d
      from per_host
  )
  insert into subnet_counts (organization_id, network_id, subnet_id, hidden, kind, n)
  select organization_id, network_id, subnet_id, hidden, 'a', sum(d) from owned
   group by organization_id, network_id, subnet_id, hidden having sum(d) <> 0
  union all
  select organization_id, network_id, null, hidden, 'b', sum(d) from bare
   group by organization_id, network_id, hidden having sum(d) <> 0;
end $f$`);

    this.addSql(`
create function subnet_counts_addresses_changed() returns trigger language plpgsql as $f$
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
end $f$`);

    // A host's whole contribution (itself, its addresses per subnet, or its being without one), as
    // it is now, added (sign 1) or taken off (-1).
    this.addSql(`
create function subnet_counts_host(p_org uuid, p_net uuid, p_host uuid, p_hidden boolean, sign int) returns void language sql as $f$
  insert into subnet_counts (organization_id, network_id, subnet_id, hidden, kind, n)
  select p_org, p_net, null, p_hidden, 'h', sign
  union all
  select p_org, p_net, a.subnet_id, p_hidden, 'a', sign * count(*)::int from ip_addresses a
   where a.organization_id = p_org and a.host_id = p_host and a.network_id = p_net group by a.subnet_id
  union all
  select p_org, p_net, null, p_hidden, 'b', sign
   where not exists (select 1 from ip_addresses a where a.organization_id = p_org and a.host_id = p_host and a.network_id = p_net)
$f$`);

    this.addSql(`
create function subnet_counts_hosts_changed() returns trigger language plpgsql as $f$
begin
  if TG_LEVEL = 'STATEMENT' then
    -- inserted hosts: each one more host, and one without an address (its addresses come after it).
    insert into subnet_counts (organization_id, network_id, subnet_id, hidden, kind, n)
    select n.organization_id, n.network_id, null, n.hidden, k.kind, count(*)::int
      from subnet_counts_new n cross join (values ('h'), ('b')) as k(kind)
     group by n.organization_id, n.network_id, n.hidden, k.kind;
    return null;
  end if;
  if TG_OP = 'INSERT' then
    insert into subnet_counts (organization_id, network_id, subnet_id, hidden, kind, n)
    values (NEW.organization_id, NEW.network_id, null, NEW.hidden, 'h', 1), (NEW.organization_id, NEW.network_id, null, NEW.hidden, 'b', 1);
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

    this.addSql(`
create function subnet_counts_network_deleted() returns trigger language plpgsql as $f$
begin
  delete from subnet_counts where organization_id = OLD.organization_id and network_id = OLD.id;
  return null;
end $f$`);

    this.addSql(`
create function subnet_counts_triggers() returns void language plpgsql as $f$
declare
  per_row boolean := (select relkind = 'p' from pg_class where oid = 'ip_addresses'::regclass);
begin
  drop trigger if exists subnet_counts_insert on ip_addresses;
  drop trigger if exists subnet_counts_delete on ip_addresses;
  drop trigger if exists subnet_counts_update on ip_addresses;
  drop trigger if exists subnet_counts_insert on hosts;
  drop trigger if exists subnet_counts_delete on hosts;
  drop trigger if exists subnet_counts_update on hosts;
  drop trigger if exists subnet_counts_delete on networks;
  create trigger subnet_counts_update before update on ip_addresses for each row
    when (old.host_id is distinct from new.host_id or old.subnet_id is distinct from new.subnet_id or old.network_id is distinct from new.network_id
          or old.organization_id is distinct from new.organization_id)
    execute function subnet_counts_addresses_changed();
  create trigger subnet_counts_delete before delete on hosts for each row execute function subnet_counts_hosts_changed();
  create trigger subnet_counts_update after update on hosts for each row
    when (old.hidden is distinct from new.hidden or old.network_id is distinct from new.network_id or old.organization_id is distinct from new.organization_id)
    execute function subnet_counts_hosts_changed();
  create trigger subnet_counts_delete after delete on networks for each row execute function subnet_counts_network_deleted();
  if per_row then
    create trigger subnet_counts_insert before insert on ip_addresses for each row execute function subnet_counts_addresses_changed();
    create trigger subnet_counts_delete before delete on ip_addresses for each row execute function subnet_counts_addresses_changed();
    create trigger subnet_counts_insert after insert on hosts for each row execute function subnet_counts_hosts_changed();
  else
    create trigger subnet_counts_insert after insert on ip_addresses referencing new table as subnet_counts_new
      for each statement execute function subnet_counts_addresses_changed();
    create trigger subnet_counts_delete after delete on ip_addresses referencing old table as subnet_counts_old
      for each statement execute function subnet_counts_addresses_changed();
    create trigger subnet_counts_insert after insert on hosts referencing new table as subnet_counts_new
      for each statement execute function subnet_counts_hosts_changed();
  end if;
end $f$`);
    this.addSql(`select subnet_counts_triggers()`);

    // Today's counts, in the same transaction as the triggers (which lock the tables against writes
    // until it commits).
    this.addSql(`
insert into subnet_counts (organization_id, network_id, subnet_id, hidden, kind, n)
select h.organization_id, h.network_id, null, h.hidden, 'h', count(*)::int from hosts h group by 1, 2, 4
union all
select h.organization_id, h.network_id, a.subnet_id, h.hidden, 'a', count(*)::int
  from ip_addresses a join hosts h on h.organization_id = a.organization_id and h.id = a.host_id and h.network_id = a.network_id
 group by 1, 2, 3, 4
union all
select h.organization_id, h.network_id, null, h.hidden, 'b', count(*)::int from hosts h
 where not exists (select 1 from ip_addresses a where a.organization_id = h.organization_id and a.host_id = h.id and a.network_id = h.network_id)
 group by 1, 2, 4`);
  }
}
