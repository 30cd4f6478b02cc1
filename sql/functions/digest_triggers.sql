CREATE OR REPLACE FUNCTION public.digest_triggers(tbl text, kind text, mode text DEFAULT NULL::text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  per_row boolean := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
  changed text;
begin
  -- Only what is not volatile: the same condition as the history triggers, generated from the columns.
  select format('row(%s) is distinct from row(%s)', string_agg('old.' || quote_ident(attname), ', ' order by attnum), string_agg('new.' || quote_ident(attname), ', ' order by attnum))
    into changed from pg_attribute
   where attrelid = tbl::regclass and attnum > 0 and not attisdropped and attname <> all (array['last_seen_at', 'last_discovery_id']);
  if kind = 'hosts' then
    execute format('drop trigger if exists discovery_digests_forget on %I', tbl);
    execute format('create trigger discovery_digests_forget after update on %I for each row when (%s) execute function discovery_digests_forget(%L)', tbl, changed, kind);
    return;
  end if;
  execute format('drop trigger if exists discovery_digests_forget_insert on %I', tbl);
  execute format('drop trigger if exists discovery_digests_forget_update on %I', tbl);
  execute format('drop trigger if exists discovery_digests_forget_delete on %I', tbl);
  execute format('create trigger discovery_digests_forget_update after update on %I for each row when (%s) execute function discovery_digests_forget_row(%L)', tbl, changed, kind);
  if per_row then
    execute format('create trigger discovery_digests_forget_insert after insert on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_delete after delete on %I for each row execute function discovery_digests_forget_row(%L)', tbl, kind);
  else
    execute format('create trigger discovery_digests_forget_insert after insert on %I referencing new table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
    execute format('create trigger discovery_digests_forget_delete after delete on %I referencing old table as digest_changed_rows for each statement execute function discovery_digests_forget(%L)', tbl, kind);
  end if;
end $function$;
