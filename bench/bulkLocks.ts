// Bulk creates and PostgreSQL's shared lock table (issue 37): `node_modules/.bin/tsx bench/bulkLocks.ts`
// (or `npm run bench:locks -- <flags>`; bench/README.md). A bulk create (POST /api/v1/hosts/bulk)
// took one transaction-scoped advisory lock per address until its commit; every lock of every
// transaction of the server lives in one shared table (max_locks_per_transaction × (max_connections
// + max_prepared_transactions) slots, plus what shared memory has to spare). Do many bulk creates at
// once make ANOTHER tenant's ordinary writes fail ("out of shared memory")?
//
// Set-up, all throwaway and on 127.0.0.1:
//   - a PostgreSQL server of its own (initdb in a temporary directory, PostgreSQL's DEFAULT lock and
//     connection settings: what the docker-compose `postgres:15` image runs), because filling the
//     lock table of the machine's shared server (5432) would fail other people's tests running on
//     it. `--database-url <url of a database>` uses another server instead (its settings recorded);
//   - the machine's Redis (REDIS_URL, else 127.0.0.1:6379) under a prefix of its own, deleted after;
//   - API processes (`src/server.ts` through tsx, as `npm run start:api`): one serves the other
//     tenant only, the others the bulks (BULKS_PER_API at most each: a process has 10 database
//     connections, so a bulk never waits for one and every bulk can hold its locks at once).
// Per scenario ("10x1": 10 organizations, one bulk each; "1x10": one organization, 10 bulks):
//   1. baseline: the other tenant's loop alone for --baseline seconds: POST /api/v1/hosts (one
//      address, so it takes an advisory lock too) then PATCH of that host's description, in turn;
//   2. load: the same loop while every bulk of the scenario is sent at once (each --addresses
//      addresses: hosts of 4 addresses, each bulk in a network and /16 of its own), until the last
//      bulk answered; pg_locks polled meanwhile (advisory locks, every lock row, rows outside the
//      backends' fast-path slots, waiting requests) and pg_stat_activity sampled;
//   3. checked in SQL: a bulk answered 201 stored all its hosts and addresses, any other stored none.
// Every bulk and every write of the other tenant is counted by answer (status, code); PostgreSQL's
// log (own server) and the API processes' logs are searched for "out of shared memory", and each
// failed write of the other tenant is matched to its logged error (request id: which statement).
// Flags: --small (scenarios 3x1,1x3, 1,000 addresses, 3 s baselines: a quick check, ~30 s; results in
// a temporary directory, not bench/results/; BENCH_SMALL=1 (bench/small.ts) is smaller still: one
// scenario 2x1, 400 addresses, a 2 s baseline),
// --scenarios 10x1,1x10,20x1,30x1 (the default), --addresses 4000, --baseline 10 (seconds),
// --database-url <url>, --label <text> (kept in the JSON: which code was measured), --keep (keep
// the logs). Results: bench/results/bulkLocks-<stamp>.json, with the load average at start and end
// of the run and of each scenario (/proc/loadavg).
// Checked (full and small runs): every bulk stored all its rows or none, as answered, and the other
// tenant's baseline loop (alone) wrote without a failure.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { pgBinDir, postgresUser, run } from '../scripts/services.js';
import { migrate } from '../src/core/db.js';
import { deleteKeysMatching } from '../src/core/redis.js';
import { createOrm } from '../src/database.js';
import { freePort } from '../scripts/pgStandby.js';
import { mustAgree, resultsFile, SMALL as BENCH_SMALL } from './small.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const option = (name: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : undefined; };
const SMALL = flag('small') || BENCH_SMALL;
const SCENARIOS = (option('scenarios') ?? (BENCH_SMALL ? '2x1' : SMALL ? '3x1,1x3' : '10x1,1x10,20x1,30x1')).split(',').map((s) => {
  const m = /^(\d+)x(\d+)$/.exec(s.trim());
  if (!m) throw new Error(`--scenarios: <organizations>x<bulks each>, e.g. 10x1,1x10 (got '${s}')`);
  return { orgs: Number(m[1]), perOrg: Number(m[2]), label: s.trim() };
});
const ADDRESSES = Number(option('addresses') ?? (BENCH_SMALL ? 400 : SMALL ? 1000 : 4000));
const ADDRESSES_PER_HOST = 4;
const HOSTS = Math.ceil(ADDRESSES / ADDRESSES_PER_HOST);
const BASELINE_S = Number(option('baseline') ?? (BENCH_SMALL ? 2 : SMALL ? 3 : 10));
const BULKS_PER_API = 8;
const log = (line: string) => console.log(`[bulkLocks] ${line}`);
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').trim();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const pct = (values: number[], p: number) => {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return round(s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!);
};
const percentiles = (ms: number[]) => ({ n: ms.length, p50: pct(ms, 50), p90: pct(ms, 90), p99: pct(ms, 99), max: pct(ms, 100) });
if (HOSTS > 1000 || ADDRESSES > 4000) throw new Error('--addresses: at most 4,000 (BULK_MAX_IP_ADDRESSES), 4 a host, 1,000 hosts a request');

/** A throwaway PostgreSQL with the default settings but its port, address, socket directory and fsync (off). */
async function startOwnServer(dir: string): Promise<{ url: (db: string) => string; logFile: string; stop: () => void }> {
  const bin = pgBinDir();
  if (!bin) throw new Error('no PostgreSQL binaries (initdb, pg_ctl): apt-get install postgresql, or pass --database-url');
  const port = await freePort();
  const dataDir = path.join(dir, 'pg');
  const logFile = path.join(dir, 'postgresql.log');
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres) fs.chownSync(dir, postgresUser().uid, postgresUser().gid);
  fs.chmodSync(dir, 0o700);
  run(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8'], true);
  fs.appendFileSync(path.join(dataDir, 'postgresql.conf'), `\n# bench/bulkLocks.ts: throwaway server, lock and connection settings left at their defaults\n`
    + `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nfsync = off\n`);
  run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', 'start'], true);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try { run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], true); } catch { /* not running */ }
  };
  process.on('exit', stop);
  return { url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}`, logFile, stop };
}

/** An API process (`src/server.ts`) on a free port, its log in `logFile`. */
async function startApi(env: NodeJS.ProcessEnv, logFile: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const out = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: ROOT, env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 120_000; ;) {
    if (child.exitCode !== null) throw new Error(`API process exited (${child.exitCode}): see ${logFile}`);
    try {
      if ((await fetch(`${url}/api/health`)).ok) return { url, child };
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`API process not ready in 120 s: see ${logFile}`);
    await sleep(250);
  }
}

interface Answer { status: number; code: string; message?: string }
/** A JSON request with a session cookie; answers the status, the envelope's code and data. */
async function send(url: string, cookie: string, method: string, pathname: string, body: unknown, contentType = 'application/json') {
  let res: Response;
  try {
    res = await fetch(url + pathname, { method, headers: { Cookie: cookie, 'Content-Type': contentType }, body: JSON.stringify(body) });
  } catch (err) {
    return { status: 0, code: 'network_error', message: String((err as Error).cause ?? err), data: undefined };
  }
  const text = await res.text();
  let parsed: { success?: boolean; code?: string; error?: string; data?: any } = {};
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, code: parsed.success ? 'ok' : parsed.code ?? 'not_json', message: parsed.success ? undefined : (parsed.error ?? text.slice(0, 200)), data: parsed.data };
}

const PASSWORD = 'correct-horse-battery';
let signUps = 0;
/** An organization and its Owner's session; each sign-up from an address of its own (X-Forwarded-For, TRUST_PROXY): anonymous callers have 10 requests of burst per address. */
async function signUp(url: string, label: string): Promise<{ orgId: string; cookie: string }> {
  const email = `${label}-${randomBytes(4).toString('hex')}@example.test`;
  signUps += 1;
  const headers = { 'Content-Type': 'application/json', 'X-Forwarded-For': `127.3.${Math.floor(signUps / 250)}.${1 + (signUps % 250)}` };
  const reg = await fetch(`${url}/api/auth/register`, { method: 'POST', headers, body: JSON.stringify({ email, password: PASSWORD, organization_name: `Org ${label}` }) });
  const user = (await reg.json()) as { data: { organization_id: string } };
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(user)}`);
  const res = await fetch(`${url}/api/auth/login`, { method: 'POST', headers, body: JSON.stringify({ email, password: PASSWORD }) });
  if (res.status !== 200) throw new Error(`login: ${res.status}`);
  return { orgId: user.data.organization_id, cookie: res.headers.get('set-cookie')!.split(';')[0]! };
}
async function place(url: string, cookie: string, name: string, cidr: string): Promise<{ network: string; subnet: string }> {
  const network = await send(url, cookie, 'POST', '/api/v1/networks', { name });
  if (network.status !== 201) throw new Error(`network: ${JSON.stringify(network)}`);
  const subnet = await send(url, cookie, 'POST', '/api/v1/subnets', { network_id: network.data.id, cidr, name: 'lan' });
  if (subnet.status !== 201) throw new Error(`subnet: ${JSON.stringify(subnet)}`);
  return { network: network.data.id as string, subnet: subnet.data.id as string };
}

/** Counts answers by `status code`, with one message of each. */
function tally(answers: Answer[]): Record<string, { count: number; message?: string }> {
  const out: Record<string, { count: number; message?: string }> = {};
  for (const a of answers) {
    const key = `${a.status} ${a.code}`;
    out[key] ??= { count: 0, ...(a.message ? { message: a.message.slice(0, 300) } : {}) };
    out[key].count += 1;
  }
  return out;
}

/** Lines of `file` written since byte `from` that match `re`. */
function newLines(file: string, from: number, re: RegExp): string[] {
  const size = fs.statSync(file).size;
  if (size <= from) return [];
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(size - from);
  fs.readSync(fd, buf, 0, buf.length, from);
  fs.closeSync(fd);
  return buf.toString('utf8').split('\n').filter((l) => re.test(l));
}

const LOCK_TABLE_ERROR = /out of shared memory|max_locks_per_transaction/i;

/** A small run's results file: resultsFile() of bench/small.ts, which is a temporary directory under BENCH_SMALL=1 and for --small alike. */
function resultsFileFor(name: string): string {
  if (BENCH_SMALL) return fileURLToPath(resultsFile(name));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-bench-small-'));
  return path.join(dir, name);
}

async function main(): Promise<void> {
  const started = { at: new Date().toISOString(), loadavg: loadavg() };
  log(`load average at start: ${started.loadavg}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-locks-'));
  const externalUrl = option('database-url');
  const own = externalUrl ? undefined : await startOwnServer(dir);
  const databaseUrl = externalUrl ?? own!.url('netinventory');
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redisPrefix = `bench-locks:${randomBytes(4).toString('hex')}:`;
  const apis: Array<{ url: string; child: ChildProcess; logFile: string }> = [];
  const admin = new pg.Client({ connectionString: databaseUrl });
  try {
    {
      const orm = await createOrm(databaseUrl, 2); // creates the database if missing
      await migrate(orm);
      await orm.close(true);
    }
    await admin.connect();
    const { rows: settingRows } = await admin.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings where name in ('max_locks_per_transaction', 'max_connections', 'max_prepared_transactions',
         'autovacuum_max_workers', 'max_worker_processes', 'max_wal_senders', 'shared_buffers', 'server_version')`);
    const settings = Object.fromEntries(settingRows.map((r) => [r.name, /^\d+$/.test(r.setting) ? Number(r.setting) : r.setting])) as Record<string, number>;
    // The lock hash table PostgreSQL sizes (lock.c NLOCKENTS): per backend slot, walsenders and workers included.
    const backends = settings.max_connections + settings.autovacuum_max_workers + 1 + settings.max_worker_processes + settings.max_wal_senders;
    const lockTable = {
      documented_slots: settings.max_locks_per_transaction * (settings.max_connections + settings.max_prepared_transactions),
      sized_entries: settings.max_locks_per_transaction * (backends + settings.max_prepared_transactions),
    };
    log(`server ${externalUrl ? 'given' : 'of its own'}: ${JSON.stringify(settings)}; lock table ${JSON.stringify(lockTable)}`);

    const bulkApis = Math.max(1, Math.ceil(Math.max(...SCENARIOS.map((s) => s.orgs * s.perOrg)) / BULKS_PER_API));
    const env: NodeJS.ProcessEnv = {
      ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix, LOG_LEVEL: 'warn',
      SIGNUP_LIMIT_PER_HOUR: '0', TRUST_PROXY: 'true', RATE_LIMIT_USER: '1000000/60000000', SECRETS_KEY: randomBytes(32).toString('base64'),
    };
    delete env.DATABASE_REPLICA_URL;
    delete env.REDIS_CLUSTER_NODES;
    apis.push({ ...(await startApi(env, path.join(dir, 'api-0.log'))), logFile: path.join(dir, 'api-0.log') }); // migrated already: starts alone first anyway
    await Promise.all(Array.from({ length: bulkApis }, async (_, i) => {
      const logFile = path.join(dir, `api-${i + 1}.log`);
      apis.push({ ...(await startApi(env, logFile)), logFile });
    }));
    log(`${apis.length} API processes: 1 for the other tenant, ${bulkApis} for the bulks (at most ${BULKS_PER_API} each)`);
    const otherApi = apis[0]!.url;
    const bulkApi = (i: number) => apis[1 + (i % bulkApis)]!.url;

    // The other tenant: small writes in a loop (a host with one address, then a PATCH of it).
    const other = await signUp(otherApi, 'other');
    const otherPlace = await place(otherApi, other.cookie, 'writes', '172.16.0.0/12');
    let writeNo = 0;
    const loop = (until: () => boolean) => {
      const samples: Array<Answer & { op: 'create' | 'patch'; ms: number; at: number }> = [];
      const done = (async () => {
        while (!until()) {
          const n = writeNo++;
          const ip = `172.${16 + Math.floor(n / 65536)}.${Math.floor(n / 256) % 256}.${n % 256}`;
          let t = performance.now();
          const created = await send(otherApi, other.cookie, 'POST', '/api/v1/hosts', { name: `w-${n}`, network_id: otherPlace.network, ip_addresses: [{ subnet_id: otherPlace.subnet, ip_address: ip }] });
          samples.push({ op: 'create', ms: performance.now() - t, at: Date.now(), status: created.status, code: created.code, message: created.message });
          if (created.status !== 201) continue;
          t = performance.now();
          const patched = await send(otherApi, other.cookie, 'PATCH', `/api/v1/hosts/${created.data.id}`, { description: `patched ${n}` }, 'application/merge-patch+json');
          samples.push({ op: 'patch', ms: performance.now() - t, at: Date.now(), status: patched.status, code: patched.code, message: patched.message });
        }
      })();
      return { samples, done };
    };
    const summary = (samples: Array<Answer & { op: string; ms: number }>) => {
      const ok = (op: string) => samples.filter((s) => s.op === op && s.status >= 200 && s.status < 300).map((s) => s.ms);
      return {
        writes: samples.length, failed: samples.filter((s) => s.status < 200 || s.status >= 300).length,
        answers: tally(samples.map((s) => ({ ...s, code: `${s.code} (${s.op})` }))),
        create_ms: percentiles(ok('create')), patch_ms: percentiles(ok('patch')), all_ok_ms: percentiles([...ok('create'), ...ok('patch')]),
      };
    };

    const results = [];
    let scenarioNo = 0;
    for (const scenario of SCENARIOS) {
      scenarioNo += 1;
      const parallel = scenario.orgs * scenario.perOrg;
      const loadStart = loadavg();
      log(`scenario ${scenario.label}: ${scenario.orgs} organization(s) x ${scenario.perOrg} bulk(s) of ${HOSTS} hosts, ${ADDRESSES} addresses (load ${loadStart})`);
      const tenants = await Promise.all(Array.from({ length: scenario.orgs }, (_, i) => signUp(otherApi, `s${scenarioNo}-org${i}`)));
      const bulks = await Promise.all(Array.from({ length: parallel }, async (_, i) => {
        const tenant = tenants[Math.floor(i / scenario.perOrg)]!;
        const p = await place(otherApi, tenant.cookie, `bulk-${scenarioNo}-${i}`, `10.${i % 256}.0.0/16`);
        const body = Array.from({ length: HOSTS }, (_, h) => ({
          name: `bulk-${h}`, network_id: p.network,
          ip_addresses: Array.from({ length: ADDRESSES_PER_HOST }, (_, k) => {
            const n = h * ADDRESSES_PER_HOST + k;
            return { subnet_id: p.subnet, ip_address: `10.${i % 256}.${Math.floor(n / 250)}.${1 + (n % 250)}` };
          }).slice(0, Math.min(ADDRESSES_PER_HOST, ADDRESSES - h * ADDRESSES_PER_HOST)),
        }));
        return { tenant, ...p, body, api: bulkApi(i) };
      }));

      // 1. baseline
      const baselineEnd = Date.now() + BASELINE_S * 1000;
      const baseline = loop(() => Date.now() >= baselineEnd);
      await baseline.done;

      // 2. load: the loop, the bulks, the poller
      const pgLogFrom = own ? fs.statSync(own.logFile).size : 0;
      const apiLogFrom = apis.map((a) => fs.statSync(a.logFile).size);
      let bulksDone = false;
      const activity = new Map<string, number>();
      const polls: Array<{ t: number; advisory: number; rows: number; outside_fast_path: number; waiting_advisory: number; waiting_other: number }> = [];
      const poller = (async () => {
        const c = new pg.Client({ connectionString: databaseUrl });
        await c.connect();
        const t0 = Date.now();
        try {
          while (!bulksDone) {
            const { rows: [r] } = await c.query(`select count(*) filter (where locktype = 'advisory')::int as advisory, count(*)::int as rows,
                                                        count(*) filter (where not fastpath)::int as outside_fast_path,
                                                        count(*) filter (where not granted and locktype = 'advisory')::int as waiting_advisory,
                                                        count(*) filter (where not granted and locktype <> 'advisory')::int as waiting_other from pg_locks`);
            polls.push({ t: Date.now() - t0, ...r });
            if (polls.length % 25 === 0) {
              // What the busy backends run (every ~0.5 s): where the time of a slow scenario goes.
              const { rows: active } = await c.query<{ what: string }>(
                `select coalesce(wait_event_type || ':' || wait_event, 'cpu') || ' | ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as what
                 from pg_stat_activity where state = 'active' and backend_type = 'client backend' and pid <> pg_backend_pid()`);
              for (const { what } of active) activity.set(what, (activity.get(what) ?? 0) + 1);
            }
            await sleep(20);
          }
        } finally {
          await c.end();
        }
      })();
      const during = loop(() => bulksDone);
      await sleep(500); // the loop runs before the bulks start too
      const bulkStart = performance.now();
      const bulkAnswers = await Promise.all(bulks.map(async (b) => {
        const a = await send(b.api, b.tenant.cookie, 'POST', '/api/v1/hosts/bulk', b.body);
        return { status: a.status, code: a.code, message: a.message, ms: performance.now() - bulkStart, count: a.data?.count as number | undefined };
      }));
      bulksDone = true;
      await Promise.all([during.done, poller]);
      const bulkSeconds = (performance.now() - bulkStart) / 1000;

      // 3. all or none
      const stored: Array<{ hosts: number; ips: number }> = [];
      for (const b of bulks) {
        stored.push((await admin.query<{ hosts: number; ips: number }>(
          `select (select count(*) from hosts where network_id = $1)::int as hosts, (select count(*) from ip_addresses where network_id = $1)::int as ips`, [b.network])).rows[0]!);
      }
      const inconsistent = bulks.map((_, i) => i).filter((i) => {
        const okAnswer = bulkAnswers[i]!.status === 201;
        return okAnswer ? stored[i]!.hosts !== HOSTS || stored[i]!.ips !== ADDRESSES : stored[i]!.hosts !== 0 || stored[i]!.ips !== 0;
      });
      const pgErrors = own ? newLines(own.logFile, pgLogFrom, /ERROR|STATEMENT|HINT/) : [];
      // The API processes log a 500's error with its request id: which statement of whose request met the full table.
      const apiLockErrors = apis.flatMap((a, i) => newLines(a.logFile, apiLogFrom[i]!, LOCK_TABLE_ERROR).map((line) => {
        try {
          const entry = JSON.parse(line) as { request_id?: string; err?: { message?: string; hint?: string; stack?: string } };
          const frames = (entry.err?.stack ?? '').split('\n').filter((f) => /\/(src|workers)\//.test(f)).map((f) => f.trim().replace(/^at (async )?/, '').replace(/\(?\/.*\/(src|workers)\//, '$1/').replace(/\)$/, ''));
          return { api: i, request_id: entry.request_id, error: entry.err?.message, hint: entry.err?.hint, at: [...new Set(frames)].slice(0, 3) };
        } catch {
          return { api: i, request_id: undefined, error: line.slice(0, 200), hint: undefined, at: [] };
        }
      }));
      const requestOf = (message?: string) => /request ([0-9a-f-]{36})/.exec(message ?? '')?.[1];
      const otherFailures = during.samples.filter((x) => x.status < 200 || x.status >= 300).map((x) => ({
        op: x.op, status: x.status, code: x.code, ms: round(x.ms),
        postgresql: apiLockErrors.find((e) => e.request_id && e.request_id === requestOf(x.message)) ?? null,
      }));
      const peak = (k: 'advisory' | 'rows' | 'outside_fast_path' | 'waiting_advisory' | 'waiting_other') => Math.max(0, ...polls.map((p) => p[k]));
      // Bulks of one organization whose subnets share a `subnets:` bucket (src/core/advisoryLocks.ts) take turns on it.
      const buckets = new Map<string, number>();
      for (const b of bulks) {
        const { rows: [{ bucket }] } = await admin.query<{ bucket: number }>(`select hashtext($1::uuid::text) & 63 as bucket`, [b.subnet]);
        const key = `${b.tenant.orgId}:${bucket}`;
        buckets.set(key, (buckets.get(key) ?? 0) + 1);
      }
      const perSecond: Record<number, number> = {};
      for (const p of polls) perSecond[Math.floor(p.t / 1000)] = Math.max(perSecond[Math.floor(p.t / 1000)] ?? 0, p.advisory);
      const result = {
        scenario: scenario.label, organizations: scenario.orgs, bulks_per_organization: scenario.perOrg, parallel_bulks: parallel,
        addresses_per_bulk: ADDRESSES, hosts_per_bulk: HOSTS,
        loadavg: { start: loadStart, end: loadavg() },
        bulks: {
          ok: bulkAnswers.filter((a) => a.status === 201).length, failed: bulkAnswers.filter((a) => a.status !== 201).length,
          answers: tally(bulkAnswers), seconds_to_last: round(bulkSeconds, 2), answer_s: bulkAnswers.map((a) => round(a.ms / 1000, 2)),
          stored_as_answered: inconsistent.length === 0, inconsistent,
        },
        other_tenant: { baseline: summary(baseline.samples), during_bulks: summary(during.samples), failures_during_bulks: otherFailures },
        pg_locks: {
          peak_advisory: peak('advisory'), peak_rows: peak('rows'), peak_outside_fast_path: peak('outside_fast_path'), polls: polls.length,
          peak_waiting_advisory: peak('waiting_advisory'), peak_waiting_other: peak('waiting_other'),
          bulks_sharing_a_bucket: [...buckets.values()].filter((n) => n > 1).reduce((a, n) => a + n, 0),
          // pg_stat_activity samples of active client backends: wait event (or cpu) | statement, most frequent first
          activity_samples: Object.fromEntries([...activity.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8)),
          advisory_peak_per_second: Object.values(perSecond),
        },
        lock_table_errors: {
          postgresql_log: pgErrors.filter((l) => LOCK_TABLE_ERROR.test(l) && /ERROR/.test(l)).length,
          api_logs: apiLockErrors.length,
          // where in the code, per API process (api-0 serves the other tenant only): count
          api_log_where: apiLockErrors.reduce((m, e) => {
            const key = `api-${e.api}: ${e.at.join(' < ') || e.error}`;
            return { ...m, [key]: (m[key] ?? 0) + 1 };
          }, {} as Record<string, number>),
          postgresql_log_lines: [...new Set(pgErrors.map((l) => l.replace(/^.*?(ERROR|STATEMENT|HINT):/, '$1:').slice(0, 240)))].slice(0, 20),
        },
      };
      results.push(result);
      mustAgree(`scenario ${scenario.label}: every bulk stored all its rows or none, as answered`, result.bulks.stored_as_answered, `bulks ${inconsistent.join(', ')}`);
      mustAgree(`scenario ${scenario.label}: the other tenant's baseline loop wrote without a failure`, result.other_tenant.baseline.writes > 0 && result.other_tenant.baseline.failed === 0, JSON.stringify(result.other_tenant.baseline.answers));
      const d = result.other_tenant.during_bulks;
      log(`  bulks ${result.bulks.ok} ok / ${result.bulks.failed} failed ${JSON.stringify(result.bulks.answers)} in ${result.bulks.seconds_to_last} s; `
        + `peak advisory locks ${result.pg_locks.peak_advisory} (lock rows ${result.pg_locks.peak_rows}); `
        + `other tenant: baseline ${result.other_tenant.baseline.writes} writes p50/p99 ${result.other_tenant.baseline.all_ok_ms.p50}/${result.other_tenant.baseline.all_ok_ms.p99} ms, `
        + `during ${d.writes} writes, ${d.failed} failed ${JSON.stringify(d.answers)} p50/p99 ${d.all_ok_ms.p50}/${d.all_ok_ms.p99} ms; `
        + `lock-table errors: PostgreSQL log ${result.lock_table_errors.postgresql_log}, API logs ${result.lock_table_errors.api_logs} (load ${result.loadavg.end})`);
    }

    const output = {
      bench: 'bulkLocks', at: started.at, label: option('label') ?? null, small: SMALL, machine: { cpus: os.cpus().length },
      loadavg: { start: started.loadavg, end: loadavg() },
      server: { own: !externalUrl, settings, lock_table: lockTable },
      api_processes: { other_tenant: 1, bulks: bulkApis, bulks_per_process_at_most: BULKS_PER_API, pool_per_process: 10 },
      other_tenant_loop: 'POST /api/v1/hosts (one address) then PATCH /api/v1/hosts/:id (description), sequential, on its own API process',
      baseline_seconds: BASELINE_S, scenarios: results,
    };
    log(`load average at end: ${output.loadavg.end}`);
    // A small run (--small or BENCH_SMALL=1) writes outside bench/results/.
    const file = SMALL ? resultsFileFor(`bulkLocks-${started.at.replace(/[:.]/g, '-')}.json`) : path.join(ROOT, 'bench', 'results', `bulkLocks-${started.at.replace(/[:.]/g, '-')}.json`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(output, null, 1)}\n`);
    log(`wrote ${file}`);
  } finally {
    await admin.end().catch(() => undefined);
    await Promise.all(apis.map(async ({ child }) => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }));
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect().then(() => deleteKeysMatching(redis, `${redisPrefix}*`)).catch(() => undefined);
    redis.disconnect();
    own?.stop();
    if (!flag('keep')) fs.rmSync(dir, { recursive: true, force: true });
    else log(`kept ${dir} (logs)`);
  }
}

await main();
process.exit(0);
