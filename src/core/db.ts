// The database: MikroORM owns the pool, the migrations and the transactions. Inventory reads
// and writes are plain SQL through `Db` (history triggers and "as of" queries are SQL anyway,
// and stack notes measured entity hydration at 4x the cost of plain rows on list endpoints).
import { MikroORM, defineConfig, type EntityManager } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { Migration20261122000001Foundation } from '../../migrations/Migration20261122000001Foundation.js';
import { Migration20261122000002Inventory } from '../../migrations/Migration20261122000002Inventory.js';
import { Migration20261122000003Daemons } from '../../migrations/Migration20261122000003Daemons.js';
import { Migration20261122000004DiscoveryTuning } from '../../migrations/Migration20261122000004DiscoveryTuning.js';
import { Migration20261122000005HistoryBySet } from '../../migrations/Migration20261122000005HistoryBySet.js';
import { Migration20261122000006DiscoveryDigests } from '../../migrations/Migration20261122000006DiscoveryDigests.js';
import { Migration20261124000007DaemonPollErrors } from '../../migrations/Migration20261124000007DaemonPollErrors.js';
import { Migration20261125000008IdempotencyKeys } from '../../migrations/Migration20261125000008IdempotencyKeys.js';
import { Migration20261125000009Operators } from '../../migrations/Migration20261125000009Operators.js';
import { Migration20261125000010DaemonAliases } from '../../migrations/Migration20261125000010DaemonAliases.js';
import { Migration20261125000011TopologyLayouts } from '../../migrations/Migration20261125000011TopologyLayouts.js';
import { Migration20261125000012TopologyPinHistory } from '../../migrations/Migration20261125000012TopologyPinHistory.js';
import { Migration20261125000013Events } from '../../migrations/Migration20261125000013Events.js';
import { accountEntities } from '../modules/accounts/entities.js';

/** Every migration, in order. Listed explicitly so compiled and tsx runs find the same set. */
export const MIGRATIONS = [
  { name: 'Migration20261122000001Foundation', class: Migration20261122000001Foundation },
  { name: 'Migration20261122000002Inventory', class: Migration20261122000002Inventory },
  { name: 'Migration20261122000003Daemons', class: Migration20261122000003Daemons },
  { name: 'Migration20261122000004DiscoveryTuning', class: Migration20261122000004DiscoveryTuning },
  { name: 'Migration20261122000005HistoryBySet', class: Migration20261122000005HistoryBySet },
  { name: 'Migration20261122000006DiscoveryDigests', class: Migration20261122000006DiscoveryDigests },
  { name: 'Migration20261124000007DaemonPollErrors', class: Migration20261124000007DaemonPollErrors },
  { name: 'Migration20261125000008IdempotencyKeys', class: Migration20261125000008IdempotencyKeys },
  { name: 'Migration20261125000009Operators', class: Migration20261125000009Operators },
  { name: 'Migration20261125000010DaemonAliases', class: Migration20261125000010DaemonAliases },
  { name: 'Migration20261125000011TopologyLayouts', class: Migration20261125000011TopologyLayouts },
  { name: 'Migration20261125000012TopologyPinHistory', class: Migration20261125000012TopologyPinHistory },
  { name: 'Migration20261125000013Events', class: Migration20261125000013Events },
];

export async function createOrm(databaseUrl: string, poolMax = 10): Promise<MikroORM> {
  await ensureDatabase(databaseUrl);
  return (await MikroORM.init(
    defineConfig({
      clientUrl: databaseUrl,
      entities: accountEntities,
      extensions: [Migrator],
      migrations: { migrationsList: MIGRATIONS, snapshot: false, transactional: true },
      pool: { min: 0, max: poolMax },
      // Every session speaks UTC so timestamps come back as '... +00' and format without maths.
      // JIT off: our statements are short OLTP ones, but those reading a JSON batch
      // (jsonb_to_recordset, estimated at 100 rows) cross jit_above_cost, and compiling then took
      // 40–47 ms for a statement that runs in under 1 ms (measured on discovery ingestion).
      driverOptions: { options: '-c TimeZone=UTC -c jit=off' },
      debug: false,
      logger: () => undefined, // pino logs the requests; the ORM stays quiet
      allowGlobalContext: false,
    } as Parameters<typeof defineConfig>[0]),
  )) as unknown as MikroORM;
}

/** Creates the database named in the URL when it does not exist yet (first start on a new server). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 10_000 });
  await client.connect().catch((err: Error) => {
    throw new Error(`cannot reach the database of DATABASE_URL=${redactUrl(databaseUrl)}: ${err.message}`
      + (/password|SASL|SCRAM|authentication/i.test(err.message) ? ' (the server wants a password: put it in DATABASE_URL, or unset DATABASE_URL to let the project start its own server)' : ''));
  });
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) {
      await client.query(`create database ${quoteIdent(name)}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}

/** A connection URL fit for a log line: the password, if any, hidden. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '(not a URL)';
  }
}

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function migrate(orm: MikroORM): Promise<string[]> {
  const done = await orm.migrator.up();
  return done.map((m) => m.name);
}

export async function pendingMigrations(orm: MikroORM): Promise<number> {
  return (await orm.migrator.getPending()).length;
}

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

/** Who changes something: recorded on every event the change yields (migration 13). */
export interface Actor {
  type: 'user' | 'api_key' | 'daemon' | 'system';
  id?: string;
}

/**
 * What a transaction tells the event triggers: its actor, and a batch id when several
 * transactions make one change (a discovery batch); else each transaction is a batch of its own.
 */
export interface WriteContext {
  actor?: Actor;
  batchId?: string;
}

/** Statements that write (one outside a transaction gets one, to carry the actor); a CTE only if it holds a write. */
const isWrite = (sql: string) => /^\s*(insert|update|delete|merge)\b/i.test(sql) || (/^\s*with\b/i.test(sql) && /\b(insert\s+into|update\s+\w+(\s+\w+)?\s+set|delete\s+from)\b/i.test(sql));

/**
 * A thin handle over one EntityManager: SQL with `?` placeholders that joins the surrounding
 * transaction. Services receive a Db and open `db.transaction()` for every multi-statement write.
 * A Db made for a caller (`context`) opens every transaction by telling PostgreSQL who writes.
 */
export class Db {
  constructor(readonly em: EntityManager, readonly context: WriteContext = {}) {}

  /** The same connection handle speaking for another actor or batch. */
  withContext(context: WriteContext): Db {
    return new Db(this.em, { ...this.context, ...context });
  }

  /**
   * Parameters travel as bind parameters (`?` becomes `$n`), not spliced into the SQL text as
   * `em.execute` does: a discovery batch binds ~1 MB of JSON, which as a literal cost escaping in
   * Node and parsing in PostgreSQL. `getKysely()` runs on the EntityManager's transaction, if any.
   */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    if ((this.context.actor || this.context.batchId) && !this.em.isInTransaction() && isWrite(sql)) {
      return this.transaction((tx) => tx.query<T>(sql, params));
    }
    let n = 0;
    const text = params.length ? sql.replace(/\?/g, () => `$${++n}`) : sql;
    if (n !== params.length) throw new Error(`Db.query: ${n} placeholders for ${params.length} parameters`);
    const result = await this.em.getKysely().executeQuery(CompiledQuery.raw(text, params.map(toSqlParam)));
    return result.rows as T[];
  }

  async one<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T | undefined> {
    return (await this.query<T>(sql, params))[0];
  }

  transaction<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.em.isInTransaction()) return fn(this);
    return this.em.transactional(async (em) => {
      const tx = new Db(em as EntityManager, this.context);
      const { actor, batchId } = this.context;
      if (actor || batchId) {
        await tx.query(
          `select set_config('netinv.actor_type', ?, true), set_config('netinv.actor_id', ?, true), set_config('netinv.batch_id', ?, true)`,
          [actor?.type ?? 'system', actor?.id ?? '', batchId ?? ''],
        );
      }
      return fn(tx);
    });
  }
}
