import type { OpenAPIRegistry, ResponseConfig } from '@asteasolutions/zod-to-openapi';

type Headers = NonNullable<ResponseConfig['headers']>;

/**
 * The response headers a client relies on, documented once as components and referenced from each
 * response that carries them: the rate limit on every answer past authentication (CONVENTIONS §3),
 * Retry-After on 429 and 503, WWW-Authenticate on 401, Location on a create, Idempotent-Replayed on
 * an answer to an Idempotency-Key.
 */
const definitions = {
  'RateLimit-Policy': {
    description:
      'The quota that applies, per draft-ietf-httpapi-ratelimit-headers-11: a structured-field list of one item, the policy name with `q` (requests per window) and `w` (window, seconds), e.g. `"default";q=600;w=60`. The policy is `default` for a caller; `address` on a 429 to requests without a valid token.',
    schema: { type: 'string', pattern: '^"(default|address)";q=\\d+;w=\\d+$' },
  },
  RateLimit: {
    description:
      'What is left of that quota, per draft-ietf-httpapi-ratelimit-headers-11: the policy name with `r` (requests left in this window) and `t` (seconds until it refills), e.g. `"default";r=599;t=42`.',
    schema: { type: 'string', pattern: '^"(default|address)";r=\\d+;t=\\d+$' },
  },
  'RateLimit-Limit': { description: 'Requests this caller may make per minute (shared by all web processes).', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the current minute.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the current window ends and the quota refills.', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
  'WWW-Authenticate': {
    description:
      'How to authenticate (RFC 6750): `Bearer realm="api"` without a token; with `error="invalid_request"` for a malformed Authorization header, `error="invalid_token"` (and an `error_description`) for a token that failed.',
    schema: { type: 'string' },
  },
  Location: { description: 'Where the created resource is read, changed or removed (a path on this server).', schema: { type: 'string' } },
  'Idempotent-Replayed': {
    description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key (nothing ran again); absent otherwise.',
    schema: { type: 'string', enum: ['true'] },
  },
} as const;

export type DocumentedHeader = keyof typeof definitions;

export function registerHeaders(registry: OpenAPIRegistry): void {
  for (const [name, header] of Object.entries(definitions)) registry.registerComponent('headers', name, header as never);
}

const rateLimit: DocumentedHeader[] = ['RateLimit-Policy', 'RateLimit', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

/**
 * The headers of one response: `status` of an operation (`secured`: behind authentication and the
 * per-caller rate limit), with the success answer's own (`extra`: Location, Idempotent-Replayed).
 * Undefined when there are none.
 */
export function headersFor(status: number, secured: boolean, extra: DocumentedHeader[] = []): Headers | undefined {
  const names: DocumentedHeader[] = [...extra];
  // Counted after authentication: not on a 401, nor a 431 (node refuses the request before the app sees it);
  // a refusal before authentication (a 400 for the API version) goes without them too: documented headers are optional.
  if (secured && status !== 401 && status !== 431) names.push(...rateLimit);
  if (status === 429 || status === 503) names.push('Retry-After');
  if (status === 401) names.push('WWW-Authenticate');
  if (names.length === 0) return undefined;
  return Object.fromEntries([...new Set(names)].map((name) => [name, { $ref: `#/components/headers/${name}` }]));
}
