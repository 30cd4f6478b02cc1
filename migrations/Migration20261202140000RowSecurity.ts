import { Migration } from '@mikro-orm/migrations';

/**
 * Tenancy enforced by the database: a role `netinv_tenant` (no login, no BYPASSRLS) that a
 * transaction takes with the organization it speaks for (`Db` with an `organizationId`,
 * src/core/db.ts: `set_config('role', 'netinv_tenant', true)` and
 * `set_config('netinv.organization_id', …, true)`), and on every tenant table (migration 23's
 * classification: an organization_id column and no 'reference:' / 'local:' comment) the policy
 * `tenant_rows`: only the rows of that organization are read, and only rows of it are written.
 *
 * The tables' owner (the service's login role) still bypasses every policy: nothing changes for a
 * statement that does not take the role (DATABASE_ROW_SECURITY off, workers, the event hub,
 * statements marked ACROSS_ORGANIZATIONS).
 *
 * Reference tables get no policy, although four of them have an organization_id: users, user_api_keys,
 * daemon_api_keys (looked up by e-mail or key hash to find the organization: authentication runs
 * before any organization is known) and daemon_aliases (the daemon directory: a daemon-chosen id
 * to the daemon of whichever organization). sessions and organizations have no organization_id.
 * Local tables (the event outbox, cursors, the layout cache) are written by triggers and read by the
 * owner's coordinator work: granted, without a policy.
 *
 * The role is cluster-wide and many databases (tests, benches) share a cluster: made if absent,
 * tolerating another database's migration making it at the same moment; its grants are per
 * database. A later migration that makes a tenant table calls `row_security_enable(table)` (the
 * tenant schema lint names a tenant table without the policy); tables and sequences made later by
 * the migrating role are granted to the role by default privileges.
 *
 * On the partitioned schema the policy is on each partitioned parent (every statement of the service
 * names the parent, and a parent's policies apply to the rows of its partitions) and on each partition
 * as well, so that a statement naming a partition is held to the same rows.
 */
export class Migration20261202140000RowSecurity extends Migration {
  override up(): void {
    this.addSql(`
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'netinv_tenant') then
    begin
      create role netinv_tenant nologin nosuperuser nobypassrls;
    exception when duplicate_object or unique_violation then
      null; -- made at the same moment by another database's migration on this cluster
    end;
  end if;
  -- The login role takes the role per transaction (SET ROLE needs membership; a superuser has it).
  if not pg_has_role(current_user, 'netinv_tenant', 'member') then
    execute format('grant netinv_tenant to %I', current_user);
  end if;
end $$`);
    this.addSql(`grant usage on schema public to netinv_tenant`);
    this.addSql(`grant select, insert, update, delete on all tables in schema public to netinv_tenant`);
    this.addSql(`grant usage, select, update on all sequences in schema public to netinv_tenant`);
    this.addSql(`grant execute on all functions in schema public to netinv_tenant`);
    this.addSql(`alter default privileges in schema public grant select, insert, update, delete on tables to netinv_tenant`);
    this.addSql(`alter default privileges in schema public grant usage, select, update on sequences to netinv_tenant`);
    this.addSql(`alter default privileges in schema public grant execute on functions to netinv_tenant`);
    this.addSql(`
create function row_security_enable(t regclass) returns void language plpgsql as $fn$
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
end $fn$`);
    this.addSql(`
select row_security_enable(c.oid)
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
 where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
   and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped)
   and coalesce(obj_description(c.oid, 'pg_class'), '') !~ '^(reference|local):'`);
  }
}
