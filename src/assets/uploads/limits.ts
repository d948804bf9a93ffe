import { AppError } from '../../core/errors.ts';
import type { Tx } from '../../db/knex.ts';
import type { Config } from '../../config/schema.ts';

/**
 * The storage limits, checked when an upload is created — before a byte is sent: a file over
 * UPLOAD_MAX_FILE_BYTES is 413; an organization whose uploads (finished, and in progress: their
 * size is reserved from creation) would pass UPLOAD_ORGANIZATION_LIMIT_BYTES is 409. Creations of
 * one organization are serialised on a transaction lock, so two cannot both fit the last room.
 */
export async function reserveStorage(trx: Tx, config: Config, organizationId: string, size: number): Promise<void> {
  if (size > config.UPLOAD_MAX_FILE_BYTES) {
    const message = `size: ${size} bytes is over the largest file this service takes (${config.UPLOAD_MAX_FILE_BYTES} bytes)`;
    throw new AppError('validation_failed', message, [{ path: ['size'], message: `at most ${config.UPLOAD_MAX_FILE_BYTES} bytes` }], { status: 413 });
  }
  await trx.raw(`SELECT pg_advisory_xact_lock(hashtextextended('asset_uploads:' || ?, 0))`, [organizationId]);
  const used = await storageUsed(trx, organizationId);
  const limit = config.UPLOAD_ORGANIZATION_LIMIT_BYTES;
  if (used + size > limit) {
    const message = `size: the organization holds ${used} of its ${limit} bytes of uploads; ${size} more do not fit`;
    throw new AppError('conflict', message, [{ path: ['size'], message: `at most ${Math.max(0, limit - used)} bytes fit` }]);
  }
}

/** Bytes of an organization's uploads that are stored or reserved (a deleted asset's file counts until it is purged). */
export async function storageUsed(db: Tx, organizationId: string): Promise<number> {
  const row = await db('asset_uploads')
    .where({ organization_id: organizationId })
    .whereIn('state', ['in_progress', 'completed'])
    .first(db.raw('coalesce(sum(size), 0)::bigint AS used'));
  return Number((row as { used: string }).used);
}
