// The queue dashboard (decisions §8): bull-board at `/admin/queues` over every queue of
// src/core/queues.ts, for a signed-in Owner or Admin only, of the operator organization (the queues
// are shared by every organization: another organization's Owner must not read or retry its jobs).
// The session is resolved as for /api (src/http/authenticate.ts `sessionScope`); API keys are not
// accepted here. No session or an expired one: 401; a lower role or another organization: 403 (both
// enveloped, thrown to the error envelope mounted before this middleware).
import type { Context, Next } from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { Db } from '../core/db.js';
import { AppError } from '../core/errors.js';
import { hasRole } from '../core/scope.js';
import type { Services } from '../core/services.js';
import { sessionScope } from './authenticate.js';

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
    const db = new Db(services.orm.em.fork());
    const scope = await sessionScope(ctx, services, db);
    if (!scope) throw new AppError('auth_not_authenticated');
    if (!hasRole(scope, 'Admin')) throw new AppError('auth_permission_denied', { required: 'Admin' });
    // The queues hold every organization's jobs: only the operator's Owners and Admins see them.
    if (scope.organizationId !== (await operatorOrganizationId(db, services))) {
      throw new AppError('auth_permission_denied', { required: 'operator organization' });
    }
    // Nothing of ours goes into ctx.state: bull-board renders its page with ctx.state as EJS options,
    // and EJS warns (a deprecation line per request) about unknown keys there.
    return plugin(ctx, next);
  };
}

/** OPERATOR_ORGANIZATION_ID, else the oldest organization (the one that set the instance up). */
async function operatorOrganizationId(db: Db, services: Services): Promise<string | undefined> {
  if (services.config.operatorOrganizationId) return services.config.operatorOrganizationId;
  return (await db.one<{ id: string }>(`select id from organizations order by created_at, id limit 1`))?.id;
}
