/**
 * Makes sure a PostgreSQL and a Redis server are reachable, for development, tests and CI.
 *
 * Preference order, for each service:
 *   1. DATABASE_URL / REDIS_URL, used as is;
 *   2. a server on the default port (5432 / 6379) of 127.0.0.1 that lets the project in without a
 *      password (a login and a PING are tried, not just a connect);
 *   3. the project's own server, kept in ./data (gitignored), on 55432 / 56379. It is started
 *      if needed; on Debian, as root, the packages are installed with apt-get when missing.
 * NETINV_OWN_SERVICES=1 skips step 2, so that the fresh-machine path can be tried anywhere.
 *
 * Run directly (`node --import tsx scripts/services.ts`) it prints DATABASE_URL=... and
 * REDIS_URL=... lines; with the argument `stop` it stops the project's own servers.
 * Only Node built-ins here: this must work before anything else is set up.
 */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DATA = path.join(ROOT, 'data');
const PG_DIR = path.join(DATA, 'pg'); // the cluster
const PG_RUN = path.join(DATA, 'pgrun'); // log and Unix socket
const REDIS_DIR = path.join(DATA, 'redis');
const LOCK = path.join(DATA, 'services.lock');
const OWN_PG_PORT = 55432;
const OWN_REDIS_PORT = 56379;
const IS_ROOT = process.getuid?.() === 0;

const pgUrl = (port: number) => `postgres://postgres@127.0.0.1:${port}/netinventory`;
const redisUrl = (port: number) => `redis://127.0.0.1:${port}`;
const log = (msg: string) => console.error(`[services] ${msg}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Connects to 127.0.0.1:port; sends `payload` if given and resolves with the first reply (null: no server). */
function probe(port: number, payload?: string): Promise<string | null> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const done = (value: string | null) => { sock.destroy(); resolve(value); };
    sock.setTimeout(1000, () => done(null));
    sock.once('error', () => done(null));
    sock.once('connect', () => (payload ? sock.write(payload) : done('')));
    sock.once('data', (chunk) => done(chunk.toString()));
  });
}
const pgAnswers = async (port: number) => (await probe(port)) !== null;

/**
 * Whether a PostgreSQL on `port` lets the project log in as it will (user postgres, no password):
 * 'ok', 'refused' (it wants a password, e.g. Debian's default scram-sha-256 on TCP, or has no such
 * user), or null when nothing answers. A TCP connect is not enough: such a server answers and then
 * fails every query (`SASL: ... client password must be a string`).
 */
function pgLogin(port: number): Promise<'ok' | 'refused' | null> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const done = (value: 'ok' | 'refused' | null) => { sock.destroy(); resolve(value); };
    sock.setTimeout(2000, () => done(null));
    sock.once('error', () => done(null));
    sock.once('connect', () => {
      // StartupMessage, protocol 3.0: the server answers R + auth code (0 = in, without a password) or E.
      const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
      const head = Buffer.alloc(8);
      head.writeInt32BE(8 + params.length, 0);
      head.writeInt32BE(196608, 4);
      sock.write(Buffer.concat([head, params]));
    });
    sock.once('data', (reply) => {
      const authOk = reply[0] === 0x52 && reply.length >= 9 && reply.readInt32BE(5) === 0;
      if (authOk) sock.write(Buffer.from([0x58, 0, 0, 0, 4])); // Terminate
      done(authOk ? 'ok' : 'refused');
    });
  });
}

/** The default-port server, if the project can log in to it; says why it is passed over otherwise. */
async function usablePgOnDefaultPort(): Promise<boolean> {
  const login = await pgLogin(5432);
  if (login === 'refused') {
    log('PostgreSQL on 127.0.0.1:5432 refuses the login postgres without a password (password authentication): '
      + `passed over for the project's own server on ${OWN_PG_PORT}; set DATABASE_URL (with the password) to use it instead`);
  }
  return login === 'ok';
}
// A Redis that wants a password does not count: a bare redis:// URL would not work with it.
const redisAnswers = async (port: number) => (await probe(port, 'PING\r\n'))?.startsWith('+PONG') ?? false;

async function usableRedisOnDefaultPort(): Promise<boolean> {
  const reply = await probe(6379, 'PING\r\n');
  if (reply !== null && !reply.startsWith('+PONG')) {
    log(`Redis on 127.0.0.1:6379 refuses a PING without a password (${reply.trim().slice(0, 60)}): `
      + `passed over for the project's own server on ${OWN_REDIS_PORT}; set REDIS_URL (with the password) to use it instead`);
  }
  return reply?.startsWith('+PONG') ?? false;
}

/** The postgres account, which we switch to when root: initdb and pg_ctl refuse to run as root. */
export function postgresUser(): { uid: number; gid: number; home: string } {
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root but there is no "postgres" user (it comes with the Debian postgresql package)');
  const f = line.split(':');
  return { uid: Number(f[2]), gid: Number(f[3]), home: f[5] };
}

/** Runs a command (as the postgres user when asPostgres and root); throws with its output on failure. */
export function run(cmd: string, args: string[], asPostgres = false): string {
  const opts: SpawnSyncOptions = { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  if (asPostgres && IS_ROOT) {
    const u = postgresUser();
    Object.assign(opts, { uid: u.uid, gid: u.gid, cwd: '/', env: { ...opts.env, HOME: u.home, USER: 'postgres', LOGNAME: 'postgres' } });
  }
  const r = spawnSync(cmd, args, opts);
  if (r.error || r.status !== 0) {
    const output = `${r.stderr ?? ''}${r.stdout ?? ''}`.trim();
    throw new Error(`${cmd} ${args.join(' ')} failed: ${r.error?.message ?? output}`);
  }
  return String(r.stdout);
}

// Not resolved through symlinks: redis-server is a symlink to redis-check-rdb, which picks its role from argv[0].
const which = (bin: string): string | null => {
  const r = spawnSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
};

/** Newest /usr/lib/postgresql/<version>/bin (Debian keeps it off PATH), else wherever pg_ctl is on PATH. */
export function pgBinDir(): string | null {
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions.length > 0) return path.join(base, versions[0], 'bin');
  const onPath = which('pg_ctl');
  const pgCtl = onPath ? fs.realpathSync(onPath) : null; // e.g. /usr/local/bin/pg_ctl -> /usr/lib/postgresql/15/bin/pg_ctl
  return pgCtl && fs.existsSync(path.join(path.dirname(pgCtl), 'initdb')) ? path.dirname(pgCtl) : null;
}

/** Installs the missing Debian packages when we can (root with apt-get), else says what to do. */
function installMissing(needPg: boolean, needRedis: boolean): void {
  const missing = [needPg && !pgBinDir() ? 'postgresql' : '', needRedis && !which('redis-server') ? 'redis-server' : ''].filter(Boolean);
  if (missing.length === 0) return;
  if (!IS_ROOT || !which('apt-get')) {
    throw new Error(`missing ${missing.join(' and ')}: install ${missing.length > 1 ? 'them' : 'it'} (Debian: apt-get install ${missing.join(' ')}), `
      + 'or point DATABASE_URL / REDIS_URL at existing servers');
  }
  log('apt-get update');
  run('apt-get', ['update']);
  log(`apt-get install -y ${missing.join(' ')} (takes a minute or two)`);
  run('apt-get', ['install', '-y', ...missing]);
}

/**
 * A Chromium for the browser tests (driven by playwright-core, which downloads none): CHROMIUM_PATH,
 * else one on PATH, else Debian's package installed (root with apt-get), as for the servers.
 */
export function ensureChromium(): string {
  const found = process.env.CHROMIUM_PATH || ['chromium', 'chromium-browser', 'google-chrome'].map(which).find(Boolean);
  if (found) return found;
  if (!IS_ROOT || !which('apt-get')) throw new Error('no Chromium for the browser tests: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH');
  log('apt-get update');
  run('apt-get', ['update']);
  log('apt-get install -y chromium (takes a minute or two)');
  run('apt-get', ['install', '-y', 'chromium']);
  return which('chromium')!;
}

const isAlive = (pid: number) => {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
};

/** Serializes the start-up across processes (mocha and a server may start together): O_EXCL lock file holding our pid. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  fs.mkdirSync(DATA, { recursive: true });
  const deadline = Date.now() + 10 * 60_000; // the holder may be running apt-get
  for (let waiting = false; ; waiting = true) {
    try {
      fs.writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = Number(fs.readFileSync(LOCK, 'utf8').trim()); // 0 when just created, not yet written
      if (owner && !isAlive(owner)) { log(`removing stale lock of dead process ${owner}`); fs.rmSync(LOCK, { force: true }); continue; }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${LOCK} (held by process ${owner})`);
      if (!waiting) log(`waiting for process ${owner} to finish starting the services`);
      await sleep(200);
    }
  }
  try { return await fn(); } finally { fs.rmSync(LOCK, { force: true }); }
}

/** When root, the postgres user must reach ./data/pg and ./data/pgrun: give o+x to the ancestors lacking it. */
function makeReachableByPostgres(): void {
  const reachable = () => { try { run('test', ['-w', PG_DIR, '-a', '-w', PG_RUN], true); return true; } catch { return false; } };
  if (reachable()) return;
  for (let dir = DATA; ; dir = path.dirname(dir)) {
    const mode = fs.statSync(dir).mode;
    if (!(mode & 0o001)) { log(`chmod o+x ${dir} (so that the postgres user can reach ./data)`); fs.chmodSync(dir, mode | 0o001); }
    if (dir === path.dirname(dir)) break;
  }
  if (!reachable()) throw new Error(`the postgres user cannot reach ${PG_DIR}; set DATABASE_URL or move the project`);
}

async function startOwnPostgres(): Promise<void> {
  if (await pgAnswers(OWN_PG_PORT)) return log(`PostgreSQL already running on ${OWN_PG_PORT}`);
  const bin = pgBinDir()!;
  for (const dir of [PG_DIR, PG_RUN]) {
    fs.mkdirSync(dir, { recursive: true });
    if (IS_ROOT) fs.chownSync(dir, postgresUser().uid, postgresUser().gid);
  }
  if (IS_ROOT) makeReachableByPostgres();
  if (!fs.existsSync(path.join(PG_DIR, 'PG_VERSION'))) {
    log(`initdb ${PG_DIR}`);
    run(path.join(bin, 'initdb'), ['-D', PG_DIR, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8'], true);
    // Settings go into the cluster's own config, so a plain `pg_ctl start` does the right thing.
    // Unix socket paths are limited to ~107 bytes: skip the socket (TCP is enough) when the path is too long.
    const socketDir = `${PG_RUN}/.s.PGSQL.${OWN_PG_PORT}`.length < 100 ? PG_RUN : '';
    fs.appendFileSync(path.join(PG_DIR, 'postgresql.conf'), `\n# netinventory (scripts/services.ts): local throwaway server\n`
      + `port = ${OWN_PG_PORT}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${socketDir}'\n`
      + `fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n`);
  }
  log(`starting PostgreSQL on 127.0.0.1:${OWN_PG_PORT} (log: ${path.join(PG_RUN, 'pg.log')})`);
  run(path.join(bin, 'pg_ctl'), ['-D', PG_DIR, '-l', path.join(PG_RUN, 'pg.log'), '-w', '-t', '60', 'start'], true);
}

async function startOwnRedis(): Promise<void> {
  if (await redisAnswers(OWN_REDIS_PORT)) return log(`Redis already running on ${OWN_REDIS_PORT}`);
  fs.mkdirSync(REDIS_DIR, { recursive: true });
  log(`starting Redis on 127.0.0.1:${OWN_REDIS_PORT} (log: ${path.join(REDIS_DIR, 'redis.log')})`);
  run(which('redis-server')!, ['--port', String(OWN_REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--daemonize', 'yes', '--pidfile', path.join(REDIS_DIR, 'redis.pid'), '--dir', REDIS_DIR, '--logfile', path.join(REDIS_DIR, 'redis.log')]);
  // --daemonize returns before the server listens.
  for (const deadline = Date.now() + 15_000; !(await redisAnswers(OWN_REDIS_PORT)); await sleep(100)) {
    if (Date.now() > deadline) throw new Error(`Redis did not start, see ${path.join(REDIS_DIR, 'redis.log')}`);
  }
}

export async function ensureServices(): Promise<{ databaseUrl: string; redisUrl: string }> {
  const forceOwn = process.env.NETINV_OWN_SERVICES === '1';
  let db = process.env.DATABASE_URL || (!forceOwn && (await usablePgOnDefaultPort()) ? pgUrl(5432) : undefined);
  let redis = process.env.REDIS_URL || (!forceOwn && (await usableRedisOnDefaultPort()) ? redisUrl(6379) : undefined);
  if (db) log(`PostgreSQL: ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'server on 127.0.0.1:5432'}`);
  if (redis) log(`Redis: ${process.env.REDIS_URL ? 'REDIS_URL' : 'server on 127.0.0.1:6379'}`);
  if (!db || !redis) {
    await withLock(async () => {
      installMissing(!db, !redis);
      if (!db) await startOwnPostgres();
      if (!redis) await startOwnRedis();
    });
    db ??= pgUrl(OWN_PG_PORT);
    redis ??= redisUrl(OWN_REDIS_PORT);
  }
  return { databaseUrl: db, redisUrl: redis };
}

/** Stops the servers kept in ./data, if running (servers found elsewhere are never touched). */
export async function stopOwnServices(): Promise<void> {
  const bin = pgBinDir();
  if (bin && fs.existsSync(path.join(PG_DIR, 'postmaster.pid'))) {
    log('stopping own PostgreSQL');
    run(path.join(bin, 'pg_ctl'), ['-D', PG_DIR, '-m', 'fast', '-w', 'stop'], true);
  }
  const pidFile = path.join(REDIS_DIR, 'redis.pid');
  const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').trim()) : 0;
  if (pid && isAlive(pid)) {
    log('stopping own Redis');
    process.kill(pid, 'SIGTERM'); // Redis shuts down cleanly on SIGTERM (nothing to save: --save "")
    // Wait for the port, not the pid: a daemon's zombie lingers until init reaps it.
    for (const deadline = Date.now() + 15_000; (await probe(OWN_REDIS_PORT)) !== null && Date.now() < deadline; ) await sleep(50);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const main = async () => {
    if (process.argv[2] === 'stop') return stopOwnServices();
    const { databaseUrl, redisUrl } = await ensureServices();
    console.log(`DATABASE_URL=${databaseUrl}\nREDIS_URL=${redisUrl}`);
  };
  main().catch((err: Error) => { log(`error: ${err.message}`); process.exit(1); });
}
