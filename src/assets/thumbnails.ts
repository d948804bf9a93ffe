import type { Context } from 'koa';
import type { Actor } from '../access/index.ts';
import { notFound } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import { thumbnailFileSize } from './enrichment.ts';
import { assetThumbnailKey, type AssetRow } from './presenter.ts';

/** Streams a thumbnail of an enriched image to a reader: 404 for an asset without one of that size. */
export async function serveThumbnail(deps: Pick<Deps, 'db' | 'providers'>, actor: Actor, id: string, size: number, ctx: Context): Promise<void> {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  const stored = row.enrichment_state === 'success' && row.enrichment?.thumbnails ? thumbnailFileSize(row.enrichment.thumbnails, size) : undefined;
  const file = stored === undefined ? null : await deps.providers.storage.get(assetThumbnailKey(row.organization_id, row.id, stored));
  if (!file) throw notFound('thumbnail');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
  ctx.set('Cache-Control', 'private, max-age=300');
  ctx.type = 'image/webp';
  ctx.body = file.body;
}
