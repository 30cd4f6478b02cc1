// PRUNING_AUDIT=<file> (with SCHEMA_VARIANT=partitioned): every statement any test sends on a
// partitioned (tenant) table is first run under EXPLAIN ANALYZE, in a savepoint or a transaction
// rolled back, and those that executed more than one partition of a table are appended to <file>
// as JSON lines (the test, the tables, the statement). A diagnostic over the whole suite, next to
// test/core/partitionPruning.spec.ts, which asserts it for chosen requests: `npm run audit:pruning`
// runs it and prints the distinct statements found (scripts/pruningAudit.ts). Statements marked
// ACROSS_ORGANIZATIONS (src/core/db.ts) read every organization on purpose and are left out.
import { appendFileSync } from 'node:fs';
import { ACROSS_ORGANIZATIONS, Db } from '../../src/core/db.js';

export type Plan = { 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: Plan[] };

/**
 * `sql` run under EXPLAIN ANALYZE on `db` (in a transaction) inside a savepoint rolled back and
 * released: its plan, nothing kept, the transaction as it was (a savepoint left open made the next
 * statements a subtransaction's, where pg_export_snapshot() is refused). `query` is Db's own query
 * (not a wrapper that records).
 */
export async function explainedInSavepoint(query: Db['query'], db: Db, sql: string, params: unknown[]): Promise<Plan> {
  await query.call(db, 'savepoint pruning_probe');
  try {
    const [row] = await query.call(db, `explain (analyze, timing off, summary off, format json) ${sql}`, params);
    return ((row as Record<string, unknown>)['QUERY PLAN'] as Array<{ Plan: Plan }>)[0]!.Plan;
  } finally {
    await query.call(db, 'rollback to savepoint pruning_probe');
    await query.call(db, 'release savepoint pruning_probe');
  }
}

/** Partitions executed per partitioned table, from an EXPLAIN (format json) plan. */
export function partitionsByTable(plan: Plan, out = new Map<string, Set<string>>()): Map<string, Set<string>> {
  const rel = plan['Relation Name'];
  const m = rel?.match(/^(.*)_p[0-7]$/);
  if (m && (plan['Actual Loops'] ?? 0) > 0) out.set(m[1]!, (out.get(m[1]!) ?? new Set()).add(rel!));
  for (const p of plan.Plans ?? []) partitionsByTable(p, out);
  return out;
}

let currentTest = '';
export const setCurrentTest = (title: string) => { currentTest = title; };

export function installPruningAudit(file: string): void {
  const original = Db.prototype.query;
  let tables: Promise<RegExp> | undefined;
  const probe = (db: Db, sql: string, params: unknown[]) => explainedInSavepoint(original, db, sql, params);
  Db.prototype.query = async function (this: Db, sql: string, params: unknown[] = []) {
    tables ??= original.call(this, `select relname from pg_class where relkind = 'p' and relnamespace = 'public'::regnamespace`)
      .then((rows) => new RegExp(`\\b(${(rows as Array<{ relname: string }>).map((r) => r.relname).join('|') || '$^'})\\b`));
    const tenant = await tables;
    // Who sent it: the first frame outside Db and this file. Statements of the tests themselves
    // (their own checks on the database) are not the service's and are left out.
    const caller = new Error().stack!.split('\n').slice(1).find((f) => !/src\/core\/db\.ts|pruningAudit\.ts|node:internal|node_modules/.test(f)) ?? '';
    if (tenant.test(sql) && !/\/test\//.test(caller) && !sql.startsWith(ACROSS_ORGANIZATIONS) && /^\s*(with|select|insert|update|delete)\b/i.test(sql)) {
      try {
        const plan = this.em.isInTransaction() ? await probe(this, sql, params) : await this.transaction((tx) => probe(tx, sql, params));
        const wide = [...partitionsByTable(plan)].filter(([, parts]) => parts.size > 1).map(([t, parts]) => `${t}:${parts.size}`);
        if (wide.length) appendFileSync(file, `${JSON.stringify({ test: currentTest, caller: caller.trim().replace(/^at /, ''), tables: wide, sql: sql.replace(/\s+/g, ' ').slice(0, 600) })}\n`);
      } catch (err) {
        // Cancelled (a test cancelling the backend that waits, pg_cancel_backend): the statement
        // would have been, so the caller sees it. Anything else EXPLAIN cannot take (or a statement
        // that fails anyway): the real call below says so.
        if ((err as { code?: string }).code === '57014') throw err;
      }
    }
    return original.call(this, sql, params);
  } as typeof original;
}
