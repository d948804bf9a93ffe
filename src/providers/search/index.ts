import { HttpSearchProvider } from './http.ts';
import { SandboxSearchProvider } from './sandbox.ts';
import type { SearchProvider } from './types.ts';

export type { SearchHit, SearchProvider, SearchQuery, SearchRecency, SearchResult } from './types.ts';
export { SEARCH_PAGE_SIZE, searchRecencies } from './types.ts';
export { HttpSearchProvider, type HttpSearchOptions } from './http.ts';
export { SandboxSearchProvider } from './sandbox.ts';

export interface SearchProviderOptions {
  /** SEARCH_API_URL; unset → the deterministic sandbox. */
  apiUrl?: string | undefined;
  apiKey?: string | undefined;
  /** Tuning of the HTTP adapter (tests shorten them). */
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  maxRetries?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export function createSearchProvider({ apiUrl, ...tuning }: SearchProviderOptions): SearchProvider {
  return apiUrl ? new HttpSearchProvider({ baseUrl: apiUrl, ...tuning }) : new SandboxSearchProvider();
}
