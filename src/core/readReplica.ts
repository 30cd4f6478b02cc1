// A read replica: with DATABASE_REPLICA_URL set (a streaming hot standby of
// DATABASE_URL), GET routes whose reads tolerate a little lag (history, `at` reads, topology at an
// instant, diffs, timelines, exports: `readsFromReplica` in src/http/pipeline.ts decides, from the
// route's declaration) get a `ReplicaDb`: plain reads go to the standby, anything that writes (a
// layout claimed, events sequenced) to the primary, so a handler never knows which it has.
//
// Reading one's own writes: after a principal's write (any successful non-GET request), the
// primary's WAL insert position is stored in Redis under the principal (shared by every API
// process, kept REPLICA_MARK_TTL_MS; a newer position never replaced by an older one). A later
// replica-eligible read by that principal waits until the standby has replayed that position
// (`pg_last_wal_replay_lsn()`), at most DATABASE_REPLICA_WAIT_MS (2 s), then reads from the
// primary. Redis unreachable: the read goes to the primary (it cannot know).
//
// Never an error because of the standby: a probe every second measures its lag; a standby that
// does not answer, is not in recovery, or lags more than DATABASE_REPLICA_MAX_LAG_SECONDS gets
// no reads, and a read that fails on the standby for a reason the primary does not share (its
// connection lost, a recovery conflict) is run again on the primary by the pipeline.
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Redis } from 'ioredis';
import { Counter, Gauge, type Registry } from 'prom-client';
import { Db, redactUrl, type WriteContext } from './db.js';
import type { Logger } from './logger.js';
import type { Scope } from './scope.js';
import { withTimeout } from './timeout.js';

export interface ReadReplicaOptions {
  replicaUrl: string;
  /** Lag past which the standby gets no reads (seconds). */
  maxLagSeconds: number;
  /** How long a read waits for the standby to replay its principal's last write (ms). */
  waitMs: number;
  redisPrefix: string;
  /** How often the standby's lag is measured (ms). */
  probeIntervalMs?: number;
  /** Opens the standby's ORM (src/database.ts createOrm; passed in: src/core knows no module). */
  openOrm: (url: string) => Promise<MikroORM>;
}

/** Why an eligible read went where it went (the label of netinv_db_replica_reads_total). */
export type RouteReason = 'replica' | 'replica_caught_up' | 'own_write' | 'own_write_unknown' | 'replica_down' | 'replica_lagging' | 'replica_failed';

/** Statements the standby may run: reads, not a CTE holding a write, no row locks. */
const READ = /^\s*(select|with|values|table|show|explain)\b/i;
const WRITE_IN_CTE = /\b(insert\s+into|update\s+\w+(\s+\w+)?\s+set|delete\s+from|merge\s+into)\b/i;
const ROW_LOCK = /\bfor\s+(update|share|no\s+key\s+update|key\s+share)\b/i;
export const readsOnly = (sql: string) => READ.test(sql) && !WRITE_IN_CTE.test(sql) && !ROW_LOCK.test(sql);

/** A failure of the standby itself: lost or refused connection, shut down, recovery conflict, read only. */
export class ReplicaUnavailable extends Error {
  constructor(readonly cause: Error, readonly down: boolean) {
    super(`read replica: ${cause.message}`);
  }
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', '57P01', '57P02', '57P03', '53300']);
/** Not the standby's fault alone: a recovery conflict cancelled the query (40001), or a write reached it (25006). */
const RETRY_CODES = new Set(['40001', '25006']);

function asReplicaFailure(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (!e || typeof e !== 'object' || err instanceof ReplicaUnavailable) return err;
  const down = (e.code !== undefined && (CONNECTION_CODES.has(e.code) || e.code.startsWith('08')))
    || /Connection terminated|connection (is )?closed|terminating connection|timeout exceeded when trying to connect/i.test(e.message ?? '');
  if (down) return new ReplicaUnavailable(err as Error, true);
  if (e.code && RETRY_CODES.has(e.code)) return new ReplicaUnavailable(err as Error, false);
  return err;
}

/**
 * A Db whose reads go to the standby and whose writes go to the primary: a read-only snapshot
 * transaction runs on the standby (REPEATABLE READ is allowed there, SERIALIZABLE is not), any
 * other transaction on the primary (it may write).
 */
export class ReplicaDb extends Db {
  constructor(replicaEm: EntityManager, readonly primary: Db) {
    super(replicaEm, primary.context);
  }

  override withContext(context: WriteContext): Db {
    return new ReplicaDb(this.em, this.primary.withContext(context));
  }

  override async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (!readsOnly(sql)) return this.primary.query<T>(sql, params);
    try {
      return await new Db(this.em, { organizationId: this.context.organizationId }).query<T>(sql, params);
    } catch (err) {
      throw asReplicaFailure(err);
    }
  }

  override async reads<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    try {
      return await super.reads(fn);
    } catch (err) {
      throw asReplicaFailure(err);
    }
  }

  override async transaction<T>(fn: (db: Db) => Promise<T>, opts: { snapshot?: boolean } = {}): Promise<T> {
    if (!opts.snapshot) return this.primary.transaction(fn, opts);
    try {
      return await new Db(this.em, { organizationId: this.context.organizationId }).transaction(fn, opts);
    } catch (err) {
      throw asReplicaFailure(err);
    }
  }
}

/** An LSN ('16/B374D848') as a fixed-width string, so that Redis (and JS) compare them as text. */
export function lsnKey(lsn: string): string {
  const [hi, lo] = lsn.split('/');
  return `${hi.padStart(8, '0')}${lo.padStart(8, '0')}`.toUpperCase();
}
const lsnOfKey = (key: string) => `${key.slice(0, 8).replace(/^0+(?=.)/, '')}/${key.slice(8).replace(/^0+(?=.)/, '')}`;

// Keeps the newest position: two writes of one principal on two processes may record out of order.
const MARK_SCRIPT = `local cur = redis.call('GET', KEYS[1])
if (not cur) or ARGV[1] > cur then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`;

/** Who reads their own writes: a user (sessions and keys alike), a daemon. */
function principalOf(scope: Scope): string {
  return scope.kind === 'daemon' ? `daemon:${scope.organizationId}:${scope.daemonId}` : `user:${scope.userId}`;
}

const REDIS_TIMEOUT_MS = 200;

/** The standby of one API process: its ORM, its measured lag, and where each eligible read goes. */
export class ReadReplica {
  private orm: MikroORM | undefined;
  private opening: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Last probe: standby answering, in recovery, lag within bounds. */
  private usable = false;
  private state: 'unknown' | 'ok' | 'down' | 'lagging' | 'not_standby' = 'unknown';
  private lagSeconds = Number.NaN;
  private lagBytes = Number.NaN;
  /** The standby's replay position at the last probe (lsnKey form). */
  private replayed = '';
  private readonly markTtlMs: number;
  private readonly reads: Counter<'target' | 'reason'>;

  constructor(
    private readonly primaryOrm: MikroORM,
    private readonly redis: Pick<Redis, 'get' | 'eval'>,
    private readonly logger: Logger,
    registry: Registry,
    private readonly opts: ReadReplicaOptions,
  ) {
    // A mark older than this is covered by the lag bound: a standby that lags less than
    // maxLagSeconds has replayed a write made that long ago.
    this.markTtlMs = Math.ceil(opts.maxLagSeconds * 1000) + 60_000;
    const self = this;
    new Gauge({
      name: 'netinv_db_replica_lag_seconds', help: 'Replay lag of the read replica: time since the last transaction it replayed, 0 when it has replayed everything it received (NaN: not measured)',
      registers: [registry], collect() { this.set(self.lagSeconds); },
    });
    new Gauge({
      name: 'netinv_db_replica_lag_bytes', help: 'WAL bytes the read replica has yet to replay (primary insert position minus its replay position; NaN: not measured)',
      registers: [registry], collect() { this.set(self.lagBytes); },
    });
    new Gauge({
      name: 'netinv_db_replica_up', help: 'Whether this process sends reads to the read replica (1) or to the primary (0: down, lagging or not a standby)',
      registers: [registry], collect() { this.set(self.usable ? 1 : 0); },
    });
    this.reads = new Counter({
      name: 'netinv_db_replica_reads_total', help: 'Requests whose reads may go to the read replica, by where they went and why',
      labelNames: ['target', 'reason'] as const, registers: [registry],
    });
  }

  /** Opens the standby and starts measuring its lag; never throws (a standby down gets no reads). */
  async start(): Promise<void> {
    await this.probe();
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => { void this.probe().finally(() => this.schedule()); }, this.opts.probeIntervalMs ?? 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.opening?.catch(() => undefined);
    await this.orm?.close(true).catch(() => undefined);
  }

  private async open(): Promise<MikroORM> {
    if (this.orm) return this.orm;
    this.opening ??= this.opts.openOrm(this.opts.replicaUrl).then((orm) => { this.orm = orm; }).finally(() => { this.opening = undefined; });
    await this.opening;
    return this.orm!;
  }

  private setState(state: ReadReplica['state'], detail?: string): void {
    if (state !== this.state) {
      const url = redactUrl(this.opts.replicaUrl);
      if (state === 'ok') this.logger.info({ replica: url }, 'read replica in use');
      else this.logger.warn({ replica: url, state, detail }, 'read replica not used: reads go to the primary');
    }
    this.state = state;
    this.usable = state === 'ok';
  }

  /** Measures the standby's lag against the primary's current WAL position. */
  async probe(): Promise<void> {
    try {
      const orm = await withTimeout(this.open(), 5000, 'no connection within 5 s');
      const primary = (await new Db(this.primaryOrm.em.fork()).one<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn'))!.lsn;
      const row = (await withTimeout(new Db(orm.em.fork()).one<{ recovery: boolean; replayed: string | null; bytes: string | null; seconds: number | null }>(
        `select pg_is_in_recovery() as recovery, pg_last_wal_replay_lsn()::text as replayed,
                pg_wal_lsn_diff(?::pg_lsn, pg_last_wal_replay_lsn())::text as bytes,
                case when pg_last_wal_receive_lsn() is not distinct from pg_last_wal_replay_lsn() then 0
                     else extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 end as seconds`,
        [primary],
      ), 2000, 'no answer within 2 s'))!;
      if (!row.recovery || !row.replayed) {
        this.lagSeconds = this.lagBytes = Number.NaN;
        return this.setState('not_standby', 'pg_is_in_recovery() is false: DATABASE_REPLICA_URL must name a standby of DATABASE_URL');
      }
      this.replayed = lsnKey(row.replayed);
      // The primary's position is read first, so a standby ahead of it by the time it answers shows 0.
      this.lagBytes = Math.max(0, Number(row.bytes ?? 0));
      this.lagSeconds = this.lagBytes === 0 ? 0 : Math.max(0, Number(row.seconds ?? 0));
      this.setState(this.lagSeconds > this.opts.maxLagSeconds ? 'lagging' : 'ok', `${this.lagSeconds.toFixed(1)} s behind`);
    } catch (err) {
      this.lagSeconds = this.lagBytes = Number.NaN;
      this.setState('down', (err as Error).message);
    }
  }

  /** The replica's failure during a request: no more reads until the next probe finds it well. */
  failed(err: ReplicaUnavailable): void {
    if (err.down) this.setState('down', err.cause.message);
    this.reads.inc({ target: 'primary', reason: 'replica_failed' });
  }

  /**
   * The Db for one replica-eligible read by `scope` (or anonymous): a ReplicaDb over the standby,
   * or `primary` when the standby is unusable or has not replayed the principal's last write in time.
   */
  async dbFor(scope: Scope | undefined, primary: Db): Promise<Db> {
    const { reason, db } = await this.choose(scope, primary);
    this.reads.inc({ target: db === primary ? 'primary' : 'replica', reason });
    return db;
  }

  private async choose(scope: Scope | undefined, primary: Db): Promise<{ reason: RouteReason; db: Db }> {
    if (!this.usable || !this.orm) return { reason: this.state === 'lagging' ? 'replica_lagging' : 'replica_down', db: primary };
    const replica = new ReplicaDb(this.orm.em.fork(), primary);
    if (!scope) return { reason: 'replica', db: replica };
    let mark: string | null;
    try {
      mark = await withTimeout(this.redis.get(this.markKey(scope)), REDIS_TIMEOUT_MS, 'no answer');
    } catch {
      return { reason: 'own_write_unknown', db: primary };
    }
    if (!mark || mark <= this.replayed) return { reason: 'replica', db: replica };
    // Wait for the standby to replay the principal's last write, polling its replay position.
    const lsn = lsnOfKey(mark);
    const deadline = Date.now() + this.opts.waitMs;
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      const row = await new Db(this.orm.em.fork()).one<{ replayed: string | null }>('select pg_last_wal_replay_lsn()::text as replayed').catch(() => undefined);
      if (!row?.replayed) return { reason: 'replica_down', db: primary };
      if (lsnKey(row.replayed) >= mark) {
        if (lsnKey(row.replayed) > this.replayed) this.replayed = lsnKey(row.replayed);
        return { reason: 'replica_caught_up', db: replica };
      }
      if (Date.now() + delay > deadline) {
        this.logger.debug({ lsn, replayed: row.replayed }, 'read replica behind the caller\'s last write: read from the primary');
        return { reason: 'own_write', db: primary };
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private markKey(scope: Scope): string {
    return `${this.opts.redisPrefix}replica:wrote:${principalOf(scope)}`;
  }

  /**
   * After a principal's successful write: the primary's WAL insert position (past the write's commit
   * record) kept for that principal. A failure is logged: then Redis is likely down, and reads
   * that cannot read the mark go to the primary anyway.
   */
  async recordWrite(scope: Scope, primary: Db): Promise<void> {
    try {
      const { lsn } = (await primary.one<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn'))!;
      await withTimeout(this.redis.eval(MARK_SCRIPT, 1, this.markKey(scope), lsnKey(lsn), String(this.markTtlMs)), REDIS_TIMEOUT_MS, 'no answer within 200 ms');
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'read replica: the caller\'s write position was not recorded');
    }
  }
}
