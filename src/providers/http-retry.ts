/**
 * What every HTTP adapter (chat, social data, search) shares about retrying an upstream: which
 * answers are worth another attempt, how long to wait before it (the upstream's `Retry-After`, else
 * doubling from a base, never longer than a cap), and a wait the caller's abort cuts short.
 */
import { Agent, type Dispatcher, errors } from 'undici';
import { isReadFailure, ReadFailure } from '../core/read-failure.ts';

/** Overloaded (429) or failing (5xx): another attempt may succeed. */
export const retryableStatus = (status: number) => status === 429 || status >= 500;

/** `Retry-After` as seconds or an HTTP date, in milliseconds; null when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined || value.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export interface Backoff {
  /** Pause before the first retry without `Retry-After`; doubles with each attempt. */
  retryBaseMs: number;
  /** The most any pause may last (a longer `Retry-After` is capped). */
  retryMaxMs: number;
}

/** What every HTTP adapter can be tuned with (each has production defaults; tests shorten them). */
export interface HttpTuning extends Partial<Backoff> {
  /** Connecting and receiving the response headers. */
  headersTimeoutMs?: number;
  /** Silence between two pieces of the body. */
  bodyTimeoutMs?: number;
  /** Attempts after the first, for 429, 5xx and a refused connection (before any byte of an answer). */
  maxRetries?: number;
}

/** How long to wait before retry number `attempt` (0-based), honouring the answer's `Retry-After`. */
export function backoffMs(attempt: number, retryAfter: string | string[] | null | undefined, backoff: Backoff): number {
  const asked = retryAfterMs(Array.isArray(retryAfter) ? retryAfter[0] : (retryAfter ?? undefined));
  return Math.min(asked ?? backoff.retryBaseMs * 2 ** attempt, backoff.retryMaxMs);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** undici gave up waiting: to connect, for the headers or between two pieces of the body. */
export const isTimeout = (error: unknown) =>
  error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError || error instanceof errors.ConnectTimeoutError;

/** The upstream refused the connection (every address, when several were tried at once). */
export function isRefusedConnection(error: unknown): boolean {
  for (let cause: unknown = error; cause; cause = (cause as { cause?: unknown }).cause) {
    if ((cause as { code?: unknown }).code === 'ECONNREFUSED') return true;
    if (cause instanceof AggregateError && cause.errors.every(isRefusedConnection)) return true;
  }
  return false;
}

/** The caller's tuning over the adapter's defaults (each adapter knows how slow its service may be). */
export const withDefaults = (options: HttpTuning, defaults: Required<HttpTuning>): Required<HttpTuning> => ({
  headersTimeoutMs: options.headersTimeoutMs ?? defaults.headersTimeoutMs,
  bodyTimeoutMs: options.bodyTimeoutMs ?? defaults.bodyTimeoutMs,
  maxRetries: options.maxRetries ?? defaults.maxRetries,
  retryBaseMs: options.retryBaseMs ?? defaults.retryBaseMs,
  retryMaxMs: options.retryMaxMs ?? defaults.retryMaxMs,
});

/** Pooled keep-alive connections with the tuning's timeouts. */
export const pooledAgent = (tuning: Pick<Required<HttpTuning>, 'headersTimeoutMs' | 'bodyTimeoutMs'>, connections: number) =>
  new Agent({ connections, headersTimeout: tuning.headersTimeoutMs, bodyTimeout: tuning.bodyTimeoutMs });

/**
 * Reads a response body up to `cap` bytes, refusing (and closing the connection) past it — a
 * runaway upstream must not exhaust the process. Failures are ReadFailures naming `what` (e.g.
 * "social service answer to net2_profile"): too large → malformed, stalled → timeout, broken off →
 * failed; the caller's abort rethrows its reason.
 */
export async function readCappedBody(response: Dispatcher.ResponseData, signal: AbortSignal, what: string, cap: number): Promise<Buffer> {
  const tooLarge = () => new ReadFailure('malformed', `${what} is larger than ${cap} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    if (Number(response.headers['content-length']) > cap) throw tooLarge();
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > cap) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (isReadFailure(error)) throw error;
    if (isTimeout(error)) throw new ReadFailure('timeout', `${what} stalled`, { cause: error });
    throw new ReadFailure('failed', `${what} broke off: ${(error as Error).message}`, { cause: error });
  } finally {
    if (!response.body.destroyed) response.body.destroy();
  }
  return Buffer.concat(chunks);
}
