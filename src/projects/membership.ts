import { entryOf, idParamOf, nounOf, whereReadable, type ProjectItemType, type ResourceTypeDeclaration } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest, conflict, notFound } from '../core/errors.ts';
import { paginate, type Page, newestFirst } from '../core/pagination.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { projectColumns, type ProjectRow } from './presenter.ts';
import { inTransaction } from '../db/transaction.ts';

export type ProjectItem = {
  project_id: string;
  item_id: string;
  via: 'origin' | 'reference';
  added_by_id: string | null;
  created_at: Date;
};

/**
 * Files an existing item into a project. Needs editor on the project and owner on the item:
 * filing shares the item with everyone the project reaches, which is the owner's call.
 */
export async function addProjectItem(deps: Pick<Deps, 'db'>, actor: Actor, projectId: string, type: ProjectItemType, itemId: string): Promise<ProjectItem> {
  return inTransaction(deps.db, async (trx) => {
    const project = await actor.resource(trx, 'project', projectId, 'edit', { forUpdate: true });
    if (project.row.deleted_at) throw conflict('this project is deleted; restore it first');
    const item = await actor.resource(trx, type, itemId, 'manage_people');
    if (item.row.organization_id !== project.row.organization_id) {
      const field = idParamOf(entryOf(type)!);
      throw badRequest(`${field}: the ${nounOf(type)} belongs to another organization than the project`, [field]);
    }
    if (item.row.deleted_at) throw conflict(`this ${nounOf(type)} is deleted; restore it first`);
    const [row] = await trx('project_items')
      .insert({ project_id: projectId, item_type: type, item_id: itemId, via: 'reference', added_by_id: actor.userId })
      .onConflict(['project_id', 'item_type', 'item_id'])
      .ignore()
      .returning(['project_id', 'item_id', 'via', 'added_by_id', 'created_at']);
    if (!row) throw conflict(`this ${nounOf(type)} is already in the project`);
    await recordActivity(trx, {
      organizationId: project.row.organization_id,
      actorId: actor.userId,
      action: 'project.item_added',
      subjectType: 'project',
      subjectId: projectId,
      data: { item_type: type, item_id: itemId, via: 'reference' },
    });
    return row as ProjectItem;
  });
}

/**
 * The items of one kind in a project that the caller can read, presented by their own domain:
 * newest filed first, then id. Readability is part of the query, so pages never come up short
 * and a cursor stays valid while items are filed. Live items only, or only deleted ones with `deleted`.
 */
export async function listProjectItems(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  projectId: string,
  declaration: ResourceTypeDeclaration,
  query: { deleted?: boolean | undefined; limit: number; cursor?: string | undefined },
): Promise<Page<Record<string, unknown>>> {
  const { viewer } = await actor.resource(deps.db, 'project', projectId, 'read');
  const q = deps
    .db('project_items as pi')
    .join(`${declaration.table} as i`, 'i.id', 'pi.item_id')
    .where({ 'pi.project_id': projectId, 'pi.item_type': declaration.type })
    .select(declaration.project!.columns('i'));
  if (query.deleted) q.whereNotNull('i.deleted_at');
  else q.whereNull('i.deleted_at');
  whereReadable(q, declaration.type, 'i', viewer);
  declaration.project!.selectListExtras?.(deps.db, q, 'i', viewer);
  return paginate(
    q,
    [
      { column: 'pi.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'i.id', direction: 'desc' },
    ],
    query,
  );
}

/** Takes an item out of a project (project editors); the item itself is untouched. */
export async function removeProjectItem(deps: Pick<Deps, 'db'>, actor: Actor, projectId: string, type: ProjectItemType, itemId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const project = await actor.resource(trx, 'project', projectId, 'edit', { forUpdate: true });
    const removed = await trx('project_items').where({ project_id: projectId, item_type: type, item_id: itemId }).delete().returning('via');
    if (removed.length === 0) throw notFound(`${nounOf(type)} in this project`);
    await recordActivity(trx, {
      organizationId: project.row.organization_id,
      actorId: actor.userId,
      action: 'project.item_removed',
      subjectType: 'project',
      subjectId: projectId,
      data: { item_type: type, item_id: itemId },
    });
  });
}

/** GET /<items>/{id}/projects: live projects holding a readable item that the caller can also read. */
export async function listItemProjects(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ProjectItemType,
  itemId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<ProjectRow>> {
  const { viewer } = await actor.resource(deps.db, type, itemId, 'read');
  const q = deps
    .db('projects as p')
    .join('project_items as pi', 'pi.project_id', 'p.id')
    .where({ 'pi.item_type': type, 'pi.item_id': itemId })
    .whereNull('p.deleted_at')
    .select(projectColumns.map((c) => `p.${c}`));
  whereReadable(q, 'project', 'p', viewer);
  return paginate<ProjectRow>(q, newestFirst('p'), page);
}
