// The web application, built from web/ by scripts/build.ts into dist/web/ and served by
// the API process. Assets carry their content hash in their names, so they are cached for a year;
// every page of the application answers index.html (revalidated each time), which names them. The
// page is HTML, so securityHeaders() gives it the Content-Security-Policy (no inline script, nothing
// from another origin).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Next } from 'koa';
import { FRAME_ANCESTORS_STATE } from './securityHeaders.js';

/** The application's own paths (client-side routes); everything else is the API's. */
const PAGES = /^\/(?:$|signin$|register$|networks(?:\/|$)|hosts(?:\/|$)|daemons$|changes$|api-keys$|service-definitions$|webhooks$|share\/[^/]+$)/;
/** A share link's page (/share/<token>): the read-only map, which may be framed (SHARE_FRAME_ANCESTORS). */
const SHARE_PAGE = /^\/share\/[^/]+$/;
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.map': 'application/json' };

/** dist/web beside this module (bundled: dist/server.mjs) or two levels up (src/http/webApp.ts run by tsx). */
function webDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return [path.join(here, 'web'), path.join(here, '..', '..', 'dist', 'web')].find((d) => fs.existsSync(path.join(d, 'index.html')));
}

/** `shareFrameAncestors`: who may frame a share link's page (config SHARE_FRAME_ANCESTORS); every other page: nobody. */
export function webApp(opts: { shareFrameAncestors?: string } = {}) {
  let dir: string | undefined;
  return async (ctx: Context, next: Next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const asset = /^\/assets\/([\w.-]+)$/.exec(ctx.path);
    if (!asset && !PAGES.test(ctx.path)) return next();
    dir ??= webDir();
    if (!dir) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The web application is not built: run `npm run build` (npm start and npm test build it).';
      return;
    }
    if (asset) {
      const file = path.join(dir, 'assets', asset[1]!);
      const type = TYPES[path.extname(file)];
      if (!type || !fs.existsSync(file)) return next();
      ctx.type = type;
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.body = fs.createReadStream(file);
      return;
    }
    // Read each time (a few hundred bytes): a rebuild takes effect without a restart.
    ctx.type = 'html';
    ctx.set('Cache-Control', 'no-cache');
    if (SHARE_PAGE.test(ctx.path)) {
      ctx.state[FRAME_ANCESTORS_STATE] = opts.shareFrameAncestors ?? "'none'";
      ctx.set('X-Robots-Tag', 'noindex, nofollow'); // a link given to some people, not a page for search engines
    }
    ctx.body = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
  };
}
