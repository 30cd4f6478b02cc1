// The tenant-schema rules of issue 27 (docs/scale-out.md, "Citus"), checked over the catalog of a
// migrated database. Used by test/core/tenantSchemaLint.spec.ts (and its self-test, which adds bad
// tables and expects each rule to name them).
import type { Db } from '../../src/core/db.js';

export type TableClass = 'tenant' | 'reference' | 'local' | 'unclassified';

/**
 * Foreign keys from a reference table to a tenant table, which Citus refuses (a reference table is
 * copied to every node; the row it points at lives on one). Left as they are on one PostgreSQL, for
 * the cascade they give; on Citus they are dropped and the deletes done by the application (runbook).
 */
export const KNOWN_REFERENCE_TO_TENANT = new Set([
  'daemon_api_keys.daemon_api_keys_network_id_fkey',
  'daemon_aliases.daemon_aliases_daemon_id_fkey',
]);

/**
 * Statement-level triggers the plain schema keeps on tenant tables (bench/README.md, "Capture": one
 * INSERT … SELECT per statement is 2–4× cheaper than a row trigger on a 5,000-row batch). Each is made
 * by an installer (history_triggers, events_triggers, digest_triggers, subnet_counts_triggers) that makes a row-level one on
 * a partitioned table, so the partitioned schema has none.
 */
export const STATEMENT_CAPTURE_TRIGGERS = new Set([
  'history_record_insert', 'history_record_volatile', 'events_insert', 'events_update', 'events_delete',
  'discovery_digests_forget_insert', 'discovery_digests_forget_update', 'discovery_digests_forget_delete',
  'subnet_counts_insert', 'subnet_counts_delete',
]);

export async function tableClasses(db: Db): Promise<Map<string, TableClass>> {
  const rows = await db.query<{ name: string; class: TableClass }>(`
    select c.relname as name,
           case when obj_description(c.oid, 'pg_class') like 'reference:%' then 'reference'
                when obj_description(c.oid, 'pg_class') like 'local:%' then 'local'
                when exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped) then 'tenant'
                else 'unclassified' end as class
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition`);
  return new Map(rows.map((r) => [r.name, r.class]));
}

export async function isPartitioned(db: Db): Promise<boolean> {
  return (await db.one<{ p: boolean }>(`select relkind = 'p' as p from pg_class where oid = 'hosts'::regclass`))!.p;
}

/** Every breach of the rules, one line each (empty when the schema keeps them). */
export async function tenantSchemaViolations(db: Db): Promise<string[]> {
  const classes = await tableClasses(db);
  const tenant = [...classes].filter(([, c]) => c === 'tenant').map(([t]) => t);
  const out: string[] = [];
  for (const [t, c] of classes) if (c === 'unclassified') out.push(`${t}: no organization_id and no 'reference:' / 'local:' comment`);

  const keys = await db.query<{ rel: string; name: string; kind: string }>(`
    select c.conrelid::regclass::text as rel, c.conname as name, c.contype as kind
      from pg_constraint c
     where c.contype in ('p', 'u', 'x') and c.conrelid::regclass::text = any(?::text[])
       and not exists (select 1 from unnest(c.conkey) k join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k where a.attname = 'organization_id')`,
    [tenant]);
  for (const k of keys) out.push(`${k.rel}.${k.name}: ${{ p: 'primary key', u: 'unique constraint', x: 'exclusion constraint' }[k.kind]} without organization_id`);

  const indexes = await db.query<{ rel: string; name: string }>(`
    select i.indrelid::regclass::text as rel, i.indexrelid::regclass::text as name
      from pg_index i
     where i.indisunique and i.indrelid::regclass::text = any(?::text[])
       and not exists (select 1 from unnest(i.indkey) k join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k where a.attname = 'organization_id')
       and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)`,
    [tenant]);
  for (const i of indexes) out.push(`${i.rel}.${i.name}: unique index without organization_id`);

  // A foreign key to a tenant table must pair organization_id with organization_id.
  const fks = await db.query<{ rel: string; ref: string; name: string; paired: boolean }>(`
    select c.conrelid::regclass::text as rel, c.confrelid::regclass::text as ref, c.conname as name,
           exists (select 1 from unnest(c.conkey, c.confkey) as k(a, b)
                     join pg_attribute x on x.attrelid = c.conrelid and x.attnum = k.a
                     join pg_attribute y on y.attrelid = c.confrelid and y.attnum = k.b
                    where x.attname = 'organization_id' and y.attname = 'organization_id') as paired
      from pg_constraint c
     where c.contype = 'f' and c.conparentid = 0 and (c.confrelid::regclass::text = any(?::text[]) or c.conrelid::regclass::text = any(?::text[]))`,
    [tenant, tenant]);
  for (const f of fks) {
    const from = classes.get(f.rel);
    const to = classes.get(f.ref);
    if (to === 'tenant' && !f.paired) out.push(`${f.rel}.${f.name}: foreign key to tenant table ${f.ref} without organization_id on both sides`);
    if (to === 'tenant' && from === 'reference' && !KNOWN_REFERENCE_TO_TENANT.has(`${f.rel}.${f.name}`)) out.push(`${f.rel}.${f.name}: reference table pointing at tenant table ${f.ref}`);
    if ((from === 'local' && to === 'tenant') || (from === 'tenant' && to === 'local')) out.push(`${f.rel}.${f.name}: foreign key between a local and a tenant table`);
  }

  // Trigger functions are told their tables: none reads TG_TABLE_NAME (on a partition or a shard it
  // names the partition / shard, not the table the trigger was made for).
  const derived = await db.query<{ name: string }>(`
    select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'public' and p.prosrc ~* 'TG_TABLE_NAME|TG_RELNAME'`);
  for (const d of derived) out.push(`function ${d.name}: reads TG_TABLE_NAME`);

  // Statement-level triggers on tenant tables: none on the partitioned schema; on the plain one only
  // the capture triggers whose installers make row-level ones on a partitioned table.
  const partitioned = await isPartitioned(db);
  const statement = await db.query<{ rel: string; name: string }>(`
    select t.tgrelid::regclass::text as rel, t.tgname as name from pg_trigger t
     where not t.tgisinternal and (t.tgtype & 1) = 0 and t.tgrelid::regclass::text = any(?::text[])`,
    [tenant]);
  for (const s of statement) {
    if (partitioned || !STATEMENT_CAPTURE_TRIGGERS.has(s.name)) out.push(`${s.rel}.${s.name}: statement-level trigger on a tenant table`);
  }

  // Row security (migration RowSecurity): every tenant table and each of its partitions has it on,
  // with the policy tenant_rows (a new tenant table calls row_security_enable in its migration).
  const unguarded = await db.query<{ rel: string }>(`
    select c.oid::regclass::text as rel from pg_class c
     where (c.oid::regclass::text = any(?::text[]) or exists (select 1 from pg_inherits i where i.inhrelid = c.oid and i.inhparent::regclass::text = any(?::text[])))
       and not (c.relrowsecurity and exists (select 1 from pg_policy p where p.polrelid = c.oid and p.polname = 'tenant_rows'))`,
    [tenant, tenant]);
  for (const u of unguarded) out.push(`${u.rel}: tenant table without row security (row_security_enable)`);
  return out.sort();
}
