import { AppError, badRequest, conflict } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { ModelProviderError, UnknownModelError, type AssetForModel } from '../providers/models/index.ts';
import type { AssetRow } from './presenter.ts';

const forModel = (row: AssetRow): AssetForModel => ({
  id: row.id,
  type: row.type,
  title: row.title,
  mime_type: row.mime_type,
  url: row.url,
  content: row.content,
});

/** Provider failures become 503 (retry later) and unknown models a 400 on `model`. */
async function viaProvider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof UnknownModelError) throw badRequest(`model: ${error.message}`, ['model']);
    if (error instanceof ModelProviderError) throw new AppError('unavailable', `the model service is unavailable: ${error.message}`);
    throw error;
  }
}

export async function listAssetModels(deps: Pick<Deps, 'providers'>) {
  const models = await viaProvider(() => deps.providers.models.listModels());
  return { items: models, sandbox: deps.providers.models.name === 'sandbox' };
}

/** Reading an asset is enough to ask what prompt would re-create it. */
export async function extractPrompt(
  deps: Pick<Deps, 'db' | 'providers'>,
  actor: Actor,
  id: string,
  options: { model?: string | undefined; instructions?: string | undefined },
) {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  if (row.deleted_at) throw conflict('asset_id: the asset is deleted; restore it first', ['asset_id']);
  if (row.upload_file_state === 'in_progress') throw conflict('asset_id: the asset is still being imported', ['asset_id']);
  const result = await viaProvider(() => deps.providers.models.extractPrompt(forModel(row), options));
  return { asset_id: id, model: result.model, prompt: result.prompt, sandbox: deps.providers.models.name === 'sandbox' };
}

export async function listVoices(deps: Pick<Deps, 'db' | 'providers'>, actor: Actor, id: string) {
  const { row } = await actor.resource<AssetRow>(deps.db, 'asset', id, 'read');
  if (row.type !== 'audio') throw conflict(`asset_id: voices exist for audio assets only; this asset is ${row.type}`, ['asset_id']);
  const voices = await viaProvider(() => deps.providers.models.detectVoices(forModel(row)));
  return { asset_id: id, items: voices, sandbox: deps.providers.models.name === 'sandbox' };
}
