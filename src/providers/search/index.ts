import { HttpSearchProvider } from './http.ts';
import { SandboxSearchProvider } from './sandbox.ts';
import type { HttpTuning } from '../http-retry.ts';
import type { SearchProvider } from './types.ts';

export type { SearchHit, SearchProvider, SearchQuery, SearchRecency, SearchResult } from './types.ts';
export { SEARCH_PAGE_SIZE, searchRecencies } from './types.ts';
export { HttpSearchProvider, type HttpSearchOptions } from './http.ts';
export { SandboxSearchProvider } from './sandbox.ts';

export interface SearchProviderOptions extends HttpTuning {
  /** SEARCH_API_URL; unset → the deterministic sandbox. */
  apiUrl?: string | undefined;
  apiKey?: string | undefined;
}

export function createSearchProvider({ apiUrl, ...tuning }: SearchProviderOptions): SearchProvider {
  return apiUrl ? new HttpSearchProvider({ baseUrl: apiUrl, ...tuning }) : new SandboxSearchProvider();
}
