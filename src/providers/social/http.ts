import type { HttpTuning } from '../http-retry.ts';
import { ProviderHttp, type ProviderHttpDefaults } from '../generation/client.ts';
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

/** A bad id or no such account is the caller's 422, not a service fault. */
const socialDefaults: ProviderHttpDefaults = {
  tuning: { headersTimeoutMs: 30_000, bodyTimeoutMs: 30_000, maxRetries: 2, retryBaseMs: 500, retryMaxMs: 10_000 },
  maxResponseBytes: 5 * 1024 * 1024,
  connections: 32,
  refused: new Set([400, 404, 422]),
};

/**
 * `POST {apiUrl}/v1/social/{operation}` with `{ input, max_pages }`, answered by
 * `{ result, pages }`. Only the envelope is checked here: the caller validates `result` against
 * the operation's output schema. The URL is operator configuration, not user input, so the SSRF
 * guard is not needed.
 */
export class HttpSocialProvider implements SocialProvider {
  readonly name = 'http' as const;
  private readonly base: string;
  private readonly http: ProviderHttp;

  constructor(options: HttpSocialOptions) {
    const base = options.apiUrl.replace(/\/+$/, '');
    this.base = base.endsWith('/v1') ? base : `${base}/v1`;
    this.http = new ProviderHttp('social service', options, socialDefaults);
  }

  async read(operation: string, input: unknown, options: { signal: AbortSignal; maxPages: number }): Promise<{ result: unknown; pages: number }> {
    const url = `${this.base}/social/${encodeURIComponent(operation)}`;
    const answer = await this.http.send('POST', url, operation, options.signal, { json: { input, max_pages: options.maxPages } });
    return envelope(answer.body.toString('utf8'), operation);
  }

  /** Closes the pooled connections (on shutdown). */
  close(): Promise<void> {
    return this.http.close();
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
