import { recordActivity } from '../../src/activity/record.ts';
import { enrich, UnreadableAssetError, type Enrichment } from '../../src/assets/enrichment.ts';
import { isLastAttempt, mergeMetadata } from '../../src/assets/job-state.ts';
import { assetEnrichmentJob } from '../../src/assets/jobs.ts';
import { assetFileKey, type AssetRow } from '../../src/assets/presenter.ts';
import type { Deps } from '../../src/platform/deps.ts';
import { handle } from '../handler.ts';

type Subject = Pick<AssetRow, 'id' | 'organization_id' | 'type' | 'mime_type' | 'content' | 'upload_file_state' | 'enrichment_state'>;

/**
 * Measures an asset: pending → in_progress → success | error. Idempotent: only pending or
 * in_progress assets are worked on (in_progress again after a crashed attempt), and the final
 * write is conditional on in_progress, so a repeated attempt rewrites the same facts or nothing.
 */
export const assetEnrichmentHandler = handle(assetEnrichmentJob, async ({ asset_id }, { deps, job, log }) => {
  const asset = (await deps.db('assets').where({ id: asset_id }).first('id', 'organization_id', 'type', 'mime_type', 'content', 'upload_file_state', 'enrichment_state')) as Subject | undefined;
  if (!asset || (asset.enrichment_state !== 'pending' && asset.enrichment_state !== 'in_progress')) {
    log.info({ asset_id, state: asset?.enrichment_state ?? 'missing' }, 'asset enrichment: nothing to do');
    return;
  }
  await deps.db('assets').where({ id: asset_id, enrichment_state: 'pending' }).update({ enrichment_state: 'in_progress', updated_at: deps.db.fn.now() });

  let learned: Enrichment;
  try {
    learned = await measure(deps, asset);
  } catch (error) {
    const permanent = error instanceof UnreadableAssetError;
    if (!permanent && !isLastAttempt(job, assetEnrichmentJob.policy.retryLimit)) throw error;
    await finish(deps, asset, 'error', { enrichment_error: (error as Error).message });
    return;
  }
  await finish(deps, asset, 'success', { enrichment: learned });
});

async function measure(deps: Deps, asset: Subject): Promise<Enrichment> {
  if (asset.upload_file_state === 'success') {
    const file = await deps.providers.storage.get(assetFileKey(asset.organization_id, asset.id));
    if (!file) throw new UnreadableAssetError('the stored file is missing');
    return enrich(file.body, asset.type, file.contentType);
  }
  if (asset.content !== null) return enrich(Buffer.from(asset.content, 'utf8'), asset.type, asset.mime_type ?? 'text/plain');
  throw new UnreadableAssetError('the asset has neither a stored file nor content');
}

async function finish(deps: Deps, asset: Subject, state: 'success' | 'error', patch: Record<string, unknown>): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const updated = await trx('assets')
      .where({ id: asset.id, enrichment_state: 'in_progress' })
      .update({ enrichment_state: state, metadata: mergeMetadata(trx, patch), updated_at: trx.fn.now() })
      .returning('id');
    if (!updated.length) return;
    await recordActivity(trx, { organizationId: asset.organization_id, actorId: null, action: state === 'success' ? 'asset.enriched' : 'asset.enrichment_failed', subjectType: 'asset', subjectId: asset.id, data: patch });
  });
}
