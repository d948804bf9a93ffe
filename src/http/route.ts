import type { Context } from 'koa';
import type { ZodType, z as zod } from 'zod';
import type { Deps } from '../platform/deps.ts';
import type { Caller } from '../core/caller.ts';
import { AppError, fromZodIssues } from '../core/errors.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';


type Infer<S> = S extends ZodType ? zod.output<S> : undefined;
type Reply<S> = S extends ZodType ? zod.input<S> : void;

export interface HandlerInput<P, Q, B> {
  params: Infer<P>;
  query: Infer<Q>;
  body: Infer<B>;
  caller: Caller;
  deps: Deps;
  ctx: Context;
}

/**
 * One operation, declared once: the same schemas validate the request, shape the response and
 * describe the operation in /openapi.json.
 */
export interface Route<P = unknown, Q = unknown, B = unknown, R = unknown> {
  method: Method;
  /** OpenAPI-style path, e.g. `/organizations/{organization_id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Request headers the operation reads (documented, validated). */
  headers?: ZodType;
  response: { status: 200 | 201 | 202 | 204; description: string; schema?: R };
  /** Error statuses this operation can answer besides 400, 401, 429 and 500. */
  errors?: (402 | 403 | 404 | 409 | 413 | 415 | 422 | 503)[];
  /** Service plumbing only (health, OpenAPI): no token required. */
  public?: boolean;
  handler(input: HandlerInput<P, Q, B>): Promise<Reply<R>>;
}

export type AnyRoute = Route<any, any, any, any>;

export function defineRoute<
  P extends ZodType | undefined = undefined,
  Q extends ZodType | undefined = undefined,
  B extends ZodType | undefined = undefined,
  R extends ZodType | undefined = undefined,
>(route: Route<P, Q, B, R>): Route<P, Q, B, R> {
  return route;
}

function parse<S extends ZodType>(schema: S, value: unknown, location: 'params' | 'query' | 'body' | 'headers') {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodIssues(result.error.issues, location);
  return result.data;
}

/** Koa middleware running one route: parse → handler (authorize → act) → present. */
export function routeHandler(route: AnyRoute, deps: Deps, validateResponses: boolean) {
  return async (ctx: Context) => {
    const rawBody = (ctx.request as { body?: unknown }).body;
    const hasBody = rawBody !== undefined && !(typeof rawBody === 'object' && rawBody !== null && !Array.isArray(rawBody) && Object.keys(rawBody).length === 0);
    if (!route.body && hasBody) throw new AppError('validation_failed', 'body: this operation takes no request body');
    if (route.headers) parse(route.headers, ctx.headers, 'headers');
    const input: HandlerInput<unknown, unknown, unknown> = {
      params: route.params ? parse(route.params, ctx.params, 'params') : undefined,
      query: route.query ? parse(route.query, ctx.query, 'query') : undefined,
      body: route.body ? parse(route.body, rawBody ?? {}, 'body') : undefined,
      caller: ctx.state.caller as Caller,
      deps,
      ctx,
    };
    const result = await route.handler(input);
    ctx.status = route.response.status;
    if (route.response.status === 204 || !route.response.schema) return;
    if (validateResponses) {
      // Development and tests: a response that drifts from its documented schema is a bug.
      const checked = route.response.schema.safeParse(result);
      if (!checked.success) {
        throw new Error(`response of ${route.operationId} does not match its schema: ${JSON.stringify(checked.error.issues.slice(0, 3))}`);
      }
      ctx.body = checked.data;
    } else {
      ctx.body = result;
    }
  };
}
