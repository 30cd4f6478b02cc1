// `/api/docs`: Swagger UI (swagger-ui-dist, from the npm registry) over `/api/openapi.json`, with
// "Try it out" on every operation. Everything comes from this origin: the bundle and its CSS from
// node_modules under a versioned path (cached for a year), the start script as a file of its own
// (the Content-Security-Policy allows no inline script), and no validator badge (Swagger UI would
// ask validator.swagger.io about the document).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Context, Next } from 'koa';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const START = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    displayOperationId: true,
    // Groups start closed: drawing all 140 operations at once stalled Swagger UI 5.35 in Chromium.
    docExpansion: 'none',
    defaultModelsExpandDepth: 0,
    filter: true,
    requestInterceptor: function (request) { request.credentials = 'same-origin'; return request; },
  });
});
`;

function distDir(): { dir: string; version: string } {
  const pkg = createRequire(import.meta.url).resolve('swagger-ui-dist/package.json');
  return { dir: path.dirname(pkg), version: (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { version: string }).version };
}

const page = (version: string, title: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="/api/docs/assets/${version}/favicon-32x32.png">
<link rel="stylesheet" href="/api/docs/assets/${version}/swagger-ui.css">
</head><body>
<div id="swagger-ui"></div>
<script src="/api/docs/assets/${version}/swagger-ui-bundle.js"></script>
<script src="/api/docs/start.js"></script>
</body></html>
`;

export function apiDocs(title: string) {
  let dist: { dir: string; version: string } | undefined;
  return async (ctx: Context, next: Next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !ctx.path.startsWith('/api/docs')) return next();
    dist ??= distDir();
    if (ctx.path === '/api/docs' || ctx.path === '/api/docs/') {
      ctx.type = 'html';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = page(dist.version, title);
      return;
    }
    if (ctx.path === '/api/docs/start.js') {
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = START;
      return;
    }
    const asset = /^\/api\/docs\/assets\/([\w.-]+)\/([\w.-]+)$/.exec(ctx.path);
    if (!asset || asset[1] !== dist.version || !ASSETS[asset[2]!]) return next();
    ctx.type = ASSETS[asset[2]!]!;
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.body = fs.createReadStream(path.join(dist.dir, asset[2]!));
  };
}
