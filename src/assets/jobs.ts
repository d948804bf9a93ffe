import { defineJob } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

const assetPayload = z.object({ asset_id: z.string().uuid() });
export type AssetJobPayload = z.output<typeof assetPayload>;

/**
 * Link import: download the asset's source URL through the SSRF guard and store the file; its end
 * hands over to enrichment, or ends the asset in `error` (a refusal, the last failed attempt, a
 * cancel). Retried with backoff on transient failures.
 */
export const assetImportJob = defineJob({
  name: 'asset.import-link',
  version: 1,
  nature: 'waits',
  payload: assetPayload,
  searchable: ['asset_id'],
  policy: { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, retryDelayMaxSeconds: 300, expireInSeconds: 10 * 60 },
  expectedSeconds: 30,
});

/**
 * Enrichment: size and checksum, then by kind — image dimensions, orientation and thumbnails; PDF
 * pages and text; DOCX text; audio/video duration, codec, bitrate; text encoding, lines — → the
 * asset's `enrichment` (or `enrichment_error`), with the job's end. Stages are recorded as they
 * finish, so a retry resumes (./handlers.ts `enrichAsset`).
 */
export const assetEnrichmentJob = defineJob({
  name: 'asset.enrich',
  version: 1,
  nature: 'computes',
  payload: assetPayload,
  searchable: ['asset_id'],
  policy: { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, retryDelayMaxSeconds: 300, expireInSeconds: 5 * 60 },
  expectedSeconds: 10,
});
