import type { Context } from 'koa';
import { notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { assetFileKey, type AssetRow } from './presenter.ts';

export async function importedParameters(deps: Deps, actor: Actor, id: string) {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  const parameters = row.import_parameters;
  if (!parameters || !row.upload_file_state) throw notFound('imported parameters (the asset was not imported from a link)');
  return { asset_id: id, ...parameters, state: row.upload_file_state };
}

// Media that browsers render harmlessly inline; anything else is offered as a download.
const inline = /^(image\/(png|jpeg|gif|webp|avif)|video\/|audio\/|text\/plain$)/;

/** Streams the stored file of an imported asset to a reader, defanged against content sniffing. */
export async function serveAssetFile(deps: Deps, actor: Actor, id: string, ctx: Context): Promise<void> {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  if (row.upload_file_state !== 'success') throw notFound('asset file');
  const file = await deps.providers.storage.get(assetFileKey(row.organization_id, row.id));
  if (!file) throw notFound('asset file');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
  ctx.set('Cache-Control', 'private, max-age=300');
  if (!inline.test(file.contentType)) ctx.set('Content-Disposition', 'attachment');
  ctx.type = file.contentType;
  ctx.body = file.body;
}
