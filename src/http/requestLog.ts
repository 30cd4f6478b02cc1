// X-Request-Id on every response and one JSON log line per request.
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../core/logger.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A share link's token is its whole credential and travels in the path (/share/<token>, /api/share/<token>/…): never logged. */
const withoutShareToken = (path: string) => path.replace(/(\/share\/)[^/]+/i, '$1…');

export function requestLog(logger: Logger, onFinished?: (ctx: Context, seconds: number) => void) {
  return async (ctx: Context, next: Next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('X-Request-Id');
    const requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      ctx.state.log.info(
        { method: ctx.method, path: withoutShareToken(ctx.path), status: ctx.status, duration_ms: Math.round(seconds * 1e4) / 10 },
        'request',
      );
      onFinished?.(ctx, seconds);
    }
  };
}
