CREATE OR REPLACE FUNCTION public.history_triggers(tbl text, volatile_cols text[], mode text DEFAULT NULL::text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  vol_args text := coalesce((select string_agg(quote_literal(c), ', ') from unnest(volatile_cols) c), '');
  hist text := format('%I', tbl || '_history');
  cols text;
  changed text;
  per_row boolean;
begin
  per_row := coalesce(mode = 'row', (select relkind = 'p' from pg_class where oid = tbl::regclass));
  select string_agg(quote_ident(attname), ', ' order by attnum) into cols
    from pg_attribute where attrelid = tbl::regclass and attnum > 0 and not attisdropped;
  select format('row(%s) is distinct from row(%s)',
                string_agg('old.' || quote_ident(attname), ', ' order by attnum),
                string_agg('new.' || quote_ident(attname), ', ' order by attnum))
    into changed
    from pg_attribute
   where attrelid = tbl::regclass and attnum > 0 and not attisdropped and attname <> all (volatile_cols);
  execute format('drop trigger if exists history_stamp on %I', tbl);
  execute format('drop trigger if exists history_record on %I', tbl);
  execute format('drop trigger if exists history_stamp_update on %I', tbl);
  execute format('drop trigger if exists history_record_insert on %I', tbl);
  execute format('drop trigger if exists history_record_update on %I', tbl);
  execute format('drop trigger if exists history_record_delete on %I', tbl);
  execute format('drop trigger if exists history_record_volatile on %I', tbl);
  execute format('create trigger history_stamp before insert on %I for each row execute function history_stamp(%s)', tbl, vol_args);
  execute format('create trigger history_stamp_update before update on %I for each row when (%s) execute function history_stamp(%s)', tbl, changed, vol_args);
  if per_row then
    execute format('create trigger history_record_insert after insert on %I for each row execute function history_record(%L, %L)', tbl, hist, cols);
  else
    execute format('create trigger history_record_insert after insert on %I referencing new table as history_new_rows for each statement execute function history_record_inserts(%L, %L)', tbl, hist, cols);
  end if;
  execute format('create trigger history_record_update after update on %I for each row when (%s) execute function history_record(%L, %L%s)', tbl, changed, hist, cols, case when vol_args = '' then '' else ', ' || vol_args end);
  execute format('create trigger history_record_delete after delete on %I for each row execute function history_record(%L, %L%s)', tbl, hist, cols, case when vol_args = '' then '' else ', ' || vol_args end);
end $function$;
