import { ReadFailure } from '../../core/read-failure.ts';
import { z } from '../../core/zod.ts';
import { isOnSite, recencyWindowMs, type SearchHit, type SearchQuery } from './types.ts';

/** What the search service must answer; anything else is `malformed`. Extra fields are ignored. */
const upstreamHit = z.object({
  title: z.string(),
  url: z.string(),
  snippet: z.string().nullish(),
  site_name: z.string().nullish(),
  published_at: z.string().nullish(),
});
const upstreamEnvelope = z.object({
  results: z.array(upstreamHit),
  /** Upstream pages it fetched, when it says. */
  pages: z.number().int().min(0).optional(),
});
type UpstreamHit = z.infer<typeof upstreamHit>;

export function readEnvelope(text: string): z.infer<typeof upstreamEnvelope> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ReadFailure('malformed', 'search service answered with something that is not JSON');
  }
  const parsed = upstreamEnvelope.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ReadFailure('malformed', `search service answered an unexpected shape (${issue?.path.join('.') || 'body'}: ${issue?.message})`);
  }
  return parsed.data;
}

/**
 * Our results from the service's: only http(s) URLs, dates as ISO 8601 (unreadable ones dropped),
 * at most `limit`, and the `site`/`recency` filters enforced here too, so a service that ignores
 * them cannot hand the user results they excluded.
 */
export function mapUpstreamHits(hits: UpstreamHit[], input: SearchQuery, now = Date.now()): SearchHit[] {
  const results: SearchHit[] = [];
  for (const hit of hits) {
    if (results.length >= input.limit) break;
    if (!isWebUrl(hit.url)) continue;
    if (input.site && !isOnSite(hit.url, input.site)) continue;
    const published = hit.published_at ? Date.parse(hit.published_at) : Number.NaN;
    if (input.recency && !Number.isNaN(published) && published < now - recencyWindowMs[input.recency]) continue;
    results.push({
      title: hit.title.trim() || hit.url,
      url: hit.url,
      snippet: hit.snippet?.trim() ?? '',
      ...(hit.site_name && { site_name: hit.site_name }),
      ...(!Number.isNaN(published) && { published_at: new Date(published).toISOString() }),
    });
  }
  return results;
}

function isWebUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
