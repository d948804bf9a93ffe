import { z } from '../core/zod.ts';
import { listing, signedIn } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { socialOperation } from './catalog/index.ts';
import { getTrends } from './trends/service.ts';
import type { TrendsRow } from './trends/store.ts';

const tag = 'Social';

const regionParam = z
  .string()
  .regex(/^(?:[A-Za-z]{2}|global)$/, 'must be an ISO 3166-1 alpha-2 country code (e.g. "US") or "global"')
  .transform((region) => (region === 'global' ? region : region.toUpperCase()))
  .describe('ISO 3166-1 alpha-2 country code (any case, e.g. "US") or "global"');

const topics = socialOperation('net2_trends')!;
const scan = socialOperation('net3_trend_scan')!;

const snapshotOf = (result: z.ZodType, network: 'net2' | 'net3', operation: string) =>
  z.object({
    network: z.literal(network),
    operation: z.literal(operation).describe('The social operation whose result this is'),
    region: z.string(),
    fetched_at: z.string().describe('When the result was fetched; it is refreshed when older than the cache lifetime'),
    result,
  });
const topicsSnapshot = snapshotOf(topics.output, 'net2', topics.name);
const scanSnapshot = snapshotOf(scan.output, 'net3', scan.name);

const present = (row: TrendsRow, network: 'net2' | 'net3') => ({
  network,
  operation: row.operation,
  region: row.region,
  fetched_at: row.fetched_at.toISOString(),
  result: row.result,
});

const caching =
  'Public data, the same for every caller and not billed: served from a cache that a worker refreshes through the social provider when it is older than SOCIAL_TRENDS_TTL_SECONDS (a stale answer is served while the refresh runs). The first request for a region waits for the first fetch (504 if it does not come in time, 502 if it fails). A failed fetch is remembered for SOCIAL_TRENDS_FAILURE_TTL_SECONDS (default 60): meanwhile a region with nothing cached answers 502 at once, with Retry-After, and the provider is not asked again.';

function publicTrendsRoute(route: {
  path: string;
  operationId: string;
  summary: string;
  operation: 'net2_trends' | 'net3_trend_scan';
  schema: z.ZodType;
}): AnyRoute {
  const network = route.operation === 'net2_trends' ? 'net2' : 'net3';
  return defineRoute({
    method: 'get',
    path: route.path,
    operationId: route.operationId,
    tag,
    summary: route.summary,
    description: `The result of \`${route.operation}\` for the region. ${caching}`,
    params: z.object({ region: regionParam }),
    response: { status: 200, description: 'The snapshot', schema: route.schema },
    errors: [502, 504],
    authorize: signedIn('public trends are the same for every signed-in caller'),
    handler: async ({ params, deps }) => present(await getTrends(deps, route.operation, params.region), network) as never,
  });
}

/** Public trends (spec §4.11 Social): cached, unbilled reads of the trend operations. */
export const socialTrendRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/social/trends',
    operationId: 'listSocialTrends',
    tag,
    summary: 'Trending topics (net2) and rising hashtags, sounds and creators (net3) of a region',
    description: `Both trend snapshots of the region (\`global\` by default). ${caching} A caller outside the organization gets an empty list.`,
    query: z.object({ organization_id: z.string().min(1).max(64), region: regionParam.optional() }),
    response: { status: 200, description: 'The snapshots', schema: z.object({ trends: z.array(z.union([topicsSnapshot, scanSnapshot])) }) },
    errors: [502, 504],
    authorize: listing('query'),
    handler: async ({ query, actor, deps }) => {
      if (!(await actor.membership(query.organization_id))) return { trends: [] };
      const region = query.region ?? 'global';
      const [net2, net3] = await Promise.all([getTrends(deps, 'net2_trends', region), getTrends(deps, 'net3_trend_scan', region)]);
      return { trends: [present(net2, 'net2'), present(net3, 'net3')] };
    },
  }),
  publicTrendsRoute({
    path: '/social/trends/public/{region}',
    operationId: 'getPublicSocialTrends',
    summary: 'Trending topics of a region (net2)',
    operation: 'net2_trends',
    schema: topicsSnapshot,
  }),
  // The path keeps the network's public name (spec §4.11); the data is net3's.
  publicTrendsRoute({
    path: '/social/tiktok-trends/public/{region}',
    operationId: 'getPublicNet3Trends',
    summary: 'Rising hashtags, sounds and creators of a region (net3)',
    operation: 'net3_trend_scan',
    schema: scanSnapshot,
  }),
];
