CREATE OR REPLACE FUNCTION public.history_enable(tbl text, scope_col text, volatile_cols text[] DEFAULT '{}'::text[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  hist text := tbl || '_history';
begin
  execute format('create table %I (like %I including defaults)', hist, tbl);
  execute format('alter table %I add column valid_to timestamptz, add primary key (id, valid_from, organization_id)', hist);
  execute format('alter table %I add constraint %I check (valid_to is null or valid_to > valid_from)', hist, hist || '_range_ck');
  execute format('create index %I on %I using gist (%I, tstzrange(valid_from, valid_to))', hist || '_asof_idx', hist, scope_col);
  execute format('create unique index %I on %I (id, organization_id) where valid_to is null', hist || '_open_idx', hist);
  perform history_triggers(tbl, volatile_cols);
end $function$;
