// `npm run bench:small`: the small run of every benchmark (bench/small.ts), one after the other, each
// in its own process with BENCH_SMALL=1: seconds each, no timing asserted; each checks that it runs to
// its end and that its baseline and the service agree, and exits non-zero otherwise. This script
// exits non-zero when any of them did, after running them all, and prints how long each took.
// Results go to one temporary directory (BENCH_RESULTS_DIR), removed at the end unless BENCH_KEEP=1
// or a bench failed: never to bench/results/ or bench/README.md.
//
//   npm run bench:small                      every bench of `npm run bench` but the lab ones, and
//                                            bench:growth, bench:scale, bench:locks, bench:rescan
//   npm run bench:small -- ingest rescan     only these (names as listed below)
//   npm run bench:small -- --lab             also discovery and discoveryL2 (root: network
//                                            namespaces and nmap; ~2.5 minutes each even small)
//   npm run bench:small -- --jobs 2          two benches at a time (BENCH_SMALL_JOBS; default 1),
//                                            each line of output prefixed with its bench: no faster
//                                            on this 2-core machine (178 s against 170 s one at a time)
//
// bench:products (bench/discoveryProducts.ts) has no small run: it needs the products lab (network
// namespaces, real daemons) and nmap, and takes minutes whatever the size; run it on its own.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Bench { name: string; script: string; args?: string[]; lab?: boolean }
/** In `npm run bench`'s order, then the separate scripts. */
const BENCHES: Bench[] = [
  { name: 'run', script: 'bench/run.ts' },
  { name: 'ingest', script: 'bench/ingest.ts' },
  { name: 'topology', script: 'bench/topology.ts' },
  { name: 'web', script: 'bench/web.ts' },
  { name: 'events', script: 'bench/events.ts' },
  { name: 'isolation', script: 'bench/isolation.ts' },
  { name: 'discovery', script: 'bench/discovery.ts', lab: true },
  { name: 'discoveryL2', script: 'bench/discoveryL2.ts', lab: true },
  { name: 'concurrentIngest', script: 'bench/concurrentIngest.ts' },
  { name: 'bulkCreate', script: 'bench/bulkCreate.ts' },
  { name: 'growth', script: 'bench/growth.ts' },
  { name: 'scale', script: 'bench/scaleOut.ts' },
  { name: 'locks', script: 'bench/bulkLocks.ts' },
  { name: 'rescan', script: 'bench/rescan.ts' },
  { name: 'rls', script: 'bench/rls.ts' },
  { name: 'edgeRoutes', script: 'bench/edgeRoutes.ts' },
  { name: 'keptGrowth', script: 'bench/keptGrowth.ts' },
];
/** A bench still running after this long is stopped and counted as failed (a hung bench must not hang CI). */
const TIMEOUT_MS = Number(process.env.BENCH_SMALL_TIMEOUT_S ?? 300) * 1000;

const args = process.argv.slice(2);
const jobsAt = args.indexOf('--jobs');
const JOBS = Math.max(1, Number(jobsAt >= 0 ? args.splice(jobsAt, 2)[1] : process.env.BENCH_SMALL_JOBS ?? 1));
const named = args.filter((a) => !a.startsWith('--'));
const unknown = named.filter((n) => !BENCHES.some((b) => b.name === n));
if (unknown.length) {
  console.error(`unknown bench ${unknown.join(', ')}; the names: ${BENCHES.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
const chosen = named.length ? BENCHES.filter((b) => named.includes(b.name)) : BENCHES.filter((b) => !b.lab || args.includes('--lab'));

const dir = mkdtempSync(path.join(os.tmpdir(), 'netinv-bench-small-'));
const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** One bench in its own process group (its API, worker and server processes are stopped with it on a timeout). */
function runOne(b: Bench): Promise<{ code: number | null; signal: string | null; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', b.script, ...(b.args ?? [])], {
      cwd: ROOT, stdio: JOBS > 1 ? ['ignore', 'pipe', 'pipe'] : 'inherit', detached: true,
      env: { ...process.env, BENCH_SMALL: '1', BENCH_RESULTS_DIR: dir },
    });
    // Two at once: every line says whose it is.
    if (JOBS > 1) {
      for (const [from, to] of [[child.stdout!, process.stdout], [child.stderr!, process.stderr]] as const) {
        createInterface({ input: from }).on('line', (line) => to.write(`[${b.name}] ${line}\n`));
      }
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      console.error(`[bench:small] ${b.name}: still running after ${TIMEOUT_MS / 1000} s: stopped`);
      try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* gone */ }
      setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 20_000).unref();
    }, TIMEOUT_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut });
    });
  });
}

const started = performance.now();
const done: Array<{ name: string; ok: boolean; seconds: number; how: string }> = [];
console.log(`[bench:small] ${chosen.map((b) => b.name).join(', ')}; ${JOBS} at a time; results in ${dir}`);
const queue = [...chosen];
await Promise.all(Array.from({ length: Math.min(JOBS, queue.length) }, async () => {
  for (let b = queue.shift(); b; b = queue.shift()) {
    console.log(`\n[bench:small] ---- ${b.name} (${b.script}) ----`);
    const t0 = performance.now();
    const { code, signal, timedOut } = await runOne(b);
    const ok = code === 0 && !timedOut;
    const d = { name: b.name, ok, seconds: seconds(performance.now() - t0), how: timedOut ? 'timed out' : signal ? `killed (${signal})` : `exit ${code}` };
    done.push(d);
    console.log(`[bench:small] ${b.name}: ${ok ? 'ok' : 'FAILED'} (${d.how}) in ${d.seconds} s`);
  }
}));
done.sort((a, b) => chosen.findIndex((x) => x.name === a.name) - chosen.findIndex((x) => x.name === b.name));

const total = seconds(performance.now() - started);
const failed = done.filter((d) => !d.ok);
console.log(`\n[bench:small] | bench | result | seconds |\n[bench:small] |---|---|---:|`);
for (const d of done) console.log(`[bench:small] | ${d.name} | ${d.ok ? 'ok' : `FAILED (${d.how})`} | ${d.seconds} |`);
console.log(`[bench:small] total ${total} s, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ${failed.length ? `${failed.length} FAILED: ${failed.map((d) => d.name).join(', ')}` : 'all ok'}`);
if (failed.length || process.env.BENCH_KEEP === '1') console.log(`[bench:small] results kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
process.exit(failed.length ? 1 : 0);
