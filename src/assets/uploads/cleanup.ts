// Worker side of the upload cleanup (./jobs.ts). Idempotent: each end is conditional on the upload
// still being open, and removing bytes that are gone already is no error.
import type { JobContext } from '../../jobs/define.ts';
import type { Deps } from '../../platform/deps.ts';
import { abandonUpload, removeStaging } from './finish.ts';
import { uploaderLostAccess, uploaderMayCreateSql } from './uploader.ts';

const BATCH = 200;

export async function cleanUpUploads(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const result = await sweepUploads(deps);
  if (result.expired || result.canceled || result.orphaned || result.removed) log.info(result, 'uploads cleaned up');
}

/** One sweep, in batches (exported for the tests and the benchmark, which run it on demand). */
export async function sweepUploads(
  deps: Pick<Deps, 'config' | 'db' | 'providers'>,
): Promise<{ expired: number; canceled: number; orphaned: number; removed: number }> {
  const result = { expired: 0, canceled: 0, orphaned: 0, removed: 0 };
  // Uploads whose creator left the organization or lost resources.create: terminated, their bytes removed below.
  const orphans = (await deps
    .db('asset_uploads as u')
    .where('u.state', 'in_progress')
    .whereRaw(`NOT ${uploaderMayCreateSql('u')}`)
    .orderBy('u.expires_at')
    .limit(BATCH)
    .pluck('u.id')) as string[];
  for (const id of orphans) {
    await abandonUpload(deps, id, 'canceled', uploaderLostAccess);
    result.orphaned++;
  }
  const open = (await deps
    .db('asset_uploads as u')
    .join('assets as a', 'a.id', 'u.asset_id')
    .where('u.state', 'in_progress')
    .andWhere((q) => q.where('u.expires_at', '<=', deps.db.fn.now()).orWhereNotNull('a.deleted_at'))
    .orderBy('u.expires_at')
    .limit(BATCH)
    .select('u.id', 'u.expires_at', deps.db.raw('a.deleted_at IS NOT NULL AS asset_deleted'))) as { id: string; expires_at: Date; asset_deleted: boolean }[];
  for (const upload of open) {
    if (upload.asset_deleted) {
      await abandonUpload(deps, upload.id, 'canceled', { code: 'asset_deleted', message: 'the asset was deleted during its upload' });
      result.canceled++;
    } else {
      await abandonUpload(deps, upload.id, 'expired', { code: 'upload_expired', message: `the upload was not finished by ${upload.expires_at.toISOString()}` });
      result.expired++;
    }
  }
  const left = (await deps
    .db('asset_uploads')
    .whereNot({ state: 'in_progress' })
    .whereNull('staging_removed_at')
    .orderBy('ended_at')
    .limit(BATCH)
    .pluck('id')) as string[];
  for (const id of left) {
    await removeStaging(deps, id);
    result.removed++;
  }
  return result;
}
