// Worker side of the asset jobs (loaded by `assetImportJob.handler` / `assetEnrichmentJob.handler`, never by the web process).
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { parseAllowlist } from '../net/address-policy.ts';
import { OutboundFetchError } from '../net/errors.ts';
import { safeFetch, type SafeFetchResult } from '../net/safe-fetch.ts';
import type { Deps } from '../platform/deps.ts';
import { enrich, UnreadableAssetError, type Enrichment } from './enrichment.ts';
import { type EnrichmentSubject, type ImportedFile, pendingImport, startEnrichment } from './import-state.ts';
import type { AssetJobPayload } from './jobs.ts';
import { isImportableMediaType } from './media-types.ts';
import { assetFileKey } from './presenter.ts';

/**
 * Downloads a link-imported asset through the SSRF guard and stores it; its end (./import-ends.ts)
 * records the import and hands over to enrichment, or ends the asset in `error`. Idempotent: only
 * an asset still `in_progress` is worked on and the file goes to a key derived from the asset id
 * (a retry overwrites it). Refusals end it at once; transient failures are retried with backoff
 * and end it on the last attempt.
 */
export async function importLink({ asset_id }: AssetJobPayload, { deps, signal, lastAttempt }: JobContext): Promise<ImportedFile | NothingToDo> {
  const asset = await pendingImport(deps.db, asset_id);
  if (!asset) return nothingToDo('the asset is no longer being imported');
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
    if (!(error instanceof OutboundFetchError) || signal.aborted) throw error;
    if (error.permanent || lastAttempt) throw failForGood(error.code, error.message, error);
    throw error;
  }
  await deps.providers.storage.put(assetFileKey(asset.organization_id, asset.id), fetched.body, fetched.contentType);
  return {
    finalUrl: fetched.finalUrl,
    redirects: fetched.redirects,
    contentType: fetched.contentType,
    contentTypeHeader: fetched.contentTypeHeader ?? null,
    size: fetched.body.length,
  };
}

/**
 * Measures an asset (pending → in_progress here; its end records success or error, ./enrichment-ends.ts).
 * Idempotent: only pending or in_progress assets are worked on, and the end is conditional on the
 * state it leaves, so a repeated attempt rewrites the same facts or nothing. An unreadable asset
 * fails for good at once; other failures are retried, and the last one ends it in `error`.
 */
export async function enrichAsset({ asset_id }: AssetJobPayload, { deps, step }: JobContext): Promise<Enrichment | NothingToDo> {
  const asset = await step((trx) => startEnrichment(trx, asset_id));
  if (!asset) return nothingToDo('the asset needs no enrichment (measured already, or gone)');
  try {
    return await measure(deps, asset);
  } catch (error) {
    if (error instanceof UnreadableAssetError) throw failForGood('unreadable', error.message, error);
    throw error;
  }
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
