// Endpoints are declared as data (method, path, schemas, role, handler); `mountRoutes` is the one
// pipeline that runs them: authorization, validation, handler, envelope. The same declarations
// generate the OpenAPI document (src/http/openapi.ts).
import type { Context } from 'koa';
import type Router from '@koa/router';
import Joi from 'joi';
import { AppError } from '../core/errors.js';
import { checkIdempotencyKey, IDEMPOTENCY_HEADER, runIdempotent } from '../core/idempotency.js';
import { actorOf, replaceId, requireRole, type Scope } from '../core/scope.js';
import { withTimeout } from '../core/timeout.js';
import { Db } from '../core/db.js';
import { ReplicaUnavailable } from '../core/readReplica.js';
import type { Role } from '../core/scope.js';
import type { Services } from '../services.js';
import { CursorPage, FileResponse, meta, Page, sendJson, StreamResponse } from './envelope.js';
import { fromJoi } from './validation.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RequestInput<S extends Scope | undefined = Scope> {
  params: Record<string, any>;
  query: Record<string, any>;
  body: any;
  scope: S;
  db: Db;
  services: Services;
  ctx: Context;
  /**
   * Work to do once the request's writes are committed and only if it succeeded (enqueueing a job
   * about them): run before the answer is sent, its failure logged, never the request's. It gets
   * `timeoutMs` (1 s) at most.
   */
  afterCommit: (what: string, fn: () => Promise<unknown>, timeoutMs?: number) => void;
}

interface RouteBase {
  method: Method;
  /** Koa-router path, e.g. `/api/v1/tags/:id`. */
  path: string;
  summary: string;
  /** The OpenAPI operationId (what a generated client names the call): `listHosts`, `updateHost`. */
  operationId: string;
  /** OpenAPI tag (group). */
  group: string;
  params?: Joi.ObjectSchema;
  query?: Joi.ObjectSchema;
  body?: Joi.Schema;
  /** Shape of `data` for the OpenAPI document (a list route documents one item). */
  response?: Joi.Schema;
  status?: number;
  /** The route answers an unpaginated list of `response` (a history). */
  list?: boolean;
  /** The route answers a `Page` (documents meta.pagination). */
  paginated?: boolean;
  /** The route answers a `CursorPage` (documents meta.cursor). */
  cursorPaged?: boolean;
  /** The route answers a file or a stream of these media types, not the JSON envelope. */
  produces?: string[];
  /** The media types the body may have (application/json when not given). */
  consumes?: string[];
  /** Error statuses beyond the ones its declaration implies (410: an event cursor past retention). */
  errors?: number[];
  /** The largest JSON body the route takes, when more than BODY_LIMIT_BYTES (bulk creates). */
  bodyLimit?: number;
  /**
   * Where a GET reads: 'replica', the answer tolerates a little lag, so the standby of
   * DATABASE_REPLICA_URL may serve it; 'primary', never. Unset: `readsFromReplica` derives it.
   */
  reads?: 'replica' | 'primary';
  /**
   * The handler's statements are one read (Db.reads: with row security, one snapshot transaction
   * that sets the organization once): a GET that writes nothing and answers JSON, not a stream.
   */
  readsTogether?: boolean;
  /** Exempt from the rate limiter (health, version). */
  unlimited?: boolean;
  /**
   * Limited per client address with the anonymous bucket whatever credentials come along (login,
   * register): a session cookie must not lift the limit on guessing passwords.
   */
  limitByAddress?: boolean;
  /**
   * Changes something of the whole organization (users, networks, organization tags): refused to
   * an API key limited to some networks, whatever its role.
   */
  organizationWide?: boolean;
}

export interface PublicRoute extends RouteBase {
  auth: 'public';
  handler: (req: RequestInput<Scope | undefined>) => Promise<unknown>;
}

/** What a route does when a daemon calls it (Scanopy daemons post subnets and hosts to user routes). */
export interface DaemonVariant {
  status?: number;
  body?: Joi.Schema;
  query?: Joi.ObjectSchema;
  handler: (req: RequestInput<Scope>) => Promise<unknown>;
}

export interface ProtectedRoute extends RouteBase {
  /** The lowest role allowed (decisions §2). */
  auth: Role;
  /** Only a signed-in user (cookie session), not an API key: key management, org settings. */
  sessionOnly?: boolean;
  /** Daemons may call this route too, with this body and handler. */
  daemon?: DaemonVariant;
  handler: (req: RequestInput<Scope>) => Promise<unknown>;
}

/** Daemon-only routes (the daemon protocol): `Bearer scp_d_…` with `X-Daemon-ID`. */
export interface DaemonRoute extends RouteBase {
  auth: 'daemon';
  handler: (req: RequestInput<Scope>) => Promise<unknown>;
}

export type RouteDef = PublicRoute | ProtectedRoute | DaemonRoute;

export const defineRoutes = (routes: RouteDef[]) => routes;

const VALIDATION = { abortEarly: false, convert: true, errors: { wrap: { label: false } } } as const;

/** A value checked (and converted) by its schema: 400 validation_failed / validation_unknown_field otherwise. */
export function validate(schema: Joi.Schema | undefined, value: unknown, where: 'body' | 'query' | 'params') {
  if (!schema) return value;
  const { error, value: out } = schema.validate(value, VALIDATION);
  // A schema may answer its own error (a bulk body names each failing item's index: src/http/bulkCreate.ts).
  if (error) throw (error as unknown) instanceof AppError ? error : fromJoi(error, where, schema);
  return out;
}

/** The credential check of one route: 401 before 403, and both before any validation. */
export function authorize(route: RouteDef, ctx: Context): Scope | undefined {
  if (route.auth === 'public') return ctx.state.scope as Scope | undefined;
  if (ctx.state.authError) throw ctx.state.authError as AppError;
  const scope = ctx.state.scope as Scope | undefined;
  if (!scope) throw new AppError('auth_not_authenticated');
  if (route.auth === 'daemon') {
    if (scope.kind !== 'daemon') throw new AppError('auth_daemon_required');
    return scope;
  }
  if (scope.kind === 'daemon') {
    if (!route.daemon) throw new AppError('auth_user_context_required');
    return scope;
  }
  if (route.sessionOnly && scope.kind !== 'session') {
    throw new AppError('auth_permission_denied', { required: 'session' }, 'This endpoint requires a signed-in user session');
  }
  requireRole(scope, route.auth);
  // A key limited to some networks acts only on objects of those networks: anything that reaches
  // beyond them (a user who sees other networks, a network, a tag on every network) is out of its reach.
  if (route.organizationWide && scope.keyLimitedToNetworks) throw new AppError('auth_key_network_scoped');
  return scope;
}

export function hasBody(ctx: Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
}

/**
 * After-commit work gets a second at most (BullMQ waits for a Redis that is down), or what it asked
 * for (a revocation waits for every API process: events/revocations.ts): logged, never thrown.
 */
async function runAfterCommit(services: Services, what: string, fn: () => Promise<unknown>, timeoutMs = 1000): Promise<void> {
  await withTimeout(fn(), timeoutMs, `no answer within ${timeoutMs} ms`)
    .catch((err: Error) => services.logger.warn({ err: err.message }, `after commit: ${what} failed`));
}

/**
 * Whether a route writes: every method but GET (POST, PUT, PATCH, DELETE, and any added to `Method`).
 * The pipeline's one answer: a write is never served by the read replica, and once it succeeds its
 * caller's later replica-eligible reads wait for the standby to replay it (read-your-writes).
 */
export const isWriteRoute = (route: Pick<RouteDef, 'method'>): boolean => route.method !== 'get';

/**
 * Whether a request's reads may go to the read replica: a GET declared `reads: 'replica'`, or, unless
 * declared `'primary'`, a history (`…/history`), an export (`…/export…`) or a read as of an instant
 * (`at` given). Only its reads: whatever the handler writes still goes to the primary (ReplicaDb).
 */
export function readsFromReplica(route: RouteDef, query: Record<string, unknown>): boolean {
  if (isWriteRoute(route) || route.reads === 'primary' || route.produces?.includes('text/event-stream')) return false;
  return route.reads === 'replica' || /\/history$/.test(route.path) || /\/export(\/|$)/.test(route.path) || query.at !== undefined;
}

export function mountRoutes(router: Router, routes: RouteDef[], services: Services): void {
  for (const route of routes) {
    router[route.method](route.path, async (ctx: Context) => {
      const scope = authorize(route, ctx);
      // A daemon on a user route runs the route's daemon variant (its own body and handler).
      const run = scope?.kind === 'daemon' && route.auth !== 'daemon' && route.auth !== 'public' && route.daemon
        ? { ...route, ...route.daemon }
        : route;
      if (run.body && hasBody(ctx) && !ctx.is(...(route.consumes ?? ['application/json']))) {
        throw route.consumes
          ? new AppError('unsupported_media_type', { accepted: route.consumes.join(', ') }, `Request body must be ${route.consumes.join(' or ')}`)
          : new AppError('unsupported_media_type');
      }
      // A daemon speaking with an alias (its own id was another organization's): its id is its
      // row's id inside, and its own id again in every answer.
      const alias = scope?.kind === 'daemon' ? scope.daemonAlias : undefined;
      const inward = <T>(v: T): T => (alias ? replaceId(v, alias.external, alias.internal) : v);
      const rawBody = inward((ctx.request as { body?: unknown }).body);
      const body = run.body ? validate(run.body.required(), hasBody(ctx) ? rawBody : undefined, 'body') : undefined;
      const afterCommit: Array<[string, () => Promise<unknown>, number | undefined]> = [];
      // With row security on, the request's statements are held to its organization by the database too.
      const primary = new Db(services.orm.em.fork(), { actor: actorOf(scope), organizationId: scope?.organizationId });
      const input = {
        afterCommit: (what: string, fn: () => Promise<unknown>, timeoutMs?: number) => { afterCommit.push([what, fn, timeoutMs]); },
        params: validate(route.params, inward({ ...ctx.params }), 'params') as Record<string, any>,
        query: validate(run.query ?? Joi.object({}), { ...ctx.query }, 'query') as Record<string, any>,
        body,
        scope,
        db: primary,
        services,
        ctx,
      };
      const replica = services.readReplica;
      if (replica && readsFromReplica(route, input.query)) input.db = await replica.dbFor(scope, primary);
      const handle = run.handler as (req: typeof input) => Promise<unknown>;
      // A user's create (a 201 route) may carry an Idempotency-Key: then it runs at most once.
      const key = run.status === 201 && scope && scope.kind !== 'daemon' ? checkIdempotencyKey(ctx.get(IDEMPOTENCY_HEADER)) : undefined;
      let result: unknown;
      if (key) {
        const once = await runIdempotent(input.db, scope!, key, { method: ctx.method, path: ctx.path, body }, run.status!, (tx) => handle({ ...input, db: tx }));
        if (once.replayed) {
          ctx.set('Idempotent-Replayed', 'true');
          afterCommit.length = 0; // the first request did that already
        }
        result = once.data;
      } else {
        const read = route.readsTogether && run === route && !isWriteRoute(route)
          ? (req: typeof input) => req.db.reads((db) => handle({ ...req, db }))
          : handle;
        result = await read(input).catch((err: unknown) => {
          // The standby failed, not the request: the same read again, on the primary.
          if (!(err instanceof ReplicaUnavailable) || input.db === primary) throw err;
          replica!.failed(err);
          return read({ ...input, db: primary });
        });
      }
      // A write committed (any write method, not POST alone): this principal's replica-eligible reads
      // now wait for the standby to replay it.
      if (replica && scope && isWriteRoute(route)) await replica.recordWrite(scope, primary);
      for (const [what, fn, timeoutMs] of afterCommit) await runAfterCommit(services, what, fn, timeoutMs);
      if (alias) {
        result = result instanceof Page
          ? new Page(replaceId(result.items, alias.internal, alias.external), result.pagination)
          : replaceId(result, alias.internal, alias.external);
      }
      ctx.status = run.status ?? 200;
      if (result instanceof FileResponse) {
        ctx.attachment(result.filename, { type: 'attachment' });
        ctx.type = result.contentType; // after attachment(), which guesses a type from the name
        // A stream that fails half-way (the database went away) cannot change its status: cut it, so
        // the client sees a truncated download rather than waiting.
        if (typeof result.body !== 'string' && !Buffer.isBuffer(result.body)) result.body.once('error', () => ctx.res.destroy());
        ctx.body = result.body;
        // A file of known length goes as stored, not compressed on the fly (an agent build is 120 MB
        // of which compression would cost the API seconds of CPU per download), with its length.
        if (result.length !== undefined) {
          ctx.length = result.length;
          ctx.compress = false;
        }
        return;
      }
      if (result instanceof StreamResponse) {
        ctx.compress = false; // a compressor would hold events back until its buffer fills
        ctx.req.socket.setTimeout(0);
        ctx.req.socket.setNoDelay(true);
        ctx.set({ 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
        ctx.type = result.contentType;
        ctx.req.once('close', result.onClose);
        ctx.body = result.body;
        return;
      }
      sendJson(ctx,
        result instanceof Page
          ? { success: true, data: result.items, meta: meta(services.config, { pagination: result.pagination }) }
          : result instanceof CursorPage
            ? { success: true, data: result.items, meta: meta(services.config, { cursor: result.cursor }) }
            : { success: true, data: result ?? null, meta: meta(services.config) });
    });
  }
}
