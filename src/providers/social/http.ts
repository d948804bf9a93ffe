import { type Agent, type Dispatcher, request } from 'undici';
import {
  backoffMs,
  type HttpTuning,
  isRefusedConnection,
  isTimeout,
  pause,
  pooledAgent,
  retryableStatus,
  withDefaults,
  readCappedBody,
} from '../http-retry.ts';
import { ReadFailure } from '../../core/read-failure.ts';
import type { SocialProvider } from './types.ts';

export interface HttpSocialOptions extends HttpTuning {
  /** SOCIAL_API_URL: the service's base URL, with or without a trailing `/v1`. */
  apiUrl: string;
  apiKey?: string | undefined;
  /** A larger answer is refused as malformed rather than buffered (a runaway upstream must not exhaust the worker). */
  maxResponseBytes?: number;
  /** Pooled keep-alive connections to the service. */
  connections?: number;
}

/** Statuses that mean the input itself was refused (bad id, no such account): the caller's 422, not a service fault. */
const refusedStatuses = new Set([400, 404, 422]);

/**
 * `POST {apiUrl}/v1/social/{operation}` with `{ input, max_pages }`, answered by
 * `{ result, pages }`. Only the envelope is checked here: the caller validates `result` against
 * the operation's output schema. The URL is operator configuration, not user input, so the SSRF
 * guard is not needed.
 */
export class HttpSocialProvider implements SocialProvider {
  readonly name = 'http' as const;
  private readonly base: string;
  private readonly agent: Agent;
  private readonly options: Required<Omit<HttpSocialOptions, 'apiKey' | 'apiUrl' | 'connections'>> & Pick<HttpSocialOptions, 'apiKey'>;

  constructor(options: HttpSocialOptions) {
    const base = options.apiUrl.replace(/\/+$/, '');
    this.base = base.endsWith('/v1') ? base : `${base}/v1`;
    this.options = {
      apiKey: options.apiKey,
      ...withDefaults(options, { headersTimeoutMs: 30_000, bodyTimeoutMs: 30_000, maxRetries: 2, retryBaseMs: 500, retryMaxMs: 10_000 }),
      maxResponseBytes: options.maxResponseBytes ?? 5 * 1024 * 1024,
    };
    this.agent = pooledAgent(this.options, options.connections ?? 32);
  }

  async read(operation: string, input: unknown, options: { signal: AbortSignal; maxPages: number }): Promise<{ result: unknown; pages: number }> {
    const { signal } = options;
    const url = `${this.base}/social/${encodeURIComponent(operation)}`;
    const body = JSON.stringify({ input, max_pages: options.maxPages });
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method: 'POST',
          dispatcher: this.agent,
          headers: {
            accept: 'application/json',
            'content-type': 'application/json',
            ...(this.options.apiKey && { authorization: `Bearer ${this.options.apiKey}` }),
          },
          body,
          headersTimeout: this.options.headersTimeoutMs,
          bodyTimeout: this.options.bodyTimeoutMs,
          signal,
        });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (isTimeout(error)) throw new ReadFailure('timeout', `social service did not answer ${operation} in time`, { cause: error });
        if (isRefusedConnection(error) && attempt < this.options.maxRetries) {
          await pause(this.delay(attempt, undefined), signal);
          continue;
        }
        throw new ReadFailure('failed', `social service unreachable: ${(error as Error).message}`, { cause: error });
      }
      const status = response.statusCode;
      if (status === 200) return envelope(await this.text(response, signal, operation), operation);
      // Small cap for error bodies: only a message is wanted from them.
      const detail = upstreamMessage(await this.text(response, signal, operation, 64 * 1024).catch(() => ''));
      signal.throwIfAborted();
      if (retryableStatus(status) && attempt < this.options.maxRetries) {
        await pause(this.delay(attempt, response.headers['retry-after']), signal);
        continue;
      }
      const tries = attempt > 0 ? ` after ${attempt + 1} attempts` : '';
      const kind = refusedStatuses.has(status) ? 'refused' : 'failed';
      throw new ReadFailure(kind, `social service answered ${status} to ${operation}${tries}${detail ? `: ${detail}` : ''}`);
    }
  }

  /** Closes the pooled connections (on shutdown). */
  close(): Promise<void> {
    return this.agent.close();
  }

  private delay(attempt: number, retryAfter: string | string[] | undefined): number {
    return backoffMs(attempt, retryAfter, this.options);
  }

  private async text(response: Dispatcher.ResponseData, signal: AbortSignal, operation: string, cap = this.options.maxResponseBytes): Promise<string> {
    return (await readCappedBody(response, signal, `social service answer to ${operation}`, cap)).toString('utf8');
  }
}

/** `{ result: object, pages: integer ≥ 1 }`, or ReadFailure('malformed'). */
function envelope(text: string, operation: string): { result: unknown; pages: number } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ReadFailure('malformed', `social service answered ${operation} with something that is not JSON`);
  }
  const { result, pages } = (parsed ?? {}) as { result?: unknown; pages?: unknown };
  if (!result || typeof result !== 'object' || Array.isArray(result))
    throw new ReadFailure('malformed', `social service answer to ${operation} has no result object`);
  if (typeof pages !== 'number' || !Number.isInteger(pages) || pages < 1) {
    throw new ReadFailure('malformed', `social service answer to ${operation} has no page count (an integer ≥ 1)`);
  }
  return { result, pages };
}

/** The upstream's own words for a refusal (`{error: {message}}`, `{error}`, `{message}` or text), one line, trimmed. */
function upstreamMessage(text: string): string {
  let message: unknown = text;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    message = (typeof parsed.error === 'object' ? parsed.error?.message : parsed.error) ?? parsed.message ?? text;
  } catch {}
  return String(message).replace(/\s+/g, ' ').trim().slice(0, 200);
}
