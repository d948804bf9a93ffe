/** Results a search service returns per upstream page; the quote counts pages of this size. */
export const SEARCH_PAGE_SIZE = 10;

/** How recent results must be (published within the last day, week…). */
export const searchRecencies = ['day', 'week', 'month', 'year'] as const;
export type SearchRecency = (typeof searchRecencies)[number];

/** Milliseconds in each recency window (a month is 31 days, a year 366: never narrower than the word). */
export const recencyWindowMs: Record<SearchRecency, number> = {
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 31 * 86_400_000,
  year: 366 * 86_400_000,
};

export interface SearchQuery {
  query: string;
  /** Results wanted (1–50). */
  limit: number;
  /** Only results on this host or its subdomains (`example.com`). */
  site?: string | undefined;
  /** Only results published within this window (results without a date are kept: they cannot be judged). */
  recency?: SearchRecency | undefined;
}

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
  site_name?: string;
  /** ISO 8601 date-time. */
  published_at?: string;
}

export interface SearchResult {
  query: string;
  results: SearchHit[];
  /** One line for the reader: how many results, for what. */
  summary: string;
}

/** The web search service behind `POST /search`. */
export interface SearchProvider {
  readonly name: 'sandbox' | 'http';
  /**
   * Fetches at most `maxPages` upstream pages. Throws `ReadFailure` (src/core/read-failure.ts) when
   * it cannot answer. The caller validates `result` against the operation's output schema (the
   * type states what a well-behaved provider returns, not a guarantee).
   */
  search(input: SearchQuery, options: { signal: AbortSignal; maxPages: number }): Promise<{ result: SearchResult; pages: number }>;
}

/** The one-line summary both adapters compose. */
export function searchSummary(input: SearchQuery, count: number, suffix = ''): string {
  const scope = [input.site && `on ${input.site}`, input.recency && `from the last ${input.recency}`].filter(Boolean).join(' ');
  const found = count === 0 ? 'No results' : `${count} result${count === 1 ? '' : 's'}`;
  return `${found} for "${input.query}"${scope ? ` ${scope}` : ''}${suffix}`;
}

/** Whether `url` is on `site` or one of its subdomains. */
export function isOnSite(url: string, site: string): boolean {
  try {
    const host = new URL(url).hostname.toLowerCase();
    const wanted = site.toLowerCase();
    return host === wanted || host.endsWith(`.${wanted}`);
  } catch {
    return false;
  }
}
