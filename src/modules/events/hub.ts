// The live half of the feed, one per process. It sequences the outbox when this
// process has committed a write (src/core/db.ts onWriteCommitted) and, for writes made elsewhere
// (another process, raw SQL), when a short poll of the outbox finds one (EVENT_OUTBOX_POLL_MS,
// 100 ms: one index probe). Writers do not NOTIFY (migration 21: a NOTIFY takes a database-wide lock
// at commit, so every writer committed one at a time); the sequencer NOTIFYs `netinv_events` once
// per batch, and a PostgreSQL connection LISTENing to it reads the new events once and hands them to
// this process's streams. Several API processes each run one, so a stream opened on any process sees
// every commit; PostgreSQL is the only fan-out.
//
// A stream first catches up from the table (its cursor: Last-Event-ID, `after`, or now), then takes
// events from the hub; the switch happens with no await between the last empty read and going
// live, so there is no gap and no repeat. A client that reads slower than events come is cut off
// (with its last id, to resume from) once MAX_BUFFER_BYTES wait for it.
//
// Revocation does not wait for the 1 s re-check: a request that revokes a credential
// (key deleted, disabled or rotated, session signed out, user removed or changed, API access off)
// calls `revoke` after its commit and before it answers. That NOTIFYs `netinv_revocations` with the
// credentials and a reply channel, and reads in the same statement which hubs listen: each hub's
// listening connection names itself (application_name HUB_APPLICATION_NAME) only once its LISTENs
// are in place, so every hub named there receives the notice. Each hub ends (or checks again) the
// matching streams, synchronously for an end, then answers on the reply channel with its connection's
// pid; `revoke` returns when every listed hub answered or has gone (at most `revocationWaitMs`, 2 s;
// past that the periodic re-check is the fallback). So once the revoking request answers, no hub
// still holds such a stream, and an event committed after that is never sent on one. A stream opened
// while the revocation happened is checked once more after it is registered (before its catch-up).
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { coalescing } from '../../core/coalescing.js';
import { ACROSS_ORGANIZATIONS, Db, onWriteCommitted } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { eventResponse, readEvents, sequencePending, visibleTo, type Event, type EventFilter, type EventRow } from './service.js';
import { loggable, revocationSubject, type RevocationKind } from './revocations.js';
import { setting } from '../../core/settings.js';

export interface EventHubOptions {
  databaseUrl: string;
  orm: MikroORM;
  logger: Logger;
  /** Comment lines that keep proxies from closing an idle stream (EVENT_HEARTBEAT_MS, 15 s). */
  heartbeatMs: number;
  /**
   * How often every stream's credential is resolved again (EVENT_RECHECK_MS, 1 s): the safety net
   * behind `revoke` (a change no route announced, a hub that missed a notice), on whichever process
   * serves the stream (each reads PostgreSQL).
   */
  recheckMs?: number;
  /** How long `revoke` waits for every hub to answer before it gives up (2 s; the re-check follows). */
  revocationWaitMs?: number;
  /** What may wait for one slow client before it is dropped (1 MiB). */
  maxBufferBytes?: number;
  /**
   * How often the outbox is looked at for changes this process did not make (EVENT_OUTBOX_POLL_MS,
   * 100 ms): the latency of an event written by raw SQL or by a process without a hub, and the
   * safety net for everything else. One index probe per look (bench/concurrentIngest.ts).
   */
  outboxPollMs?: number;
  /** Called when any process has sequenced new events (the webhook dispatcher listens here). */
  onEvents?: () => void;
}

const CATCH_UP_PAGE = 500;

/** The channel of revocation notices (`revoke`), LISTENed to by every hub beside `netinv_events`. */
const REVOCATIONS = 'netinv_revocations';
/** What a hub's listening connection is named once it listens: how `revoke` finds every hub (pg_stat_activity). */
export const HUB_APPLICATION_NAME = 'netinv-event-hub';
const REPLY_CHANNEL = /^netinv_revoked_[0-9a-f]{16}$/;
const NOT_ACCEPTED = 'the credential is no longer accepted (signed out, expired or revoked)';

interface RevocationNotice {
  /** The channel `revoke` waits on for each hub's pid. */
  reply: string;
  subjects: string[];
  kind: RevocationKind;
}

/** An event as an SSE frame, serialized once however many streams it goes to. */
const frames = new WeakMap<Event, string>();
function frameOf(e: Event): string {
  let frame = frames.get(e);
  if (frame === undefined) frames.set(e, (frame = `id: ${e.id}\ndata: ${JSON.stringify(e)}\n\n`));
  return frame;
}

/** The caller's credential resolved again: its scope now, or undefined once it is no longer accepted. */
export type CredentialCheck = () => Promise<Scope | undefined>;

/** A stream's place in its credential's count of open streams (events/streamLimit.ts): kept alive, then given back. */
export interface StreamLease {
  refresh(): Promise<void>;
  release(): Promise<void>;
}

export class EventStream {
  readonly body = new PassThrough();
  live = false;
  closed = false;
  /** Credential checks started, and the latest one whose answer was applied (an older answer never replaces a newer one). */
  checksStarted = 0;
  checkApplied = 0;
  /** Bytes handed to the response so far (what the client was sent or the socket still holds). */
  bytesSent = 0;
  /**
   * `scope` is what the caller may see now: replaced when its credential is checked again.
   * `credential`: the key or session it was opened with (revocations.ts revocationSubject).
   */
  constructor(public scope: Scope, readonly filter: EventFilter, public cursor: bigint, readonly recheck?: CredentialCheck, readonly lease?: StreamLease, readonly credential?: string) {}

  /** What a revocation may name to reach this stream: its credential, its user, its organization's keys. */
  subjects(): string[] {
    const out: string[] = [];
    if (this.credential) out.push(this.credential);
    if (this.scope.userId) out.push(revocationSubject.user(this.scope.userId));
    if (this.scope.kind === 'api_key') out.push(revocationSubject.organizationKeys(this.scope.organizationId));
    return out;
  }

  write(text: string): void {
    if (this.closed) return;
    this.bytesSent += Buffer.byteLength(text);
    this.body.write(text);
  }

  send(events: Event[]): void {
    if (!events.length) return;
    let text = '';
    for (const e of events) text += frameOf(e);
    this.write(text);
    this.cursor = BigInt(events[events.length - 1]!.id);
  }
}

export class EventHub {
  private client?: pg.Client;
  private starting?: Promise<void>;
  private stopped = false;
  private lastId = 0n;
  private readonly streams = new Set<EventStream>();
  /** Set by endAll: why streams end (the server is stopping). */
  private ending: string | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Set while the streams are checked again after a reconnection: no new events handed out meanwhile. */
  private fanOutHeld = false;
  /** Rounds of credential checks completed (tests wait for one that started after a change). */
  rechecks = 0;

  /** Stops the wake-ups by this process's own writes. */
  private readonly unsubscribe: () => void;

  constructor(private readonly opts: EventHubOptions) {
    // From construction, not start(): an API process without streams still sequences its own
    // writes at once, so the streams of every other process get them within a NOTIFY.
    this.unsubscribe = onWriteCommitted(opts.orm.em, () => this.sequence());
  }

  private db(): Db {
    return new Db(this.opts.orm.em.fork());
  }

  /** Connects and listens (once; again after a lost connection). */
  start(): Promise<void> {
    this.starting ??= this.connect().catch((err: Error) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.databaseUrl, connectionTimeoutMillis: 10_000 });
    let pid = 0;
    client.on('notification', (msg) => {
      if (msg.channel === REVOCATIONS) return void this.revoked(client, pid, msg.payload);
      this.opts.onEvents?.();
      this.fetch();
    });
    client.on('error', (err) => this.opts.logger.warn({ err: err.message }, 'event listener connection lost'));
    client.on('end', () => {
      if (this.client !== client || this.stopped) return;
      this.client = undefined;
      this.starting = undefined;
      setTimeout(() => void this.start().catch(() => undefined), 1000).unref();
    });
    await client.connect();
    await client.query('listen netinv_events');
    await client.query(`listen ${REVOCATIONS}`);
    // Named only now that both LISTENs are in place: a hub `revoke` finds is one its notice reaches.
    const named = await client.query<{ pid: number }>(`select pg_backend_pid() as pid, set_config('application_name', $1, false)`, [HUB_APPLICATION_NAME]);
    pid = named.rows[0]!.pid;
    if (this.stopped) {
      await client.end();
      return;
    }
    const reconnected = this.client === undefined && this.streams.size > 0;
    this.client = client;
    if (!this.timers.length) {
      this.timers.push(setInterval(() => this.heartbeat(), this.opts.heartbeatMs).unref());
      this.timers.push(setInterval(() => this.rechecker.run(), this.opts.recheckMs ?? 1000).unref());
      this.timers.push(setInterval(() => this.sequence(), this.opts.outboxPollMs ?? setting('EVENT_OUTBOX_POLL_MS')).unref());
    }
    // Revocation notices sent while the connection was down were missed: every stream checked again
    // before it is handed what was committed meanwhile (the fan-out waits).
    if (reconnected) {
      this.fanOutHeld = true;
      await Promise.all([...this.streams].map((s) => this.check(s).catch(() => undefined)));
      this.fanOutHeld = false;
    }
    // Whatever was committed while nobody listened: sequenced, and read by the streams.
    if (this.lastId === 0n) this.lastId = BigInt(await this.lastIdInTable());
    this.sequence();
    this.opts.onEvents?.();
    this.fetch();
  }

  private async lastIdInTable(): Promise<string> {
    // Across organizations: the hub reads the one global order, for the streams of every organization.
    const row = await this.db().one<{ id: string | null }>(`${ACROSS_ORGANIZATIONS} select max(id) as id from events`);
    return String(row?.id ?? '0');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    for (const s of this.streams) this.close(s);
    await Promise.allSettled([this.sequencer.idle(), this.fetcher.idle()]);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /**
   * Sequences the outbox if anything waits there (one run at a time; calls meanwhile collapse into
   * one more run, so a burst of commits makes one batch).
   */
  private readonly sequencer = coalescing(async () => {
    await sequencePending(this.db()).catch((err: Error) => this.opts.logger.warn({ err: err.message }, 'event sequencing failed'));
  }, () => !this.stopped);

  sequence(): void {
    this.sequencer.run();
  }

  /** Reads the events after the hub's last id, once for all streams, and hands them out. */
  private readonly fetcher = coalescing(async () => {
    try {
      for (;;) {
        // Across organizations: one read of the new events for every stream of this process (each filters its own).
        const rows = await this.db().query<EventRow>(`${ACROSS_ORGANIZATIONS} select * from events where id > ?::bigint order by id limit 1000`, [String(this.lastId)]);
        if (!rows.length) return;
        this.lastId = BigInt(rows[rows.length - 1]!.id);
        this.dispatch(rows.map(eventResponse));
        if (rows.length < 1000) return;
      }
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'event fan-out read failed');
    }
  }, () => !this.stopped && !this.fanOutHeld && this.streams.size > 0);

  private fetch(): void {
    this.fetcher.run();
  }

  private dispatch(events: Event[]): void {
    const max = this.opts.maxBufferBytes ?? 1024 * 1024;
    for (const s of this.streams) {
      if (!s.live) continue;
      s.send(events.filter((e) => BigInt(e.id) > s.cursor && visibleTo(s.scope, s.filter, e)));
      if (s.body.writableLength > max) this.drop(s);
    }
  }

  private heartbeat(): void {
    for (const s of this.streams) {
      s.write(': heartbeat\n\n');
      s.lease?.refresh().catch((err: Error) => this.opts.logger.warn({ err: err.message }, 'event stream lease not refreshed'));
    }
  }

  /**
   * Every stream's credential checked again (one stream at a time, one run at a time): a stream
   * whose session ended or whose key was revoked is told so and closed; the others see from now on
   * only what their caller may see now (role, network grants). A failed check (database down)
   * leaves the stream as it was.
   */
  private readonly rechecker = coalescing(async () => {
    for (const s of [...this.streams]) {
      try {
        await this.check(s);
      } catch (err) {
        this.opts.logger.warn({ err: (err as Error).message }, 'event stream credential check failed');
      }
    }
    this.rechecks++;
  }, () => !this.stopped && this.streams.size > 0);

  /** One stream's credential resolved again: ended, or its scope replaced (unless a later check already answered). */
  private async check(s: EventStream): Promise<void> {
    if (!s.recheck || s.closed) return;
    const n = ++s.checksStarted;
    const scope = await s.recheck();
    if (s.closed || n < s.checkApplied) return;
    s.checkApplied = n;
    if (!scope) this.end(s, NOT_ACCEPTED);
    else if (s.filter.networkId && !canSeeNetwork(scope, s.filter.networkId)) this.end(s, 'the network is no longer visible to this credential');
    else s.scope = scope;
  }

  /**
   * A revocation notice (any process's `revoke`): the streams it names ended at once (`end`, before
   * anything else this connection delivers is handled) or checked again (`recheck`), then the
   * revoker told, with this connection's pid.
   */
  private async revoked(client: pg.Client, pid: number, payload: string | undefined): Promise<void> {
    let notice: RevocationNotice;
    try {
      notice = JSON.parse(payload ?? '') as RevocationNotice;
      if (!REPLY_CHANNEL.test(notice.reply) || !Array.isArray(notice.subjects)) throw new Error('not a revocation notice');
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'revocation notice unreadable');
      return;
    }
    const named = new Set(notice.subjects);
    const streams = [...this.streams].filter((s) => s.subjects().some((x) => named.has(x)));
    if (notice.kind === 'end') for (const s of streams) this.end(s, NOT_ACCEPTED);
    else {
      await Promise.all(streams.map((s) => this.check(s).catch((err: Error) => this.opts.logger.warn({ err: err.message }, 'event stream credential check failed'))));
    }
    await client.query('select pg_notify($1, $2)', [notice.reply, String(pid)])
      .catch((err: Error) => this.opts.logger.warn({ err: err.message }, 'revocation not acknowledged'));
  }

  /**
   * After the commit of a change that revokes (`end`) or changes (`recheck`) credentials: the open
   * streams of `subjects` (revocations.ts) ended or checked again on every API process, answered
   * when every hub listening at the notice has done it (at most `revocationWaitMs`; past that, or
   * with the database unreachable, logged, and the periodic re-check ends them). Never throws. Over a
   * connection of its own (a hub listens only in a process with streams; this answers one request).
   */
  async revoke(subjects: string[], kind: RevocationKind): Promise<void> {
    if (!subjects.length) return;
    const reply = `netinv_revoked_${randomBytes(8).toString('hex')}`;
    const deadline = Date.now() + (this.opts.revocationWaitMs ?? 2000);
    const answered = new Set<number>();
    let wake: (() => void) | undefined;
    const client = new pg.Client({ connectionString: this.opts.databaseUrl, connectionTimeoutMillis: 10_000, application_name: 'netinv-revoker' });
    client.on('notification', (msg) => {
      if (msg.channel !== reply) return;
      answered.add(Number(msg.payload));
      wake?.();
    });
    client.on('error', () => undefined); // the query in progress fails with it
    let waiting: number[] = [];
    try {
      await client.connect();
      await client.query(`listen ${reply}`);
      // One statement: the hubs read here were listening before the notice commits, so each receives it.
      const notice: RevocationNotice = { reply, subjects, kind };
      const { rows } = await client.query<{ hubs: number[] }>(
        `select pg_notify($1, $2), array(select pid from pg_stat_activity where datname = current_database() and application_name = $3) as hubs`,
        [REVOCATIONS, JSON.stringify(notice), HUB_APPLICATION_NAME],
      );
      waiting = rows[0]!.hubs;
      for (;;) {
        waiting = waiting.filter((pid) => !answered.has(pid));
        if (!waiting.length || Date.now() >= deadline) break;
        let timer: NodeJS.Timeout | undefined;
        const heard = await new Promise<boolean>((resolve) => {
          wake = () => resolve(true);
          timer = setTimeout(() => resolve(false), Math.min(100, Math.max(1, deadline - Date.now())));
        });
        clearTimeout(timer);
        wake = undefined;
        if (heard) continue;
        // A hub that went away (its process stopped, its connection dropped) has no stream left to end.
        const live = await client.query<{ pids: number[] }>(
          `select array(select pid from pg_stat_activity where pid = any($1::int[]) and application_name = $2) as pids`, [waiting, HUB_APPLICATION_NAME],
        );
        waiting = live.rows[0]!.pids;
      }
      if (waiting.length) this.opts.logger.warn({ subjects: loggable(subjects), hubs: waiting }, 'revocation: some event hubs did not answer in time (their streams end at their next credential check)');
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message, subjects: loggable(subjects) }, 'revocation not sent to the event hubs (their streams end at their next credential check)');
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** A stream ended by the server: told why, then closed (a client should not reconnect with the same credential). */
  private end(s: EventStream, reason: string): void {
    s.write(`event: ended\ndata: ${JSON.stringify({ reason, last_event_id: String(s.cursor) })}\n\n`);
    this.close(s);
  }

  /** A client too slow for the flow: told its last id (to resume with Last-Event-ID), then closed. */
  private drop(s: EventStream): void {
    this.opts.logger.info({ cursor: String(s.cursor) }, 'event stream dropped: the client reads too slowly');
    s.write(`event: dropped\ndata: ${JSON.stringify({ reason: 'client too slow', last_event_id: String(s.cursor) })}\n\n`);
    this.close(s);
  }

  /**
   * The process is stopping: every open stream is told why, with its last id (to resume on another
   * process with Last-Event-ID), and ended now. A stream never ends by itself, so without this a
   * graceful shutdown would wait for its deadline while any client listens. Streams opened after
   * this end at once the same way. Answers how many were open.
   */
  endAll(reason: string): number {
    this.ending = reason;
    const open = [...this.streams];
    for (const s of open) this.end(s, reason);
    return open.length;
  }

  close(s: EventStream): void {
    if (s.closed) return;
    s.closed = true;
    this.streams.delete(s);
    s.body.end();
    s.lease?.release().catch((err: Error) => this.opts.logger.warn({ err: err.message }, 'event stream lease not released (it expires)'));
  }

  /**
   * A new stream: caught up from the table, then live; its credential checked again every
   * `recheckMs`, and at once by a revocation naming `credential` (revocations.ts revocationSubject).
   */
  async open(scope: Scope, filter: EventFilter, after: string, recheck?: CredentialCheck, lease?: StreamLease, credential?: string): Promise<EventStream> {
    try {
      await this.start();
    } catch (err) {
      await lease?.release().catch(() => undefined);
      throw err;
    }
    const stream = new EventStream(scope, filter, BigInt(after), recheck, lease, credential);
    this.streams.add(stream);
    stream.write('retry: 2000\n\n');
    if (this.ending) {
      this.end(stream, this.ending);
      return stream;
    }
    void this.catchUp(stream);
    return stream;
  }

  private async catchUp(s: EventStream): Promise<void> {
    // Checked once more now that it is registered: a revocation that committed after the request
    // resolved its credential, but whose notice this hub handled before the stream was registered
    // (so it was not ended then), is seen here, before the stream is sent anything.
    try {
      await this.check(s);
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'event stream credential check failed');
    }
    if (s.closed) return;
    try {
      const db = this.db();
      await sequencePending(db);
      for (;;) {
        // An empty read ends the catch-up only if the hub handed out nothing meanwhile (it skips
        // streams not yet live): else what it handed out is read again, from the table.
        const seen = this.lastId;
        const { events } = await readEvents(db, s.scope, s.filter, String(s.cursor), CATCH_UP_PAGE);
        if (s.closed) return;
        if (events.length) {
          s.send(events);
          if (s.body.writableLength > (this.opts.maxBufferBytes ?? 1024 * 1024)) return this.drop(s);
          continue;
        }
        if (this.lastId === seen) break;
      }
      s.live = true;
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'event stream catch-up failed');
      this.close(s);
    }
  }

  get size(): number {
    return this.streams.size;
  }

  /** The open streams' state, for diagnostics (a test that waits on a stream says where it stands). */
  describe(): Array<{ live: boolean; cursor: string; bytesSent: number; buffered: number; hubLastId: string }> {
    return [...this.streams].map((s) => ({ live: s.live, cursor: String(s.cursor), bytesSent: s.bytesSent, buffered: s.body.writableLength, hubLastId: String(this.lastId) }));
  }
}
