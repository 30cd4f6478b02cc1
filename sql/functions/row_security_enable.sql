CREATE OR REPLACE FUNCTION public.row_security_enable(t regclass)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  r regclass;
begin
  for r in select t union all select inhrelid::regclass from pg_inherits where inhparent = t loop
    execute format('alter table %s enable row level security', r);
    if not exists (select 1 from pg_policy where polrelid = r and polname = 'tenant_rows') then
      execute format('create policy tenant_rows on %s using (organization_id = nullif(current_setting(''netinv.organization_id'', true), '''')::uuid)'
                     ' with check (organization_id = nullif(current_setting(''netinv.organization_id'', true), '''')::uuid)', r);
    end if;
  end loop;
end $function$;
