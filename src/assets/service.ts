import type { Knex } from 'knex';
import { fileIntoProjectOnCreate, requireAccess, requireLive, viewerIn, whereReadable } from '../access/index.ts';
import { recordActivity } from '../activity/record.ts';
import { notFound } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Caller } from '../core/caller.ts';
import type { Deps } from '../platform/deps.ts';
import { assetEnrichmentJob } from './jobs.ts';
import { assetColumns, type AssetRow } from './presenter.ts';
import type { AssetType } from './schema.ts';

export const returning = [...assetColumns, 'import_parameters'];

export interface NewAsset {
  organization_id: string;
  type: AssetType;
  title?: string | undefined;
  content?: string | undefined;
  url?: string | undefined;
  mime_type?: string | undefined;
  metadata?: unknown;
  visibility?: 'private' | 'workspace' | undefined;
  project_id?: string | undefined;
}

/** Members create assets in their organization; non-members are told the organization does not exist. */
export async function requireCreator(trx: Knex, organizationId: string, caller: Caller): Promise<void> {
  if (!(await viewerIn(trx, organizationId, caller.userId))) throw notFound('organization');
}

export async function createAsset(deps: Deps, caller: Caller, input: NewAsset): Promise<AssetRow> {
  return deps.db.transaction(async (trx) => {
    await requireCreator(trx, input.organization_id, caller);
    // Text content can be measured at once; an asset that is only a pointer has nothing to enrich.
    const enrich = input.content !== undefined;
    const [row] = (await trx('assets')
      .insert({
        organization_id: input.organization_id,
        created_by_id: caller.userId,
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
    if (input.project_id) await fileIntoProjectOnCreate(trx, caller, { type: 'asset', id: asset.id, organizationId: asset.organization_id }, input.project_id);
    await recordActivity(trx, { organizationId: asset.organization_id, actorId: caller.userId, action: 'asset.created', subjectType: 'asset', subjectId: asset.id, data: { type: asset.type, title: asset.title, project_id: input.project_id ?? null } });
    if (enrich) await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: asset.id });
    return asset;
  });
}

export async function getAsset(deps: Deps, caller: Caller, id: string): Promise<AssetRow> {
  return (await requireAccess<AssetRow>(deps.db, caller, 'asset', id, 'read')).row;
}

export interface AssetChanges {
  title?: string | null | undefined;
  content?: string | null | undefined;
  mime_type?: string | null | undefined;
  metadata?: unknown;
}

export async function updateAsset(deps: Deps, caller: Caller, id: string, changes: AssetChanges): Promise<AssetRow> {
  return deps.db.transaction(async (trx) => {
    const { row: before } = await requireAccess<AssetRow>(trx, caller, 'asset', id, 'edit', { forUpdate: true });
    requireLive(before, 'asset');
    const update: Record<string, unknown> = { updated_at: trx.fn.now() };
    for (const field of ['title', 'content', 'mime_type'] as const) if (changes[field] !== undefined) update[field] = changes[field];
    if (changes.metadata !== undefined) update.metadata = changes.metadata === null ? null : JSON.stringify(changes.metadata);
    // New text means new measurements; an import still running will enrich when it finishes.
    const reEnrich = changes.content !== undefined && changes.content !== before.content && before.upload_file_state !== 'in_progress';
    if (reEnrich) update.enrichment_state = changes.content === null ? 'ignored' : 'pending';
    const [row] = (await trx('assets').where({ id }).update(update).returning(returning)) as AssetRow[];
    await recordActivity(trx, { organizationId: before.organization_id, actorId: caller.userId, action: 'asset.updated', subjectType: 'asset', subjectId: id, data: { fields: Object.keys(changes).sort() } });
    if (reEnrich && changes.content !== null) await deps.jobs.enqueue(trx, assetEnrichmentJob, { asset_id: id });
    return row!;
  });
}

/** Soft delete; deleting a deleted asset changes nothing (idempotent). */
export async function deleteAsset(deps: Deps, caller: Caller, id: string): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const { row } = await requireAccess<AssetRow>(trx, caller, 'asset', id, 'delete', { forUpdate: true });
    if (row.deleted_at) return;
    await trx('assets').where({ id }).update({ deleted_at: trx.fn.now(), deleted_by_id: caller.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, { organizationId: row.organization_id, actorId: caller.userId, action: 'asset.deleted', subjectType: 'asset', subjectId: id });
  });
}

/** Clears the deletion; restoring a live asset returns it unchanged. */
export async function restoreAsset(deps: Deps, caller: Caller, id: string): Promise<AssetRow> {
  return deps.db.transaction(async (trx) => {
    const { row } = await requireAccess<AssetRow>(trx, caller, 'asset', id, 'restore', { forUpdate: true });
    if (!row.deleted_at) return row;
    const [restored] = (await trx('assets').where({ id }).update({ deleted_at: null, deleted_by_id: null, updated_at: trx.fn.now() }).returning(returning)) as AssetRow[];
    await recordActivity(trx, { organizationId: row.organization_id, actorId: caller.userId, action: 'asset.restored', subjectType: 'asset', subjectId: id });
    return restored!;
  });
}

export interface AssetFilters {
  organization_id: string;
  type?: AssetType | undefined;
  project_id?: string | undefined;
  created_by?: string | undefined;
  search?: string | undefined;
  deleted?: boolean | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** Newest first; the readable-by predicate runs in SQL, so pages never hold a row the caller cannot read. */
export async function listAssets(deps: Deps, caller: Caller, filters: AssetFilters): Promise<Page<AssetRow>> {
  const viewer = await viewerIn(deps.db, filters.organization_id, caller.userId);
  if (!viewer) return { items: [], next_cursor: null };
  const query = whereReadable(deps.db('assets as a').select(assetColumns.map((c) => `a.${c}`)), 'asset', 'a', viewer);
  if (filters.deleted) query.whereNotNull('a.deleted_at');
  else query.whereNull('a.deleted_at');
  if (filters.type) query.where('a.type', filters.type);
  if (filters.created_by) query.where('a.created_by_id', filters.created_by);
  if (filters.project_id) {
    // project_items is the access module's membership table (see src/access/links.ts).
    query.whereExists((sub) => sub.select(deps.db.raw('1')).from('project_items as pi').where({ 'pi.item_type': 'asset', 'pi.project_id': filters.project_id }).whereRaw('pi.item_id = a.id'));
  }
  if (filters.search) {
    const pattern = `%${filters.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query.where((where) => where.whereILike('a.title', pattern).orWhereILike('a.content', pattern));
  }
  return paginate(query, [{ column: 'a.created_at', direction: 'desc', type: 'timestamp' }, { column: 'a.id', direction: 'desc' }], filters) as unknown as Promise<Page<AssetRow>>;
}
