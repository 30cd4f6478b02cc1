// The small runs of the benchmarks, so that they cannot rot unnoticed: BENCH_SMALL=1 makes
// every bench run at a size of seconds (a few hundred hosts, short windows, one round), assert no
// timing, check that it reaches its end and that its baseline and the service agree, and exit
// non-zero otherwise. `npm run bench:small` (bench/runSmall.ts) runs them all, as .ci/run does.
// A bench's own size variable (BENCH_HOSTS, BENCH_INGEST_HOSTS, …) still wins over the small size.
// Small runs write their results outside bench/results/ (BENCH_RESULTS_DIR, else a temporary
// directory), so they never overwrite or add to the full runs' files and bench/README.md.
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RedisClient } from '../src/core/redis.js';
import type { RateDecision, BucketPolicy } from '../src/core/tokenBucket.js';
import { RateLimiter } from '../src/http/rateLimiter.js';

/** BENCH_SMALL=1: this is a small run. */
export const SMALL = process.env.BENCH_SMALL === '1';

/** A size or count: the variable `name` when set, else `small` in a small run, else `full`. */
export function sized(name: string, full: number, small: number): number {
  const set = process.env[name];
  if (set !== undefined && set !== '') {
    const n = Number(set);
    if (!Number.isFinite(n)) throw new Error(`${name} must be a number (got '${set}')`);
    return n;
  }
  return SMALL ? small : full;
}

/** A text setting: the variable `name` when set, else `small` in a small run, else `full`. */
export function sizedText(name: string, full: string, small: string): string {
  const set = process.env[name];
  return set !== undefined && set !== '' ? set : SMALL ? small : full;
}

let smallDir: string | undefined;
/**
 * Where a bench writes its results (as a directory URL ending in '/'): bench/results/ for a full run;
 * for a small run BENCH_RESULTS_DIR (bench/runSmall.ts sets one for all of them), else a new
 * temporary directory. Created if missing.
 */
export function resultsDir(): URL {
  let dir: string;
  if (!SMALL) dir = path.join(path.dirname(new URL(import.meta.url).pathname), 'results');
  else dir = process.env.BENCH_RESULTS_DIR || (smallDir ??= mkdtempSync(path.join(os.tmpdir(), 'netinv-bench-small-')));
  mkdirSync(dir, { recursive: true });
  return pathToFileURL(`${dir}/`);
}

/** A file in resultsDir(). */
export const resultsFile = (name: string): URL => new URL(name, resultsDir());

/**
 * The baseline and the service must agree (or a bench's own invariant hold): throws, naming what
 * differs, when not. Full runs check it too: a bench whose baseline answers something else
 * measures nothing.
 */
export function mustAgree(what: string, agree: boolean, detail = ''): void {
  if (!agree) throw new Error(`baseline and service disagree: ${what}${detail ? `: ${detail}` : ''}`);
}

/**
 * The request rate limiter with every decision allowed, for benches that time requests in one
 * process (the user bucket would answer 429 within a second of load). A subclass of the real one,
 * so that a method added to RateLimiter later is inherited (and works) rather than missing from a
 * hand-written stub, which is how the benches broke when `takeHourly` (the sign-up limit) came.
 */
export class AllowAllRateLimiter extends RateLimiter {
  constructor(redis: RedisClient) {
    super(redis);
  }

  override get degraded(): boolean {
    return false;
  }

  override async take(_key: string, policy: BucketPolicy): Promise<RateDecision> {
    return { allowed: true, remaining: policy.capacity, resetSeconds: 0, retryAfterSeconds: 0, limit: policy.refillPerMinute };
  }

  override async takeHourly(_key: string, _perHour: number): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    return { allowed: true, retryAfterSeconds: 0 };
  }
}
