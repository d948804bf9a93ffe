import { changeLive, recordLifecycle, fileIntoProjectOnCreate, listReadable, requireProjectToFileInto, restore, softDelete } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import type { Page } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import { canvasColumns, type CanvasRow } from './presenter.ts';
import type { createCanvasBody, listCanvasesQuery, updateCanvasBody } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

const returning = [...canvasColumns];

/** The caller may create resources in the organization (checked by the route). */
export async function createCanvas(deps: Pick<Deps, 'db'>, actor: Actor, input: z.output<typeof createCanvasBody>): Promise<CanvasRow> {
  return inTransaction(deps.db, async (trx) => {
    // Before the insert: its foreign key would otherwise answer a missing project differently from an unreadable one.
    if (input.project_id) await requireProjectToFileInto(trx, actor, input.organization_id, input.project_id);
    const [canvas] = (await trx('canvases')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        title: input.title ?? null,
        visibility: input.visibility ?? 'private',
        workspace_role: input.workspace_role ?? 'viewer',
        project_id: input.project_id ?? null,
      })
      .returning(returning)) as CanvasRow[];
    if (input.project_id)
      await fileIntoProjectOnCreate(trx, actor, { type: 'canvas', id: canvas!.id, organizationId: input.organization_id }, input.project_id);
    await recordLifecycle(trx, actor, 'canvas', canvas!, 'created', { title: canvas!.title, project_id: canvas!.project_id });
    return canvas!;
  });
}

export async function getCanvas(deps: Pick<Deps, 'db'>, actor: Actor, canvasId: string): Promise<CanvasRow> {
  return (await actor.resource<CanvasRow>(deps.db, 'canvas', canvasId, 'read')).row;
}

export function listCanvases(deps: Pick<Deps, 'db'>, actor: Actor, query: z.output<typeof listCanvasesQuery>): Promise<Page<CanvasRow>> {
  return listReadable<CanvasRow>(deps.db, actor, 'canvas', query, { alias: 'c', columns: canvasColumns, searchColumns: ['title'] });
}

export function updateCanvas(deps: Deps, actor: Actor, canvasId: string, changes: z.output<typeof updateCanvasBody>): Promise<CanvasRow> {
  return changeLive<CanvasRow>(deps, actor, 'canvas', canvasId, async (trx, before) => {
    const [canvas] = (await trx('canvases')
      .where({ id: canvasId })
      .update({ ...changes, updated_at: trx.fn.now() })
      .returning(returning)) as CanvasRow[];
    await recordActivity(trx, {
      organizationId: before.organization_id,
      actorId: actor.userId,
      action: 'canvas.updated',
      subjectType: 'canvas',
      subjectId: canvasId,
      data: { before: { title: before.title }, after: changes },
    });
    return canvas!;
  });
}

/** Soft delete (204); a deleted canvas stops passing access on to its assets. Repeating it changes nothing. */
export const deleteCanvas = (deps: Deps, actor: Actor, canvasId: string) => softDelete<CanvasRow>(deps, actor, 'canvas', canvasId);

export const restoreCanvas = (deps: Deps, actor: Actor, canvasId: string) => restore<CanvasRow>(deps, actor, 'canvas', canvasId, { returning });
