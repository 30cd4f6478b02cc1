// The queue dashboard (decisions §8): bull-board at `/admin/queues` over every queue of
// src/core/queues.ts, for operators only (src/core/operators.ts: granted explicitly; the queues are
// shared by every organization: another organization's Owner must not read or retry its jobs).
// The session is resolved as for /api (src/http/authenticate.ts `sessionScope`); API keys are not
// accepted here. Nobody granted: 404; no session or an expired one: 401; not an operator: 403 (all
// enveloped, thrown to the error envelope mounted before this middleware).
import type { Context, Next } from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { Db } from '../core/db.js';
import { AppError } from '../core/errors.js';
import { anyOperator, isOperator } from '../core/operators.js';
import { maskSecrets } from '../core/secretFields.js';
import type { Services } from '../services.js';
import { sessionScope } from './authenticate.js';
import { routerPath } from './routePath.js';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/**
 * Whether a path reaches the dashboard as a router may read it (routePath.ts), and whether it is
 * its canonical spelling: the prefix exact, no doubled or back slashes, no dot segments (escapes
 * after the prefix stay allowed: bull-board's UI escapes job ids such as `repeat:…`). Only the
 * canonical spelling is served (another one is 404), so bull-board never routes a path the guard
 * read differently.
 */
export function dashboardPath(rawPath: string): { under: boolean; canonical: boolean } {
  const under = /^\/admin\/queues(\/|$)/.test(routerPath(rawPath));
  let decoded = rawPath;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    /* judged as sent */
  }
  const canonical = under && /^\/admin\/queues(\/|$)/.test(rawPath) && !/\/\/|\\/.test(decoded) && !/(^|\/)\.\.?(\/|$)/.test(decoded);
  return { under, canonical };
}

export function queueDashboard(services: Services) {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(services.queues.byName).map((q) => {
      const adapter = new BullMQAdapter(q);
      // A job carries what it works on: a discovery-sync job, the entities a server_poll daemon
      // reported, their source metadata with the SNMP credentials of its discovery type. Credentials
      // are write-only: shown masked here, as everywhere but the daemon's work.
      adapter.setFormatter('data', (data: unknown) => maskSecrets(data));
      adapter.setFormatter('returnValue', (value: unknown) => maskSecrets(value));
      return adapter;
    }),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'netinventory queues' } },
  });
  const plugin = serverAdapter.registerPlugin();
  const notFound = (ctx: Context) => new AppError('route_not_found', { method: ctx.method, path: ctx.path });

  return async (ctx: Context, next: Next) => {
    const where = dashboardPath(ctx.path);
    if (!where.under) return next();
    const db = new Db(services.orm.em.fork());
    // Nobody granted: the dashboard does not exist. Another spelling of its paths is never served.
    if (!where.canonical || !(await anyOperator(db, services.config))) throw notFound(ctx);
    const scope = await sessionScope(ctx, services, db);
    if (!scope) throw new AppError('auth_not_authenticated');
    // The queues hold every organization's jobs: only operators, granted explicitly, see them.
    if (!(await isOperator(db, services.config, scope))) throw new AppError('auth_permission_denied', { required: 'operator' });
    // Nothing of ours goes into ctx.state: bull-board renders its page with ctx.state as EJS options,
    // and EJS warns (a deprecation line per request) about unknown keys there.
    return plugin(ctx, next);
  };
}
