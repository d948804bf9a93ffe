// Worker side of the asset jobs (loaded by `assetImportJob.handler` / `assetEnrichmentJob.handler`, never by the web process).
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { parseAllowlist } from '../net/address-policy.ts';
import { OutboundFetchError } from '../net/errors.ts';
import { safeFetch, type SafeFetchResult } from '../net/safe-fetch.ts';
import type { Deps } from '../platform/deps.ts';
import { setTimeout } from 'node:timers/promises';
import { basics, type Enrichment, type StageName, type StageResult, stagesFor, UnreadableAssetError } from './enrichment.ts';
import { recordedStages, recordStage } from './enrichment-stages.ts';
import { probeImage, readText, renderThumbnails } from './extractors.ts';
import { extractContained } from './extraction/contained.ts';
import { extractionLimits } from './extraction/limits.ts';
import { type EnrichmentSubject, type ImportedFile, pendingImport, startEnrichment } from './import-state.ts';
import type { AssetJobPayload } from './jobs.ts';
import { isImportableMediaType } from './media-types.ts';
import { assetFileKey, assetThumbnailKey } from './presenter.ts';

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
 * Enriches an asset (pending → in_progress here; its end records success or error,
 * ./enrichment-ends.ts): size and checksum, then the stages its kind goes through
 * (./enrichment.ts `stagesFor`). Each finished stage is recorded with its effects in one
 * lease-holding step (./enrichment-stages.ts), so an attempt cut short anywhere is resumed by the
 * next one from the first stage not recorded; stages write to keys derived from the asset, so
 * one repeated after a crash between its work and its record overwrites, never duplicates.
 * Unreadable bytes (and decompression bombs) fail for good at once; other failures are retried,
 * and the last one ends it in `error`.
 */
export async function enrichAsset({ asset_id }: AssetJobPayload, { deps, step, signal }: JobContext): Promise<Enrichment | NothingToDo> {
  const asset = await step((trx) => startEnrichment(trx, asset_id));
  if (!asset) return nothingToDo('the asset needs no enrichment (measured already, or gone)');
  try {
    const source = await bytesOf(deps, asset);
    const enrichment = basics(source.bytes, source.mediaType);
    const checksum = enrichment.checksum.value;
    const done = await recordedStages(deps.db, asset.id, checksum);
    // Inline content is text whatever the asset's type says; a stored file is what its media type says.
    const stages: StageName[] = source.fromFile ? stagesFor(asset.type, source.mediaType) : ['text'];
    for (const stage of stages) {
      signal.throwIfAborted();
      let facts = done.get(stage)?.facts;
      if (!facts) {
        const result = await runStage(deps, asset, stage, source, signal);
        await step((trx) => recordStage(trx, asset.id, checksum, stage, result, source.fromFile));
        facts = result.facts;
        // Tests widen the window between stages to kill a worker in it.
        if (deps.config.ASSET_ENRICHMENT_STAGE_DELAY_MS > 0) await setTimeout(deps.config.ASSET_ENRICHMENT_STAGE_DELAY_MS, undefined, { signal });
      }
      Object.assign(enrichment, facts);
    }
    return enrichment;
  } catch (error) {
    if (error instanceof UnreadableAssetError) throw failForGood(error.code, error.message, error);
    throw error;
  }
}

/** What enrichment measures of a file, measured by the worker that made it (./generated.ts records it with the asset). */
export interface MeasuredFile {
  enrichment: Enrichment;
  /** The text the file reads as (text files): the asset's extracted text. */
  text?: string;
}

/**
 * Enrichment of bytes a worker already holds and has stored under the asset's key (a generated
 * file): the same stages `enrichAsset` runs for a stored file of that media type, their effects
 * (thumbnails) stored under the same keys, in one go — nothing is recorded per stage, because the
 * caller records the result with the asset itself, and a retried caller measures again. Throws what
 * a stage throws (the caller then leaves the asset to the enrichment job, which records the error).
 */
export async function measureStoredFile(
  deps: Pick<Deps, 'config' | 'providers'>,
  asset: Pick<EnrichmentSubject, 'id' | 'organization_id' | 'type'>,
  bytes: Buffer,
  mediaType: string,
  signal: AbortSignal,
): Promise<MeasuredFile> {
  const source: Source = { bytes, mediaType, fromFile: true };
  const enrichment = basics(bytes, mediaType);
  let text: string | undefined;
  for (const stage of stagesFor(asset.type, mediaType)) {
    signal.throwIfAborted();
    const result = await runStage(deps, asset, stage, source, signal);
    Object.assign(enrichment, result.facts);
    if (result.text !== undefined) text = result.text;
  }
  return { enrichment, ...(text !== undefined && { text }) };
}

interface Source {
  bytes: Buffer;
  mediaType: string;
  /** From object storage (an imported or uploaded file), not the asset's inline `content`. */
  fromFile: boolean;
}

async function bytesOf(deps: Pick<Deps, 'config' | 'providers'>, asset: EnrichmentSubject): Promise<Source> {
  if (asset.upload_file_state === 'success') {
    const key = assetFileKey(asset.organization_id, asset.id);
    // Its size first, from one byte of it: a file of gigabytes (uploads may be 5 GiB) is never read into memory.
    const head = await deps.providers.storage.open(key, { start: 0, end: 0 });
    if (!head) throw new UnreadableAssetError('the stored file is missing');
    head.body.on('error', () => undefined).destroy();
    const max = deps.config.ASSET_EXTRACTION_MAX_FILE_BYTES;
    if (head.size > max)
      throw new UnreadableAssetError(`the file is ${head.size} bytes, more than the ${max} enrichment opens; it was not read`, 'file_too_large');
    const file = await deps.providers.storage.get(key);
    if (!file) throw new UnreadableAssetError('the stored file is missing');
    return { bytes: file.body, mediaType: file.contentType, fromFile: true };
  }
  if (asset.content !== null) return { bytes: Buffer.from(asset.content, 'utf8'), mediaType: asset.mime_type ?? 'text/plain', fromFile: false };
  throw new UnreadableAssetError('the asset has neither a stored file nor content');
}

async function runStage(
  deps: Pick<Deps, 'config' | 'providers'>,
  asset: Pick<EnrichmentSubject, 'id' | 'organization_id'>,
  stage: StageName,
  { bytes, mediaType }: Source,
  signal: AbortSignal,
): Promise<StageResult> {
  const maxPixels = deps.config.ASSET_IMAGE_MAX_PIXELS;
  switch (stage) {
    case 'image':
      return probeImage(bytes, maxPixels);
    case 'thumbnails': {
      const rendered = await renderThumbnails(bytes, maxPixels, deps.config.ASSET_EXTRACTION_TIMEOUT_SECONDS);
      // One file per distinct rendition, under the smallest size it serves (thumbnailFileSize).
      const files = new Map(rendered.toReversed().map(({ thumbnail, body }) => [body, thumbnail]));
      await Promise.all(
        [...files].map(([body, thumbnail]) =>
          deps.providers.storage.put(assetThumbnailKey(asset.organization_id, asset.id, thumbnail.size), body, thumbnail.media_type),
        ),
      );
      return { facts: { thumbnails: rendered.map(({ thumbnail }) => thumbnail) } };
    }
    case 'pdf':
    case 'docx':
    case 'media':
      // Parsers of documents and media run in a thread under memory and time ceilings: a hostile file ends the thread, not the worker.
      return extractContained(stage, bytes, mediaType, extractionLimits(deps.config), signal);
    case 'text':
      return readText(bytes);
  }
}
