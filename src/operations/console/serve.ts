// The operator job console: a static page (HTML, one ES module, one style sheet) that calls the /ops
// JSON API with the operator's bearer token. The page carries no data, so it is served before
// authentication, like /openapi.json. Only the three files below are served: a fixed map of names,
// never a path joined onto a directory.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Context, Middleware, Next } from 'koa';
import { AppError } from '../../core/errors.ts';

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

/** The page's policy: its own script and styles only, API calls to this origin only, never framed. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const read = (name: string) => readFileSync(new URL(`./${name}`, import.meta.url));
const digest = (body: Buffer) => createHash('sha256').update(body).digest('base64url').slice(0, 16);
const asset = (type: string, body: Buffer): Asset => ({ type, body, etag: `"${digest(body)}"` });

function loadAssets(): { page: Asset; files: Map<string, Asset> } {
  const files = new Map<string, Asset>([
    ['console.js', asset('text/javascript; charset=utf-8', read('console.js'))],
    ['console.css', asset('text/css; charset=utf-8', read('console.css'))],
  ]);
  // The page names each asset with its digest (?v=…), so an asset may be cached for good and a new
  // release is picked up by the next page load (the page itself is revalidated every time).
  let html = read('index.html').toString('utf8');
  for (const [name, file] of files) html = html.replaceAll(`/ops/assets/${name}"`, `/ops/assets/${name}?v=${file.etag.slice(1, -1)}"`);
  return { page: asset('text/html; charset=utf-8', Buffer.from(html)), files };
}

/**
 * Koa middleware serving `GET|HEAD /ops` (the page) and `/ops/assets/console.js|console.css` (any
 * other name under /ops/assets/ is a 404); everything else goes to the next middleware (the /ops/*
 * API among it).
 */
export function opsConsole(): Middleware {
  const { page, files } = loadAssets();
  return async function serveOpsConsole(ctx: Context, next: Next) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/ops/') return ctx.redirect('/ops');
    let file: Asset | undefined;
    let immutable = false;
    if (ctx.path === '/ops') file = page;
    else if (ctx.path.startsWith('/ops/assets/')) {
      file = files.get(ctx.path.slice('/ops/assets/'.length));
      if (!file) throw new AppError('not_found', `no console asset ${ctx.path}`);
      immutable = ctx.query.v === file.etag.slice(1, -1);
    } else return next();

    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
    ctx.set('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.etag = file.etag;
    ctx.type = file.type;
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = file.body;
  };
}
