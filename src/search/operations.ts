import { defineReadOperation, type ReadOperation } from '../metering/index.ts';
import { SEARCH_PAGE_SIZE } from '../providers/search/index.ts';
import { readUrlInput, readUrlOutput, searchInput, searchOutput } from './schema.ts';

/**
 * Web search: 1 credit a call plus 1 per upstream page of 10 results, so the default 10 results
 * cost 2 credits and the most (50) cost 6; the quote holds every page `limit` allows.
 */
export const search = defineReadOperation({
  name: 'search',
  description: 'Searches the web and returns titles, URLs and snippets of the best matches, optionally on one site or from a recent period.',
  input: searchInput,
  output: searchOutput,
  price: { per_request: 1, per_page: 1 },
  maxPages: (input) => Math.ceil(input.limit / SEARCH_PAGE_SIZE),
  perform: (input, { deps, signal, maxPages }) => deps.providers.search.search(input, { signal, maxPages }),
});

/**
 * Reads one page: a flat 2 credits (a page is one fetch, whatever its size; there are no pages to
 * count), more than a search page since it downloads and parses up to 5 MiB.
 */
export const read_url = defineReadOperation({
  name: 'read_url',
  description: 'Fetches a web page, PDF or text file and returns its readable text, title, author, language and links.',
  input: readUrlInput,
  output: readUrlOutput,
  price: { per_request: 2, per_page: 0 },
  maxPages: () => 1,
  perform: async (input, { deps, signal }) => {
    // Loaded on first use: the reader pulls in a DOM, Readability and pdf.js, which the web process
    // (it only needs these declarations for routes and quotes) should not load.
    const { readUrl } = await import('../reading/index.ts');
    return { result: await readUrl(input.url, { config: deps.config, signal }), pages: 1 };
  },
});

export const searchOperations: readonly ReadOperation[] = [search, read_url];

/** The operation with this name, or undefined. */
export const searchOperation = (name: string): ReadOperation | undefined => searchOperations.find((operation) => operation.name === name);
