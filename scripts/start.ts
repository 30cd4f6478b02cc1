// `npm start`: finds or starts PostgreSQL and Redis, applies migrations, then runs the API and
// the worker as two processes (as the Procfile does) and stops both when either stops.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { loadConfig, portInUseMessage } from '../src/config.js';
import { migrate } from '../src/core/db.js';
import { createOrm } from '../src/database.js';
import { bundlePath, buildAgentArtifacts, buildBundles, buildWeb } from './build.js';
import { ensureServices } from './services.js';

// A busy port is said in one line before anything starts (the API would find out only after the
// worker had started); the API still checks for itself, for the race.
const { port, host } = loadConfig();
const free = await new Promise<boolean>((resolve) => {
  const probe = net.createServer().once('error', () => resolve(false)).listen(port, host, () => probe.close(() => resolve(true)));
});
if (!free) {
  console.error(`[start] ${portInUseMessage(host, port)}`);
  process.exit(1);
}

const { databaseUrl, redisUrl } = await ensureServices();
const env = { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl };

const orm = await createOrm(databaseUrl, 2);
const applied = await migrate(orm);
await orm.close(true);
if (applied.length) console.error(`[start] migrations applied: ${applied.join(', ')}`);

// The API and the worker run as esbuild bundles of their entry points (scripts/build.ts); the API
// hands out the agent's builds (rebuilt only when the agent changed).
await Promise.all([buildBundles(), buildWeb(), buildAgentArtifacts()]);
const children: ChildProcess[] = [
  spawn(process.execPath, ['--enable-source-maps', bundlePath('server')], { env, stdio: 'inherit' }),
  spawn(process.execPath, ['--enable-source-maps', bundlePath('worker')], { env, stdio: 'inherit' }),
];

let exitCode: number | null = null;
function stopAll(code: number) {
  if (exitCode !== null) return;
  exitCode = code;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
}
for (const child of children) {
  child.on('exit', (code) => {
    stopAll(code ?? 1);
    if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(exitCode ?? 0);
  });
}
process.on('SIGTERM', () => stopAll(0));
process.on('SIGINT', () => stopAll(0));
