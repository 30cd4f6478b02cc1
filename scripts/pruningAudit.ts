// `npm run audit:pruning [-- mocha files…]`: the whole suite (or the files named) on the partitioned
// schema with every statement on a tenant table checked for partition pruning
// (test/support/pruningAudit.ts); prints each distinct statement that read more than one partition,
// with the tables, how often and the first test that sent it. Exits 1 when there is any.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dir = mkdtempSync(path.join(os.tmpdir(), 'netinv-pruning-'));
const file = path.join(dir, 'audit.jsonl');
const files = process.argv.slice(2);
const run = spawnSync(process.execPath, ['node_modules/.bin/mocha', ...(files.length ? files : ['--parallel', '--jobs', '2'])], {
  stdio: 'inherit', env: { ...process.env, SCHEMA_VARIANT: 'partitioned', PRUNING_AUDIT: file },
});
const lines = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { test: string; tables: string[]; sql: string }) : [];
rmSync(dir, { recursive: true, force: true });
const distinct = new Map<string, { tables: string[]; count: number; test: string }>();
for (const l of lines) {
  const seen = distinct.get(l.sql);
  if (seen) seen.count++;
  else distinct.set(l.sql, { tables: l.tables, count: 1, test: l.test });
}
console.log(`\npruning audit: ${lines.length} statements on more than one partition, ${distinct.size} distinct (suite exit ${run.status})`);
for (const [sql, d] of [...distinct].sort((a, b) => b[1].count - a[1].count)) {
  console.log(`\n${d.count}× [${d.tables.join(', ')}] first in: ${d.test}\n  ${sql}`);
}
process.exit(distinct.size || run.status ? 1 : 0);
