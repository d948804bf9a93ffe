import { bodyParser } from '@koa/bodyparser';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { Context } from 'koa';
import { ZodObject, type ZodType, type z as zod } from 'zod';
import type { Deps } from '../platform/deps.ts';
import { Actor } from '../access/actor.ts';
import type { Caller } from '../core/caller.ts';
import { enforce, type Authorization } from './authorize.ts';
import { AppError, fromZodIssues } from '../core/errors.ts';
import { continueIfAwaited } from './errors.ts';
import { JSON_MAX_DEPTH, z } from '../core/zod.ts';
import { idempotencyHeaders, type IdempotentOptions } from './idempotency.ts';
import type { Locate } from './location.ts';
import { claimKey, completeKey, hashOfKey, type IdempotentRequest, releaseKey, requestHash } from '../platform/idempotency.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';

const noQuery = z.object({}).strict();

// What a schema parses to. A route without that schema gets the default `ZodType` (unknown): no
// conditional type, so a builder generic over its schemas sees the parsed types as they are.
type Infer<S extends ZodType> = zod.output<S>;
type Reply<S extends ZodType> = zod.input<S>;

export interface HandlerInput<P extends ZodType, Q extends ZodType, B extends ZodType> {
  params: Infer<P>;
  query: Infer<Q>;
  body: Infer<B>;
  actor: Actor;
  deps: Deps;
  ctx: Context;
  /** The request's Idempotency-Key, resolved (routes with `idempotent`, when the caller sent one). */
  idempotency?: IdempotentRequest | undefined;
}

/**
 * One operation, declared once: the same schemas validate the request, shape the response and
 * describe the operation in /openapi.json.
 */
export interface Route<P extends ZodType = ZodType, Q extends ZodType = ZodType, B extends ZodType = ZodType, R extends ZodType = ZodType> {
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
  /**
   * The largest JSON body it reads, in bytes: DEFAULT_BODY_LIMIT for an operation with a body,
   * NO_BODY_LIMIT without one. Bodies are read only once the caller is authenticated (./app.ts);
   * a larger one is refused with 413 before it is read (by its Content-Length) or as soon as it passes the limit.
   */
  bodyLimit?: number;
  response: { status: 200 | 201 | 202 | 204; description: string; schema?: R };
  /** Error statuses this operation can answer besides 400, 401, 429 and 500. */
  errors?: ErrorStatus[];
  /** Service plumbing only (health, OpenAPI): no token required. */
  public?: boolean;
  /** Who may call it (./authorize.ts): enforced before the handler, stated in /openapi.json. Required unless `public`. */
  authorize?: Authorization;
  /**
   * Honours Idempotency-Key (CONVENTIONS §3: every POST that creates something or moves credits):
   * documents and reads the header; a retry replays the first answer (the store: src/platform/idempotency.ts).
   */
  idempotent?: IdempotentOptions;
  /**
   * For an operation that is more than JSON (a protocol like tus): amends its generated OpenAPI
   * operation (request body, response headers) and may add those it also answers (HEAD).
   */
  document?: (operation: RouteConfig, error: ZodType) => RouteConfig[];
  /** The handler sets status and body itself (a file answered 200, 206 or 304): nothing is presented after it. */
  answersItself?: true;
  /**
   * A 201's `Location` when it is not the GET operation answering the same schema (./location.ts
   * derives that one from the route table): from the request's path parameters and the answer.
   */
  location?: Locate;
  handler(input: HandlerInput<P, Q, B>): Promise<Reply<R>>;
}

export type AnyRoute = Route<any, any, any, any>;

export type ErrorStatus = 402 | 403 | 404 | 409 | 413 | 415 | 422 | 502 | 503 | 504;

/** An operation's error statuses: those every operation of its kind answers, then its own; each once, in order. */
export const errorsOf = (always: readonly ErrorStatus[], own: readonly ErrorStatus[] = []): ErrorStatus[] => [...new Set([...always, ...own])].sort();

export function defineRoute<P extends ZodType = ZodType, Q extends ZodType = ZodType, B extends ZodType = ZodType, R extends ZodType = ZodType>(
  route: Route<P, Q, B, R>,
): Route<P, Q, B, R> {
  return route;
}

/** What an operation with a body reads unless it declares more (or less): a message of 200,000 characters fits. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Operations that take uploads (a base64 image of 1 MiB) or long content (an asset's 1,000,000 characters) declare this. */
export const LARGE_BODY_LIMIT = 1536 * 1024;
/** An operation without a body still gets `{}` or `null` from some clients; nothing larger is read. */
export const NO_BODY_LIMIT = 1024;

export const bodyLimitOf = (route: AnyRoute) => route.bodyLimit ?? (route.body ? DEFAULT_BODY_LIMIT : NO_BODY_LIMIT);

const describeBytes = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;

/** Reads the JSON body (CONVENTIONS: JSON only) up to the operation's limit; 413 naming the limit beyond it. */
function bodyReader(route: AnyRoute) {
  const limit = bodyLimitOf(route);
  const read = bodyParser({ enableTypes: ['json'], jsonLimit: limit, encoding: 'utf-8', jsonStrict: false });
  return async (ctx: Context) => {
    // A body declared larger than the limit is refused from its Content-Length, before the client sends it.
    if (ctx.request.length === undefined || ctx.request.length <= limit) continueIfAwaited(ctx.req, ctx.res);
    try {
      await read(ctx, async () => undefined);
    } catch (error) {
      if ((error as { status?: number }).status !== 413) throw error;
      const message = `request body is too large: ${route.operationId} takes at most ${limit} bytes (${describeBytes(limit)})`;
      throw new AppError('validation_failed', message, [{ path: [], message: `at most ${limit} bytes` }], { status: 413 });
    }
  };
}

function parse<S extends ZodType>(schema: S, value: unknown, location: 'params' | 'query' | 'body' | 'headers') {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodIssues(result.error.issues, location);
  return result.data;
}

/** Deeper than any JSON-valued field may nest (JSON_MAX_DEPTH) plus the fields that hold one. */
const MAX_INPUT_DEPTH = JSON_MAX_DEPTH + 4;

/**
 * The one check every string of a request passes before its schema: no NUL character (Postgres
 * refuses it in text and jsonb), and no nesting deep enough to overflow a recursive validator.
 * Iterative; names the offending field as a zod issue would.
 */
export function refuseUnsafeInput(location: 'params' | 'query' | 'body' | 'headers', value: unknown): void {
  // Each entry links to its parent, so a path is built only for the error (no copying per node).
  interface Entry {
    value: unknown;
    key: string | number | undefined;
    parent: Entry | undefined;
    depth: number;
  }
  const pathOf = (entry: Entry | undefined): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let at = entry; at && at.key !== undefined; at = at.parent) path.unshift(at.key);
    return location === 'body' ? path : [location, ...path];
  };
  const stack: Entry[] = [{ value, key: undefined, parent: undefined, depth: 0 }];
  while (stack.length) {
    const entry = stack.pop()!;
    const node = entry.value;
    if (typeof node === 'string') {
      if (node.includes('\0')) throw inputError(pathOf(entry), 'must not contain the NUL character (U+0000)');
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    if (entry.depth >= MAX_INPUT_DEPTH)
      throw inputError(pathOf(entry).slice(0, location === 'body' ? 1 : 2), `must nest at most ${JSON_MAX_DEPTH} levels deep`);
    const depth = entry.depth + 1;
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) stack.push({ value: node[index], key: index, parent: entry, depth });
    } else {
      for (const [key, item] of Object.entries(node)) {
        if (key.includes('\0')) throw inputError(pathOf(entry), 'keys must not contain the NUL character (U+0000)');
        stack.push({ value: item, key, parent: entry, depth });
      }
    }
  }
}

function inputError(path: (string | number)[], message: string): AppError {
  return new AppError('validation_failed', `${path.join('.') || 'body'}: ${message}`, [{ path, message }]);
}

/** Koa middleware running one route: read the body (within its limit) → parse → handler (authorize → act) → present. */
export function routeHandler(route: AnyRoute, deps: Deps, validateResponses: boolean, locate?: Locate) {
  // Unknown query parameters are refused like unknown body fields (a typo must not silently drop a filter).
  // A route without a query schema takes none, so every query string is checked the same way.
  const query = route.query instanceof ZodObject ? route.query.strict() : (route.query ?? noQuery);
  const headers = headersOf(route);
  const readBody = bodyReader(route);
  return async (ctx: Context) => {
    await readBody(ctx);
    const rawBody = (ctx.request as { body?: unknown }).body;
    refuseUnsafeInput('params', ctx.params);
    refuseUnsafeInput('query', ctx.query);
    refuseUnsafeInput('headers', ctx.headers);
    refuseUnsafeInput('body', rawBody);
    const hasBody = rawBody !== undefined && !(typeof rawBody === 'object' && rawBody !== null && !Array.isArray(rawBody) && Object.keys(rawBody).length === 0);
    if (!route.body && hasBody) throw new AppError('validation_failed', 'body: this operation takes no request body');
    const parsedHeaders = headers ? (parse(headers, ctx.headers, 'headers') as Record<string, unknown>) : undefined;
    const input: HandlerInput<ZodType, ZodType, ZodType> = {
      params: route.params ? parse(route.params, ctx.params, 'params') : undefined,
      query: query ? parse(query, ctx.query, 'query') : undefined,
      body: route.body ? parse(route.body, rawBody ?? {}, 'body') : undefined,
      // One actor per request: its memberships are read once however often the operation asks.
      actor: route.public ? (undefined as unknown as Actor) : new Actor(ctx.state.caller as Caller, deps.db),
      deps,
      ctx,
    };
    if (route.authorize) await enforce(route.authorize, { ...input, db: deps.db });
    // After authorization: a caller who may no longer act gets no replay either.
    input.idempotency = route.idempotent && idempotentRequest(route, input, parsedHeaders?.['idempotency-key'] as string | undefined, ctx);
    if (!input.idempotency || route.idempotent?.mode === 'transaction') {
      present(route, ctx, await route.handler(input), validateResponses);
      return setLocation(ctx, locate, input.params);
    }
    const stored = await claimKey(deps.db, input.idempotency);
    if (stored) {
      ctx.status = stored.status;
      ctx.body = stored.body;
      return setLocation(ctx, locate, input.params);
    }
    let result: unknown;
    try {
      result = await route.handler(input);
    } catch (error) {
      // An error answer changed nothing (see releaseKey): the retry may run. Should the release
      // itself fail, the key stays in progress and answers 409 — never a second run.
      await releaseKey(deps.db, input.idempotency).catch(() => undefined);
      throw error;
    }
    present(route, ctx, result, validateResponses);
    await completeKey(deps.db, input.idempotency, ctx.status, ctx.body);
    setLocation(ctx, locate, input.params);
  };
}

/** A 201 names where the created resource is read (a replayed 201 too: the header is derived from the body, never stored). */
function setLocation(ctx: Context, locate: Locate | undefined, params: unknown): void {
  if (ctx.status !== 201 || !locate) return;
  const location = locate(params as Record<string, string> | undefined, ctx.body);
  if (location) ctx.set('Location', location);
}

/** The headers an operation reads: its own, plus Idempotency-Key when it honours it. */
export function headersOf(route: AnyRoute): ZodType | undefined {
  if (!route.idempotent) return route.headers;
  if (route.headers === undefined) return idempotencyHeaders;
  if (!(route.headers instanceof ZodObject)) throw new Error(`${route.operationId}: an idempotent route's headers must be an object schema`);
  return route.headers.extend(idempotencyHeaders.shape);
}

function idempotentRequest(
  route: AnyRoute,
  input: HandlerInput<ZodType, ZodType, ZodType>,
  key: string | undefined,
  ctx: Context,
): IdempotentRequest | undefined {
  if (key === undefined || route.public) return undefined;
  const named = (value: unknown) =>
    value && typeof value === 'object' && 'organization_id' in value ? (value as { organization_id: unknown }).organization_id : undefined;
  const organization = named(input.params) ?? named(input.body);
  return {
    organizationId: typeof organization === 'string' ? organization : '',
    userId: input.actor.userId,
    keyHash: hashOfKey(key),
    operation: route.operationId,
    requestHash: requestHash(route.operationId, { params: input.params, query: input.query, body: input.body }),
    oneTime: route.idempotent?.oneTime ?? [],
    replayed: () => ctx.set('Idempotent-Replayed', 'true'),
  };
}

/** The answer: the route's status and its body, checked against the documented schema in development and tests. */
function present(route: AnyRoute, ctx: Context, result: unknown, validateResponses: boolean): void {
  if (route.answersItself) return;
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
}
