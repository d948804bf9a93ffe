/**
 * Assets a generation produced (src/generations): written by the worker inside the transaction that
 * settles the generation, so they exist exactly when its credits are captured. Their ids are chosen
 * by the caller (derived from the generation), so a repeated insert writes nothing.
 *
 * The generation's worker holds each file's bytes, so it measures them as enrichment would
 * (`measureGeneratedFile`): such an asset is created enriched — `enrichment_state: success`, its
 * `enrichment` and extracted text, and enrichment's own records (the `asset.enriched` activity and
 * event) in the same transaction — and no enrichment job runs for it. (A job for it cost ≈ 20
 * statements, its fetches and a job round per generation: bench:generations.) A file the worker could
 * not measure is left to the enrichment job as before: `pending`, the job enqueued with the asset.
 */
import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import type { Deps } from '../platform/deps.ts';
import { recordAssetRowEvent } from './events.ts';
import type { MeasuredFile } from './handlers.ts';
import { assetEnrichmentJob } from './jobs.ts';
import { type AssetRow, assetColumns, assetFileKey, assetFileUrl } from './presenter.ts';

export interface GeneratedAsset {
  id: string;
  type: 'image' | 'audio' | 'video' | 'text';
  mimeType: string;
  title: string;
  /** Text generations keep their text in the asset too, as text assets do. */
  content?: string | undefined;
  metadata: Record<string, unknown>;
  /** Its file as enrichment measures it, by the worker that made it; absent: the enrichment job measures it. */
  measured?: MeasuredFile | undefined;
}

/**
 * Measures a generated file as enrichment would (./handlers.ts `measureStoredFile`), in the
 * generation's worker. Loaded on first use: the extractors (sharp, pdf, docx, media) stay out of
 * the web process, which imports this module's domain.
 */
export const measureGeneratedFile = async (...args: Parameters<typeof import('./handlers.ts').measureStoredFile>): Promise<MeasuredFile> =>
  (await import('./handlers.ts')).measureStoredFile(...args);

/** Where a generated asset's bytes go before the settle (the same key an uploaded file uses). */
export const generatedAssetKey = assetFileKey;

export async function insertGeneratedAssets(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'config' | 'jobs'>,
  generation: { id: string; organizationId: string; createdById: string; conversationId: string | null; canvasId: string | null },
  assets: readonly GeneratedAsset[],
): Promise<void> {
  const base = deps.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';
  for (const asset of assets) {
    const { measured } = asset;
    const inserted = (await trx('assets')
      .insert({
        id: asset.id,
        organization_id: generation.organizationId,
        created_by_id: generation.createdById,
        type: asset.type,
        title: asset.title,
        mime_type: asset.mimeType,
        url: `${base}${assetFileUrl(asset.id)}`,
        content: asset.content ?? null,
        upload_file_state: 'success',
        enrichment_state: measured ? 'success' : 'pending',
        ...(measured && { enrichment: JSON.stringify(measured.enrichment), extracted_text: measured.text ?? null }),
        metadata: JSON.stringify(asset.metadata),
        generation_id: generation.id,
        origin_conversation_id: generation.conversationId,
        origin_canvas_id: generation.canvasId,
      })
      .onConflict('id')
      .ignore()
      .returning(assetColumns)) as AssetRow[];
    const row = inserted[0];
    if (!row) continue;
    await recordActivity(trx, {
      organizationId: generation.organizationId,
      actorId: generation.createdById,
      action: 'asset.created',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { type: asset.type, title: asset.title, generation_id: generation.id },
    });
    if (!measured) {
      await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: asset.id }, { organizationId: generation.organizationId });
      continue;
    }
    // What enrichment's success end records (./import-state.ts finishEnrichment), with the asset as inserted.
    await recordActivity(trx, {
      organizationId: generation.organizationId,
      actorId: null,
      action: 'asset.enriched',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { enrichment: measured.enrichment },
    });
    await recordAssetRowEvent(trx, 'asset.enriched', row);
  }
}
