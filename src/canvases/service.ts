import { fileIntoProjectOnCreate, requireAccess, requireLive, viewerIn, whereReadable } from '../access/index.ts';
import { recordActivity } from '../activity/record.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Caller } from '../core/caller.ts';
import { requireMemberWith } from '../organizations/membership.ts';
import type { Deps } from '../platform/deps.ts';
import { canvasColumns, type CanvasRow } from './presenter.ts';

const returning = canvasColumns as unknown as string[];

export async function createCanvas(
  deps: Deps,
  caller: Caller,
  input: { organization_id: string; title?: string | null | undefined; visibility?: 'private' | 'workspace' | undefined; workspace_role?: 'viewer' | 'editor' | undefined; project_id?: string | undefined },
): Promise<CanvasRow> {
  return deps.db.transaction(async (trx) => {
    await requireMemberWith(trx, input.organization_id, caller.userId, 'resources.create');
    const [canvas] = await trx('canvases')
      .insert({
        organization_id: input.organization_id,
        created_by_id: caller.userId,
        title: input.title ?? null,
        visibility: input.visibility ?? 'private',
        workspace_role: input.workspace_role ?? 'viewer',
        project_id: input.project_id ?? null,
      })
      .returning(returning);
    if (input.project_id) await fileIntoProjectOnCreate(trx, caller, { type: 'canvas', id: canvas.id, organizationId: input.organization_id }, input.project_id);
    await recordActivity(trx, { organizationId: input.organization_id, actorId: caller.userId, action: 'canvas.created', subjectType: 'canvas', subjectId: canvas.id, data: { title: canvas.title, project_id: canvas.project_id } });
    return canvas;
  });
}

export async function getCanvas(deps: Deps, caller: Caller, canvasId: string): Promise<CanvasRow> {
  return (await requireAccess<CanvasRow>(deps.db, caller, 'canvas', canvasId, 'read')).row;
}

export async function listCanvases(
  deps: Deps,
  caller: Caller,
  query: { organization_id: string; deleted?: boolean | undefined; search?: string | undefined; created_by?: string | undefined; project_id?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<Page<CanvasRow>> {
  const viewer = await viewerIn(deps.db, query.organization_id, caller.userId);
  if (!viewer) return { items: [], next_cursor: null };
  const q = deps.db('canvases as c').select(canvasColumns.map((col) => `c.${col}`));
  whereReadable(q, 'canvas', 'c', viewer);
  if (query.deleted) q.whereNotNull('c.deleted_at');
  else q.whereNull('c.deleted_at');
  if (query.created_by) q.where('c.created_by_id', query.created_by);
  if (query.project_id) q.whereExists((s) => s.select(1).from('project_items as f').where({ 'f.project_id': query.project_id, 'f.item_type': 'canvas' }).whereRaw('f.item_id = c.id'));
  if (query.search) q.whereRaw('lower(c.title) LIKE ?', [`%${query.search.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`]);
  return paginate<CanvasRow>(q, [{ column: 'c.created_at', direction: 'desc', type: 'timestamp' }, { column: 'c.id', direction: 'desc' }], query);
}

export async function updateCanvas(deps: Deps, caller: Caller, canvasId: string, changes: { title?: string | null | undefined }): Promise<CanvasRow> {
  return deps.db.transaction(async (trx) => {
    const { row } = await requireAccess<CanvasRow>(trx, caller, 'canvas', canvasId, 'edit', { forUpdate: true });
    requireLive(row, 'canvas');
    const [canvas] = await trx('canvases').where({ id: canvasId }).update({ ...changes, updated_at: trx.fn.now() }).returning(returning);
    await recordActivity(trx, { organizationId: row.organization_id, actorId: caller.userId, action: 'canvas.updated', subjectType: 'canvas', subjectId: canvasId, data: { before: { title: row.title }, after: changes } });
    return canvas;
  });
}

/** Soft delete (204); a deleted canvas stops passing access on to its assets. Repeating it changes nothing. */
export async function deleteCanvas(deps: Deps, caller: Caller, canvasId: string): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const { row } = await requireAccess<CanvasRow>(trx, caller, 'canvas', canvasId, 'delete', { forUpdate: true });
    if (row.deleted_at) return;
    await trx('canvases').where({ id: canvasId }).update({ deleted_at: trx.fn.now(), deleted_by_id: caller.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, { organizationId: row.organization_id, actorId: caller.userId, action: 'canvas.deleted', subjectType: 'canvas', subjectId: canvasId });
  });
}

/** Restoring a live canvas returns it unchanged. */
export async function restoreCanvas(deps: Deps, caller: Caller, canvasId: string): Promise<CanvasRow> {
  return deps.db.transaction(async (trx) => {
    const { row } = await requireAccess<CanvasRow>(trx, caller, 'canvas', canvasId, 'restore', { forUpdate: true });
    if (!row.deleted_at) return row;
    const [canvas] = await trx('canvases').where({ id: canvasId }).update({ deleted_at: null, deleted_by_id: null, updated_at: trx.fn.now() }).returning(returning);
    await recordActivity(trx, { organizationId: row.organization_id, actorId: caller.userId, action: 'canvas.restored', subjectType: 'canvas', subjectId: canvasId });
    return canvas;
  });
}
