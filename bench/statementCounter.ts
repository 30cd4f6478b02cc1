// SQL statements counted in this process (src/ untouched), for bench/ingest.ts and bench/rescan.ts:
// pg_stat_statements needs shared_preload_libraries (not set on the project's server), so
// `Db.prototype.query` (the statements the service issues) and `pg.Client.prototype.query`
// (everything on the wire, BEGIN/COMMIT included) are wrapped. Importing this module installs
// nothing; countStatements() does, once per process.
import pg from 'pg';
import { Db } from '../src/core/db.js';

export interface StatementStats { count: number; totalMs: number; samples: number[] }

/** What was counted since the last take(). */
export interface Counted {
  /** Statements through Db.prototype.query. */
  db: number;
  /** Queries on the wire (pg.Client.prototype.query), BEGIN and COMMIT included. */
  wire: number;
  wireBegin: number;
  wireCommit: number;
  /** Db statements by label: how many were sent, and the round-trip times of those answered (up to 20,000 samples a label). */
  byLabel: Map<string, StatementStats>;
}

type PgQuery = (this: pg.Client, ...args: unknown[]) => unknown;
/** pg.Client's own query, unwrapped: a bench's reads through it are never counted. */
const originalPgQuery = pg.Client.prototype.query as unknown as PgQuery;
const originalDbQuery = Db.prototype.query;

const empty = (): Counted => ({ db: 0, wire: 0, wireBegin: 0, wireCommit: 0, byLabel: new Map() });

export class StatementCounter {
  private counted = empty();

  constructor(private readonly labelOf: (sql: string) => string) {}

  /** The counts so far (live: they go on growing). */
  get current(): Readonly<Counted> {
    return this.counted;
  }

  /** The counts so far, and zero from now on. */
  take(): Counted {
    const taken = this.counted;
    this.counted = empty();
    return taken;
  }

  /** @internal: one Db statement sent at t0 (counted now), resolved or failed later (timed when it resolves). */
  onDb(text: string, result: Promise<unknown>, t0: number): void {
    const c = this.counted;
    c.db += 1;
    const label = this.labelOf(text);
    let s = c.byLabel.get(label);
    if (!s) c.byLabel.set(label, (s = { count: 0, totalMs: 0, samples: [] }));
    s.count += 1;
    const stats = s;
    void result.then(() => {
      const ms = performance.now() - t0;
      stats.totalMs += ms;
      if (stats.samples.length < 20_000) stats.samples.push(ms);
    }, () => undefined);
  }

  /** @internal: one query on the wire. */
  onWire(text: string): void {
    const c = this.counted;
    c.wire += 1;
    if (/^\s*(begin|start transaction)\b/i.test(text)) c.wireBegin += 1;
    else if (/^\s*commit\b/i.test(text)) c.wireCommit += 1;
  }
}

let installed: StatementCounter | undefined;

/**
 * Counts every statement of this process from now on, each Db statement named by `labelOf` (what
 * it does, so that timings group meaningfully). One counter per process.
 */
export function countStatements(labelOf: (sql: string) => string): StatementCounter {
  if (installed) throw new Error('countStatements: already counting in this process');
  const counter = (installed = new StatementCounter(labelOf));
  Db.prototype.query = function countedQuery<T>(this: Db, text: string, params: unknown[] = []): Promise<T[]> {
    const t0 = performance.now();
    const result = originalDbQuery.call(this, text, params) as Promise<T[]>;
    counter.onDb(text, result, t0);
    return result;
  };
  (pg.Client.prototype as unknown as { query: PgQuery }).query = function countedPgQuery(this: pg.Client, ...args: unknown[]) {
    const first = args[0];
    counter.onWire(typeof first === 'string' ? first : (first as { text?: string } | null)?.text ?? '');
    return originalPgQuery.apply(this, args);
  };
  return counter;
}

/** A client of the bench's own (checks, counts, settings): its statements are not counted. */
export class UncountedClient {
  private constructor(private readonly client: pg.Client) {}

  static async open(databaseUrl: string): Promise<UncountedClient> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return new UncountedClient(client);
  }

  async rows<T = Record<string, any>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return ((await originalPgQuery.call(this.client, sql, params)) as pg.QueryResult).rows as T[];
  }

  close(): Promise<void> {
    return this.client.end();
  }
}
