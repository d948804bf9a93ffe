// Live refresh of the console's lists: conditional GETs. The page polls queue health, the job list,
// the workers, the fairness panel and a bulk action's progress every few seconds; each answer carries
// an ETag of what it shows, and a poll sending it back in If-None-Match while nothing changed gets
// `304 Not Modified` with no body (the query still runs: the ETag is of its answer).
import { createHash } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';

const LIVE = /^\/ops\/(jobs|queues|workers|organizations|bulk-actions|bulk-actions\/[0-9a-f-]{36}|pauses)$/;

/** Fields derived from the clock, not from the jobs: the list's default window ends "now", a running attempt's age grows. */
const CLOCK_FIELDS = new Set(['window', 'running_for_seconds']);

export const liveEtag = (body: unknown) =>
  `W/"${createHash('sha256')
    .update(JSON.stringify(body, (key, value) => (CLOCK_FIELDS.has(key) ? undefined : value)))
    .digest('base64url')
    .slice(0, 22)}"`;

/** Koa middleware around the /ops API: ETag on the live reads' 200 answers, 304 when If-None-Match matches. */
export function opsLiveRefresh(): Middleware {
  return async function conditionalGet(ctx: Context, next: Next) {
    await next();
    if (ctx.method !== 'GET' || ctx.status !== 200 || !LIVE.test(ctx.path)) return;
    const body: unknown = ctx.body;
    if (body === null || typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function') return;
    ctx.set('Cache-Control', 'private, no-cache');
    ctx.etag = liveEtag(body);
    if (ctx.fresh) {
      ctx.status = 304;
      ctx.body = null;
    }
  };
}
