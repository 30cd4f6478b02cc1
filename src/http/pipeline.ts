// Endpoints are declared as data (method, path, schemas, role, handler); `mountRoutes` is the one
// pipeline that runs them: authorization, validation, handler, envelope. The same declarations
// generate the OpenAPI document (src/http/openapi.ts).
import type { Context } from 'koa';
import type Router from '@koa/router';
import Joi from 'joi';
import { AppError } from '../core/errors.js';
import { requireRole, type Scope } from '../core/scope.js';
import { Db } from '../core/db.js';
import type { Role } from '../modules/accounts/entities.js';
import type { Services } from '../core/services.js';
import { fromJoi, meta, Page } from './envelope.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RequestInput<S extends Scope | undefined = Scope> {
  params: Record<string, any>;
  query: Record<string, any>;
  body: any;
  scope: S;
  db: Db;
  services: Services;
  ctx: Context;
}

interface RouteBase {
  method: Method;
  /** Koa-router path, e.g. `/api/v1/tags/:id`. */
  path: string;
  summary: string;
  /** OpenAPI tag (group). */
  group: string;
  params?: Joi.ObjectSchema;
  query?: Joi.ObjectSchema;
  body?: Joi.Schema;
  /** Shape of `data` for the OpenAPI document (a list route documents one item). */
  response?: Joi.Schema;
  status?: number;
  /** The route answers a `Page` (documents meta.pagination). */
  paginated?: boolean;
  /** Exempt from the rate limiter (health, version). */
  unlimited?: boolean;
}

export interface PublicRoute extends RouteBase {
  auth: 'public';
  handler: (req: RequestInput<Scope | undefined>) => Promise<unknown>;
}

export interface ProtectedRoute extends RouteBase {
  /** The lowest role allowed (decisions §2). */
  auth: Role;
  /** Only a signed-in user (cookie session), not an API key: key management, org settings. */
  sessionOnly?: boolean;
  handler: (req: RequestInput<Scope>) => Promise<unknown>;
}

export type RouteDef = PublicRoute | ProtectedRoute;

export const defineRoutes = (routes: RouteDef[]) => routes;

const VALIDATION = { abortEarly: true, convert: true, errors: { wrap: { label: false } } } as const;

function validate(schema: Joi.Schema | undefined, value: unknown, where: 'body' | 'query' | 'params') {
  if (!schema) return value;
  const { error, value: out } = schema.validate(value, VALIDATION);
  if (error) throw fromJoi(error, where);
  return out;
}

/** The credential check of one route: 401 before 403, and both before any validation. */
export function authorize(route: RouteDef, ctx: Context): Scope | undefined {
  if (route.auth === 'public') return ctx.state.scope as Scope | undefined;
  if (ctx.state.authError) throw ctx.state.authError as AppError;
  const scope = ctx.state.scope as Scope | undefined;
  if (!scope) throw new AppError('auth_not_authenticated');
  if (route.sessionOnly && scope.kind !== 'session') {
    throw new AppError('auth_permission_denied', { required: 'session' }, 'This endpoint requires a signed-in user session');
  }
  requireRole(scope, route.auth);
  return scope;
}

export function hasBody(ctx: Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
}

export function mountRoutes(router: Router, routes: RouteDef[], services: Services): void {
  for (const route of routes) {
    router[route.method](route.path, async (ctx: Context) => {
      const scope = authorize(route, ctx);
      if (route.body && hasBody(ctx) && !ctx.is('application/json')) throw new AppError('unsupported_media_type');
      const rawBody = (ctx.request as { body?: unknown }).body;
      const body = route.body ? validate(route.body.required(), hasBody(ctx) ? rawBody : undefined, 'body') : undefined;
      const input = {
        params: validate(route.params, ctx.params, 'params') as Record<string, any>,
        query: validate(route.query ?? Joi.object({}), { ...ctx.query }, 'query') as Record<string, any>,
        body,
        scope,
        db: new Db(services.orm.em.fork()),
        services,
        ctx,
      };
      const result = await (route.handler as (req: typeof input) => Promise<unknown>)(input);
      ctx.status = route.status ?? 200;
      ctx.body =
        result instanceof Page
          ? { success: true, data: result.items, meta: meta(services.config, { pagination: result.pagination }) }
          : { success: true, data: result ?? null, meta: meta(services.config) };
    });
  }
}
