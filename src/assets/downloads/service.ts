import type { Context } from 'koa';
import { type Actor, Actor as ReaderActor } from '../../access/index.ts';
import { badRequest, conflict, isAppError, notFound } from '../../core/errors.ts';
import type { z } from '../../core/zod.ts';
import type { Deps } from '../../platform/deps.ts';
import type { S3Storage } from '../../providers/storage/s3.ts';
import { assetFileKey, type AssetRow } from '../presenter.ts';
import type { downloadUrlBody, signedFileQuery } from './schema.ts';
import { contentDisposition, type Disposition, dispositionFor, sendAssetFile } from './serve.ts';
import { sign, verify } from './signing.ts';

/** Where signed URLs of this API are served (no token: the signature is the credential). */
export const signedFilePath = (assetId: string) => `/asset-files/${assetId}`;

/**
 * A URL that downloads the asset's file without a token for a short while: presigned S3 when
 * object storage is configured, else signed by this API (HMAC). Reading the asset is enough; a
 * deleted asset (409) or one without a stored file (404) gets none.
 */
export async function createDownloadUrl(
  deps: Pick<Deps, 'config' | 'db' | 'providers'>,
  actor: Actor,
  id: string,
  input: z.output<typeof downloadUrlBody>,
  ctx: Context,
) {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  if (row.deleted_at) throw conflict('asset_id: the asset is deleted; restore it first', ['asset_id']);
  if (row.upload_file_state !== 'success' || !row.mime_type) throw notFound('asset file');
  const seconds = input.expires_in ?? deps.config.DOWNLOAD_URL_DEFAULT_SECONDS;
  if (seconds > deps.config.DOWNLOAD_URL_MAX_SECONDS) throw badRequest(`expires_in: at most ${deps.config.DOWNLOAD_URL_MAX_SECONDS} seconds`, ['expires_in']);
  const expires = Math.floor(Date.now() / 1000) + seconds;
  const disposition = dispositionFor(row.mime_type, input.disposition);
  const expires_at = new Date(expires * 1000).toISOString();
  const storage = deps.providers.storage;
  if (storage.name === 's3') {
    const url = (storage as S3Storage).presignGet(assetFileKey(row.organization_id, row.id), {
      expiresInSeconds: seconds,
      contentDisposition: contentDisposition(disposition, row.title),
      contentType: row.mime_type,
    });
    return { url, expires_at };
  }
  const grant = { assetId: row.id, userId: actor.userId, expires, disposition };
  const query = new URLSearchParams({ user: grant.userId, expires: String(expires), disposition, signature: await sign(deps.config, grant) });
  const origin = deps.config.PUBLIC_URL || `${ctx.protocol}://${ctx.host}`;
  return { url: `${origin}${signedFilePath(row.id)}?${query}`, expires_at };
}

/**
 * Serves a signed URL: the signature must check out and the time not be past; then the user it was
 * made for must still read the asset, and the asset be live — so a revoked grant or a deleted asset
 * makes it fail at once, not only at its expiry. Every refusal is the same 404 (nothing to probe).
 */
export async function serveSignedFile(
  deps: Pick<Deps, 'config' | 'db' | 'providers'>,
  id: string,
  query: z.output<typeof signedFileQuery>,
  ctx: Context,
): Promise<void> {
  const grant = { assetId: id, userId: query.user, expires: query.expires, disposition: query.disposition as Disposition };
  const gone = notFound('download (the URL is invalid, expired or revoked)');
  if (!(await verify(deps.config, grant, query.signature)) || query.expires * 1000 < Date.now()) throw gone;
  const reader = new ReaderActor({ userId: query.user, email: null, name: null }, deps.db);
  const row = await reader
    .resource<AssetRow>(deps.db, 'asset', id, 'read')
    .then((access) => access.row)
    .catch((error: unknown) => {
      if (isAppError(error, 'not_found') || isAppError(error, 'forbidden')) return null;
      throw error;
    });
  if (!row || row.deleted_at) throw gone;
  await sendAssetFile(deps, row, ctx, grant.disposition);
}
