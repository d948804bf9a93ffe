import type { Context, Next } from 'koa';
import { AppError } from '../../core/errors.ts';

export const CURRENT_API_MAJOR = 1;
/** The majors served, as the document declares them (src/http/openapi.ts). */
export const servableVersion = /^1(\.\d+)*$/;

/** `Service-Api-Version`: absent, `1` or `1.x` is served; anything else is refused (spec §9). */
export function apiVersion() {
  return async (ctx: Context, next: Next) => {
    const requested = ctx.get('service-api-version').trim();
    if (requested && !servableVersion.test(requested)) {
      throw new AppError(
        'unsupported_api_version',
        `Service-Api-Version: ${JSON.stringify(requested)} cannot be served; this deployment serves major ${CURRENT_API_MAJOR}`,
        [{ path: ['Service-Api-Version'], message: `must be ${CURRENT_API_MAJOR} or ${CURRENT_API_MAJOR}.x` }],
      );
    }
    ctx.set('Service-Api-Version', String(CURRENT_API_MAJOR));
    await next();
  };
}
