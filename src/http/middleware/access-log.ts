import type { Context, Next } from 'koa';
import type { Logger } from '../../platform/logger.ts';

/** One JSON line per request, written after the error mapper has set the final status. */
export function accessLog() {
  return async (ctx: Context, next: Next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const log = ctx.state.log as Logger;
      const fields = {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
        user_id: (ctx.state.caller as { userId?: string } | undefined)?.userId,
      };
      // 503 is a refusal the client may retry (the database is restarting): a warning, so an outage is not an error storm.
      if (ctx.status === 503) log.warn(fields, 'request');
      else if (ctx.status >= 500) log.error(fields, 'request');
      else log.info(fields, 'request');
    }
  };
}
