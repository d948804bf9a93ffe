import { changeLive, fileIntoProjectOnCreate, listReadable, restore, softDelete } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest } from '../core/errors.ts';
import type { Page } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { assetEnrichmentJob } from './jobs.ts';
import { assetColumns, type AssetRow, presentAsset } from './presenter.ts';
import { type AssetMatch, searchAssetRows } from './search.ts';
import type { createAssetBody, listAssetsQuery, updateAssetBody } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

export const returning = [...assetColumns, 'import_parameters'];

export type NewAsset = z.output<typeof createAssetBody>;

/** The caller may create resources in the organization (checked by the route). */
export async function createAsset(deps: Pick<Deps, 'db' | 'jobs'>, actor: Actor, input: NewAsset): Promise<AssetRow> {
  return inTransaction(deps.db, async (trx) => {
    // Text content can be measured at once; an asset that is only a pointer has nothing to enrich.
    const enrich = input.content !== undefined;
    const [row] = (await trx('assets')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        type: input.type,
        title: input.title ?? null,
        content: input.content ?? null,
        url: input.url ?? null,
        mime_type: input.mime_type ?? null,
        metadata: input.metadata === undefined || input.metadata === null ? null : JSON.stringify(input.metadata),
        visibility: input.visibility ?? 'private',
        enrichment_state: enrich ? 'pending' : 'ignored',
      })
      .returning(returning)) as AssetRow[];
    const asset = row!;
    if (input.project_id) await fileIntoProjectOnCreate(trx, actor, { type: 'asset', id: asset.id, organizationId: asset.organization_id }, input.project_id);
    await recordActivity(trx, {
      organizationId: asset.organization_id,
      actorId: actor.userId,
      action: 'asset.created',
      subjectType: 'asset',
      subjectId: asset.id,
      data: { type: asset.type, title: asset.title, project_id: input.project_id ?? null },
    });
    if (enrich) await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: asset.id }, { organizationId: asset.organization_id });
    return asset;
  });
}

export async function getAsset(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<AssetRow> {
  return (await actor.resource<AssetRow>(deps.db, 'asset', id, 'read')).row;
}

export type AssetChanges = z.output<typeof updateAssetBody>;

export function updateAsset(deps: Pick<Deps, 'db' | 'jobs'>, actor: Actor, id: string, changes: AssetChanges): Promise<AssetRow> {
  return changeLive<AssetRow>(deps, actor, 'asset', id, async (trx, before) => {
    const update: Record<string, unknown> = { updated_at: trx.fn.now() };
    for (const field of ['title', 'content', 'mime_type'] as const) if (changes[field] !== undefined) update[field] = changes[field];
    if (changes.metadata !== undefined) update.metadata = changes.metadata === null ? null : JSON.stringify(changes.metadata);
    // New text means new measurements; an import still running will enrich when it finishes.
    const reEnrich = changes.content !== undefined && changes.content !== before.content && before.upload_file_state !== 'in_progress';
    if (reEnrich) update.enrichment_state = changes.content === null ? 'ignored' : 'pending';
    const [row] = (await trx('assets').where({ id }).update(update).returning(returning)) as AssetRow[];
    await recordActivity(trx, {
      organizationId: before.organization_id,
      actorId: actor.userId,
      action: 'asset.updated',
      subjectType: 'asset',
      subjectId: id,
      data: { fields: Object.keys(changes).sort() },
    });
    if (reEnrich && changes.content !== null) await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: id }, { organizationId: before.organization_id });
    return row!;
  });
}

/** Soft delete; deleting a deleted asset changes nothing (idempotent). */
export const deleteAsset = (deps: Pick<Deps, 'db'>, actor: Actor, id: string) => softDelete<AssetRow>(deps, actor, 'asset', id);

/** Clears the deletion; restoring a live asset returns it unchanged. */
export const restoreAsset = (deps: Pick<Deps, 'db'>, actor: Actor, id: string) => restore<AssetRow>(deps, actor, 'asset', id, { returning });

export type AssetFilters = z.output<typeof listAssetsQuery>;

/**
 * Newest first; the readable-by predicate runs in SQL, so pages never hold a row the caller cannot
 * read. With `q`, a full-text search instead (./search.ts): best match first, live assets only.
 */
export function listAssets(deps: Pick<Deps, 'db'>, actor: Actor, filters: AssetFilters): Promise<Page<AssetRow & { search?: AssetMatch }>> {
  if (filters.q !== undefined) {
    if (filters.deleted) throw badRequest('query.q: cannot be combined with deleted=true (search finds live assets only)', ['q']);
    return searchAssetRows(deps.db, actor, {
      organizationId: filters.organization_id,
      q: filters.q,
      projectId: filters.project_id,
      type: filters.type,
      createdBy: filters.created_by,
      contains: filters.search,
      limit: filters.limit,
      cursor: filters.cursor,
    });
  }
  return listReadable<AssetRow>(deps.db, actor, 'asset', filters, {
    alias: 'a',
    columns: assetColumns,
    searchColumns: ['title', 'content'],
    refine: (q) => {
      if (filters.type) q.where('a.type', filters.type);
    },
  });
}

/** A list item: the asset, and how it matched a search. */
export const presentListedAsset = (row: AssetRow & { search?: AssetMatch }) => ({ ...presentAsset(row), ...(row.search && { search: row.search }) });
