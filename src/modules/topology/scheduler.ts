// Which waiting task runs next on the CPU pool (pool.ts): pure bookkeeping, no threads here.
// Tasks wait in one queue per organization; a free slot goes to the organizations in turn
// (round-robin), each with at most `perKeyRunning` tasks running, so one tenant looping exports
// cannot starve another tenant's map: its next task waits behind at most one task of each other
// organization. A queue holds at most `perKeyQueued` tasks: beyond it the caller is refused.

export interface FairSchedulerOptions {
  /** Tasks running at once in all (the pool's threads). */
  slots: number;
  /** Tasks of one organization running at once. */
  perKeyRunning: number;
  /** Tasks of one organization waiting at once. */
  perKeyQueued: number;
}

export class FairScheduler<T> {
  /** Waiting tasks by organization; the Map's order is the turn order (a served key moves to the end). */
  private readonly waiting = new Map<string, T[]>();
  private readonly running = new Map<string, number>();
  private active = 0;

  constructor(private readonly o: FairSchedulerOptions) {}

  /** Queues a task; false when its organization's queue is full. */
  push(key: string, item: T): boolean {
    const queue = this.waiting.get(key) ?? [];
    if (queue.length >= this.o.perKeyQueued) return false;
    queue.push(item);
    this.waiting.set(key, queue);
    return true;
  }

  /** The next task to start (and counts it as running), or undefined when none may start now. */
  next(): { key: string; item: T } | undefined {
    if (this.active >= this.o.slots) return undefined;
    for (const [key, queue] of this.waiting) {
      if ((this.running.get(key) ?? 0) >= this.o.perKeyRunning) continue;
      const item = queue.shift()!;
      // Served: its turn goes to the back (or it leaves, with nothing left waiting).
      this.waiting.delete(key);
      if (queue.length) this.waiting.set(key, queue);
      this.running.set(key, (this.running.get(key) ?? 0) + 1);
      this.active += 1;
      return { key, item };
    }
    return undefined;
  }

  /** A task of `key` finished (or was cancelled): its slot is free. */
  done(key: string): void {
    const n = (this.running.get(key) ?? 0) - 1;
    if (n > 0) this.running.set(key, n);
    else this.running.delete(key);
    this.active -= 1;
  }

  queued(key: string): number {
    return this.waiting.get(key)?.length ?? 0;
  }
}

/**
 * One organization's heavy topology reads (a graph drawn anew, a diff, a timeline, an export) go
 * through this gate whole, SQL read included: at most `running` at once per organization, at most
 * `queued` waiting (beyond, the caller is refused). The pool bounds an organization's drawing to one
 * thread, but its reads ran side by side in PostgreSQL: two looping clients of one tenant kept both
 * cores of a 2-core server busy, and every other tenant's requests waited for CPU (bench/isolation.ts).
 * And when an organization keeps reads waiting, the next one starts only after a rest of
 * `restRatio` times the last one's duration: a tenant that queues heavy reads back to back gets at
 * most 1 / (1 + restRatio) of the time, a lone request is never delayed. Cached maps skip the gate.
 */
export class PerKeyGate {
  private readonly keys = new Map<string, { running: number; waiting: Array<() => void> }>();

  constructor(private readonly o: { running: number; queued: number; restRatio?: number; later?: (fn: () => void, ms: number) => void }) {}

  /** Runs `work` in `key`'s turn; undefined (not run) when `key` already has `queued` waiting. */
  async run<T>(key: string, work: () => Promise<T>): Promise<{ value: T } | undefined> {
    let s = this.keys.get(key);
    if (!s) this.keys.set(key, (s = { running: 0, waiting: [] }));
    if (s.running < this.o.running) s.running += 1;
    else if (s.waiting.length >= this.o.queued) return undefined;
    else await new Promise<void>((resolve) => s.waiting.push(resolve)); // woken holding the slot of the one that ended
    const started = performance.now();
    try {
      return { value: await work() };
    } finally {
      const rest = s.waiting.length ? (performance.now() - started) * (this.o.restRatio ?? 0) : 0;
      const release = () => {
        const next = s.waiting.shift();
        if (next) next();
        else if (--s.running === 0) this.keys.delete(key);
      };
      // The slot stays taken while resting (later arrivals queue); the caller is answered at once.
      if (rest > 0) (this.o.later ?? ((fn, ms) => setTimeout(fn, ms).unref()))(release, rest);
      else release();
    }
  }

  waiting(key: string): number {
    return this.keys.get(key)?.waiting.length ?? 0;
  }
}
