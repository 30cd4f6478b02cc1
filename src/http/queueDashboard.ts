// The queue dashboard (decisions §8): bull-board at `/admin/queues` over every queue of
// src/core/queues.ts, for a signed-in Owner or Admin only. The session is resolved exactly as
// src/http/authenticate.ts does for /api (cookie `session_id`, `scopeFromSession`, sliding expiry);
// API keys are not accepted here. No session or an expired one: 401; a lower role: 403 (both
// enveloped, thrown to the error envelope mounted before this middleware).
import type { Context, Next } from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { Db } from '../core/db.js';
import { AppError } from '../core/errors.js';
import { hasRole } from '../core/scope.js';
import type { Services } from '../core/services.js';
import { SESSION_COOKIE, scopeFromSession } from '../modules/accounts/principal.js';
import { sessionCookieOptions } from './authenticate.js';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';
const UNDER_DASHBOARD = /^\/admin\/queues(\/|$)/;

export function queueDashboard(services: Services) {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(services.queues.byName).map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'netinventory queues' } },
  });
  const plugin = serverAdapter.registerPlugin();

  return async (ctx: Context, next: Next) => {
    if (!UNDER_DASHBOARD.test(ctx.path)) return next();
    const sessionId = ctx.cookies.get(SESSION_COOKIE);
    if (!sessionId) throw new AppError('auth_not_authenticated');
    const { scope, refreshed } = await scopeFromSession(new Db(services.orm.em.fork()), sessionId);
    if (refreshed) {
      if (services.config.secureCookies) ctx.cookies.secure = true;
      ctx.cookies.set(SESSION_COOKIE, sessionId, sessionCookieOptions(services));
    }
    if (!hasRole(scope, 'Admin')) throw new AppError('auth_permission_denied', { required: 'Admin' });
    ctx.state.scope = scope;
    return plugin(ctx, next);
  };
}
