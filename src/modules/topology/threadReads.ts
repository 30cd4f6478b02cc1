// A topology thread reads the rows it draws itself: on a connection of its own, in the
// snapshot the request's transaction exported (pg_export_snapshot / SET TRANSACTION SNAPSHOT), so
// it sees exactly what the request's other statements saw. Before, the event loop that served
// the request received each table's rows as one JSON text of megabytes and passed it to the
// thread: strings of the large-object space, which only a full collection frees (25 mark-compacts
// in a loaded 30-s window against 4 idle, 8–16 ms pauses of the API's main thread, each delaying
// every other organization's requests and webhook deliveries). Now those strings live and die in
// the thread's own heap, and the event loop only learns how many rows there were.
import pg from 'pg';
import { tenantSettings, UUID } from '../../core/db.js';
import { boundStatement, SESSION_OPTIONS } from '../../core/sql.js';

/** A table's rows as PostgreSQL's JSON text of them (json_agg) and their count. */
export interface RowsText { n: number; rows: string }

/**
 * Where and what a thread reads: the database of the request's transaction, the snapshot it
 * exported, each table's statement, and the organization the transaction was held to (row security
 * on): the thread's transaction takes the same role and organization.
 */
export interface SnapshotRead { url: string; snapshot: string; reads: Array<[table: string, sql: string, params: unknown[]]>; organizationId?: string }

/**
 * Every table's rows as one JSON text each, with their counts, in ONE statement (one round trip,
 * not one per table: each is a wait for the database, longer on a busy machine): a row of columns
 * n0, rows0, n1, rows1, … in the order of `reads`.
 */
export function asJsonTexts(reads: Array<[sql: string, params: unknown[]]>): [string, unknown[]] {
  const parts = reads.map(([sql], i) => `(select count(*)::int as n, coalesce(json_agg(j), '[]')::text as rows from (${sql}) j) t${i}`);
  const columns = reads.map((_, i) => `t${i}.n as n${i}, t${i}.rows as rows${i}`);
  return [`select ${columns.join(', ')} from ${parts.join(', ')}`, reads.flatMap(([, params]) => params)];
}

/** The answer of asJsonTexts as each table's RowsText, by table. */
export function fromJsonTexts(tables: string[], row: Record<string, unknown>): Record<string, RowsText> {
  return Object.fromEntries(tables.map((table, i) => [table, { n: row[`n${i}`] as number, rows: row[`rows${i}`] as string }]));
}

/**
 * A topology read's settings (service.ts readTransaction says why): no parallel workers, random
 * reads priced as the cached reads they are.
 */
export const READ_SETTINGS = `select set_config('max_parallel_workers_per_gather', '0', true), set_config('random_page_cost', '1.1', true)`;

// A snapshot id is hex words and dashes ('00000003-0000001B-1'); SET TRANSACTION SNAPSHOT takes no bind parameter.
const SNAPSHOT_ID = /^[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+$/;


/** This thread's connections, by database URL (the primary's, a standby's): one each, as the thread runs one task at a time. */
const pools = new Map<string, pg.Pool>();
function poolFor(url: string): pg.Pool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 30_000, options: SESSION_OPTIONS, application_name: 'netinv topology thread' });
    pool.on('error', () => undefined); // an idle connection lost: the next read opens another
    // Its last connection closed (idle 30 s, or lost): the pool goes too, so a thread that once read
    // from many databases (tests make one each) keeps nothing of them.
    pool.on('remove', () => {
      if (pool!.totalCount > 0 || pools.get(url) !== pool) return;
      pools.delete(url);
      pool!.end().catch(() => undefined);
    });
    pools.set(url, pool);
  }
  return pool;
}

/** Each table's rows of `read`, in its snapshot. */
export async function readSnapshotHere(read: SnapshotRead): Promise<Record<string, RowsText>> {
  if (!SNAPSHOT_ID.test(read.snapshot)) throw new Error(`not a snapshot id: ${read.snapshot}`);
  if (read.organizationId !== undefined && !UUID.test(read.organizationId)) throw new Error(`not an organization id: ${read.organizationId}`);
  const tenant = read.organizationId === undefined ? '' : `; ${tenantSettings(read.organizationId)}`;
  const client = await poolFor(read.url).connect();
  let failed: Error | undefined;
  try {
    // One round trip for the three (a simple query may hold several statements when it binds nothing).
    await client.query(`begin isolation level repeatable read read only; set transaction snapshot '${read.snapshot}'; ${READ_SETTINGS}${tenant}`);
    const { text, values } = boundStatement(...asJsonTexts(read.reads.map(([, sql, params]) => [sql, params])));
    const { rows } = await client.query(text, values);
    await client.query('commit');
    return fromJsonTexts(read.reads.map(([table]) => table), rows[0]!);
  } catch (err) {
    failed = err as Error;
    throw err;
  } finally {
    client.release(failed); // a connection that failed mid-transaction is closed, not reused
  }
}

/** The databases this thread holds a pool for (tests). */
export const pooledDatabases = () => [...pools.keys()];
