import { recordActivity } from '../../core/activity.ts';
import type { Tx } from '../../db/knex.ts';
import { inTransaction } from '../../db/transaction.ts';
import type { Deps } from '../../platform/deps.ts';
import { assetEnrichmentJob } from '../jobs.ts';
import { recordAssetEvent } from '../events.ts';
import { assetFileKey, assetFileUrl, type JobFailure } from '../presenter.ts';
import { findUpload, type UploadRow } from './rows.ts';
import { uploadStore } from './store.ts';
import { uploaderLostAccess, uploaderMayStillCreate } from './uploader.ts';
import { checkType, measure } from './verify.ts';

/*
 * How an upload ends, and nothing else writes its state:
 *
 *   asset_uploads.state:      in_progress → completed | failed | expired | canceled
 *   assets.upload_file_state: in_progress → success   | error (the reason in import_error)
 *
 * Each end is a conditional UPDATE on in_progress under the upload's row lock, so a repeated
 * finish (a HEAD after a crash, a second PATCH) or the cleanup job finds it ended and changes
 * nothing. The staging bytes are removed after the end commits; `staging_removed_at` records it,
 * and the cleanup job removes what a crash in between left.
 */

export type FinishOutcome = { state: 'completed'; sha256: string } | { state: Exclude<UploadRow['state'], 'completed' | 'in_progress'>; error: JobFailure };

export const outcomeOf = (row: UploadRow): FinishOutcome | null =>
  row.state === 'in_progress' ? null : row.state === 'completed' ? { state: 'completed', sha256: row.sha256! } : { state: row.state, error: row.error! };

/**
 * A finished upload (every byte received): verifies size, checksum and type, keeps the bytes as
 * the asset's file and marks it `success` with its enrichment enqueued, in one transaction — or
 * ends it `failed` with the reason. Returns how it ended (also when it had ended already).
 */
export async function finishUpload(deps: Deps, uploadId: string): Promise<FinishOutcome> {
  const store = uploadStore(deps);
  const outcome = await inTransaction(deps.db, async (trx) => {
    const upload = (await findUpload(trx, uploadId, { forUpdate: true }))!;
    const ended = outcomeOf(upload);
    if (ended) return ended;
    const asset = (await trx('assets').where({ id: upload.asset_id }).forUpdate().first('id', 'deleted_at')) as { deleted_at: Date | null };
    if (asset.deleted_at) return endUpload(trx, upload, 'canceled', { code: 'asset_deleted', message: 'the asset was deleted during its upload' });
    // The creator removed or demoted while the last bytes arrived: the file does not land.
    if (!(await uploaderMayStillCreate(trx, upload))) return endUpload(trx, upload, 'canceled', uploaderLostAccess);
    const declared = { size: Number(upload.size), checksum: upload.checksum_sha256, mimeType: upload.mime_type };
    // Measured as the bytes arrived when this process received them all; read once more otherwise.
    const measured = store.received.take(upload.id, declared.size)?.verdict(declared) ?? (await measure(await store.read(upload.id), declared));
    if ('code' in measured) return endUpload(trx, upload, 'failed', measured);
    const typed = await checkType(await store.read(upload.id), upload.mime_type);
    if ('code' in typed) return endUpload(trx, upload, 'failed', typed);
    const { sha256 } = measured;
    // Kept and served as the type the bytes were confirmed to be: the declared one is a claim.
    const confirmed = typed.mimeType === upload.mime_type;
    await store.keep(upload.id, assetFileKey(upload.organization_id, upload.asset_id), typed.mimeType);
    await trx('asset_uploads').where({ id: upload.id }).update({ state: 'completed', sha256, ended_at: trx.fn.now() });
    const base = deps.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';
    await trx('assets')
      .where({ id: upload.asset_id, upload_file_state: 'in_progress' })
      .update({
        upload_file_state: 'success',
        url: `${base}${assetFileUrl(upload.asset_id)}`,
        enrichment_state: 'pending',
        updated_at: trx.fn.now(),
        ...(!confirmed && { mime_type: typed.mimeType }),
      });
    await recordActivity(trx, {
      organizationId: upload.organization_id,
      actorId: upload.created_by_id,
      action: 'asset.uploaded',
      subjectType: 'asset',
      subjectId: upload.asset_id,
      data: { upload_id: upload.id, size: Number(upload.size), sha256, mime_type: typed.mimeType, ...(!confirmed && { declared_mime_type: upload.mime_type }) },
    });
    await recordAssetEvent(trx, 'asset.upload.succeeded', upload.asset_id);
    await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: upload.asset_id }, { organizationId: upload.organization_id });
    return { state: 'completed', sha256 } as const;
  });
  await removeStaging(deps, uploadId);
  return outcome;
}

/** in_progress → failed | expired | canceled, its asset → `error` with the reason. The caller removes the bytes after commit. */
export async function endUpload(trx: Tx, upload: UploadRow, state: 'failed' | 'expired' | 'canceled', error: JobFailure): Promise<FinishOutcome> {
  const ended = await trx('asset_uploads')
    .where({ id: upload.id, state: 'in_progress' })
    .update({ state, error: JSON.stringify(error), ended_at: trx.fn.now() })
    .returning('id');
  if (!ended.length) return outcomeOf((await findUpload(trx, upload.id))!)!;
  await trx('assets')
    .where({ id: upload.asset_id, upload_file_state: 'in_progress' })
    .update({ upload_file_state: 'error', import_error: JSON.stringify(error), updated_at: trx.fn.now() });
  await recordActivity(trx, {
    organizationId: upload.organization_id,
    actorId: null,
    action: 'asset.upload_failed',
    subjectType: 'asset',
    subjectId: upload.asset_id,
    data: { upload_id: upload.id, state, error },
  });
  // A deleted asset's upload ends with it: no event about a resource no one can read any more.
  if (state !== 'canceled') await recordAssetEvent(trx, 'asset.upload.failed', upload.asset_id);
  return { state, error };
}

/** Ends an open upload (expired, canceled…) and removes its bytes; what already ended is left as it is. */
export async function abandonUpload(
  deps: Pick<Deps, 'config' | 'db' | 'providers'>,
  uploadId: string,
  state: 'expired' | 'canceled',
  error: JobFailure,
): Promise<FinishOutcome> {
  const outcome = await inTransaction(deps.db, async (trx) => {
    const upload = (await findUpload(trx, uploadId, { forUpdate: true }))!;
    return outcomeOf(upload) ?? endUpload(trx, upload, state, error);
  });
  await removeStaging(deps, uploadId);
  return outcome;
}

/** Removes the tus store's copy of an ended upload (a kept file lives on as the asset's) and records it. */
export async function removeStaging(deps: Pick<Deps, 'config' | 'db' | 'providers'>, uploadId: string): Promise<void> {
  const upload = await findUpload(deps.db, uploadId);
  if (!upload || upload.state === 'in_progress' || upload.staging_removed_at) return;
  await uploadStore(deps).remove(uploadId);
  await deps.db('asset_uploads').where({ id: uploadId }).update({ staging_removed_at: deps.db.fn.now() });
}
