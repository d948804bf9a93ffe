import { defineJob } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

/**
 * Link import: download the asset's source URL through the SSRF guard, store the file, then hand
 * over to enrichment. Retried with backoff on transient failures; refusals end the asset in `error`.
 */
export const assetImportJob = defineJob({
  name: 'asset.import-link',
  version: 1,
  payload: z.object({ asset_id: z.string().uuid() }),
  policy: { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, retryDelayMaxSeconds: 300, expireInSeconds: 10 * 60 },
});

/** Enrichment: size, checksum, image dimensions, text length → `metadata.enrichment`. */
export const assetEnrichmentJob = defineJob({
  name: 'asset.enrich',
  version: 1,
  payload: z.object({ asset_id: z.string().uuid() }),
  policy: { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, retryDelayMaxSeconds: 300, expireInSeconds: 5 * 60 },
});
