// A statement as written in this codebase (`?` placeholders, arrays and objects as values) turned
// into what the pg driver sends (`$n` bind parameters, PostgreSQL values): shared by Db and by the
// topology threads, which read on connections of their own (src/modules/topology/threadReads.ts).
// No imports: the threads' bundle takes this file alone.

/**
 * Every session's settings (the ORM's pool and the topology threads' connections): it speaks UTC,
 * so timestamps come back as '... +00' and format without maths; JIT off: our statements are short
 * OLTP ones, but those reading a JSON batch (jsonb_to_recordset, estimated at 100 rows) cross
 * jit_above_cost, and compiling then took 40–47 ms for a statement that runs in under 1 ms
 * (measured on discovery ingestion).
 */
export const SESSION_OPTIONS = '-c TimeZone=UTC -c jit=off';

/**
 * The ORM expands an array bound to `?` into a list; we want one PostgreSQL array value (cast in
 * the SQL, e.g. `?::uuid[]`), so arrays travel as array literals and objects as JSON text.
 */
export function toSqlParam(value: unknown): unknown {
  if (Array.isArray(value)) {
    return `{${value.map((v) => (v === null ? 'NULL' : `"${String(v).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
  }
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) return JSON.stringify(value);
  return value;
}

/**
 * Parameters travel as bind parameters (`?` becomes `$n`), not spliced into the SQL text: a
 * discovery batch binds ~1 MB of JSON, which as a literal cost escaping in Node and parsing in
 * PostgreSQL.
 */
export function boundStatement(sql: string, params: unknown[]): { text: string; values: unknown[] } {
  let n = 0;
  const text = params.length ? sql.replace(/\?/g, () => `$${++n}`) : sql;
  if (n !== params.length) throw new Error(`${n} placeholders for ${params.length} parameters`);
  return { text, values: params.map(toSqlParam) };
}
