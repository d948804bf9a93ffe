import type { Context } from 'koa';
import { notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { sendAssetFile } from './downloads/serve.ts';
import type { AssetRow } from './presenter.ts';

export async function importedParameters(deps: Pick<Deps, 'db'>, actor: Actor, id: string) {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  const parameters = row.import_parameters;
  if (!parameters || !row.upload_file_state) throw notFound('imported parameters (the asset was not imported from a link)');
  return { asset_id: id, ...parameters, state: row.upload_file_state };
}

/** Streams the stored file of an asset to a reader: Range, ETag, defanged against content sniffing (./downloads/serve.ts). */
export async function serveAssetFile(deps: Pick<Deps, 'db' | 'providers'>, actor: Actor, id: string, ctx: Context): Promise<void> {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  await sendAssetFile(deps, row, ctx);
}
