import { recordActivity } from '../core/activity.ts';
import type { Db, Tx } from '../db/knex.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Deps } from '../platform/deps.ts';
import type { Enrichment } from './enrichment.ts';
import { recordAssetEvent } from './events.ts';
import { assetEnrichmentJob } from './jobs.ts';
import { assetTypeOf, titleFromUrl } from './media-types.ts';
import { assetFileUrl, type AssetRow, type ImportParameters, type JobFailure } from './presenter.ts';

/*
 * The states the background jobs move an asset through, and nothing else writes:
 *
 *   upload_file_state:  in_progress → success | error            (link import)
 *   enrichment_state:   pending → in_progress → success | error  (enrichment)
 *
 * Every transition is a conditional UPDATE on the state it leaves, so a retried or duplicated
 * attempt finds the asset already moved on and changes nothing. What the jobs learn goes to columns
 * of its own (`import_parameters`, `import_error`, `enrichment`, `enrichment_error`): `metadata`
 * belongs to the user and is never touched here.
 */

export type ImportSubject = Pick<AssetRow, 'id' | 'organization_id' | 'title'> & { import_parameters: ImportParameters };

/** The asset of a link import that is still to be done, or null (finished, deleted or never an import). */
export async function pendingImport(db: Db | Tx, assetId: string): Promise<ImportSubject | null> {
  const asset = (await db('assets').where({ id: assetId }).first('id', 'organization_id', 'title', 'upload_file_state', 'import_parameters')) as
    | Pick<AssetRow, 'id' | 'organization_id' | 'title' | 'upload_file_state' | 'import_parameters'>
    | undefined;
  if (asset?.upload_file_state !== 'in_progress' || !asset.import_parameters) return null;
  return { id: asset.id, organization_id: asset.organization_id, title: asset.title, import_parameters: asset.import_parameters };
}

export interface ImportedFile {
  finalUrl: string;
  redirects: string[];
  /** The media type without parameters (`text/plain`). */
  contentType: string;
  /** The header as sent (`text/plain; charset=utf-8`), when there was one. */
  contentTypeHeader: string | null;
  size: number;
}

/**
 * in_progress → success: records what the import found, then hands over to enrichment (enqueued in
 * the same transaction). False when another attempt ended the import first.
 */
export async function completeImport(deps: Pick<Deps, 'config' | 'db' | 'jobs'>, asset: ImportSubject, file: ImportedFile): Promise<boolean> {
  return inTransaction(deps.db, async (trx) => {
    const imported: ImportParameters = {
      ...asset.import_parameters,
      final_url: file.finalUrl,
      redirects: file.redirects,
      content_type: file.contentTypeHeader ?? file.contentType,
      size: file.size,
      imported_at: new Date().toISOString(),
      error: null,
    };
    const base = deps.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';
    const updated = await trx('assets')
      .where({ id: asset.id, upload_file_state: 'in_progress' })
      .update({
        upload_file_state: 'success',
        type: assetTypeOf(file.contentType)!,
        mime_type: file.contentType,
        url: `${base}${assetFileUrl(asset.id)}`,
        title: trx.raw('coalesce(title, ?)', [titleFromUrl(file.finalUrl)]),
        enrichment_state: 'pending',
        import_parameters: JSON.stringify(imported),
        import_error: null,
        updated_at: trx.fn.now(),
      })
      .returning('id');
    if (!updated.length) return false;
    await recordActivity(trx, {
      organizationId: asset.organization_id,
      actorId: null,
      action: 'asset.imported',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { content_type: file.contentType, size: file.size },
    });
    await recordAssetEvent(trx, 'asset.import.succeeded', asset.id);
    await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: asset.id }, { organizationId: asset.organization_id });
    return true;
  });
}

/** in_progress → error, with the reason in `import_error` (and the import parameters). False when already ended. */
export async function failImport(db: Db | Tx, asset: ImportSubject, reason: JobFailure): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const updated = await trx('assets')
      .where({ id: asset.id, upload_file_state: 'in_progress' })
      .update({
        upload_file_state: 'error',
        import_error: JSON.stringify(reason),
        import_parameters: JSON.stringify({ ...asset.import_parameters, error: reason }),
        updated_at: trx.fn.now(),
      })
      .returning('id');
    if (!updated.length) return false;
    await recordActivity(trx, {
      organizationId: asset.organization_id,
      actorId: null,
      action: 'asset.import_failed',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { ...reason },
    });
    await recordAssetEvent(trx, 'asset.import.failed', asset.id);
    return true;
  });
}

/** error → in_progress for a retried import (an operator's retry of its failed job): the error cleared. False when it is not in error. */
export async function reopenImport(db: Db | Tx, assetId: string): Promise<boolean> {
  const reopened = await db('assets')
    .where({ id: assetId, upload_file_state: 'error' })
    .whereNotNull('import_parameters')
    .update({
      upload_file_state: 'in_progress',
      import_error: null,
      import_parameters: db.raw(`import_parameters - 'error'`),
      updated_at: db.fn.now(),
    })
    .returning('id');
  return reopened.length === 1;
}

/** Whether the asset's file is stored for good (its import succeeded). */
export async function importSucceeded(db: Db, assetId: string): Promise<boolean> {
  return (await db('assets').where({ id: assetId }).first('upload_file_state'))?.upload_file_state === 'success';
}

export type EnrichmentSubject = Pick<AssetRow, 'id' | 'organization_id' | 'type' | 'mime_type' | 'content' | 'upload_file_state'>;

/**
 * pending → in_progress. Returns the asset to measure, or null when there is nothing to do. An asset
 * already in_progress (a crashed attempt) is measured again.
 */
export async function startEnrichment(db: Db | Tx, assetId: string): Promise<EnrichmentSubject | null> {
  const asset = (await db('assets')
    .where({ id: assetId })
    .first('id', 'organization_id', 'type', 'mime_type', 'content', 'upload_file_state', 'enrichment_state')) as
    | (EnrichmentSubject & Pick<AssetRow, 'enrichment_state'>)
    | undefined;
  if (!asset || (asset.enrichment_state !== 'pending' && asset.enrichment_state !== 'in_progress')) return null;
  await db('assets').where({ id: assetId, enrichment_state: 'pending' }).update({ enrichment_state: 'in_progress', updated_at: db.fn.now() });
  const { enrichment_state: _state, ...subject } = asset;
  return subject;
}

export type EnrichmentOutcome = { state: 'success'; enrichment: Enrichment } | { state: 'error'; error: JobFailure };

/**
 * in_progress → success | error, recording what was measured or why not (an error also from
 * pending: a queued enrichment canceled or failed for good). False when another attempt finished first.
 */
export async function finishEnrichment(db: Db | Tx, asset: Pick<EnrichmentSubject, 'id' | 'organization_id'>, outcome: EnrichmentOutcome): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const findings =
      outcome.state === 'success'
        ? { enrichment: JSON.stringify(outcome.enrichment), enrichment_error: null }
        : { enrichment: null, enrichment_error: JSON.stringify(outcome.error) };
    const updated = await trx('assets')
      .where({ id: asset.id })
      .whereIn('enrichment_state', outcome.state === 'success' ? ['in_progress'] : ['pending', 'in_progress'])
      .update({ enrichment_state: outcome.state, ...findings, updated_at: trx.fn.now() })
      .returning('id');
    if (!updated.length) return false;
    await recordActivity(trx, {
      organizationId: asset.organization_id,
      actorId: null,
      action: outcome.state === 'success' ? 'asset.enriched' : 'asset.enrichment_failed',
      subjectType: 'asset',
      subjectId: asset.id,
      data: outcome.state === 'success' ? { enrichment: outcome.enrichment } : { enrichment_error: outcome.error },
    });
    if (outcome.state === 'success') await recordAssetEvent(trx, 'asset.enriched', asset.id);
    return true;
  });
}
