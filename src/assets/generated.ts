/**
 * Assets a generation produced (src/generations): written by the worker inside the transaction that
 * settles the generation, so they exist exactly when its credits are captured. Their ids are chosen
 * by the caller (derived from the generation), so a repeated insert writes nothing.
 */
import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import type { Deps } from '../platform/deps.ts';
import { assetEnrichmentJob } from './jobs.ts';
import { assetFileKey, assetFileUrl } from './presenter.ts';

export interface GeneratedAsset {
  id: string;
  type: 'image' | 'audio' | 'video' | 'text';
  mimeType: string;
  title: string;
  /** Text generations keep their text in the asset too, as text assets do. */
  content?: string | undefined;
  metadata: Record<string, unknown>;
}

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
    const inserted = await trx('assets')
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
        enrichment_state: 'pending',
        metadata: JSON.stringify(asset.metadata),
        generation_id: generation.id,
        origin_conversation_id: generation.conversationId,
        origin_canvas_id: generation.canvasId,
      })
      .onConflict('id')
      .ignore()
      .returning('id');
    if (!inserted.length) continue;
    await recordActivity(trx, {
      organizationId: generation.organizationId,
      actorId: generation.createdById,
      action: 'asset.created',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { type: asset.type, title: asset.title, generation_id: generation.id },
    });
    await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: asset.id }, { organizationId: generation.organizationId });
  }
}
