import { recordActivity } from '../../src/activity/record.ts';
import { assetEnrichmentJob, assetImportJob } from '../../src/assets/jobs.ts';
import { isLastAttempt, mergeMetadata } from '../../src/assets/job-state.ts';
import { assetTypeOf, isImportableMediaType, titleFromUrl } from '../../src/assets/media-types.ts';
import { assetFileKey, assetFileUrl, type AssetRow, type ImportParameters } from '../../src/assets/presenter.ts';
import { parseAllowlist } from '../../src/net/address-policy.ts';
import { OutboundFetchError } from '../../src/net/errors.ts';
import { safeFetch, type SafeFetchResult } from '../../src/net/safe-fetch.ts';
import type { Deps } from '../../src/platform/deps.ts';
import { handle } from '../handler.ts';

/**
 * Downloads a link-imported asset through the SSRF guard and stores it. Idempotent: only an asset
 * still `in_progress` is worked on, the file goes to a key derived from the asset id (a retry
 * overwrites it), and the final state change is conditional on `in_progress`, so two attempts
 * cannot both finish it. Refusals are permanent (no retry); transient failures are retried with
 * backoff and end in `error` on the last attempt.
 */
export const assetImportHandler = handle(assetImportJob, async ({ asset_id }, { deps, job, log, signal }) => {
  const asset = (await deps.db('assets').where({ id: asset_id }).first('id', 'organization_id', 'title', 'upload_file_state', 'import_parameters')) as
    | Pick<AssetRow, 'id' | 'organization_id' | 'title' | 'upload_file_state' | 'import_parameters'>
    | undefined;
  if (!asset || asset.upload_file_state !== 'in_progress' || !asset.import_parameters) {
    log.info({ asset_id, state: asset?.upload_file_state ?? 'missing' }, 'asset import: nothing to do');
    return;
  }
  const parameters = asset.import_parameters;
  let fetched: SafeFetchResult;
  try {
    fetched = await safeFetch(parameters.source_url, {
      allowlist: parseAllowlist(deps.config.OUTBOUND_ALLOWLIST),
      timeoutMs: deps.config.ASSET_IMPORT_TIMEOUT_MS,
      maxBytes: deps.config.ASSET_IMPORT_MAX_BYTES,
      acceptContentType: isImportableMediaType,
      signal,
    });
  } catch (error) {
    if (!(error instanceof OutboundFetchError)) throw error;
    if (!error.permanent && !isLastAttempt(job, assetImportJob.policy.retryLimit)) throw error;
    log.warn({ asset_id, code: error.code, reason: error.message }, 'asset import refused or failed');
    await failImport(deps, asset, parameters, error);
    return;
  }

  const key = assetFileKey(asset.organization_id, asset.id);
  await deps.providers.storage.put(key, fetched.body, fetched.contentType);
  const finished = await deps.db.transaction(async (trx) => {
    const imported: ImportParameters = {
      ...parameters,
      final_url: fetched.finalUrl,
      redirects: fetched.redirects,
      content_type: fetched.contentTypeHeader ?? fetched.contentType,
      size: fetched.body.length,
      imported_at: new Date().toISOString(),
      error: null,
    };
    const base = deps.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';
    const updated = await trx('assets')
      .where({ id: asset.id, upload_file_state: 'in_progress' })
      .update({
        upload_file_state: 'success',
        type: assetTypeOf(fetched.contentType)!,
        mime_type: fetched.contentType,
        url: `${base}${assetFileUrl(asset.id)}`,
        title: trx.raw('coalesce(title, ?)', [titleFromUrl(fetched.finalUrl)]),
        enrichment_state: 'pending',
        import_parameters: JSON.stringify(imported),
        updated_at: trx.fn.now(),
      })
      .returning('id');
    if (!updated.length) return false;
    await recordActivity(trx, { organizationId: asset.organization_id, actorId: null, action: 'asset.imported', subjectType: 'asset', subjectId: asset.id, data: { content_type: fetched.contentType, size: fetched.body.length } });
    await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: asset.id });
    return true;
  });
  // Another attempt ended the asset meanwhile: never leave a file behind an asset that is not `success`.
  if (!finished && (await deps.db('assets').where({ id: asset.id }).first('upload_file_state'))?.upload_file_state !== 'success') {
    await deps.providers.storage.delete(key);
  }
});

async function failImport(deps: Deps, asset: { id: string; organization_id: string }, parameters: ImportParameters, error: OutboundFetchError): Promise<void> {
  const reason = { code: error.code, message: error.message };
  await deps.db.transaction(async (trx) => {
    const updated = await trx('assets')
      .where({ id: asset.id, upload_file_state: 'in_progress' })
      .update({
        upload_file_state: 'error',
        metadata: mergeMetadata(trx, { import_error: reason }),
        import_parameters: JSON.stringify({ ...parameters, error: reason }),
        updated_at: trx.fn.now(),
      })
      .returning('id');
    if (updated.length) await recordActivity(trx, { organizationId: asset.organization_id, actorId: null, action: 'asset.import_failed', subjectType: 'asset', subjectId: asset.id, data: reason });
  });
}
