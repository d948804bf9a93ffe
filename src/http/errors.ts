import type { Context, Next } from 'koa';
import { ZodError, type core } from 'zod';
import type { Logger } from '../platform/logger.ts';

export type ErrorCode =
  | 'validation_failed'
  | 'unsupported_api_version'
  | 'unauthorized'
  | 'payment_required'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'internal';

export interface ErrorIssue {
  path: (string | number)[];
  message: string;
}

/** An expected failure with its HTTP status; anything else thrown becomes a 500 `internal`. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly issues: ErrorIssue[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, path: (string | number)[] = []) =>
  new AppError(400, 'validation_failed', message, path.length ? [{ path, message }] : []);
export const paymentRequired = (message: string) => new AppError(402, 'payment_required', message);
export const forbidden = (message: string) => new AppError(403, 'forbidden', message);
/** The same answer for "does not exist" and "you cannot read it", so ids cannot be probed. */
export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);
export const conflict = (message: string, path: (string | number)[] = []) =>
  new AppError(409, 'conflict', message, path.length ? [{ path, message }] : []);

/** A 400 naming the first broken field (prefixed by where it was: query, params, headers). */
export function fromZodIssues(issues: readonly core.$ZodIssue[], location?: 'params' | 'query' | 'body' | 'headers'): AppError {
  const list = issues.map((issue) => ({ path: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)), message: issue.message }));
  const first = list[0];
  if (!first) return new AppError(400, 'validation_failed', 'request is invalid');
  const prefix = location && location !== 'body' ? [location] : [];
  const where = [...prefix, ...first.path].join('.') || location || 'request';
  return new AppError(400, 'validation_failed', `${where}: ${first.message}`, list);
}

/**
 * Outermost middleware: turns every failure into the Error body of CONVENTIONS §3. Internal
 * failures are logged with their stack and answered without it.
 */
export function errorMapper(log: Logger) {
  return async function mapErrors(ctx: Context, next: Next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError(404, 'not_found', `no operation ${ctx.method} ${ctx.path}`);
      if (ctx.status === 405 && ctx.body === undefined) throw new AppError(405, 'validation_failed', `method ${ctx.method} is not allowed on ${ctx.path}`);
    } catch (thrown) {
      const error = toAppError(thrown);
      if (error.status >= 500) (ctx.state.log as Logger | undefined ?? log).error({ err: thrown }, 'request failed');
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.body = { code: error.code, message: error.message, data: { issues: error.issues } };
    }
  };
}

interface PgError {
  code?: string;
  constraint?: string;
  detail?: string;
}

function toAppError(thrown: unknown): AppError {
  if (thrown instanceof AppError) return thrown;
  if (thrown instanceof ZodError) return fromZodIssues(thrown.issues);
  const error = thrown as { status?: number; expose?: boolean; message?: string } & PgError;
  // koa / koa-jwt / bodyparser raise http-errors with a status.
  if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
    if (error.status === 401) return new AppError(401, 'unauthorized', 'a valid bearer token is required: ' + describeAuthFailure(error.message));
    if (error.status === 413) return new AppError(413, 'validation_failed', 'request body is too large');
    if (error.status === 415) return new AppError(415, 'validation_failed', 'request body must be application/json');
    return new AppError(400, 'validation_failed', error.expose && error.message ? `body: ${error.message}` : 'request is malformed');
  }
  switch (error?.code) {
    case '23505':
      return new AppError(409, 'conflict', `conflict: ${constraintSubject(error)} already exists`);
    case '23514':
      return new AppError(409, 'conflict', `conflict: the change breaks the rule ${error.constraint ?? 'of the resource'}`);
    case '22P02':
    case '22007':
    case '22008':
      return new AppError(400, 'validation_failed', 'a value has an invalid format');
    case '40001':
    case '40P01':
      return new AppError(409, 'conflict', 'a concurrent change got there first; retry the request');
  }
  return new AppError(500, 'internal', 'internal error; the request id identifies it in the logs');
}

function constraintSubject(error: PgError): string {
  const match = error.detail?.match(/^Key \((.+?)\)=/);
  return match ? match[1]!.replace(/lower\((\w+)(::text)?\)/g, '$1') : 'a resource with the same unique value';
}

function describeAuthFailure(message = ''): string {
  if (/expired/i.test(message)) return 'token expired';
  if (/No authentication|Bad Authorization|Authentication Error/i.test(message)) return 'missing or malformed Authorization header';
  return 'token failed verification';
}
