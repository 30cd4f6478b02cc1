/**
 * A throwaway Redis Cluster on this machine, from Debian's redis-server (7.x): 3 masters and 3
 * replicas on loopback ports, no persistence, in a temporary directory. Used by the
 * Redis Cluster test (test/scale/redisCluster.spec.ts), by `npm run test:cluster`, and by hand:
 *
 *   node --import tsx scripts/redisCluster.ts start     # prints REDIS_CLUSTER_NODES=…; stays up until Ctrl-C
 *   node --import tsx scripts/redisCluster.ts run -- <command…>
 *       # starts a cluster, runs the command with REDIS_CLUSTER_NODES set, stops the cluster, exits with the command's code
 *
 * Every node listens on 127.0.0.1 only; its cluster bus is its port + 10000. The ports are the first
 * free block of six from REDIS_CLUSTER_BASE_PORT (7001), so two runs on one machine do not collide.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

export interface ClusterNode {
  port: number;
  /** The redis-server process (this module started it). */
  pid: number;
}

export interface RedisCluster {
  /** Seeds as REDIS_CLUSTER_NODES takes them: `127.0.0.1:7001,…`. */
  seeds: string;
  nodes: ClusterNode[];
  dir: string;
  /** The port of the master serving `key`'s slot now (asks the cluster: CLUSTER KEYSLOT, CLUSTER NODES). */
  masterOf(key: string): Promise<number>;
  /** SIGKILL to the node on `port` (a crash: no goodbye to the cluster). */
  kill(port: number): Promise<void>;
  /** Every node stopped, the directory removed. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** cluster-node-timeout: how long a silent master takes to be declared failed (2000 ms). */
  nodeTimeoutMs?: number;
  basePort?: number;
  log?: (line: string) => void;
}

const HOST = '127.0.0.1';

function binary(name: string): string {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error(`${name} not found: install Debian's redis-server package (apt-get install redis-server)`);
  return found;
}

const portFree = (port: number) => new Promise<boolean>((resolve) => {
  const server = createServer();
  server.once('error', () => resolve(false));
  server.listen(port, HOST, () => server.close(() => resolve(true)));
});

/** The first block of `count` ports from `base` (each with its bus port + 10000) that nothing listens on. */
async function freePorts(base: number, count: number): Promise<number[]> {
  for (let start = base; start + count + 10_000 < 65_536; start += count) {
    const ports = Array.from({ length: count }, (_, i) => start + i);
    let ok = true;
    for (const p of ports) if (!(await portFree(p)) || !(await portFree(p + 10_000))) { ok = false; break; }
    if (ok) return ports;
  }
  throw new Error(`no ${count} free ports from ${base}`);
}

async function answers(port: number): Promise<boolean> {
  const client = new Redis({ host: HOST, port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 500 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function ask<T>(port: number, run: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: HOST, port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await run(client);
  } finally {
    client.disconnect();
  }
}

export async function startRedisCluster(opts: ClusterOptions = {}): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicasPerMaster ?? 1;
  const log = opts.log ?? (() => undefined);
  const server = binary('redis-server');
  const cli = binary('redis-cli');
  const ports = await freePorts(opts.basePort ?? Number(process.env.REDIS_CLUSTER_BASE_PORT ?? 7001), masters * (1 + replicas));
  const dir = mkdtempSync(path.join(tmpdir(), 'netinv-redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  const stop = async () => {
    await Promise.all([...children.values()].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM'); // nothing to save (--save ''), so it exits at once
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    }));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const child = spawn(server, [
        '--port', String(port), '--bind', HOST, '--protected-mode', 'yes',
        '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000),
        '--save', '', '--appendonly', 'no', '--dir', dir, '--dbfilename', `dump-${port}.rdb`,
        '--logfile', path.join(dir, `redis-${port}.log`), '--daemonize', 'no',
      ], { stdio: 'ignore' });
      children.set(port, child);
    }
    for (const port of ports) {
      for (const deadline = Date.now() + 15_000; !(await answers(port)); await sleep(50)) {
        if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start (log: ${path.join(dir, `redis-${port}.log`)})`);
      }
    }
    log(`creating the cluster on ${ports.join(', ')} (${masters} masters, ${replicas} replica each)`);
    const created = spawnSync(cli, ['--cluster', 'create', ...ports.map((p) => `${HOST}:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    // Ready when every node says the cluster is ok and knows every other node.
    for (const port of ports) {
      for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
        const info = await ask(port, (c) => c.cluster('INFO') as Promise<string>).catch(() => '');
        if (/cluster_state:ok/.test(info) && new RegExp(`cluster_known_nodes:${ports.length}\\b`).test(info)) break;
        if (Date.now() > deadline) throw new Error(`the cluster did not become ok on ${port}: ${info}`);
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const alive = () => ports.filter((p) => { const c = children.get(p)!; return c.exitCode === null && c.signalCode === null; });
  return {
    seeds: ports.map((p) => `${HOST}:${p}`).join(','),
    nodes: ports.map((port) => ({ port, pid: children.get(port)!.pid! })),
    dir,
    async masterOf(key: string) {
      for (const port of alive()) {
        try {
          return await ask(port, async (c) => {
            const slot = Number(await c.cluster('KEYSLOT', key));
            const lines = String(await c.cluster('NODES')).trim().split('\n');
            // <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot ranges…>
            for (const line of lines) {
              const [, address, flags, , , , , , ...ranges] = line.split(' ');
              if (!flags!.split(',').includes('master') || flags!.includes('fail')) continue;
              const serves = ranges.some((r) => {
                if (r.startsWith('[')) return false; // a slot being migrated
                const [from, to] = r.split('-').map(Number);
                return slot >= from! && slot <= (to ?? from)!;
              });
              if (serves) return Number(address!.split('@')[0]!.split(':').at(-1));
            }
            throw new Error(`no master serves slot ${slot}`);
          });
        } catch {
          // that node is down or not yet agreeing: ask the next one
        }
      }
      throw new Error(`no node knows the master of ${key}`);
    },
    async kill(port: number) {
      const child = children.get(port);
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    stop,
  };
}

// ---- Command line ----------------------------------------------------------------------------

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'start' && command !== 'run') {
    console.error('usage: scripts/redisCluster.ts start | run -- <command…>');
    return 2;
  }
  const cluster = await startRedisCluster({ log: (line) => console.error(`[redis-cluster] ${line}`) });
  let stopping: Promise<void> | undefined;
  const stopOnce = () => (stopping ??= cluster.stop());
  const onSignal = (signal: NodeJS.Signals) => () => {
    void stopOnce().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal('SIGINT'));
  process.once('SIGTERM', onSignal('SIGTERM'));
  if (command === 'start') {
    console.log(`REDIS_CLUSTER_NODES=${cluster.seeds}`);
    console.error(`[redis-cluster] up (data and logs in ${cluster.dir}); Ctrl-C stops it`);
    await new Promise(() => undefined);
    return 0;
  }
  const args = rest[0] === '--' ? rest.slice(1) : rest;
  if (!args.length) {
    await stopOnce();
    console.error('run: no command given');
    return 2;
  }
  console.error(`[redis-cluster] REDIS_CLUSTER_NODES=${cluster.seeds} ${args.join(' ')}`);
  const child = spawn(args[0]!, args.slice(1), { stdio: 'inherit', env: { ...process.env, REDIS_CLUSTER_NODES: cluster.seeds } });
  const code = await new Promise<number>((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  await stopOnce();
  return code;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (err: Error) => {
    console.error(`[redis-cluster] ${err.message}`);
    process.exit(1);
  });
}
