// The JSON body parser (koa-body), with the size limit of the route a request is for: 1 MiB
// (BODY_LIMIT_BYTES) unless the route declares a larger `bodyLimit` (bulk creates), so a large
// limit is given where it is needed, not to every route.
import type { Context, Middleware, Next } from 'koa';
import { koaBody } from 'koa-body';
import { AppError } from '../core/errors.js';
import { BODY_LIMIT_BYTES } from './envelope.js';
import type { RouteDef } from './pipeline.js';
import { routerPath } from './routePath.js';

// koa-body's JSON types and the PATCH one (RFC 7396); each route then checks which types it takes.
const JSON_TYPES = ['application/json', 'application/merge-patch+json', 'application/json-patch+json', 'application/vnd.api+json', 'application/csp-report', 'application/reports+json'];

function parser(limit: number): Middleware {
  const parse = koaBody({ json: true, jsonTypes: JSON_TYPES, jsonLimit: limit, jsonStrict: true, text: false, urlencoded: false, multipart: false, includeUnparsed: false });
  return async (ctx: Context, next: Next) => {
    let parsed = false;
    try {
      await parse(ctx, async () => { parsed = true; });
    } catch (err) {
      // The limit in the answer is this route's, not the default one.
      const e = err as { status?: number; type?: string };
      if (e.status === 413 || e.type === 'entity.too.large') throw new AppError('payload_too_large', { limit });
      throw err;
    }
    if (parsed) await next();
  };
}

/** One parser per declared limit, chosen by the request's path (in the router's spelling). */
export function jsonBody(routes: readonly RouteDef[]): Middleware {
  const standard = parser(BODY_LIMIT_BYTES);
  const larger = new Map<string, Middleware>();
  for (const r of routes) if (r.bodyLimit && r.bodyLimit > BODY_LIMIT_BYTES) larger.set(routerPath(r.path), parser(r.bodyLimit));
  return (ctx, next) => (larger.get(routerPath(ctx.path)) ?? standard)(ctx, next);
}
