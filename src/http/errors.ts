import { type IncomingMessage, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context, Next } from 'koa';
import { ZodError } from 'zod';
import { AppError, fromZodIssues, isAppError } from '../core/errors.ts';
import { isConnectionError } from '../db/connection-errors.ts';
import type { Logger } from '../platform/logger.ts';

/**
 * Outermost middleware: turns every failure into the Error body of CONVENTIONS §3. Internal
 * failures are logged with their stack and answered without it.
 */
export function errorMapper(log: Logger) {
  return async function mapErrors(ctx: Context, next: Next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError('not_found', `no operation ${ctx.method} ${ctx.path}`);
      // The router answers a known path with another method (405) or an unknown method such as TRACE (501) without a body.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) {
        throw new AppError('method_not_allowed', `method ${ctx.method} is not allowed on ${ctx.path}; allowed: ${ctx.response.get('Allow') || 'none'}`, [], {
          status: 405,
        });
      }
    } catch (thrown) {
      const error = toAppError(thrown);
      const requestLog = (ctx.state.log as Logger | undefined) ?? log;
      // 503: the database (or the service) is down for now; a warning each, not an error with a stack per request.
      if (error.code === 'unavailable') requestLog.warn({ reason: thrown instanceof Error ? thrown.message : String(thrown) }, 'request refused: unavailable');
      else if (error.status >= 500) requestLog.error({ err: thrown }, 'request failed');
      ctx.status = error.status;
      ctx.set(error.headers);
      // Every 401 says how to authenticate (RFC 9110 §11.6.1), whoever raised it.
      if (error.status === 401 && !ctx.response.get('WWW-Authenticate')) ctx.set('WWW-Authenticate', 'Bearer realm="api"');
      // A refusal before the body was read (401, 413, 429…): close the connection rather than read the rest to keep it alive.
      if (hasUnreadBody(ctx)) ctx.set('Connection', 'close');
      ctx.body = errorBody(error);
    }
  };
}

const hasUnreadBody = (ctx: Context) =>
  (ctx.request.length > 0 || ctx.get('transfer-encoding') !== '') && !ctx.req.readableEnded && (ctx.request as { rawBody?: unknown }).rawBody === undefined;

/**
 * HTTP/1.1 requires Host (RFC 9112 §3.2). node's own check answers 400 with an empty body, so the
 * server turns it off (src/web.ts: requireHostHeader false) and this answers with the Error body.
 */
export function requireHost() {
  return async function hostRequired(ctx: Context, next: Next) {
    if (ctx.req.httpVersion === '1.1' && ctx.req.headers.host === undefined) {
      throw new AppError('validation_failed', 'Host: the header is required in HTTP/1.1', [{ path: ['Host'], message: 'required in HTTP/1.1' }]);
    }
    await next();
  };
}

/**
 * The server's `checkExpectation` listener: an `Expect` other than 100-continue, which node
 * would answer 417 with an empty body. Answered with the Error body too.
 */
export function answerUnmetExpectation(req: IncomingMessage, res: ServerResponse): void {
  const message = `Expect: "${String(req.headers.expect).slice(0, 100)}" is not supported; only 100-continue is`;
  const body = JSON.stringify(
    errorBody(new AppError('validation_failed', message, [{ path: ['Expect'], message: 'only 100-continue is supported' }], { status: 417 })),
  );
  res.writeHead(417, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  res.end(body);
}

const CONTINUE = Symbol('awaiting 100-continue');

/** Marks a request whose client waits for `100 Continue` before sending its body (the server's `checkContinue`). */
export function awaitingContinue(req: IncomingMessage): IncomingMessage {
  (req as IncomingMessage & { [CONTINUE]?: boolean })[CONTINUE] = true;
  return req;
}

/** Sends the `100 Continue` a client waits for, once, when the body is about to be read. */
export function continueIfAwaited(req: IncomingMessage, res: ServerResponse): void {
  const marked = req as IncomingMessage & { [CONTINUE]?: boolean };
  if (!marked[CONTINUE]) return;
  marked[CONTINUE] = false;
  res.writeContinue();
}

export const errorBody = (error: AppError) => ({ code: error.code, message: error.message, data: { issues: error.issues } });

/**
 * The server's `clientError` listener: node's HTTP parser refuses some requests before Koa sees
 * them (headers over the limit → 431, malformed HTTP → 400, a request too slow → 408). Answered
 * with the Error body too, instead of node's empty default.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers are too large (at most 16 KiB in all)']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request was not received in time']
        : [400, 'request is not well-formed HTTP'];
  const body = JSON.stringify(errorBody(new AppError('validation_failed', message, [], { status })));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

interface PgError {
  code?: string;
  constraint?: string;
  detail?: string;
  column?: string;
}

/** Maps what libraries and Postgres throw onto the Error contract; anything unknown is a 500. */
export function toAppError(thrown: unknown): AppError {
  if (isAppError(thrown)) return thrown;
  if (thrown instanceof ZodError) return fromZodIssues(thrown.issues);
  const error = thrown as { status?: number; expose?: boolean; message?: string } & PgError;
  // koa / koa-jwt / bodyparser / router raise http-errors with a status.
  if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
    if (error.status === 401) return new AppError('unauthorized', `a valid bearer token is required: ${describeAuthFailure(error.message)}`);
    if (error.status === 413) return new AppError('validation_failed', 'request body is too large', [], { status: 413 });
    if (error.status === 415) return new AppError('validation_failed', 'request body must be application/json', [], { status: 415 });
    // The JSON parser (bourne) refuses a `__proto__` key (or `constructor.prototype`) anywhere in the body: a field, so named.
    if (error.message === 'Object contains forbidden prototype property') {
      const message = 'a key named __proto__, or constructor with a prototype key, is not allowed anywhere in the body';
      return new AppError('validation_failed', `body: ${message}`, [{ path: ['__proto__'], message }]);
    }
    return new AppError('validation_failed', error.expose && error.message ? `body: ${error.message}` : 'request is malformed');
  }
  // The body parser inflating a body that is not what its Content-Encoding says (zlib's own errors).
  if (isCorruptCompressedData(error?.code)) {
    return new AppError('validation_failed', 'request body could not be decompressed: it is not valid data for its Content-Encoding');
  }
  switch (error?.code) {
    case '23505':
      return new AppError('conflict', `conflict: ${constraintSubject(error)} already exists`);
    case '23502':
      return new AppError(
        'validation_failed',
        `${error.column ?? 'a field'}: a value is required`,
        error.column ? [{ path: [error.column], message: 'a value is required' }] : [],
      );
    case '23514':
      return new AppError('conflict', `conflict: the change breaks the rule ${error.constraint ?? 'of the resource'}`);
    case '23503': {
      // A referenced row that does not exist: the same answer as one the caller cannot use.
      const field = foreignKeyField(error);
      const message = field ? `${field}: no such ${field.replace(/_id$/, '').replaceAll('_', ' ')} that you can use` : 'a referenced resource does not exist';
      return new AppError('validation_failed', message, field ? [{ path: [field], message }] : []);
    }
    case '22P02':
    case '22P05': // e.g. \u0000 in jsonb (refused at the boundary; this is the backstop)
    case '22007':
    case '22008':
    case '22021':
    case '22001':
    case '54000':
      return new AppError('validation_failed', 'a value has an invalid format or is too long');
    case '40001':
    case '40P01':
      return new AppError('conflict', 'a concurrent change got there first; retry the request');
  }
  // The database is unreachable (restarting, failing over, refusing connections): nothing was done, retry shortly.
  if (isConnectionError(thrown)) return new AppError('unavailable', 'the database is unreachable; retry shortly', [], { headers: { 'Retry-After': '1' } });
  return new AppError('internal', 'internal error; the request id identifies it in the logs');
}

/** zlib's codes for compressed data that is broken or truncated: gzip and deflate, then brotli's format errors. */
const isCorruptCompressedData = (code: unknown) =>
  typeof code === 'string' && (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || code === 'Z_NEED_DICT' || code.startsWith('ERR__ERROR_FORMAT_'));

function constraintSubject(error: PgError): string {
  const match = error.detail?.match(/^Key \((.+?)\)=/);
  return match ? match[1]!.replace(/lower\((\w+)(::text)?\)/g, '$1') : 'a resource with the same unique value';
}

function foreignKeyField(error: PgError): string | undefined {
  return error.detail?.match(/^Key \((\w+)\)=/)?.[1];
}

function describeAuthFailure(message = ''): string {
  if (/expired/i.test(message)) return 'token expired';
  if (/No authentication|Bad Authorization|Authentication Error/i.test(message)) return 'missing or malformed Authorization header';
  return 'token failed verification';
}
