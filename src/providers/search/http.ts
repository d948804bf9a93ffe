import { Pool, type Dispatcher } from 'undici';
import { backoffMs, type HttpTuning, isTimeout, pause, retryableStatus, withDefaults, readCappedBody } from '../http-retry.ts';
import { ReadFailure } from '../../core/read-failure.ts';
import { mapUpstreamHits, readEnvelope } from './envelope.ts';
import { SEARCH_PAGE_SIZE, type SearchProvider, type SearchQuery, type SearchResult, searchSummary } from './types.ts';

export interface HttpSearchOptions extends HttpTuning {
  /** SEARCH_API_URL: the service's base URL, with or without a trailing `/v1`. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Largest response body read; a larger one is `malformed` (no search answer is that big). */
  maxBodyBytes?: number;
}

/**
 * `POST {base}/v1/search` with `{query, limit, site?, recency?}` and a Bearer key; expects
 * `{results: [{title, url, snippet?, site_name?, published_at?}], pages?}`. Connections are pooled
 * (one Pool per adapter). The URL is operator configuration, not user input, so no SSRF guard.
 */
export class HttpSearchProvider implements SearchProvider {
  readonly name = 'http' as const;
  private readonly url: URL;
  private readonly pool: Pool;
  private readonly options: Required<Omit<HttpSearchOptions, 'apiKey' | 'baseUrl'>> & Pick<HttpSearchOptions, 'apiKey'>;

  constructor(options: HttpSearchOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    this.url = new URL(`${base.endsWith('/v1') ? base : `${base}/v1`}/search`);
    this.options = {
      apiKey: options.apiKey,
      ...withDefaults(options, { headersTimeoutMs: 15_000, bodyTimeoutMs: 15_000, maxRetries: 2, retryBaseMs: 500, retryMaxMs: 5_000 }),
      maxBodyBytes: options.maxBodyBytes ?? 2 * 1024 * 1024,
    };
    this.pool = new Pool(this.url.origin, {
      connections: 16,
      headersTimeout: this.options.headersTimeoutMs,
      bodyTimeout: this.options.bodyTimeoutMs,
    });
  }

  async search(input: SearchQuery, { signal, maxPages }: { signal: AbortSignal; maxPages: number }): Promise<{ result: SearchResult; pages: number }> {
    const body = JSON.stringify({ query: input.query, limit: input.limit, site: input.site, recency: input.recency });
    const text = await this.exchange(body, signal);
    const envelope = readEnvelope(text);
    const results = mapUpstreamHits(envelope.results, input);
    const reported = envelope.pages ?? Math.ceil(input.limit / SEARCH_PAGE_SIZE);
    // The charge never exceeds the quote anyway; clamping keeps the reported count honest too.
    const pages = Math.max(1, Math.min(maxPages, reported));
    return { result: { query: input.query, results, summary: searchSummary(input, results.length) }, pages };
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** The 2xx response body as text; retries 429/5xx and connection failures first. */
  private async exchange(body: string, signal: AbortSignal): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      let response: Dispatcher.ResponseData;
      try {
        response = await this.pool.request({
          path: this.url.pathname,
          method: 'POST',
          headers: {
            accept: 'application/json',
            'content-type': 'application/json',
            ...(this.options.apiKey && { authorization: `Bearer ${this.options.apiKey}` }),
          },
          body,
          signal,
        });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (isTimeout(error)) throw new ReadFailure('timeout', 'search service did not answer in time', { cause: error });
        if (attempt < this.options.maxRetries) {
          await pause(this.backoff(attempt, undefined), signal);
          continue;
        }
        throw new ReadFailure('failed', `search service unreachable: ${(error as Error).message}`, { cause: error });
      }
      const status = response.statusCode;
      if (status >= 200 && status <= 299) return this.readBody(response, signal);
      const detail = (await response.body.text().catch(() => '')).slice(0, 200);
      if (retryableStatus(status) && attempt < this.options.maxRetries) {
        await pause(this.backoff(attempt, response.headers['retry-after']), signal);
        continue;
      }
      const tries = attempt + 1;
      const message = `search service answered ${status}${tries > 1 ? ` after ${tries} attempts` : ''}${detail ? `: ${detail}` : ''}`;
      // 400/422: the service refused this query; any other status is its fault or our configuration's.
      throw new ReadFailure(status === 400 || status === 422 ? 'refused' : 'failed', message);
    }
  }

  private async readBody(response: Dispatcher.ResponseData, signal: AbortSignal): Promise<string> {
    return (await readCappedBody(response, signal, 'search service answer', this.options.maxBodyBytes)).toString('utf8');
  }

  private backoff(attempt: number, retryAfter: string | string[] | undefined): number {
    return backoffMs(attempt, retryAfter, this.options);
  }
}
