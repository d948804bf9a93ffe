import { createHash } from 'node:crypto';
import { ReadFailure } from '../../core/read-failure.ts';
import { recencyWindowMs, SEARCH_PAGE_SIZE, type SearchHit, type SearchProvider, type SearchQuery, type SearchResult, searchSummary } from './types.ts';

const hosts = ['example.com', 'example.org', 'example.net', 'docs.example.com', 'blog.example.org'];
const siteNames: Record<string, string> = {
  'example.com': 'Example',
  'example.org': 'Example Org',
  'example.net': 'Example Net',
  'docs.example.com': 'Example Docs',
  'blog.example.org': 'Example Blog',
};
const kinds = ['A guide to', 'What to know about', 'Notes on', 'Frequently asked questions:', 'An introduction to', 'Ten facts about'];
const blurbs = [
  'covers the basics and links to further reading',
  'compares the common approaches with examples',
  'answers the questions people ask most often',
  'summarises recent developments in plain words',
  'walks through a worked example step by step',
];
/** Undated sandbox results fall in 2024, so the same query gives the same dates on any day. */
const FIXED_EPOCH = Date.UTC(2024, 0, 1);
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/**
 * Offline stand-in for the search service: plausible, deterministic results (the same input gives
 * the same results) on example.* hosts, honouring `limit`, `site` and `recency`. Two queries stand
 * for upstream trouble, so the machinery around it can be exercised without a real service.
 */
export class SandboxSearchProvider implements SearchProvider {
  readonly name = 'sandbox' as const;

  async search(input: SearchQuery, { signal, maxPages }: { signal: AbortSignal; maxPages: number }): Promise<{ result: SearchResult; pages: number }> {
    signal.throwIfAborted();
    const special = input.query.trim().toLowerCase();
    if (special === 'sandbox-timeout') throw new ReadFailure('timeout', 'sandbox search service did not answer in time');
    const pages = Math.max(1, Math.min(maxPages, Math.ceil(input.limit / SEARCH_PAGE_SIZE)));
    if (special === 'sandbox-malformed') {
      // Deliberately violates the output schema (no summary, a result without a url), so tests can
      // prove the caller validates provider output and answers 502 without charging.
      return { result: { query: input.query, results: [{ title: 42 }] } as unknown as SearchResult, pages };
    }
    const results = Array.from({ length: Math.min(input.limit, pages * SEARCH_PAGE_SIZE) }, (_, index) => sandboxHit(input, index));
    return { result: { query: input.query, results, summary: searchSummary(input, results.length, ' (sandbox results, not from the web)') }, pages };
  }
}

function sandboxHit(input: SearchQuery, index: number): SearchHit {
  const digest = createHash('sha256')
    .update(JSON.stringify([input.query, input.site ?? null, input.recency ?? null, index]))
    .digest();
  const topic = input.query.replace(/\s+/g, ' ').trim().slice(0, 80);
  const slug =
    topic
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 48) || 'topic';
  const host = input.site ? `${['', 'www.', 'docs.'][digest[0]! % 3]}${input.site}` : hosts[digest[0]! % hosts.length]!;
  const title = `${kinds[digest[1]! % kinds.length]} ${topic}`;
  const hit: SearchHit = {
    title,
    url: `https://${host}/${slug}/${digest.toString('hex').slice(0, 8)}`,
    snippet: `${title} — this page ${blurbs[digest[2]! % blurbs.length]}.`,
    site_name: siteNames[host] ?? host,
    published_at: new Date(publishedAt(input, digest)).toISOString(),
  };
  return hit;
}

/**
 * Inside the recency window counted back from the start of this hour (stable through the hour, and
 * an hour short of the window so it stays inside it until the hour ends), else a fixed 2024 date.
 */
function publishedAt(input: SearchQuery, digest: Buffer): number {
  if (!input.recency) return FIXED_EPOCH + (digest.readUInt16BE(3) % 365) * DAY_MS;
  const hour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
  return hour - (digest.readUInt32BE(5) % (recencyWindowMs[input.recency] - HOUR_MS));
}
