// Writes sql/functions/<name>.sql, today's body of each PL/pgSQL function, from a database
// migrated for the purpose (created, migrated, read, dropped). Run after a migration that creates or
// replaces a function: `node --import tsx scripts/functionFiles.ts`.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Db, migrate } from '../src/core/db.js';
import { FUNCTIONS_DIR, functionDefinitions } from '../src/core/plpgsqlFunctions.js';
import { createOrm } from '../src/database.js';
import { ensureServices } from './services.js';

const { databaseUrl } = await ensureServices();
const server = new URL(databaseUrl);
const name = `netinv_functions_${process.pid}`;
const admin = new pg.Client({ connectionString: Object.assign(new URL(server.href), { pathname: '/postgres' }).href });
await admin.connect();
await admin.query(`create database ${name}`);
try {
  const orm = await createOrm(Object.assign(new URL(server.href), { pathname: `/${name}` }).href, 2);
  await migrate(orm);
  const definitions = await functionDefinitions(new Db(orm.em.fork()));
  await orm.close(true);
  const dir = fileURLToPath(FUNCTIONS_DIR);
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(dir)) if (file.endsWith('.sql')) rmSync(`${dir}${file}`);
  for (const [fn, body] of definitions) writeFileSync(`${dir}${fn}.sql`, body);
  console.log(`wrote ${definitions.size} files in ${dir}`);
} finally {
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}
