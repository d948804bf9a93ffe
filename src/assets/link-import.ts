import { fileIntoProjectOnCreate } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { assetImportJob } from './jobs.ts';
import { guessTypeFromUrl } from './media-types.ts';
import type { AssetRow, ImportParameters } from './presenter.ts';
import { returning } from './service.ts';
import { inTransaction } from '../db/transaction.ts';

/**
 * Starts a link import: the asset exists at once (`upload_file_state: in_progress`) and the job
 * that downloads it is enqueued in the same transaction, so neither exists without the other.
 */
export async function startLinkImport(
  deps: Pick<Deps, 'db' | 'jobs'>,
  actor: Actor,
  input: { organization_id: string; url: string; title?: string | undefined; project_id?: string | undefined },
): Promise<AssetRow> {
  return inTransaction(deps.db, async (trx) => {
    const parameters: ImportParameters = {
      source_url: input.url,
      final_url: null,
      redirects: [],
      content_type: null,
      size: null,
      imported_at: null,
      error: null,
    };
    const [row] = (await trx('assets')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        // A guess from the extension until the worker sees the real content type.
        type: guessTypeFromUrl(input.url),
        title: input.title ?? null,
        upload_file_state: 'in_progress',
        enrichment_state: null,
        visibility: 'private',
        import_parameters: JSON.stringify(parameters),
      })
      .returning(returning)) as AssetRow[];
    const asset = row!;
    if (input.project_id) await fileIntoProjectOnCreate(trx, actor, { type: 'asset', id: asset.id, organizationId: asset.organization_id }, input.project_id);
    await recordActivity(trx, {
      organizationId: asset.organization_id,
      actorId: actor.userId,
      action: 'asset.import_started',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { source_url: input.url, project_id: input.project_id ?? null },
    });
    await deps.jobs.enqueue(trx, assetImportJob, { asset_id: asset.id }, { organizationId: asset.organization_id });
    return asset;
  });
}
