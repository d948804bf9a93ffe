import { defineJob } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

const assetPayload = z.object({ asset_id: z.string().uuid() });
export type AssetJobPayload = z.output<typeof assetPayload>;

/**
 * Link import: download the asset's source URL through the SSRF guard, store the file, then hand
 * over to enrichment. Retried with backoff on transient failures; refusals end the asset in `error`.
 */
export const assetImportJob = defineJob({
  name: 'asset.import-link',
  version: 1,
  payload: assetPayload,
  searchable: ['asset_id'],
  policy: { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, retryDelayMaxSeconds: 300, expireInSeconds: 10 * 60 },
  handler: () => import('./handlers.ts').then((m) => m.importLink),
});

/** Enrichment: size, checksum, image dimensions, text length → the asset's `enrichment`. */
export const assetEnrichmentJob = defineJob({
  name: 'asset.enrich',
  version: 1,
  payload: assetPayload,
  searchable: ['asset_id'],
  policy: { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, retryDelayMaxSeconds: 300, expireInSeconds: 5 * 60 },
  handler: () => import('./handlers.ts').then((m) => m.enrichAsset),
});
