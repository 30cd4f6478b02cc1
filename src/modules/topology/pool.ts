// CPU work of topology off the event loop: thread.ts's tasks run on a few worker
// threads, taken fairly between organizations (scheduler.ts), each stopped after a time limit.
// One pool per process (the API's, the worker's), made at the first task that needs it.
//
// piscina (5.3.2) runs the threads: it loads the entry through the process's own loader (tsx in
// development and tests, the bundle dist/topologyThread.mjs otherwise), replaces a thread that an
// abort terminated, and moves a task in and out by structured clone (small: a large task's thread
// reads its rows itself, threadReads.ts, and answers leave as JSON bytes).
// Measured here: a small task's round trip 0.15 ms; a thread start 0.3 s under tsx. Its own FIFO
// queue is not used: at most `threads` tasks are handed to it at a time, chosen by the fair scheduler.
import { AsyncLocalStorage } from 'node:async_hooks';
import { Piscina } from 'piscina';
import { AppError } from '../../core/errors.js';
import { FairScheduler, PerKeyGate } from './scheduler.js';
import { payerOf, type HeavyReadBudget } from './heavyReadBudget.js';
import { TASKS, threadCpuMsSince, threadCpuUsage, type Metered, type TaskInput, type TaskName, type TaskOutput, type ThreadFailure } from './thread.js';
import { environment, setting, type Env } from '../../core/settings.js';

/**
 * The CPU time of the heavy read in progress (heavy() opens one per read), which each task it runs
 * adds to: measured per thread (process.threadCpuUsage), so neither a wait for a thread or a core
 * nor another organization's work on the same machine is charged to this organization.
 */
const readCpu = new AsyncLocalStorage<{ ms: number }>();

/**
 * Work below these sizes runs inline: the copies to and from a thread would cost about as much as
 * the work. Sizes: element rows drawn (draw, diff, timeline: all instants' rows), nodes laid out
 * or written (layout, export). Measured on synthetic l3 graphs (this 2-core machine, warm):
 * drawing 6,000 element rows takes 23 ms inline and 76 ms through a thread, so 2,000 rows
 * (~8 ms) stay inline; elk takes 20–30 ms for 5 nodes and 170–300 ms for 50–100 nodes around a
 * dependency hub, so only the tiniest layouts (and exports, which may lay out) stay inline.
 */
export const INLINE_BELOW: Record<TaskName, number> = { draw: 2000, drawJson: 2000, diff: 2000, timeline: 2000, timelineJson: 2000, layout: 30, export: 30 };

export interface CpuPoolOptions {
  /**
   * TOPOLOGY_THREADS (CPUs − 1, at least 2). The threads run below the event loop
   * (nice 10), so a second one costs the loop little and lets another organization's work start
   * while one organization's runs.
   */
  threads: number;
  /** TOPOLOGY_TASKS_PER_ORG (1): tasks of one organization running at once. */
  perOrgRunning: number;
  /** TOPOLOGY_QUEUE_PER_ORG (4): tasks of one organization waiting; beyond, 429 topology_busy. */
  perOrgQueued: number;
  /** TOPOLOGY_TASK_TIMEOUT_MS (30 s): a task running longer is stopped (503 topology_timeout). */
  timeoutMs: number;
  /** TOPOLOGY_REST_PERCENT (100): an organization's queued heavy reads rest this share of the last one's duration between them (PerKeyGate). */
  restRatio: number;
}

export function cpuPoolOptionsFromEnv(env: Env = environment()): CpuPoolOptions {
  return {
    threads: setting('TOPOLOGY_THREADS', env),
    perOrgRunning: setting('TOPOLOGY_TASKS_PER_ORG', env),
    perOrgQueued: setting('TOPOLOGY_QUEUE_PER_ORG', env),
    timeoutMs: setting('TOPOLOGY_TASK_TIMEOUT_MS', env),
    restRatio: setting('TOPOLOGY_REST_PERCENT', env) / 100,
  };
}

// The threads' entry: the TypeScript file next to this one, or its bundle next to the bundle
// this module was built into (scripts/build.ts).
const THREAD_ENTRY = import.meta.url.endsWith('.ts') ? new URL('./thread.ts', import.meta.url) : new URL('./topologyThread.mjs', import.meta.url);

interface Waiting { task: TaskName; input: unknown; resolve(value: unknown): void; reject(err: unknown): void }

export class CpuPool {
  private threads?: Piscina;
  private readonly scheduler: FairScheduler<Waiting>;
  private readonly gate: PerKeyGate;

  constructor(readonly options: CpuPoolOptions) {
    this.scheduler = new FairScheduler({ slots: options.threads, perKeyRunning: options.perOrgRunning, perKeyQueued: options.perOrgQueued });
    this.gate = new PerKeyGate({ running: options.perOrgRunning, queued: options.perOrgQueued, restRatio: options.restRatio });
  }

  /**
   * A heavy read of an organization, whole (its SQL and its drawing), in the organization's turn
   * (PerKeyGate says why), paid from the organization's CPU budget and its request's client
   * address's (heavyReadBudget.ts): refused with 429 before any work when either is spent (the
   * address is read here, in the request's context: the gate may start the work from another's);
   * charged afterwards with the CPU time of the read's
   * tasks (drawing, layout, export text: inline or on a thread). Not charged: waits (for the gate,
   * a thread, the database or a busy core: on a loaded machine those would make every tenant's
   * small reads look expensive) and PostgreSQL's own work, which grows with the same rows the
   * tasks then parse.
   */
  async heavy<T>(organizationId: string, work: () => Promise<T>, budget?: HeavyReadBudget): Promise<T> {
    const payer = payerOf(organizationId);
    await budget?.admit(payer);
    const done = await this.gate.run(organizationId, !budget ? work : async () => {
      const cpu = { ms: 0 };
      try {
        return await readCpu.run(cpu, work);
      } finally {
        await budget.charge(payer, cpu.ms);
      }
    });
    if (!done) throw new AppError('topology_busy', { queued: this.gate.waiting(organizationId), retry_after: 5 });
    return done.value;
  }

  /** `work` and the CPU time of the tasks it ran (a layout job's, charged by the worker to its organization). */
  async metered<T>(work: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
    const cpu = { ms: 0 };
    const value = await readCpu.run(cpu, work);
    return { value, cpuMs: cpu.ms };
  }

  /** Whether run() does a task of this size inline (its rows are then read by the caller, service.ts rowsFor). */
  runsInline(task: TaskName, size: number): boolean {
    return size < INLINE_BELOW[task];
  }

  /** Runs a task for an organization: inline when small (`size`), else on a thread in its turn. */
  async run<K extends TaskName>(organizationId: string, task: K, input: TaskInput<K>, size: number): Promise<TaskOutput<K>> {
    const cpu = readCpu.getStore();
    if (this.runsInline(task, size)) {
      const start = threadCpuUsage();
      try {
        return await (TASKS[task] as (i: TaskInput<K>) => TaskOutput<K> | Promise<TaskOutput<K>>)(input);
      } finally {
        if (cpu) cpu.ms += threadCpuMsSince(start);
      }
    }
    return new Promise<TaskOutput<K>>((resolve, reject) => {
      const metered = (answer: Metered<TaskOutput<K>> | ThreadFailure) => {
        if ('failed' in answer) {
          reject(Object.assign(new Error(answer.failed.message), answer.failed));
          return;
        }
        if (cpu) cpu.ms += answer.cpuMs;
        resolve(answer.out);
      };
      const waiting: Waiting = { task, input, resolve: metered as (v: unknown) => void, reject };
      if (!this.scheduler.push(organizationId, waiting)) {
        reject(new AppError('topology_busy', { queued: this.scheduler.queued(organizationId), retry_after: 5 }));
        return;
      }
      this.start();
    });
  }

  /** Hands the scheduler's next tasks to free threads. */
  private start(): void {
    for (let next = this.scheduler.next(); next; next = this.scheduler.next()) {
      const { key, item } = next;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), this.options.timeoutMs);
      this.threads ??= new Piscina({ filename: THREAD_ENTRY.href, minThreads: this.options.threads, maxThreads: this.options.threads, idleTimeout: 60_000 });
      this.threads.run({ task: item.task, input: item.input }, { signal: abort.signal }).then(
        item.resolve,
        // Aborted: piscina terminated the thread (and starts another).
        (err) => item.reject(abort.signal.aborted ? new AppError('topology_timeout', { limit_seconds: Math.round(this.options.timeoutMs / 1000) }) : err),
      ).finally(() => {
        clearTimeout(timer);
        this.scheduler.done(key);
        this.start();
      });
    }
  }

  async close(): Promise<void> {
    await this.threads?.destroy();
    this.threads = undefined;
  }
}

let shared: CpuPool | undefined;
/** This process's pool (options from the environment). */
export const cpuPool = () => (shared ??= new CpuPool(cpuPoolOptionsFromEnv()));
export async function closeCpuPool(): Promise<void> {
  await shared?.close();
  shared = undefined;
}
