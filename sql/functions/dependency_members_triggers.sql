CREATE OR REPLACE FUNCTION public.dependency_members_triggers(tbl text, kind text, field text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute format('drop trigger if exists dependency_members_forget on %I', tbl);
  execute format('create trigger dependency_members_forget after delete on %I for each row execute function dependency_members_forget(%L, %L)', tbl, kind, field);
end $function$;
