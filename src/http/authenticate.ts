// Runs before routing on /api: resolves the caller (Bearer wins over the cookie) and spends a
// token of its rate-limit bucket. A bad credential is remembered, not thrown: public routes
// still answer, protected ones answer 401 in the pipeline, and the request is limited per IP.
import type { Context, Next } from 'koa';
import { Db } from '../core/db.js';
import { AppError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import type { Services } from '../services.js';
import { routerPath } from './routePath.js';
import { clientAddress } from './rateLimiter.js';
import { RATE_POLICIES, rateLimitHeaders, type BucketPolicy } from '../core/tokenBucket.js';
import { RefusedCredential, SESSION_COOKIE, SESSION_TTL_MS, scopeFromApiKey, scopeFromDaemonKey, scopeFromSession } from '../core/principal.js';

function sessionCookieOptions(services: Services) {
  return { httpOnly: true, sameSite: 'lax' as const, secure: services.config.secureCookies, path: '/', maxAge: SESSION_TTL_MS, overwrite: true };
}

/** What a request presents: a Bearer key (wins) or the session cookie. */
interface Presented { authorization: string; daemonId?: string; sessionId?: string }
const presentedBy = (ctx: Context): Presented =>
  ({ authorization: ctx.get('Authorization'), daemonId: ctx.get('X-Daemon-ID') || undefined, sessionId: ctx.cookies.get(SESSION_COOKIE) });

/** The scope of a presented credential (throws its auth_* error); `extend`: a session past half its life is extended. */
async function scopeOf(db: Db, c: Presented, extend: boolean): Promise<{ scope?: Scope; refreshed?: boolean }> {
  if (c.authorization) {
    const match = /^Bearer +([A-Za-z0-9_\-.]{1,200}) *$/i.exec(c.authorization);
    if (!match) throw new AppError('auth_header_malformed');
    const token = match[1]!;
    // `scp_u_` is a user key; `scp_d_`, or no known prefix (legacy), a daemon key (reference §3.1).
    return { scope: token.startsWith('scp_u_') ? await scopeFromApiKey(db, token) : await scopeFromDaemonKey(db, token, c.daemonId) };
  }
  return c.sessionId ? scopeFromSession(db, c.sessionId, { extend }) : {};
}

async function resolve(ctx: Context, services: Services): Promise<Scope | undefined> {
  const presented = presentedBy(ctx);
  const { scope, refreshed } = await scopeOf(new Db(services.orm.em.fork()), presented, true);
  if (scope?.apiKeyId) services.keyUsage.touch(scope.apiKeyId, scope.kind === 'daemon' ? 'daemon' : 'user');
  if (refreshed) setSessionCookie(ctx, services, presented.sessionId!);
  return scope;
}

/** The signed-in user of the session cookie, if any; a session past half its life is extended (cookie re-sent). */
export async function sessionScope(ctx: Context, services: Services, db: Db): Promise<Scope | undefined> {
  const { sessionId } = presentedBy(ctx);
  const { scope, refreshed } = await scopeOf(db, { authorization: '', sessionId }, true);
  if (refreshed) setSessionCookie(ctx, services, sessionId!);
  return scope;
}

/**
 * This request's credential, resolved again later: for a long-lived answer (the event stream) that
 * must stop when the session ends or the key is revoked, and see only what the caller may see now
 * (a role or network grants changed). Undefined: the credential is no longer accepted. Nothing is
 * touched (no session extended, no key usage recorded); a database error is thrown, not a refusal.
 */
export function credentialCheck(ctx: Context, services: Services): () => Promise<Scope | undefined> {
  const presented = presentedBy(ctx);
  return async () => {
    try {
      return (await scopeOf(new Db(services.orm.em.fork()), presented, false)).scope;
    } catch (err) {
      if (err instanceof AppError && err.code.startsWith('auth_')) return undefined; // expired, revoked, access disabled
      throw err;
    }
  };
}

export function setSessionCookie(ctx: Context, services: Services, sessionId: string): void {
  if (services.config.secureCookies) ctx.cookies.secure = true; // behind a TLS-terminating proxy Koa sees http
  ctx.cookies.set(SESSION_COOKIE, sessionId, sessionCookieOptions(services));
}

/** The sign-up route: limited per client address per hour as well (SIGNUP_LIMIT_PER_HOUR). */
const SIGNUP_PATH = routerPath('/api/auth/register');

/**
 * `unlimited`: the paths of the routes declared free of the limiter (decisions §4: health, version);
 * `byAddress`: those limited per client address whatever the credentials (login, register).
 */
export function authenticate(services: Services, paths: { unlimited: ReadonlySet<string>; byAddress: ReadonlySet<string> }) {
  const unlimited = new Set([...paths.unlimited].map(routerPath));
  const byAddress = new Set([...paths.byAddress].map(routerPath));
  return async (ctx: Context, next: Next) => {
    const path = routerPath(ctx.path);
    if (!path.startsWith('/api/') || unlimited.has(path)) return next();
    try {
      ctx.state.scope = await resolve(ctx, services);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      ctx.state.authError = err;
    }
    const scope = ctx.state.scope as Scope | undefined;
    const refused = ctx.state.authError instanceof RefusedCredential ? ctx.state.authError.userId : undefined;
    // A daemon's bucket is its key's: X-Daemon-ID is the caller's say-so (a fresh id per request
    // must not mean a fresh bucket).
    const [key, policy]: [string, BucketPolicy] = byAddress.has(path)
      ? [`ip:${ctx.ip}`, RATE_POLICIES.anonymous]
      : scope?.kind === 'daemon'
      ? [`daemon:${scope.apiKeyId}`, RATE_POLICIES.daemon]
      : scope || refused
        ? [`user:${scope?.userId ?? refused}`, services.config.userRateLimit] // a user's sessions and keys share one bucket
        : [`ip:${ctx.ip}`, RATE_POLICIES.anonymous];
    const decision = await services.rateLimiter.take(key, policy);
    ctx.set(rateLimitHeaders(decision));
    if (!decision.allowed) throw new AppError('rate_limit_exceeded', { retry_after: decision.retryAfterSeconds });
    // Sign-ups also spend their address's hourly bucket (SIGNUP_LIMIT_PER_HOUR): each new organization
    // brings its own buckets and heavy-read budget, so 40 a minute would multiply them.
    const perHour = services.config.signupLimitPerHour;
    if (perHour > 0 && ctx.method === 'POST' && path === SIGNUP_PATH) {
      const signup = await services.rateLimiter.takeHourly(`signup:ip:${ctx.ip}`, perHour);
      if (!signup.allowed) {
        ctx.set('Retry-After', String(signup.retryAfterSeconds));
        throw new AppError('rate_limit_exceeded', { retry_after: signup.retryAfterSeconds });
      }
    }
    // The rest of the request knows its client address: heavy reads are charged to it as well (clientAddress).
    return ctx.ip ? clientAddress.run(ctx.ip, next) : next();
  };
}
