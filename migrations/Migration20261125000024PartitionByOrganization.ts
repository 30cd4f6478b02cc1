import { Migration } from '@mikro-orm/migrations';
import { DIGEST_TABLES, EVENT_TABLES, HISTORY_TABLES } from './Migration20261125000022CaptureByArguments.js';

/**
 * The partitioned schema variant (issue 27.3): with SCHEMA_VARIANT=partitioned in the environment of
 * the process that applies the migrations, every tenant table (migration 23's classification:
 * organization_id and no 'reference:' / 'local:' comment; history twins and events included) becomes
 * `PARTITION BY HASH (organization_id)` into 8 partitions `<table>_p0` … `_p7`: the single-node
 * stand-in for Citus distributed tables colocated by organization_id. PostgreSQL then enforces the
 * same key rule as Citus (every key includes organization_id), and a statement that names one
 * organization is pruned to one partition (test/core/partitionPruning.spec.ts).
 *
 * Done from the catalog on the tables migrations 1–23 made (rows copied; a fresh database has none):
 * each table is re-created partitioned with its columns, defaults and compression, then its
 * constraints, indexes and row triggers are made again from their saved definitions (each partition's
 * keys named after its table's, `<key>_p<n>`), foreign keys last. Capture triggers come from their installers, which make row-level ones on a partitioned
 * table (migration 22). Without the setting this migration only records the variant.
 * `schema_variant()` answers which one a database has.
 */
export const schemaVariant = (): 'plain' | 'partitioned' => (process.env.SCHEMA_VARIANT === 'partitioned' ? 'partitioned' : 'plain');
const PARTITIONS = 8;

export class Migration20261125000024PartitionByOrganization extends Migration {
  override up(): void {
    const variant = schemaVariant(); // read when applied, so one process (bench/partitioned.ts) can make both
    this.addSql(`create function schema_variant() returns text language sql immutable as $$ select '${variant}'::text $$`);
    if (variant !== 'partitioned') return;
    this.addSql(`
do $$
declare
  tenant oid[] := array(
    select c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind = 'r' and not c.relispartition
       and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped)
       and coalesce(obj_description(c.oid, 'pg_class'), '') !~ '^(reference|local):');
  names text[] := array(select t::regclass::text from unnest(tenant) t);
  fks text[] := array(
    select format('alter table %s add constraint %I %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
      from pg_constraint c where c.contype = 'f' and (c.conrelid = any(tenant) or c.confrelid = any(tenant)));
  fk record;
  k record;
  t text;
  defs text[];
  seqs text[];
  s text;
  i int;
begin
  for fk in select conrelid::regclass as rel, conname from pg_constraint where contype = 'f' and (conrelid = any(tenant) or confrelid = any(tenant)) loop
    execute format('alter table %s drop constraint %I', fk.rel, fk.conname);
  end loop;
  foreach t in array names loop
    -- Keys and checks, indexes that back no constraint, row triggers: as they are defined now.
    defs := array(
      select format('alter table %I add constraint %I %s', t, c.conname, pg_get_constraintdef(c.oid))
        from pg_constraint c where c.conrelid = t::regclass and c.contype in ('p', 'u', 'c', 'x') order by c.contype = 'c', c.conname)
      || array(
      select pg_get_indexdef(i.indexrelid) from pg_index i
       where i.indrelid = t::regclass and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid))
      || array(
      select pg_get_triggerdef(g.oid) from pg_trigger g where g.tgrelid = t::regclass and not g.tgisinternal and (g.tgtype & 1) = 1 order by g.tgname);
    -- Sequences owned by its columns (bigserial) outlive the old table.
    seqs := array(
      select format('alter sequence %s owned by %I.%I', d.objid::regclass, t, a.attname)
        from pg_depend d join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
       where d.refobjid = t::regclass and d.classid = 'pg_class'::regclass and d.deptype = 'a'
         and (select relkind from pg_class where oid = d.objid) = 'S');
    for s in select d.objid::regclass::text from pg_depend d where d.refobjid = t::regclass and d.classid = 'pg_class'::regclass and d.deptype = 'a'
               and (select relkind from pg_class where oid = d.objid) = 'S' loop
      execute format('alter sequence %s owned by none', s);
    end loop;
    execute format('alter table %I rename to %I', t, t || '__plain');
    execute format('create table %I (like %I including defaults including generated including compression including storage) partition by hash (organization_id)', t, t || '__plain');
    for i in 0..${PARTITIONS - 1} loop
      execute format('create table %I partition of %I for values with (modulus ${PARTITIONS}, remainder %s)', t || '_p' || i, t, i);
    end loop;
    execute format('insert into %I select * from %I', t, t || '__plain');
    execute format('drop table %I', t || '__plain');
    foreach s in array defs || seqs loop
      execute s;
    end loop;
    -- Each partition's key is named after its table's (tags_org_name_uq_p3, not PostgreSQL's
    -- tags_p3_organization_id_name_key): a violation is reported with the partition's key, and
    -- src/core/errors.ts knows the keys by their table's names (409 entity_already_exists, not 500).
    for k in select c.conrelid::regclass::text as part, c.conname, p.conname as parent
               from pg_constraint c join pg_constraint p on p.oid = c.conparentid join pg_inherits h on h.inhrelid = c.conrelid
              where h.inhparent = t::regclass and c.contype in ('p', 'u', 'x') loop
      execute format('alter table %I rename constraint %I to %I', k.part, k.conname, k.parent || substring(k.part from '_p[0-9]+$'));
    end loop;
  end loop;
  foreach s in array fks loop
    execute s;
  end loop;
end $$`);
    // Capture: row-level on the partitioned tables (the installers choose by relkind).
    for (const [table, volatile] of HISTORY_TABLES) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
    for (const [table, entity] of EVENT_TABLES) this.addSql(`select events_triggers('${table}', '${entity}')`);
    this.addSql(`select digest_triggers('hosts', 'hosts')`);
    for (const [table, kind] of DIGEST_TABLES) this.addSql(`select digest_triggers('${table}', '${kind}')`);
  }
}
