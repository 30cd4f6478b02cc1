// A real API on a random port, over a database of its own, for one test.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { buildApp, closeServices, createServices } from '../../src/app.js';
import { loadConfig, type AppConfig } from '../../src/config.js';
import { createOrm, migrate, quoteIdent } from '../../src/core/db.js';
import type { Services } from '../../src/core/services.js';
import { createLogger } from '../../src/core/logger.js';

// The template is named after the migrations' content: unchanged migrations reuse it, and test
// runs in parallel (or of other checkouts) never drop a template another run is cloning.
const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);
const TEMPLATE = `netinv_tpl_${createHash('sha256')
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

export async function startTestApp(overrides: Partial<AppConfig> = {}): Promise<TestApp> {
  const id = randomBytes(6).toString('hex');
  const database = `netinv_t_${id}`;
  await adminQuery(`create database ${quoteIdent(database)} template ${TEMPLATE}`);
  const config = loadConfig({ databaseUrl: serverUrl(database), redisPrefix: `test:${id}:`, ...overrides });
  const services = await createServices(config, createLogger(process.env.LOG_LEVEL ?? 'silent'));
  const server: Server = buildApp(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    services,
    databaseUrl: config.databaseUrl,
    redisPrefix: config.redisPrefix,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      const keys = await services.redis.keys(`${config.redisPrefix}*`).catch(() => []);
      if (keys.length) await services.redis.del(...keys).catch(() => undefined);
      await closeServices(services);
      await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
    },
  };
}
