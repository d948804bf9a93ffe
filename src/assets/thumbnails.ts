import type { Context } from 'koa';
import type { Actor } from '../access/index.ts';
import { notFound } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import { assetThumbnailKey, type AssetRow } from './presenter.ts';

/** Streams a thumbnail of an enriched image to a reader: 404 for an asset without one of that size. */
export async function serveThumbnail(deps: Pick<Deps, 'db' | 'providers'>, actor: Actor, id: string, size: number, ctx: Context): Promise<void> {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  const recorded = row.enrichment_state === 'success' && row.enrichment?.thumbnails?.some((thumbnail) => thumbnail.size === size);
  const file = recorded ? await deps.providers.storage.get(assetThumbnailKey(row.organization_id, row.id, size)) : null;
  if (!file) throw notFound('thumbnail');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
  ctx.set('Cache-Control', 'private, max-age=300');
  ctx.type = 'image/webp';
  ctx.body = file.body;
}
