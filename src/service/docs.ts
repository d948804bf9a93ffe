// The API reference page at /docs: Scalar's standalone browser build, served from node_modules (no
// CDN), rendering this server's /openapi.json. Like /openapi.json it holds no data, so it is open
// and served before authentication. Only the fixed names below are served.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Context, Middleware, Next } from 'koa';
import { AppError } from '../core/errors.ts';

/** Where the page is served; `npm start` prints it beside the API's URL. */
export const DOCS_PATH = '/docs';

/**
 * Its own scripts only (Scalar's bundle compiles some templates at run time: 'unsafe-eval'), inline
 * styles (its components set them), the document from this origin; never framed. No font or script
 * from elsewhere: the page works offline.
 */
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Workspace Platform API reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="${DOCS_PATH}/standalone.js?v=VERSION"></script>
    <script src="${DOCS_PATH}/init.js?v=VERSION"></script>
  </body>
</html>
`;

// An external file, not an inline script, so the page's policy needs no 'unsafe-inline' for scripts.
// Default fonts off (they would come from Scalar's CDN), and its AI agent off (it calls Scalar's servers).
const INIT = `Scalar.createApiReference('#app', { url: '/openapi.json', withDefaultFonts: false, hideClientButton: true, telemetry: false, agent: { disabled: true } });\n`;

interface File {
  type: string;
  body: Buffer;
  etag: string;
}

const file = (type: string, body: Buffer): File => ({ type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"` });

/** Read on the first request: the bundle is 3.5 MB, which a process that never serves /docs should not hold. */
function loadFiles(): Map<string, File> {
  const bundle = file('text/javascript; charset=utf-8', readFileSync(createRequire(import.meta.url).resolve('@scalar/api-reference/browser/standalone.js')));
  const init = file('text/javascript; charset=utf-8', Buffer.from(INIT));
  const version = `${bundle.etag.slice(1, -1)}${init.etag.slice(1, 9)}`;
  return new Map([
    [DOCS_PATH, file('text/html; charset=utf-8', Buffer.from(PAGE.replaceAll('VERSION', version)))],
    [`${DOCS_PATH}/standalone.js`, bundle],
    [`${DOCS_PATH}/init.js`, init],
  ]);
}

/** Koa middleware serving `GET|HEAD /docs` and its two scripts (another name under /docs/ is a 404); every other request goes on. */
export function apiReference(): Middleware {
  let files: Map<string, File> | undefined;
  return async function serveApiReference(ctx: Context, next: Next) {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !(ctx.path === DOCS_PATH || ctx.path.startsWith(`${DOCS_PATH}/`))) return next();
    if (ctx.path === `${DOCS_PATH}/`) return ctx.redirect(DOCS_PATH);
    files ??= loadFiles();
    const served = files.get(ctx.path);
    if (!served) throw new AppError('not_found', `no API reference file ${ctx.path}`);
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    // The scripts are named with their digest (?v=…): cached for good; the page is revalidated.
    ctx.set('Cache-Control', ctx.path === DOCS_PATH ? 'no-cache' : 'public, max-age=31536000, immutable');
    ctx.etag = served.etag;
    ctx.type = served.type;
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = served.body;
  };
}
