// Evidence for the numbers: which SQL one request runs and how long each statement takes (client
// side and EXPLAIN ANALYZE), where the API process spends its CPU (V8 sampling profile), and how
// the machine's two cores were shared between the API, PostgreSQL and the load generator.
import { readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Db } from '../src/core/db.js';
import type { Services } from '../src/services.js';

// ---- SQL tracing ---------------------------------------------------------------------------

export interface TracedQuery { sql: string; params: unknown[]; ms: number; rows: number }

/**
 * Records every statement that goes through Db.query (all SQL of the services does) while `fn`
 * runs. Patches the prototype for that time only: call it when nothing else is running.
 */
export async function traceQueries<T>(_services: Services, fn: () => Promise<T>): Promise<{ result: T; queries: TracedQuery[] }> {
  const original = Db.prototype.query;
  const queries: TracedQuery[] = [];
  Db.prototype.query = async function <R>(this: Db, sql: string, params: unknown[] = []): Promise<R[]> {
    const started = performance.now();
    const out = await original.call(this, sql, params);
    queries.push({ sql, params, ms: round(performance.now() - started), rows: out.length });
    return out as R[];
  };
  try {
    return { result: await fn(), queries };
  } finally {
    Db.prototype.query = original;
  }
}

export interface ExplainedQuery { sql: string; clientMs: number; executionMs: number | null; planningMs: number | null; plan: string }

/**
 * EXPLAIN (ANALYZE, BUFFERS) of traced statements, in order, in one transaction that is rolled
 * back (so writes are really executed, their trigger times reported, and nothing is kept).
 */
export async function explainAll(services: Services, queries: TracedQuery[]): Promise<ExplainedQuery[]> {
  const out: ExplainedQuery[] = [];
  const rollback = new Error('rollback');
  await services.orm.em.fork().transactional(async (em) => {
    for (const q of queries) {
      const rows = await new Db(em as never).query<Record<string, string>>(`explain (analyze, buffers) ${q.sql}`, q.params);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      const num = (re: RegExp) => (re.exec(plan) ? Number(re.exec(plan)![1]) : null);
      out.push({ sql: q.sql, clientMs: q.ms, executionMs: num(/Execution Time: ([\d.]+) ms/), planningMs: num(/Planning Time: ([\d.]+) ms/), plan });
    }
    throw rollback;
  }).catch((err) => { if (err !== rollback) throw err; });
  return out;
}

export interface WhatIf { name: string; why: string; setup?: string[]; sql: string; params: unknown[] }

/**
 * EXPLAIN (ANALYZE, BUFFERS) of hand-made variants of a traced statement, each in its own rolled-back
 * transaction; `setup` (e.g. CREATE INDEX) runs first in that transaction, so nothing is kept.
 */
export async function explainWhatIfs(services: Services, variants: WhatIf[]) {
  const out: Array<{ name: string; why: string; setup?: string[]; executionMs: number | null; plan: string }> = [];
  for (const v of variants) {
    const rollback = new Error('rollback');
    await services.orm.em.fork().transactional(async (em) => {
      for (const ddl of v.setup ?? []) await em.execute(ddl);
      if (v.setup?.length) await em.execute('analyze hosts_history');
      const rows = await new Db(em as never).query<Record<string, string>>(`explain (analyze, buffers) ${v.sql}`, v.params);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      const m = /Execution Time: ([\d.]+) ms/.exec(plan);
      out.push({ name: v.name, why: v.why, setup: v.setup, executionMs: m ? Number(m[1]) : null, plan });
      throw rollback;
    }).catch((err) => { if (err !== rollback) throw err; });
  }
  return out;
}

// ---- CPU profile of the API process --------------------------------------------------------

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

export async function cpuProfile<T>(fn: () => Promise<T>): Promise<{ result: T; profile: Profile }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 }); // µs
  await session.post('Profiler.start');
  try {
    const result = await fn();
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

/** Where a frame comes from: an npm package, a file of src/, a V8/Node builtin, or a pseudo-frame. */
function category(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(v8 builtins: JSON, RegExp, …)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 14).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1).replace(/^file:\/\//, '');
  const bench = url.indexOf('/bench/');
  if (bench >= 0) return url.slice(bench + 1);
  if (url.startsWith('node:')) return 'node internals';
  return url;
}

const frameKey = (n: ProfileNode) => {
  const url = n.callFrame.url;
  const where = url ? `${category(url, '')}${url.includes('/node_modules/') ? `/${url.split('/').pop()}` : ''}:${n.callFrame.lineNumber + 1}` : '';
  return `${n.callFrame.functionName || '(anonymous)'} ${where}`.trim();
};

export interface ProfileSummary {
  sampledMs: number;
  /** Share of the API thread's time not spent waiting (everything but "(idle)"). */
  busyPercent: number;
  selfByCategory: Array<{ name: string; ms: number; percent: number }>;
  /** Self time, with the nearest callers outside Node's internals (who made the builtin do that work). */
  selfByFunction: Array<{ name: string; ms: number; percent: number; callers: string[] }>;
  /** Inclusive time of frames (each frame counted once per sample), generic plumbing left out. */
  inclusive: Array<{ name: string; ms: number; percent: number }>;
}

const PLUMBING = /^(processTicksAndRejections|runMicrotasks|emit|callbackTrampoline|\(root\)|\(program\)|\(anonymous\) node internals)/;

export function summarizeProfile(profile: Profile, top = 20): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stack = (id: number) => {
    const out: ProfileNode[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) out.push(byId.get(cur)!);
    return out;
  };
  const self = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    // Stopping the profiler serialises it on this thread: not the app's work.
    if (stack(id).some((f) => f.callFrame.url.includes('/bench/diagnose.ts'))) return;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const cats = new Map<string, number>();
  const funcs = new Map<string, number>();
  const callers = new Map<string, Map<string, number>>();
  const incl = new Map<string, number>();
  for (const [id, ms] of self) {
    const frames = stack(id);
    const key = frameKey(frames[0]!);
    add(cats, category(frames[0]!.callFrame.url, frames[0]!.callFrame.functionName), ms);
    add(funcs, key, ms);
    const caller = frames.slice(1).find((f) => f.callFrame.url && !f.callFrame.url.startsWith('node:'));
    if (caller) add(callers.get(key) ?? callers.set(key, new Map()).get(key)!, frameKey(caller), ms);
    const seen = new Set<string>();
    for (const f of frames) {
      for (const k of [`[${category(f.callFrame.url, f.callFrame.functionName)}]`, frameKey(f)]) {
        if (!seen.has(k)) { seen.add(k); add(incl, k, ms); }
      }
    }
  }
  const list = (m: Map<string, number>, n: number) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, ms]) => ({ name, ms: round(ms), percent: round((100 * ms) / total) }));
  const idle = cats.get('(idle)') ?? 0;
  return {
    sampledMs: round(total),
    busyPercent: round((100 * (total - idle)) / total),
    selfByCategory: list(cats, top),
    selfByFunction: list(funcs, top).map((f) => ({
      ...f,
      callers: [...(callers.get(f.name) ?? new Map<string, number>()).entries()].sort((a, b) => b[1] - a[1]).slice(0, 3)
        .map(([c, ms]) => `${c} (${round((100 * ms) / total)}%)`),
    })),
    inclusive: list(new Map([...incl].filter(([k]) => !k.startsWith('[(') && !k.startsWith('[node internals]') && !PLUMBING.test(k))), 40),
  };
}

// ---- CPU accounting ------------------------------------------------------------------------

const TICK_MS = 10; // USER_HZ = 100 on Linux

/** utime + stime of one process, in ms (0 when it is gone). */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** Busy and total jiffies of the whole machine (/proc/stat "cpu" line). */
function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3]! + cpu[4]!;
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

export interface CpuWindow {
  serverMs: number;
  /** Backends of this benchmark's database, by backend_type (client backend, autovacuum worker, …). */
  postgresMs: number;
  postgresByType: Record<string, number>;
  machineBusyPercent: number;
  machineCores: number;
}

export type BackendLister = () => Promise<Array<{ pid: number; backend_type: string }>>;

/**
 * Starts a CPU window: the API process (this one), the PostgreSQL backends of this benchmark's
 * database (a backend that appeared during the window is counted whole) and the machine-wide busy
 * share, which also shows load that is not ours (e.g. a test run on the same machine).
 */
export async function cpuWindow(backends: BackendLister): Promise<() => Promise<CpuWindow>> {
  const start = new Map((await backends()).map((b) => [b.pid, processCpuMs(b.pid)]));
  const server = process.cpuUsage();
  const machine = machineTicks();
  return async () => {
    const s = process.cpuUsage(server);
    const m = machineTicks();
    const byType: Record<string, number> = {};
    for (const b of await backends()) byType[b.backend_type] = (byType[b.backend_type] ?? 0) + processCpuMs(b.pid) - (start.get(b.pid) ?? 0);
    return {
      serverMs: round((s.user + s.system) / 1000),
      postgresMs: Object.values(byType).reduce((a, b) => a + b, 0),
      postgresByType: byType,
      machineBusyPercent: round((100 * (m.busy - machine.busy)) / Math.max(1, m.total - machine.total)),
      machineCores: readdirSync('/sys/devices/system/cpu').filter((d) => /^cpu\d+$/.test(d)).length,
    };
  };
}

/** Machine-wide busy share over `ms` (this process idle meanwhile). */
export async function machineBusyPercent(ms: number): Promise<number> {
  const a = machineTicks();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = machineTicks();
  return round((100 * (b.busy - a.busy)) / Math.max(1, b.total - a.total));
}

export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
