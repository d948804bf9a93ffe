import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodObject, ZodType } from 'zod';
import { errorCodes, type ErrorCode } from '../core/errors.ts';
import { z } from '../core/zod.ts';
import { type AnyRoute, bodyLimitOf, headersOf } from './route.ts';
import { compactAuthorization, describeAuthorization } from './authorization-text.ts';
import { publishRequestBodiesAsInput } from './openapi-input.ts';
import { locations } from './location.ts';
import { headersFor, registerHeaders } from './openapi-headers.ts';
import { servableVersion } from './middleware/api-version.ts';

export const errorBodySchema = z
  .object({
    code: z.enum(errorCodes as [ErrorCode, ...ErrorCode[]]),
    message: z.string().openapi({ description: 'Names the field and the rule broken.' }),
    data: z.object({
      issues: z.array(z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })),
    }),
  })
  .openapi('Error');

const errorDescriptions: Record<number, string> = {
  400: 'Malformed request, failed validation, or unsupported Service-Api-Version',
  401: 'Missing bearer token, or a token that failed verification',
  402: 'The workspace has no credits left, or the caller is over a spending limit',
  403: 'The caller can read the resource but lacks the permission for this operation',
  404: 'No such resource, or the caller cannot read it',
  405: 'Method not allowed',
  409: "The resource's current state forbids the request",
  413: 'Request body too large (an operation without a body reads at most 1 KiB)',
  415: 'Request body is not JSON, or in a Content-Encoding the server does not read',
  422: 'Idempotency-Key reused with another request body, or (metered reads) the provider refused the input (`upstream_refused`)',
  429: 'Rate limit used up; see Retry-After',
  431: 'Request headers too large (at most 16 KiB in all)',
  500: 'Failure on the service side',
  502: 'The provider failed or answered something malformed (`upstream_failed`); nothing was charged',
  503: 'A dependency (database, queue) is unreachable',
  504: 'The provider did not answer in time (`upstream_timeout`); nothing was charged',
};

const tagDescriptions: Record<string, string> = {
  Service: 'Health, readiness and this document',
  Me: 'The caller: who the token is, their organizations, role, permissions and balances',
  Organizations: 'Workspaces (organizations), their settings and activity',
  Members: 'Members of an organization',
  Roles: 'Organization roles and their permissions',
  Invitations: 'Invitations to join an organization',
  Credits: 'Credits: balance, grants, the immutable ledger, chat-run holds and member spending limits',
  Activity: 'The activity feed: every change to an organization, recorded with it',
  Events:
    'Typed events of what ended asynchronously (imports, generations, chat and scheduled runs, credits, members, billing): listed, streamed live, and the `webhooks` section',
  'Alert policy': 'Credit-balance alerts of an organization',
  Access: 'General access, per-user grants and inherited access of assets, chats, canvases, projects, scheduled tasks and skills',
  Assets:
    'Images, video, audio, documents, text, transcripts and 3D files: create, link import (SSRF-guarded worker download), enrichment, prompt extraction, soft delete and restore',
  Projects: 'Projects: groupings of assets, canvases, conversations and skills, with archive and restore',
  Canvases: 'Canvases',
  Conversations: 'Chat threads: create, rename, soft delete and restore, list with filters, projects and access',
  Skills: 'Custom skills with their version history',
  Library: 'Everything the caller can read in an organization, across resource types',
  Social: 'Social data reads (networks net1–net7): one billed operation per lookup, each with its own input and result schema, a quote route and the catalog',
  'Scheduled tasks': 'Prompts run by a chat model on a cron schedule in a timezone',
  Operations:
    'The job console: jobs with their attempt history and timeline, retry/cancel/delete, durable bulk actions, queue health and alerts, pauses (queue, organization on a queue, schedule), workers, schedules, lookups by request or resource id, the per-organization load and the append-only audit log. Operators see every organization; owners and admins (`jobs.manage`) their own.',
  Generations: 'Generated images, audio, video and text, and the public model list with credit prices',
  Search: 'Web search and page reading (readable text and metadata of a URL), billed like social reads',
  Billing: 'Plans and subscription, billing contact, billing portal and billing events',
  Reports: 'Usage reports from the credits ledger, workspace inventory, balance and runway',
  'Chat models':
    'The chat-model catalog (provider, context window, credit prices) and each organization’s copy of a model: enabled, display name, default parameters, bounded price overrides',
  Connectors: 'Organization connectors (type, URL checked by the SSRF policy, auth scheme) and each user’s own encrypted credential for them',
};

/** The operation's description, closed by who may call it (the route's `authorize` declaration). */
function documentedDescription(route: AnyRoute): string | undefined {
  const authorization = route.authorize && `**Authorization:** ${describeAuthorization(route.authorize)}`;
  return [route.description, authorization].filter(Boolean).join('\n\n') || undefined;
}

/**
 * `GET /metrics` (src/http/app.ts, src/metrics): Prometheus text, so not a defineRoute operation (their
 * responses are JSON); documented here by hand, with its own bearer scheme (METRICS_TOKEN, not a JWT).
 */
function registerMetricsPath(registry: OpenAPIRegistry, error: ZodType, versionHeader: ZodType): void {
  registry.registerComponent('securitySchemes', 'metricsToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The `METRICS_TOKEN` of the deployment (not a user JWT).',
  });
  registry.registerPath({
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics of this process',
    description:
      'The Prometheus text exposition format: HTTP requests by method, route template and status; job queue depths and ages; ' +
      'database pool use; credit movements by ledger kind; process metrics. Served on this port only when `METRICS_TOKEN` is set ' +
      'and `METRICS_PORT` is not (with `METRICS_PORT`, on that port instead, and workers on `WORKER_METRICS_PORT`); otherwise `404`.',
    tags: ['Service'],
    security: [{ metricsToken: [] }],
    request: { headers: z.object({ 'Service-Api-Version': versionHeader }) },
    responses: {
      200: { description: 'The metrics', content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: z.string() } } },
      400: { description: errorDescriptions[400]!, content: { 'application/json': { schema: error } } },
      401: { description: 'Missing or wrong metrics token', headers: headersFor(401, false), content: { 'application/json': { schema: error } } },
      404: { description: 'Metrics are not served on this port', content: { 'application/json': { schema: error } } },
      500: { description: errorDescriptions[500]!, content: { 'application/json': { schema: error } } },
    },
  });
}

/** `{ [key]: value }` when there is a value, else nothing to spread. */
const optional = <K extends string, V>(key: K, value: V | undefined) => (value === undefined ? {} : ({ [key]: value } as Record<K, V>));

/** The OpenAPI 3.1 document, generated from the same route declarations that validate requests. */
export function buildOpenApiDocument(
  routes: readonly AnyRoute[],
  info: { version: string; serverUrl?: string; webhooks?: ((registry: OpenAPIRegistry) => void) | undefined },
) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  const versionHeader = z
    .string()
    .regex(servableVersion)
    .optional()
    .openapi({ param: { name: 'Service-Api-Version', in: 'header' }, description: 'API major to serve: absent, `1` or `1.x`.', example: '1' });
  const error = registry.register('Error', errorBodySchema);
  registerHeaders(registry);

  const locate = locations(routes);
  for (const route of routes) {
    const statuses = new Set<number>([
      // Whatever the operation: request headers over 16 KiB (431), a body over its limit (413; one
      // without a body reads at most NO_BODY_LIMIT) or not JSON or in an unknown Content-Encoding
      // (415), the database or queue unreachable (503).
      ...(route.public ? [400, 413, 415, 431, 500, 503] : [400, 401, 413, 415, 429, 431, 500, 503]),
      ...(route.errors ?? []),
      // Idempotency-Key: a request still running with the key (409), the key used for another request (422).
      ...(route.idempotent ? [409, 422] : []),
    ]);
    const responses: Record<string, { description: string; headers?: ResponseConfig['headers']; content?: Record<string, { schema: ZodType }> }> = {
      [route.response.status]: {
        description: route.response.description,
        ...optional(
          'headers',
          headersFor(route.response.status, !route.public, [
            ...(locate.has(route) ? ['Location' as const] : []),
            ...(route.idempotent ? ['Idempotent-Replayed' as const] : []),
          ]),
        ),
        ...(route.response.schema && { content: { 'application/json': { schema: route.response.schema as ZodType } } }),
      },
    };
    for (const status of [...statuses].sort()) {
      responses[status] = {
        description: errorDescriptions[status] ?? 'Error',
        ...optional('headers', headersFor(status, !route.public)),
        content: { 'application/json': { schema: error } },
      };
    }
    const headerSchema = headersOf(route) as ZodObject | undefined;
    const operation: RouteConfig = {
      method: route.method,
      path: route.path,
      operationId: route.operationId,
      summary: route.summary,
      ...(documentedDescription(route) && { description: documentedDescription(route) }),
      // The same declaration, machine-readable (the form test/http/authorization-matrix.txt lists).
      ...(route.authorize && { 'x-authorization': compactAuthorization(route.authorize) }),
      tags: [route.tag],
      security: route.public ? [] : [{ bearerAuth: [] }],
      request: {
        ...(route.params && { params: route.params as ZodObject }),
        ...(route.query && { query: route.query as ZodObject }),
        // Every route, public ones too: the middleware refuses an unservable major before routing.
        headers: headerSchema ? headerSchema.extend({ 'Service-Api-Version': versionHeader }) : z.object({ 'Service-Api-Version': versionHeader }),
        ...(route.body && {
          body: {
            required: true,
            description: `JSON of at most ${bodyLimitOf(route)} bytes (413 beyond), read once the caller is authenticated. As in every input, no string may contain U+0000 and no object key may be \`__proto__\` (or \`constructor\` holding \`prototype\`): 400 naming the field.`,
            content: { 'application/json': { schema: route.body as ZodType } },
          },
        }),
      },
      responses,
    };
    for (const documented of route.document ? route.document(operation, error) : [operation]) registry.registerPath(documented);
  }

  registerMetricsPath(registry, error, versionHeader);
  // What the service sends rather than serves (the OpenAPI 3.1 `webhooks` section): the event types.
  info.webhooks?.(registry);

  const tags = [...new Set(routes.map((route) => route.tag))].map((name) => ({ name, description: tagDescriptions[name] ?? name }));
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Workspace Platform API',
      version: info.version,
      description: 'Collaborative content and AI workspace. Errors, pagination and roles follow the conventions in docs/api.md and docs/security.md.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: info.serverUrl ?? '/' }],
    tags,
    security: [{ bearerAuth: [] }],
  });
  return publishRequestBodiesAsInput(document);
}
