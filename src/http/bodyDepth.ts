// JSON bodies nest at most BODY_MAX_DEPTH levels of arrays and objects, for every route: code that
// walks a value recursively (the history writer, the log's redaction, idempotency hashing) is then
// never handed thousands of levels (a host's free-form `credential_assignments[].x` 6,000 deep was a
// RangeError, a 500). The API's own bodies nest far less (a host with its services' bindings: 5).
// Cost: ~0.3 ms on a 1 MiB report of 1,900 hosts, a tenth of its JSON.parse; it looks no deeper than the limit.
import type { Middleware } from 'koa';
import { AppError } from '../core/errors.js';

export const BODY_MAX_DEPTH = 32;

/** Whether `value` nests arrays and objects more than `limit` levels deep (it looks no deeper than that). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestsDeeperThan(item, limit - 1)) return true;
  } else {
    for (const key in value) if (nestsDeeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

/** After koa-body: 400 validation_failed when the parsed body nests deeper than BODY_MAX_DEPTH. */
export function bodyDepthLimit(limit = BODY_MAX_DEPTH): Middleware {
  return async (ctx, next) => {
    if (nestsDeeperThan(ctx.request.body, limit)) {
      throw new AppError('validation_failed', { field: 'body', reason: `the body nests arrays and objects more than ${limit} levels deep` });
    }
    await next();
  };
}
