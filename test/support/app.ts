// A real API on a random port, over a database of its own, for one test.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { buildApp, closeServices, createServices } from '../../src/app.js';
import { loadConfig, type AppConfig } from '../../src/config.js';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Db, migrate, quoteIdent } from '../../src/core/db.js';
import { createOrm } from '../../src/database.js';
import { deleteKeysMatching } from '../../src/core/redis.js';
import type { Services } from '../../src/services.js';
import type { Logger } from '../../src/core/logger.js';
import { markServiceServer, testLogger } from './leakCapture.js';

// The template is named after the migrations' content: unchanged migrations reuse it, and test
// runs in parallel (or of other checkouts) never drop a template another run is cloning.
const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);
const TEMPLATE = `netinv_tpl_${createHash('sha256')
  .update(`schema variant: ${process.env.SCHEMA_VARIANT ?? 'plain'}\0`) // migration 24 reads it
  .update(readdirSync(MIGRATIONS_DIR).sort().map((f) => readFileSync(new URL(f, MIGRATIONS_DIR), 'utf8')).join('\0'))
  .digest('hex')
  .slice(0, 12)}`;

/** The URL of `database` on the project's PostgreSQL server. */
export function serverUrl(database: string): string {
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/netinventory');
  url.pathname = `/${database}`;
  return url.toString();
}

export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl('postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Builds the template once per migrations content (under a lock, renamed into place when complete). */
export async function prepareTemplate(): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl('postgres') });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock(hashtext($1))', [TEMPLATE]);
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [TEMPLATE]);
    if (rowCount) return;
    const building = `${TEMPLATE}_${randomBytes(3).toString('hex')}`;
    const orm = await createOrm(serverUrl(building), 2);
    await migrate(orm);
    await orm.close(true);
    await client.query(`alter database ${quoteIdent(building)} rename to ${quoteIdent(TEMPLATE)}`);
  } finally {
    await client.end(); // also releases the lock
  }
}

export interface TestApp {
  url: string;
  services: Services;
  databaseUrl: string;
  redisPrefix: string;
  close(): Promise<void>;
}

// Test databases are reused: after a test its database is emptied (every row of every table
// deleted, triggers off) and handed to a later test. That costs the server far less than cloning
// the template and dropping the clone for every test (a clone writes the whole template through
// the WAL and a drop forces a checkpoint: about half a core-second per test on this machine,
// which made the suite CPU-bound). A database that cannot be emptied (a test left a lock or a
// connection behind) is dropped instead, so every test still starts from an empty schema.
// mochaGlobalTeardown (test/setup.ts) drops them all at the end.
// With mocha --parallel each worker process keeps its own databases; they share this run's name
// prefix (set by the global setup), so the main process can drop them all at the end.
const runId = () => (process.env.NETINV_TEST_RUN ??= randomBytes(3).toString('hex'));
const idle: Array<Promise<string | undefined>> = [];
const all = new Set<string>();
// The ORM (its connection pool) of each database is kept with it: a PostgreSQL backend that has
// already run the history triggers and cached their plans costs far less than a new one per test.
const orms = new Map<string, MikroORM>();
let resetSql: string | undefined;

function cloneDatabase(): Promise<string | undefined> {
  const database = `netinv_t_${runId()}_${randomBytes(5).toString('hex')}`;
  all.add(database);
  const created = adminQuery(`create database ${quoteIdent(database)} template ${TEMPLATE}`).then(() => database);
  created.catch(() => undefined); // awaited by whoever takes it; not an unhandled rejection meanwhile
  return created;
}

/** An empty database of the current schema: a reused one, else a new clone (and one more is cloned ahead). */
async function takeDatabase(): Promise<string> {
  while (idle.length) {
    const database = await idle.shift()!;
    if (database) {
      if (!idle.length) idle.push(cloneDatabase()); // the next test need not wait for this one's reset
      return database;
    }
  }
  idle.push(cloneDatabase());
  return (await cloneDatabase())!;
}

/**
 * Deletes every row (history, migrations list excepted) with triggers and foreign keys off: one DO
 * statement on a connection of the database's kept pool (a new connection per test would fork a
 * PostgreSQL backend per test), its settings local to its own transaction.
 */
async function emptyDatabase(database: string): Promise<void> {
  const orm = orms.get(database);
  if (!orm) throw new Error(`no pool for ${database}`); // dropped instead (releaseDatabase)
  const db = new Db(orm.em.fork());
  resetSql ??= (await db.one<{ sql: string }>(
    `select 'do $reset$ begin perform set_config(''session_replication_role'', ''replica'', true); '
            || 'perform set_config(''lock_timeout'', ''2s'', true); '
            || string_agg(format('delete from %I;', tablename), ' ' order by tablename) || ' end $reset$' as sql
     from pg_tables where schemaname = 'public' and tablename <> 'mikro_orm_migrations'`,
  ))!.sql;
  await db.query(resetSql);
}

function releaseDatabase(database: string): void {
  const reset = emptyDatabase(database).then(
    () => database,
    async () => {
      await dropDatabase(database);
      return undefined;
    },
  );
  idle.push(reset);
}

async function dropDatabase(database: string): Promise<void> {
  all.delete(database);
  await orms.get(database)?.close(true).catch(() => undefined);
  orms.delete(database);
  await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`).catch(() => undefined);
}

/** At the end of the run: every test database of this run dropped, whichever process made it. */
export async function releaseTestDatabases(): Promise<void> {
  await Promise.all(idle.splice(0).map((p) => p.catch(() => undefined)));
  for (const database of [...all]) await dropDatabase(database);
  const client = new pg.Client({ connectionString: serverUrl('postgres') });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(`select datname from pg_database where datname like $1`, [`netinv\\_t\\_${runId()}\\_%`]);
    for (const { datname } of rows) await client.query(`drop database if exists ${quoteIdent(datname)} with (force)`).catch(() => undefined);
  } finally {
    await client.end();
  }
}

/** `logger`: where the app logs (a test that reads the log lines passes its own). */
export async function startTestApp(overrides: Partial<AppConfig> = {}, logger?: Logger): Promise<TestApp> {
  const database = await takeDatabase();
  const id = database.slice(`netinv_t_${runId()}_`.length);
  // No heavy-read budget unless a test sets one: its charges are durations, longer the busier the machine.
  // No sign-up limit unless a test sets one (SIGNUP_LIMIT_PER_HOUR): tests register their tenants from 127.0.0.1.
  const config = loadConfig({ databaseUrl: serverUrl(database), redisPrefix: `test:${id}:`, heavyReadBudget: { burstMs: 0, refillMsPerSecond: 0 }, signupLimitPerHour: 0, ...overrides });
  let orm = orms.get(database);
  if (!orm) orms.set(database, (orm = await createOrm(serverUrl(database))));
  if (overrides.databaseUrl) orm = undefined; // a test that brings its own database gets its own ORM
  const services = await createServices(config, logger ?? testLogger('the test app'), undefined, orm);
  const server: Server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  markServiceServer(server, `http://127.0.0.1:${port}`); // its answers are searched for stored credentials (issue 37)
  return {
    url: `http://127.0.0.1:${port}`,
    services,
    databaseUrl: config.databaseUrl,
    redisPrefix: config.redisPrefix,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await deleteKeysMatching(services.redis, `${config.redisPrefix}*`).catch(() => undefined); // every node of a cluster
      await closeServices(services, { keepOrm: !overrides.databaseUrl });
      releaseDatabase(database);
    },
  };
}

/**
 * For a test app that builds the realistic network (scripts/realisticNetwork.ts, ~300 single
 * requests): a user bucket that does not make the build wait out 429s (about 15 s otherwise).
 */
export const FIXTURE_BUILDING: Partial<AppConfig> = { userRateLimit: { capacity: 100_000, refillPerMinute: 600_000 } };
