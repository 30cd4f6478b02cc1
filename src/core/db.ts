// The database: MikroORM owns the pool, the migrations and the transactions (the ORM is built by
// src/database.ts, which knows the migrations and entities). Inventory reads
// and writes are plain SQL through `Db` (history triggers and "as of" queries are SQL anyway,
// and stack notes measured entity hydration at 4x the cost of plain rows on list endpoints).
import type { MikroORM, EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery, type Kysely } from 'kysely';
import pg from 'pg';
import { boundStatement } from './sql.js';

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
  /**
   * The organization the caller speaks for. With row security on for the database
   * (DATABASE_ROW_SECURITY, `setRowSecurity`), every statement then runs in a transaction that
   * takes the role TENANT_ROLE with this organization, and the policy on every tenant table
   * (migration RowSecurity) shows and accepts only its rows. Unset, or row security off, statements
   * run as the login role, the tables' owner, which no policy holds: work that crosses
   * organizations on purpose (the event sequencer, the webhook dispatcher, sweeps, retention) is
   * exactly the work that names none.
   */
  organizationId?: string;
}

/** A read of Db.reads: its reserved connection, in a read-only snapshot transaction held to the organization. */
interface BoundRead { kysely: Kysely<any>; organizationId: string }

// An organization id goes into a simple query as text (Db.reads, tenantSettings' callers): a uuid and nothing else.
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The ORMs (their configuration, shared by every fork) whose Dbs hold statements to their organization. */
const rowSecurityOn = new WeakSet<object>();

/** Turns row security on or off for every Db of this ORM (DATABASE_ROW_SECURITY; the process's one switch). */
export function setRowSecurity(em: EntityManager, on: boolean): void {
  if (on) rowSecurityOn.add(em.config);
  else rowSecurityOn.delete(em.config);
}

/** The role a transaction with an organization takes (no BYPASSRLS; migration RowSecurity). */
export const TENANT_ROLE = 'netinv_tenant';

/**
 * The settings of a transaction held to an organization, as one literal statement (for a simple
 * query that binds nothing: a topology thread's). `organizationId` must be a uuid (the caller checks).
 */
export const tenantSettings = (organizationId: string) =>
  `select set_config('role', '${TENANT_ROLE}', true), set_config('netinv.organization_id', '${organizationId}', true)`;

/** Statements that write (one outside a transaction gets one, to carry the actor); a CTE only if it holds a write. */
// A leading comment (ACROSS_ORGANIZATIONS) does not hide what the statement is.
export const isWrite = (sql: string) => {
  const s = sql.replace(/^\s*(\/\*[\s\S]*?\*\/\s*)+/, '');
  return /^\s*(insert|update|delete|merge)\b/i.test(s) || (/^\s*with\b/i.test(s) && /\b(insert\s+into|update\s+\w+(\s+\w+)?\s+set|delete\s+from)\b/i.test(s));
};

/**
 * Who wants to know that a write committed, per database (the ORM's configuration, shared by every
 * fork of its EntityManager): the event hub, which sequences the outbox then (migration 21: writers
 * no longer NOTIFY). Told after the commit of a transaction that ran a write through a Db, or after
 * a write outside any transaction; a write this cannot see (raw SQL, the ORM's own flush) is found
 * by the hub's poll of the outbox.
 */
const writeListeners = new WeakMap<object, Set<() => void>>();
/** Transactions (their EntityManager) that ran a write through a Db. */
const wroteIn = new WeakSet<EntityManager>();
/** Transactions (their EntityManager) that took the tenant role, with their organization. */
const tenantOf = new WeakMap<EntityManager, string>();

/** Calls `listener` after each committed write on this ORM's database, in this process; answers how to stop. */
export function onWriteCommitted(em: EntityManager, listener: () => void): () => void {
  let set = writeListeners.get(em.config);
  if (!set) writeListeners.set(em.config, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}

function writeCommitted(em: EntityManager): void {
  for (const listener of writeListeners.get(em.config) ?? []) listener();
}

/**
 * A thin handle over one EntityManager: SQL with `?` placeholders that joins the surrounding
 * transaction. Services receive a Db and open `db.transaction()` for every multi-statement write.
 * A Db made for a caller (`context`) opens every transaction by telling PostgreSQL who writes.
 */
export class Db {
  /**
   * `bound`: a read of Db.reads, on one reserved connection in a transaction of its own (not the
   * ORM's), held to that organization.
   */
  constructor(readonly em: EntityManager, readonly context: WriteContext = {}, private readonly bound?: BoundRead) {}

  private get inTransaction(): boolean {
    return this.bound !== undefined || this.em.isInTransaction();
  }

  /** The organization the database holds this Db's statements to: its own with row security on, else none. */
  get heldTo(): string | undefined {
    return rowSecurityOn.has(this.em.config) ? this.context.organizationId : undefined;
  }

  /** The same connection handle speaking for another actor or batch. */
  withContext(context: WriteContext): Db {
    return new Db(this.em, { ...this.context, ...context }, this.bound);
  }

  /**
   * Parameters travel as bind parameters (src/core/sql.ts), not spliced into the SQL text as
   * `em.execute` does. `getKysely()` runs on the EntityManager's transaction, if any.
   */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    const owner = runsAsOwner(sql);
    if (!this.inTransaction) {
      // Outside a transaction: one is opened to carry the organization (every statement) or the actor (writes).
      if (owner && this.heldTo !== undefined) return this.withContext({ organizationId: undefined }).query<T>(sql, params);
      if (this.heldTo !== undefined || ((this.context.actor || this.context.batchId) && isWrite(sql))) {
        return this.transaction((tx) => tx.query<T>(sql, params));
      }
    } else {
      const set = this.bound?.organizationId ?? tenantOf.get(this.em);
      if (owner && set !== undefined) return this.asOwnerInside<T>(sql, params);
      if (!owner && this.heldTo !== undefined && set !== this.heldTo) {
        // A transaction opened without this organization (or with another): its statements would not
        // be held to it. A bug of the caller, said rather than run.
        throw new Error(`a Db for organization ${this.heldTo} joined a transaction set for ${set ?? 'no organization'}`);
      }
    }
    return this.run<T>(sql, params);
  }

  private async run<T>(sql: string, params: unknown[]): Promise<T[]> {
    const { text, values } = boundStatement(sql, params);
    const writes = isWrite(sql);
    const inTransaction = writes && this.inTransaction;
    const result = await (this.bound?.kysely ?? this.em.getKysely()).executeQuery(CompiledQuery.raw(text, values));
    if (inTransaction) wroteIn.add(this.em);
    else if (writes) writeCommitted(this.em);
    return result.rows as T[];
  }

  /** A statement that runs as the owner inside a transaction that took the tenant role: the role dropped around it. */
  private async asOwnerInside<T>(sql: string, params: unknown[]): Promise<T[]> {
    await this.run(`select set_config('role', 'none', true)`, []);
    try {
      return await this.run<T>(sql, params);
    } finally {
      await this.run(`select set_config('role', ?, true)`, [TENANT_ROLE]);
    }
  }

  async one<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T | undefined> {
    return (await this.query<T>(sql, params))[0];
  }

  /**
   * Reads that belong together (a page, its count and its rows' children): with an organization, one
   * snapshot transaction, so that the role and organization are set once for all of them rather than
   * around each statement (a list's nine statements: 11 round trips instead of 36); without one, each
   * statement on its own as always.
   */
  reads<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const organizationId = this.heldTo;
    if (organizationId === undefined || this.inTransaction) return fn(this);
    if (!UUID.test(organizationId)) throw new Error(`not an organization id: ${organizationId}`);
    // Its own transaction on a reserved connection rather than the ORM's: the transaction and its
    // settings go in one round trip (a simple query, which may hold several statements when it
    // binds nothing, as a topology thread's), and the ORM's unit of work is not needed for reads.
    return this.em.getKysely().connection().execute(async (kysely) => {
      await kysely.executeQuery(CompiledQuery.raw(`start transaction isolation level repeatable read read only; ${tenantSettings(organizationId)}`));
      let value: T;
      try {
        value = await fn(new Db(this.em, this.context, { kysely, organizationId }));
      } catch (err) {
        await kysely.executeQuery(CompiledQuery.raw('rollback')).catch(() => undefined);
        throw err;
      }
      await kysely.executeQuery(CompiledQuery.raw('commit'));
      return value;
    });
  }

  /**
   * `snapshot`: every statement sees one snapshot of the database (REPEATABLE READ, read only), for
   * reads of several tables that must agree; otherwise READ COMMITTED, each statement its own.
   */
  transaction<T>(fn: (db: Db) => Promise<T>, opts: { snapshot?: boolean } = {}): Promise<T> {
    if (this.inTransaction) return fn(this);
    let inner: EntityManager | undefined;
    const done = this.em.transactional(async (em) => {
      inner = em as EntityManager;
      const tx = new Db(em as EntityManager, this.context);
      const { actor, batchId } = this.context;
      const organizationId = this.heldTo;
      // One statement sets all: the role and organization first, so nothing runs before them.
      const settings: string[] = [];
      const values: unknown[] = [];
      if (organizationId !== undefined) {
        settings.push(`set_config('role', ?, true)`, `set_config('netinv.organization_id', ?, true)`);
        values.push(TENANT_ROLE, organizationId);
      }
      if (actor || batchId) {
        settings.push(`set_config('netinv.actor_type', ?, true)`, `set_config('netinv.actor_id', ?, true)`, `set_config('netinv.batch_id', ?, true)`);
        values.push(actor?.type ?? 'system', actor?.id ?? '', batchId ?? '');
      }
      if (settings.length) await tx.run(`select ${settings.join(', ')}`, values);
      if (organizationId !== undefined) tenantOf.set(em as EntityManager, organizationId);
      return fn(tx);
    }, opts.snapshot ? { isolationLevel: 'repeatable read', readOnly: true } : undefined);
    return done.then((value) => {
      if (inner && wroteIn.has(inner)) writeCommitted(this.em);
      return value;
    });
  }
}

/**
 * Marks a statement that reads every organization's rows on purpose (one global event order, the
 * maintenance sweeps, a daemon-chosen id checked across organizations): on a partitioned schema
 * every partition, on Citus every shard. The pruning spec and audit (npm run audit:pruning) exempt
 * exactly these statements; every other one names its organization.
 */
export const ACROSS_ORGANIZATIONS = '/* across organizations */';

/**
 * The statements that run as the tables' owner even through a Db with an organization (row security
 * on): the one place that says which. Those marked ACROSS_ORGANIZATIONS read or write every
 * organization on purpose (a policy would hide exactly what they look for), and ANALYZE, which only
 * the owner may run. Work that is cross-organization as a whole (the event sequencer, the webhook
 * dispatcher, sweeps, retention, the workers) uses a Db without an organization and never takes the role.
 */
export const runsAsOwner = (sql: string): boolean => sql.startsWith(ACROSS_ORGANIZATIONS) || /^\s*analyze\b/i.test(sql);
