import type { core } from 'zod';

/** The error codes of the Error body (CONVENTIONS §3); code that handles errors branches on these. */
export type ErrorCode =
  | 'validation_failed'
  | 'unsupported_api_version'
  | 'unauthorized'
  | 'payment_required'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'unavailable'
  | 'upstream_refused'
  | 'upstream_failed'
  | 'upstream_timeout'
  | 'internal';

export const errorCodes: readonly ErrorCode[] = [
  'validation_failed',
  'unsupported_api_version',
  'unauthorized',
  'payment_required',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'idempotency_key_reused',
  'rate_limited',
  'unavailable',
  'upstream_refused',
  'upstream_failed',
  'upstream_timeout',
  'internal',
];

/** The HTTP status a code answers with unless the error names another (413, 415, 422…). */
const statusOfCode: Record<ErrorCode, number> = {
  validation_failed: 400,
  unsupported_api_version: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  // The Idempotency-Key was already used with another request (CONVENTIONS §3).
  idempotency_key_reused: 422,
  rate_limited: 429,
  unavailable: 503,
  // A provider (social data, search, a fetched page) refused the input, failed or was too slow; nothing was charged.
  upstream_refused: 422,
  upstream_failed: 502,
  upstream_timeout: 504,
  internal: 500,
};

export interface ErrorIssue {
  path: (string | number)[];
  message: string;
}

/**
 * An expected failure, named by its code; anything else thrown becomes a 500 `internal`. The
 * HTTP layer answers it with `status` (the code's own status unless a finer one is given).
 */
const appErrorBrand = Symbol.for('workspace-platform.AppError');

export class AppError extends Error {
  readonly [appErrorBrand] = true;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly code: ErrorCode;
  readonly issues: ErrorIssue[];
  constructor(code: ErrorCode, message: string, issues: ErrorIssue[] = [], options: { status?: number; headers?: Record<string, string> } = {}) {
    super(message);
    this.code = code;
    this.issues = issues;
    this.status = options.status ?? statusOfCode[code];
    this.headers = options.headers ?? {};
  }
}

/** By a global-registry brand, not `instanceof`: an AppError from another load of this module counts too (see read-failure.ts). */
export const isAppError = (error: unknown, code?: ErrorCode): error is AppError =>
  typeof error === 'object' &&
  error !== null &&
  (error as { [appErrorBrand]?: unknown })[appErrorBrand] === true &&
  (code === undefined || (error as AppError).code === code);

const issuesAt = (message: string, path: (string | number)[]) => (path.length ? [{ path, message }] : []);

export const badRequest = (message: string, path: (string | number)[] = []) => new AppError('validation_failed', message, issuesAt(message, path));
export const forbidden = (message: string) => new AppError('forbidden', message);
/** The same answer for "does not exist" and "you cannot read it", so ids cannot be probed. */
export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
export const conflict = (message: string, path: (string | number)[] = []) => new AppError('conflict', message, issuesAt(message, path));
export const unavailable = (message: string) => new AppError('unavailable', message);

/** A 400 naming the first broken field (prefixed by where it was: query, params, headers). */
export function fromZodIssues(issues: readonly core.$ZodIssue[], location?: 'params' | 'query' | 'body' | 'headers'): AppError {
  const list = issues.map((issue) => ({ path: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)), message: issue.message }));
  const first = list[0];
  if (!first) return new AppError('validation_failed', 'request is invalid');
  const prefix = location && location !== 'body' ? [location] : [];
  const where = [...prefix, ...first.path].join('.') || location || 'request';
  return new AppError('validation_failed', `${where}: ${first.message}`, list);
}
