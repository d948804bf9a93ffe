import { z } from '../../core/zod.ts';
import { defineJob } from '../../jobs/define.ts';

/** The social operations whose results are public trends, cached for everyone. */
export const trendOperations = ['net2_trends', 'net3_trend_scan'] as const;

const refreshTrendsPayload = z.object({ operation: z.enum(trendOperations), region: z.string().regex(/^(?:[A-Z]{2}|global)$/) });
export type RefreshTrendsPayload = z.output<typeof refreshTrendsPayload>;

/**
 * Fetches one network's trends for one region through the social provider and caches them
 * (unbilled: public data shared by every organization). Enqueued by a request that found the
 * cache missing or stale, once per operation and region at a time (claimed in ./store.ts).
 */
export const refreshTrendsJob = defineJob({
  name: 'social.refresh-trends',
  version: 1,
  nature: 'waits',
  payload: refreshTrendsPayload,
  policy: { retryLimit: 2, retryDelaySeconds: 5, expireInSeconds: 5 * 60 },
});
