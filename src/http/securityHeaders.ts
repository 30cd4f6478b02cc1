// Browser-facing defaults, for every response of the app, before the web application
// ships:
// - a request that changes something and comes from another site's page (Origin, or Sec-Fetch-Site
//   when there is no Origin) is refused, unless it carries its own credential in Authorization: a
//   cross-site form can ride on the session cookie, never on a Bearer key. Clients that are not
//   browsers send neither header and are not affected. Login and register are covered too (a
//   cross-site form must not sign a victim into someone else's account);
// - nosniff and no referrer everywhere, no-store on anything answered to a credential, and on HTML
//   pages a strict Content-Security-Policy that also forbids framing (and X-Frame-Options for old
//   browsers).
import type { Context, Next } from 'koa';
import { AppError } from '../core/errors.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The policy of an HTML page, framed by `frameAncestors` (only a share link's page names others than 'none'). */
export const contentSecurityPolicy = (frameAncestors = "'none'") => [
  "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data: blob:", "font-src 'self'",
  "connect-src 'self'", "object-src 'none'", "base-uri 'self'", "form-action 'self'", `frame-ancestors ${frameAncestors}`,
].join('; ');
export const CONTENT_SECURITY_POLICY = contentSecurityPolicy();

/**
 * Set by a page that may be framed (the share link page, webApp.ts): its frame-ancestors sources.
 * Such a page gets no X-Frame-Options, which knows only DENY and SAMEORIGIN and would override them.
 */
export const FRAME_ANCESTORS_STATE = 'frameAncestors';

/** Whether a browser says this request comes from a page of another site. */
function crossSite(ctx: Context): string | undefined {
  const origin = ctx.get('Origin');
  // Our own origin, from the request line and Host (Koa 3's ctx.origin is not that).
  if (origin) return origin === `${ctx.protocol}://${ctx.host}` ? undefined : origin;
  const site = ctx.get('Sec-Fetch-Site');
  return site && site !== 'same-origin' && site !== 'none' ? `Sec-Fetch-Site: ${site}` : undefined;
}

export function securityHeaders() {
  return async (ctx: Context, next: Next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    if (ctx.get('Authorization') || ctx.get('Cookie')) ctx.set('Cache-Control', 'no-store');
    if (!SAFE_METHODS.has(ctx.method) && !ctx.get('Authorization')) {
      const from = crossSite(ctx);
      if (from) throw new AppError('csrf_origin_mismatch', { origin: from });
    }
    await next();
    if (ctx.response.is('html')) {
      const framedBy = ctx.state[FRAME_ANCESTORS_STATE] as string | undefined;
      ctx.set('Content-Security-Policy', framedBy ? contentSecurityPolicy(framedBy) : CONTENT_SECURITY_POLICY);
      if (!framedBy || framedBy === "'none'") ctx.set('X-Frame-Options', 'DENY');
    }
  };
}
