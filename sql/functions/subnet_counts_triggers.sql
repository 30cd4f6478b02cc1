CREATE OR REPLACE FUNCTION public.subnet_counts_triggers()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
end $function$;
