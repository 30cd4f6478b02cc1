/**
 * A throwaway PostgreSQL primary and a streaming hot standby of it, from Debian's
 * binaries (/usr/lib/postgresql/<version>/bin), for the read replica test and bench:
 *   - a NEW cluster in a temporary directory (never the machine's server on 5432, never the
 *     project's own in ./data), listening on 127.0.0.1 only, trust on loopback, wal_level=replica;
 *   - its standby made with `pg_basebackup -R -X stream` (standby.signal + primary_conninfo),
 *     started on another port;
 *   - as root, both run as the `postgres` user (initdb and pg_ctl refuse root), in a directory it owns.
 * Ports are free ones picked at start (PG_STANDBY_PRIMARY_PORT / PG_STANDBY_REPLICA_PORT to choose).
 * `stop()` stops both and deletes the directory; so does the process's exit if it was not called.
 *
 * Run directly (`node --import tsx scripts/pgStandby.ts`): prints DATABASE_URL and
 * DATABASE_REPLICA_URL, and stops everything at Ctrl-C.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { pgBinDir, postgresUser, run } from './services.js';

const IS_ROOT = process.getuid?.() === 0;

export interface StandbyPair {
  dir: string;
  primaryPort: number;
  standbyPort: number;
  /** URL of `database` on the primary / on the standby. */
  primaryUrl(database: string): string;
  standbyUrl(database: string): string;
  /** Stops the standby (fast shutdown: its connections are cut) / starts it again. */
  stopStandby(): void;
  startStandby(): Promise<void>;
  /** Pauses / resumes WAL replay on the standby (it keeps answering reads, frozen in time). */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Waits until the standby has replayed everything the primary has written so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  stop(): void;
}

/** A TCP port free on loopback now (for a server this process starts next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const url = (port: number, database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;

async function sql<T extends pg.QueryResultRow>(port: number, text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url(port, 'postgres'), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}

export async function startStandbyPair(): Promise<StandbyPair> {
  const bin = pgBinDir();
  if (!bin) throw new Error('no PostgreSQL binaries (initdb, pg_ctl, pg_basebackup): apt-get install postgresql');
  const primaryPort = Number(process.env.PG_STANDBY_PRIMARY_PORT) || await freePort();
  let standbyPort = Number(process.env.PG_STANDBY_REPLICA_PORT) || await freePort();
  while (standbyPort === primaryPort) standbyPort = await freePort();
  // Short path: the Unix sockets live in it too (a socket path is limited to ~107 bytes).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-pgsb-'));
  const primaryDir = path.join(dir, 'primary');
  const standbyDir = path.join(dir, 'standby');
  if (IS_ROOT) fs.chownSync(dir, postgresUser().uid, postgresUser().gid);
  fs.chmodSync(dir, 0o700);
  const pgCtl = (dataDir: string, ...args: string[]) =>
    run(path.join(bin, 'pg_ctl'), ['-D', dataDir, ...args], true);
  const started = new Set<string>();
  const stopCluster = (dataDir: string) => {
    if (!started.has(dataDir)) return;
    try { pgCtl(dataDir, '-m', 'immediate', '-w', 'stop'); } catch { /* not running */ }
    started.delete(dataDir);
  };
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    stopCluster(standbyDir);
    stopCluster(primaryDir);
    fs.rmSync(dir, { recursive: true, force: true });
    process.off('exit', stop);
  };
  process.on('exit', stop);
  const start = (dataDir: string, name: string) => {
    pgCtl(dataDir, '-l', path.join(dir, `${name}.log`), '-w', '-t', '60', 'start');
    started.add(dataDir);
  };
  try {
    run(path.join(bin, 'initdb'), ['-D', primaryDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8'], true);
    // initdb's pg_hba.conf with -A trust already lets 127.0.0.1 in, replication connections included.
    fs.appendFileSync(path.join(primaryDir, 'postgresql.conf'), `\n# netinventory (scripts/pgStandby.ts): throwaway primary\n`
      + `port = ${primaryPort}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\n`
      + `wal_level = replica\nmax_wal_senders = 4\nwal_keep_size = '256MB'\nhot_standby = on\nhot_standby_feedback = on\n`
      + `fsync = off\nshared_buffers = '64MB'\nmax_connections = 60\n`);
    start(primaryDir, 'primary');
    run(path.join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standbyDir, '-R', '-X', 'stream', '-c', 'fast'], true);
    // The copied postgresql.conf says the primary's port: the later line wins.
    fs.appendFileSync(path.join(standbyDir, 'postgresql.conf'), `\n# the standby\nport = ${standbyPort}\n`);
    start(standbyDir, 'standby');
  } catch (err) {
    stop();
    throw err;
  }
  const pair: StandbyPair = {
    dir, primaryPort, standbyPort,
    primaryUrl: (database) => url(primaryPort, database),
    standbyUrl: (database) => url(standbyPort, database),
    stopStandby: () => stopCluster(standbyDir),
    async startStandby() {
      if (!started.has(standbyDir)) start(standbyDir, 'standby');
    },
    async pauseReplay() { await sql(standbyPort, 'select pg_wal_replay_pause()'); },
    async resumeReplay() { await sql(standbyPort, 'select pg_wal_replay_resume()'); },
    async caughtUp(timeoutMs = 30_000) {
      const [{ lsn }] = await sql<{ lsn: string }>(primaryPort, 'select pg_current_wal_insert_lsn()::text as lsn');
      for (const deadline = Date.now() + timeoutMs; ;) {
        const [{ done }] = await sql<{ done: boolean }>(standbyPort, 'select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [lsn]);
        if (done) return;
        if (Date.now() > deadline) throw new Error(`the standby did not replay ${lsn} within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop,
  };
  return pair;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const pair = await startStandbyPair();
  console.log(`DATABASE_URL=${pair.primaryUrl('netinventory')}`);
  console.log(`DATABASE_REPLICA_URL=${pair.standbyUrl('netinventory')}`);
  console.log(`# ${pair.dir} (logs: primary.log, standby.log); Ctrl-C stops both and deletes it`);
  const quit = () => { pair.stop(); process.exit(0); };
  process.once('SIGINT', quit);
  process.once('SIGTERM', quit);
  setInterval(() => undefined, 1 << 30);
}
