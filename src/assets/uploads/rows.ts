import { UPLOADS_PATH } from './store.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { JobFailure } from '../presenter.ts';

/** An `asset_uploads` row (migrations/20261127151000_asset_uploads.ts). */
export interface UploadRow {
  id: string;
  asset_id: string;
  organization_id: string;
  created_by_id: string;
  filename: string;
  mime_type: string;
  size: string | number;
  checksum_sha256: string | null;
  store: 'local' | 's3';
  state: 'in_progress' | 'completed' | 'failed' | 'expired' | 'canceled';
  error: JobFailure | null;
  sha256: string | null;
  expires_at: Date;
  created_at: Date;
  ended_at: Date | null;
  staging_removed_at: Date | null;
}

export async function findUpload(db: Db | Tx, id: string, options: { forUpdate?: boolean } = {}): Promise<UploadRow | undefined> {
  const query = db('asset_uploads').where({ id }).first();
  if (options.forUpdate) query.forUpdate();
  return (await query) as UploadRow | undefined;
}

/** The upload URL (absolute: tus clients PATCH it as given). */
export const uploadUrl = (origin: string, id: string) => `${origin.replace(/\/$/, '')}${UPLOADS_PATH}/${id}`;

export function presentUpload(row: UploadRow, origin: string, offset: number) {
  return {
    id: row.id,
    asset_id: row.asset_id,
    url: uploadUrl(origin, row.id),
    size: Number(row.size),
    offset,
    state: row.state,
    checksum_sha256: row.checksum_sha256,
    expires_at: row.expires_at.toISOString(),
    error: row.error,
  };
}
