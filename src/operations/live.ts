// Live refresh of the console's lists: conditional GETs. The page polls queue health, the job list,
// the workers, the fairness panel and a bulk action's progress every few seconds; each answer carries
// an ETag of what it shows, and a poll sending it back in If-None-Match while nothing changed gets
// `304 Not Modified` with no body (the query still runs: the ETag is of its answer).
import { createHash } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';

const LIVE = /^\/ops\/(jobs|queues|workers|organizations|bulk-actions|bulk-actions\/[0-9a-f-]{36}|pauses)$/;

/**
 * Fields that move with the clock, not with the jobs, are left out of the ETag: the list's default
 * window ends "now", a running attempt's and the oldest waiting job's ages grow, and so does an
 * alert's measure (its kind, threshold and job stay in: an alert appearing or clearing is a change).
 */
const CLOCK_FIELDS = new Set(['window', 'running_for_seconds', 'oldest_ready_seconds']);
const isAlert = (value: unknown): value is { kind: string; threshold: number; job_id: unknown; queue?: string } =>
  typeof value === 'object' && value !== null && 'kind' in value && 'threshold' in value && 'message' in value;

export const liveEtag = (body: unknown) =>
  `W/"${createHash('sha256')
    .update(
      JSON.stringify(body, (key, value) => {
        if (CLOCK_FIELDS.has(key)) return undefined;
        if (isAlert(value)) return { kind: value.kind, threshold: value.threshold, job_id: value.job_id, queue: value.queue };
        return value;
      }),
    )
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
    const etag = liveEtag(body);
    ctx.set('ETag', etag);
    // Compared here rather than by ctx.fresh: a fetch() sending If-None-Match also sends `Cache-Control:
    // no-cache` (the Fetch standard), which koa's freshness check takes as "never answer 304" — an
    // instruction to caches; the origin still evaluates If-None-Match (RFC 9110 §13.1.2, weak comparison).
    if (matches(ctx.get('If-None-Match'), etag)) {
      ctx.status = 304;
      ctx.body = null;
    }
  };
}

const opaque = (tag: string) => tag.trim().replace(/^W\//, '');

function matches(ifNoneMatch: string, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => opaque(tag) === opaque(etag));
}
