// text/csv request bodies, read as text for the routes that declare `consumes: ['text/csv']` (the
// host import) and no other: a JSON route sent text/csv answers 415 without reading megabytes.
// The limit is CSV_BODY_LIMIT_BYTES (a larger body is 413 payload_too_large naming it).
import type { Context, Middleware, Next } from 'koa';
import { koaBody } from 'koa-body';
import { AppError } from '../core/errors.js';
import type { RouteDef } from './pipeline.js';
import { routerPath } from './routePath.js';

/** 5,000 rows of ~800 bytes. */
export const CSV_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
export const CSV_TYPES = ['text/csv'];

export function csvBody(routes: readonly RouteDef[]): Middleware {
  const paths = new Set(routes.filter((r) => r.consumes?.some((t) => CSV_TYPES.includes(t))).map((r) => `${r.method.toUpperCase()} ${routerPath(r.path)}`));
  const parse = koaBody({ json: false, text: true, textTypes: CSV_TYPES, textLimit: CSV_BODY_LIMIT_BYTES, urlencoded: false, multipart: false, includeUnparsed: false });
  return async (ctx: Context, next: Next) => {
    if (!paths.has(`${ctx.method} ${routerPath(ctx.path)}`) || !ctx.is(CSV_TYPES)) return next();
    try {
      await parse(ctx, async () => undefined);
    } catch (err) {
      const e = err as { status?: number; type?: string };
      if (e.status === 413 || e.type === 'entity.too.large') throw new AppError('payload_too_large', { limit: CSV_BODY_LIMIT_BYTES });
      throw err;
    }
    await next();
  };
}
