import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { Counter, Histogram, type Registry } from 'prom-client';

/** The label of a request no route matched (scans, typos): one series, whatever the URL. */
export const UNMATCHED_ROUTE = 'unmatched';

const knownMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `/assets/:id` (the router's path) → `/assets/{id}` (the OpenAPI path every route is declared with). */
export const openApiPath = (koaPath: string) => koaPath.replace(/:(\w+)/g, '{$1}');

/**
 * The route template a router would dispatch `method path` to, without running it. Requests refused
 * before routing (401, 429, a bad Service-Api-Version) still name the operation they were aimed at,
 * so a flood of 401s on one route shows as such instead of as `unmatched`.
 */
export function routeTemplate(router: Router, method: string, path: string): string | undefined {
  const layer = router.match(path, method).pathAndMethod.find((candidate) => candidate.methods.length > 0);
  return layer ? openApiPath(String(layer.path)) : undefined;
}

export interface HttpMetricsOptions {
  /** Resolves the template of a request that did not reach a route (see `routeTemplate`). */
  routeOf?: (ctx: Context) => string | undefined;
}

/**
 * Counts and times every request by method, route TEMPLATE and final status. Mounted first, so the
 * status it sees is the one the error mapper (inside it) answered. The route is never the raw URL:
 * ids in paths would make one series per resource (unbounded cardinality). The duration ends when the
 * middleware chain returns: for a streamed body (SSE) that is when the stream started, not ended.
 */
export function httpMetrics(registry: Registry, options: HttpMetricsOptions = {}) {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request (to the start of a streamed body), by method, route template and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return async function observeRequest(ctx: Context, next: Next) {
    const started = process.hrtime.bigint();
    let failed = false;
    try {
      await next();
    } catch (error) {
      // The error mapper answers everything; whatever still escapes it becomes Koa's 500.
      failed = true;
      throw error;
    } finally {
      const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      const route = matched !== undefined ? openApiPath(String(matched)) : (options.routeOf?.(ctx) ?? UNMATCHED_ROUTE);
      const labels = { method: knownMethods.has(ctx.method) ? ctx.method : 'OTHER', route, status: String(failed ? 500 : ctx.status) };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}
