import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import type { Registry } from 'prom-client';
import { authenticate } from '../auth/authenticate.ts';
import { AppError } from '../core/errors.ts';
import { bearerMatches, httpMetrics, routeTemplate } from '../metrics/index.ts';
import type { Deps } from '../platform/deps.ts';
import { errorMapper, requireHost } from './errors.ts';
import { accessLog } from './middleware/access-log.ts';
import { clientAddress } from './middleware/client-address.ts';
import { apiVersion } from './middleware/api-version.ts';
import { rateLimit, rateLimitByAddress } from './middleware/rate-limit.ts';
import { requestId } from './middleware/request-id.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { locations } from './location.ts';
import { routeHandler, type AnyRoute } from './route.ts';

export interface AppOptions {
  deps: Deps;
  /**
   * The operations to serve (src/app/routes.ts), grouped by how they are authenticated, and static
   * pages (the job console) served before authentication: they hold no data, the API they call does.
   */
  routes: {
    plumbing: readonly AnyRoute[];
    webhooks: readonly AnyRoute[];
    api: readonly AnyRoute[];
    pages?: readonly Koa.Middleware[];
    /** Documents the events the service sends (the OpenAPI `webhooks` section). */
    events?: (registry: OpenAPIRegistry) => void;
  };
  /** HS256 secret (undefined when tokens are verified through a JWKS). */
  jwtSecret: string | undefined;
  version: string;
  /** Mounted after the API's own operations; tests use it for failure paths (a throwing route). */
  extraRoutes?: readonly AnyRoute[];
  /**
   * Prometheus metrics (src/metrics): requests are counted into `registry`; with `token`, `GET /metrics`
   * is served here to that bearer token. Absent: nothing is measured and /metrics is a 404.
   */
  metrics?: { registry: Registry; token?: string | undefined };
}

const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

function mount(router: Router, routes: readonly AnyRoute[], deps: Deps, locate = locations(routes)): Router {
  const validateResponses = deps.config.NODE_ENV !== 'production';
  for (const route of routes) {
    // An operation nobody declared the authorization of must not be served by accident.
    if (!route.public && !route.authorize) throw new Error(`${route.operationId} (${route.method.toUpperCase()} ${route.path}) declares no authorize`);
    router[route.method](route.operationId, koaPath(route.path), routeHandler(route, deps, validateResponses, locate.get(route)));
  }
  return router;
}

/**
 * `GET /metrics` on the API port (METRICS_TOKEN without METRICS_PORT): the Prometheus text format, not
 * JSON, so it is served here rather than declared with defineRoute (whose responses are JSON); it is
 * documented in /openapi.json by buildOpenApiDocument. Its token is not a JWT: checked here, before
 * authentication, and refused with the usual Error body.
 */
function serveMetrics(registry: Registry, token: string) {
  return async (ctx: Context) => {
    if (!bearerMatches(ctx.get('authorization'), token)) {
      throw new AppError('unauthorized', 'a valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>)', [], {
        headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
      });
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
}

/**
 * The HTTP application: [metrics] → client address (TRUST_PROXY) → request id → access log → errors
 * → Host required → API version → plumbing (open) → rate limit per address (requests without a
 * valid token) → authentication → rate limit per caller → operations. No body is read before an
 * operation is routed (after authentication, for the API's): each reads its own, within its own
 * limit (./route.ts), so an unauthenticated request is refused without its body being read.
 */
export function createApp({ deps, routes, jwtSecret, version, extraRoutes = [], metrics }: AppOptions): Koa {
  // Koa's `proxy` stays off: it would believe X-Forwarded-* from any peer. ./middleware/client-address.ts sets ctx.ip as TRUST_PROXY says.
  const app = new Koa();
  const openapi = buildOpenApiDocument([...routes.plumbing, ...routes.webhooks, ...routes.api], { version, webhooks: routes.events });

  // Webhooks sit with the plumbing, before authentication: they carry a signature, not a token.
  const plumbing = mount(new Router(), [...routes.plumbing, ...routes.webhooks], deps);
  plumbing.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });
  const api = mount(new Router(), [...routes.api, ...extraRoutes], deps);
  // Not served on this port (no METRICS_TOKEN, or METRICS_PORT elsewhere): a plain 404, even without a token.
  plumbing.get(
    '/metrics',
    metrics?.token
      ? serveMetrics(metrics.registry, metrics.token)
      : () => {
          throw new AppError(
            'not_found',
            deps.config.METRICS_PORT !== undefined
              ? `metrics are not served on this port: the web process serves them on METRICS_PORT (${deps.config.METRICS_PORT || 'a free port chosen at start'})`
              : 'metrics are not served: set METRICS_TOKEN to serve GET /metrics here to that bearer token (or METRICS_PORT for a port of their own)',
          );
        },
  );

  // Errors after the response started (a streamed body): a client that hung up is routine; anything else is logged, never printed raw.
  app.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
    deps.log.error({ err: error }, 'response failed after it started');
  });
  // First, so it sees the final status of every request (errors included, mapped inside it). A
  // request refused before routing (401, 429) is still labelled with the operation it aimed at.
  if (metrics) {
    app.use(httpMetrics(metrics.registry, { routeOf: (ctx) => routeTemplate(api, ctx.method, ctx.path) ?? routeTemplate(plumbing, ctx.method, ctx.path) }));
  }
  app.use(clientAddress(deps.config.TRUST_PROXY));
  app.use(requestId(deps.log));
  app.use(accessLog());
  app.use(errorMapper(deps.log));
  app.use(requireHost());
  app.use(apiVersion());
  app.use(plumbing.routes());
  for (const page of routes.pages ?? []) app.use(page);
  // Requests authentication refuses count per client address; those it admits, per caller.
  app.use(rateLimitByAddress(deps.db, deps.config.RATE_LIMIT_PER_ADDRESS_PER_MINUTE));
  app.use(authenticate(deps.config, jwtSecret, deps.db));
  app.use(rateLimit(deps.db, deps.config.RATE_LIMIT_PER_MINUTE));
  app.use(api.routes());
  app.use(api.allowedMethods());
  return app;
}
