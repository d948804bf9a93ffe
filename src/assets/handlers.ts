// Worker side of the asset jobs (loaded by `assetImportJob.handler` / `assetEnrichmentJob.handler`, never by the web process).
import type { JobContext } from '../jobs/define.ts';
import { parseAllowlist } from '../net/address-policy.ts';
import { OutboundFetchError } from '../net/errors.ts';
import { safeFetch, type SafeFetchResult } from '../net/safe-fetch.ts';
import type { Deps } from '../platform/deps.ts';
import { enrich, UnreadableAssetError, type Enrichment } from './enrichment.ts';
import { completeImport, failImport, finishEnrichment, importSucceeded, pendingImport, startEnrichment, type EnrichmentSubject } from './import-state.ts';
import type { AssetJobPayload } from './jobs.ts';
import { isImportableMediaType } from './media-types.ts';
import { assetFileKey } from './presenter.ts';

/**
 * Downloads a link-imported asset through the SSRF guard and stores it. Idempotent: only an asset
 * still `in_progress` is worked on, the file goes to a key derived from the asset id (a retry
 * overwrites it), and the state change is conditional (see import-state.ts). Refusals are permanent
 * (no retry); transient failures are retried with backoff and end in `error` on the last attempt.
 */
export async function importLink({ asset_id }: AssetJobPayload, { deps, log, signal, lastAttempt }: JobContext): Promise<void> {
  const asset = await pendingImport(deps.db, asset_id);
  if (!asset) return log.info({ asset_id }, 'asset import: nothing to do');
  let fetched: SafeFetchResult;
  try {
    fetched = await safeFetch(asset.import_parameters.source_url, {
      allowlist: parseAllowlist(deps.config.OUTBOUND_ALLOWLIST),
      timeoutMs: deps.config.ASSET_IMPORT_TIMEOUT_MS,
      maxBytes: deps.config.ASSET_IMPORT_MAX_BYTES,
      acceptContentType: isImportableMediaType,
      signal,
    });
  } catch (error) {
    if (!(error instanceof OutboundFetchError)) throw error;
    if (!error.permanent && !lastAttempt) throw error;
    log.warn({ asset_id, code: error.code, reason: error.message }, 'asset import refused or failed');
    await failImport(deps.db, asset, { code: error.code, message: error.message });
    return;
  }

  const key = assetFileKey(asset.organization_id, asset.id);
  await deps.providers.storage.put(key, fetched.body, fetched.contentType);
  const finished = await completeImport(deps, asset, {
    finalUrl: fetched.finalUrl,
    redirects: fetched.redirects,
    contentType: fetched.contentType,
    contentTypeHeader: fetched.contentTypeHeader ?? null,
    size: fetched.body.length,
  });
  // Another attempt ended the asset meanwhile: never leave a file behind an asset that is not `success`.
  if (!finished && !(await importSucceeded(deps.db, asset.id))) await deps.providers.storage.delete(key);
}

/**
 * Measures an asset: pending → in_progress → success | error. Idempotent: only pending or
 * in_progress assets are worked on, and the final write is conditional on in_progress, so a
 * repeated attempt rewrites the same facts or nothing.
 */
export async function enrichAsset({ asset_id }: AssetJobPayload, { deps, log, lastAttempt }: JobContext): Promise<void> {
  const asset = await startEnrichment(deps.db, asset_id);
  if (!asset) return log.info({ asset_id }, 'asset enrichment: nothing to do');
  let learned: Enrichment;
  try {
    learned = await measure(deps, asset);
  } catch (error) {
    const permanent = error instanceof UnreadableAssetError;
    if (!permanent && !lastAttempt) throw error;
    await finishEnrichment(deps.db, asset, {
      state: 'error',
      error: { code: permanent ? 'unreadable' : 'enrichment_failed', message: (error as Error).message },
    });
    return;
  }
  await finishEnrichment(deps.db, asset, { state: 'success', enrichment: learned });
}

async function measure(deps: Deps, asset: EnrichmentSubject): Promise<Enrichment> {
  if (asset.upload_file_state === 'success') {
    const file = await deps.providers.storage.get(assetFileKey(asset.organization_id, asset.id));
    if (!file) throw new UnreadableAssetError('the stored file is missing');
    return enrich(file.body, asset.type, file.contentType);
  }
  if (asset.content !== null) return enrich(Buffer.from(asset.content, 'utf8'), asset.type, asset.mime_type ?? 'text/plain');
  throw new UnreadableAssetError('the asset has neither a stored file nor content');
}
