// One budget for a whole run, shared by every host: a token bucket for probes started per second
// and a semaphore for sockets open at once. Scanopy 0.14 limits 500 probes/s and 200 sockets *per
// host* (so thousands of hosts scan at once); ours is global and gentler by default.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ScanBudget } from './types.js';

/** Default budget: 200 probes/s and 64 open sockets across the whole run. */
export const DEFAULT_BUDGET: ScanBudget = { probesPerSecond: 200, maxOpenSockets: 64 };

export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
};

/** Tokens refill at `rate` per second up to `burst`; one token per probe. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(readonly rate: number, readonly burst: number, private readonly clock: Clock = systemClock) {
    if (!(rate > 0) || !(burst >= 1)) throw new Error(`bad token bucket: ${rate}/s, burst ${burst}`);
    this.tokens = burst;
    this.last = clock.now();
  }

  /** Takes a token: 0 when taken, else the milliseconds until one is there (nothing taken). */
  tryTake(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.rate) / 1000);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.rate));
  }

  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const wait = this.tryTake();
      if (wait === 0) return;
      await this.clock.sleep(wait, signal);
    }
  }
}

/** At most `size` holders at once; waiters served first come, first served. */
export class Semaphore {
  private held = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!(size >= 1)) throw new Error(`bad semaphore size ${size}`);
  }

  get inUse(): number {
    return this.held;
  }

  /** Resolves with the release function once a place is free; rejects when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    const release = once(() => {
      this.held--;
      this.waiters.shift()?.();
    });
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.held++;
        resolve(release);
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      this.waiters.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) (done = true), fn();
  };
}

/**
 * Connect timeout from the round trips of answered connects (open or refused), like TCP's RTO:
 * 4 × smoothed RTT, within 150–1500 ms; 800 ms until something answered.
 */
export class RoundTrips {
  static readonly INITIAL_MS = 800;
  static readonly MIN_MS = 150;
  static readonly MAX_MS = 1500;
  private smoothed: number | undefined;

  observe(ms: number): void {
    this.smoothed = this.smoothed === undefined ? ms : this.smoothed + (ms - this.smoothed) / 8;
  }

  get smoothedMs(): number | undefined {
    return this.smoothed;
  }

  connectTimeoutMs(): number {
    if (this.smoothed === undefined) return RoundTrips.INITIAL_MS;
    return Math.min(RoundTrips.MAX_MS, Math.max(RoundTrips.MIN_MS, 4 * this.smoothed));
  }
}

/**
 * A run's abort signal has one listener per probe queued for a socket place, waiting for a token or
 * running (each removed when that probe ends: Semaphore.acquire, connectProbe, runProbe), so as many
 * as probes are in flight or queued: a chunk's liveness connects alone are hundreds. By design, not a
 * leak; Node before 21 warns past 10 (MaxListenersExceededWarning), Node 21+ sets an AbortSignal no
 * limit, and so does this.
 */
export function allowProbeListeners(signal: AbortSignal | undefined): void {
  if (signal) setMaxListeners(0, signal);
}

/** The run's shared budget: every probe goes through `probe`. */
export class ProbeBudget {
  readonly bucket: TokenBucket;
  readonly sockets: Semaphore;
  readonly roundTrips = new RoundTrips();
  probesSent = 0;

  constructor(readonly limits: ScanBudget = DEFAULT_BUDGET, clock: Clock = systemClock) {
    // A burst of 1/20 s of probes: a steady rate, not a 200-probe spike at start.
    this.bucket = new TokenBucket(limits.probesPerSecond, Math.max(1, Math.ceil(limits.probesPerSecond / 20)), clock);
    this.sockets = new Semaphore(limits.maxOpenSockets);
  }

  /** Runs `fn` (one probe: one socket) once a socket place and a token are there. */
  async probe<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.sockets.acquire(signal);
    try {
      await this.bucket.take(signal);
      this.probesSent++;
      return await fn();
    } finally {
      release();
    }
  }
}
