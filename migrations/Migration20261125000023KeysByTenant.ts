import { Migration } from '@mikro-orm/migrations';

/**
 * Keys by tenant (issue 27.1): what Citus (and PostgreSQL's own partitioning) requires of a table
 * distributed by `organization_id`, docs/scale-out.md "Citus":
 * - every table is classified by a comment: `reference:` (small, global, looked up before the tenant
 *   is known: replicated to every node), `local:` (operational, coordinator only) or, without such
 *   a comment and with an `organization_id` column, a TENANT table (distributed);
 * - tenant tables that had no organization_id get one (backfilled; filled on insert from the parent
 *   row named by the trigger's arguments when the writer leaves it out);
 * - every primary key and unique constraint / index of a tenant table ends with organization_id
 *   (`(id, organization_id)`: lookups by id alone keep their index), history twins' keys are
 *   `(id, valid_from, organization_id)`;
 * - every foreign key to a tenant table carries organization_id on both sides
 *   (`(organization_id, host_id) references hosts (organization_id, id)`), with its action, and
 *   `on delete set null (column)` so that a set-null never clears organization_id.
 * test/core/tenantSchemaLint.spec.ts keeps it so.
 */
const CLASSES: Array<[table: string, comment: string]> = [
  ['organizations', 'reference: the tenants themselves; every tenant table references it'],
  ['users', 'reference: looked up by e-mail at sign-in, before the organization is known'],
  ['sessions', 'reference: looked up by the cookie hash before the organization is known'],
  ['user_api_keys', 'reference: looked up by key hash before the organization is known'],
  ['daemon_api_keys', 'reference: looked up by key hash before the organization is known'],
  ['daemon_aliases', 'reference: the daemon directory (a daemon-chosen id to the daemon of an organization)'],
  ['operators', 'reference: service operators, across organizations'],
  ['event_outbox', 'local: drained by the one events sequencer (coordinator)'],
  ['event_retention', 'local: the events retention job cursor'],
  ['webhook_dispatch_cursor', 'local: the webhook dispatcher cursor'],
  ['topology_layouts', 'local: layout cache keyed by content digest'],
  ['mikro_orm_migrations', 'local: applied migrations'],
];

/** Tenant tables that had no organization_id: [table, parent table, column naming the parent row]. */
const GAINING: Array<[table: string, parent: string, column: string]> = [
  ['user_network_access', 'networks', 'network_id'],
  ['host_discovery_digests', 'hosts', 'host_id'],
  ['daemon_poll_errors', 'daemons', 'daemon_id'],
  ['webhook_deliveries', 'webhooks', 'webhook_id'],
  ['webhook_attempts', 'webhook_deliveries', 'delivery_id'],
];

export class Migration20261125000023KeysByTenant extends Migration {
  override up(): void {
    for (const [table, comment] of CLASSES) this.addSql(`comment on table ${table} is '${comment}'`);

    // Fills organization_id from the parent row when the writer did not give it. TG_ARGV: the parent
    // table and the column holding its id (told, not derived).
    this.addSql(`
create function organization_from_parent() returns trigger language plpgsql as $$
begin
  if NEW.organization_id is null then
    execute format('select organization_id from %s where id = $1', TG_ARGV[0]) into NEW.organization_id using (to_jsonb(NEW) ->> TG_ARGV[1])::uuid;
  end if;
  return NEW;
end $$`);
    for (const [table, parent, column] of GAINING) {
      this.addSql(`alter table ${table} add column organization_id uuid`);
      this.addSql(`update ${table} c set organization_id = p.organization_id from ${parent} p where p.id = c.${column}`);
      this.addSql(`alter table ${table} alter column organization_id set not null`);
      this.addSql(`create trigger organization_from_parent before insert on ${table} for each row execute function organization_from_parent('${parent}', '${column}')`);
    }

    // The rewrite, from the catalog: foreign keys to tenant tables first (they depend on the keys).
    this.addSql(`
do $$
declare
  tenant oid[] := array(
    select c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
       and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped)
       and coalesce(obj_description(c.oid, 'pg_class'), '') !~ '^(reference|local):');
  fk record;
  k record;
  ix record;
  again text[] := '{}';
  cols text[];
  refcols text[];
  ondelete text;
begin
  for fk in
    select c.oid, c.conname, c.conrelid::regclass as rel, c.confrelid::regclass as ref, c.confdeltype, c.condeferrable, c.condeferred,
           array(select a.attname::text from unnest(c.conkey) with ordinality u(n, i) join pg_attribute a on a.attrelid = c.conrelid and a.attnum = u.n order by u.i) as cols,
           array(select a.attname::text from unnest(c.confkey) with ordinality u(n, i) join pg_attribute a on a.attrelid = c.confrelid and a.attnum = u.n order by u.i) as refcols
      from pg_constraint c where c.contype = 'f' and c.confrelid = any(tenant)
  loop
    cols := fk.cols;
    refcols := fk.refcols;
    if not 'organization_id' = any(cols) then
      cols := 'organization_id'::text || cols;
      refcols := 'organization_id'::text || refcols;
    end if;
    ondelete := case fk.confdeltype when 'c' then 'cascade' when 'r' then 'restrict' when 'd' then 'set default'
                  when 'n' then format('set null (%s)', (select string_agg(quote_ident(x), ', ') from unnest(fk.cols) x))
                  else 'no action' end;
    again := again || format('alter table %s add constraint %I foreign key (%s) references %s (%s) on delete %s%s', fk.rel, fk.conname,
      (select string_agg(quote_ident(x), ', ') from unnest(cols) x), fk.ref, (select string_agg(quote_ident(x), ', ') from unnest(refcols) x), ondelete,
      case when fk.condeferred then ' deferrable initially deferred' when fk.condeferrable then ' deferrable' else '' end);
    execute format('alter table %s drop constraint %I', fk.rel, fk.conname);
  end loop;

  for k in
    select c.conname, c.conrelid::regclass as rel, c.contype, c.condeferrable, c.condeferred,
           array(select a.attname::text from unnest(c.conkey) with ordinality u(n, i) join pg_attribute a on a.attrelid = c.conrelid and a.attnum = u.n order by u.i) as cols
      from pg_constraint c
     where c.contype in ('p', 'u') and c.conrelid = any(tenant)
       and not exists (select 1 from unnest(c.conkey) n join pg_attribute a on a.attrelid = c.conrelid and a.attnum = n where a.attname = 'organization_id')
  loop
    execute format('alter table %s drop constraint %I', k.rel, k.conname);
    execute format('alter table %s add constraint %I %s (%s, organization_id)%s', k.rel, k.conname,
      case k.contype when 'p' then 'primary key' else 'unique' end,
      (select string_agg(quote_ident(x), ', ') from unnest(k.cols) x),
      case when k.condeferred then ' deferrable initially deferred' when k.condeferrable then ' deferrable' else '' end);
  end loop;

  -- Unique indexes that are no constraint (partial ones: one open history state, one live approval).
  for ix in
    select i.indexrelid::regclass as idx, pg_get_indexdef(i.indexrelid) as def
      from pg_index i
     where i.indisunique and i.indrelid = any(tenant)
       and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
       and not exists (select 1 from unnest(i.indkey) n join pg_attribute a on a.attrelid = i.indrelid and a.attnum = n where a.attname = 'organization_id')
  loop
    execute format('drop index %s', ix.idx);
    execute regexp_replace(ix.def, '(USING \\w+ \\([^)]*)\\)', '\\1, organization_id)');
  end loop;

  foreach ondelete in array again loop
    execute ondelete;
  end loop;
end $$`);

    // Tables enabled from now on get the same keys.
    this.addSql(`
create or replace function history_enable(tbl text, scope_col text, volatile_cols text[] default '{}') returns void language plpgsql as $$
declare
  hist text := tbl || '_history';
begin
  execute format('create table %I (like %I including defaults)', hist, tbl);
  execute format('alter table %I add column valid_to timestamptz, add primary key (id, valid_from, organization_id)', hist);
  execute format('alter table %I add constraint %I check (valid_to is null or valid_to > valid_from)', hist, hist || '_range_ck');
  execute format('create index %I on %I using gist (%I, tstzrange(valid_from, valid_to))', hist || '_asof_idx', hist, scope_col);
  execute format('create unique index %I on %I (id, organization_id) where valid_to is null', hist || '_open_idx', hist);
  perform history_triggers(tbl, volatile_cols);
end $$`);
  }
}
