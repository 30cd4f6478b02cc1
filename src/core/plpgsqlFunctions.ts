// Today's body of every PL/pgSQL function the migrations define, one file each under
// sql/functions/ (migrations keep the history: a later one replaces a function; the file
// says what is in force). Written by scripts/functionFiles.ts from a migrated database;
// test/core/plpgsqlFunctions.spec.ts fails when a file and the database differ.
import type { Db } from './db.js';

/** The directory of the function files. */
export const FUNCTIONS_DIR = new URL('../../sql/functions/', import.meta.url);

/** Each function of the public schema (not an extension's) with its definition as PostgreSQL prints it. */
export async function functionDefinitions(db: Db): Promise<Map<string, string>> {
  const rows = await db.query<{ name: string; definition: string }>(`
    select p.proname || case when count(*) over (partition by p.proname) > 1 then '(' || pg_get_function_identity_arguments(p.oid) || ')' else '' end as name,
           pg_get_functiondef(p.oid) as definition
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'public' and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')
     order by 1`);
  return new Map(rows.map((r) => [r.name, `${r.definition.trimEnd()};\n`]));
}
