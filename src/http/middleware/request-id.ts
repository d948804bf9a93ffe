import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../../platform/logger.ts';
import { runInWorkContext } from '../../platform/work-context.ts';

const acceptable = /^[\w.:-]{1,128}$/;

/**
 * Echoes a sane incoming `X-Request-Id` (or makes one), binds it to the request's logger and runs the
 * rest of the request in its work context: every log line written meanwhile, through any logger,
 * carries it, and the jobs the request enqueues record it.
 */
export function requestId(log: Logger) {
  return async (ctx: Context, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const id = acceptable.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = log.child({ request_id: id });
    ctx.set('X-Request-Id', id);
    await runInWorkContext({ request_id: id }, next);
  };
}
