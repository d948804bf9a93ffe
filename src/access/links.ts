import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { badRequest, isAppError } from '../core/errors.ts';
import type { Actor } from './actor.ts';
import { entryOf } from './registry.ts';
import type { ResourceType } from './types.ts';

/** A type that can be filed in projects: its declaration has a `project` section (./registry.ts). */
export type ProjectItemType = ResourceType;

/**
 * Files a just-created resource into the project named in its create body (via `origin`).
 * The caller must be able to edit the project: filing shares the item with the project's audience.
 * Call inside the create transaction, after inserting the item. A bad project is a 400 on `project_id`
 * (404 for an unreadable project would leak nothing more, but the id is a body field).
 */
export async function fileIntoProjectOnCreate(
  trx: Knex.Transaction,
  actor: Actor,
  item: { type: ProjectItemType; id: string; organizationId: string },
  projectId: string,
): Promise<void> {
  if (!entryOf(item.type)?.project) throw new Error(`resource type ${item.type} is not filed in projects (no \`project\` in its declaration)`);
  await requireProjectToFileInto(trx, actor, item.organizationId, projectId);
  await trx('project_items')
    .insert({ project_id: projectId, item_type: item.type, item_id: item.id, via: 'origin', added_by_id: actor.userId })
    .onConflict(['project_id', 'item_type', 'item_id'])
    .ignore();
  await recordActivity(trx, {
    organizationId: item.organizationId,
    actorId: actor.userId,
    action: 'project.item_added',
    subjectType: 'project',
    subjectId: projectId,
    data: { item_type: item.type, item_id: item.id, via: 'origin' },
  });
}

/**
 * The project named in a create body, if the caller may file into it; otherwise the same 400 on
 * `project_id` whether the project is missing or unreadable (so project ids cannot be probed).
 * Call it before inserting a row whose `project_id` column references the project.
 */
export async function requireProjectToFileInto(trx: Knex.Transaction, actor: Actor, organizationId: string, projectId: string): Promise<void> {
  const project = await actor.resource(trx, 'project', projectId, 'read').catch((error: unknown) => {
    if (isAppError(error, 'not_found')) throw badRequest(`project_id: no project ${projectId} that you can read`, ['project_id']);
    throw error;
  });
  if (project.row.organization_id !== organizationId) throw badRequest('project_id: the project belongs to another organization', ['project_id']);
  if (project.row.deleted_at) throw badRequest('project_id: the project is deleted', ['project_id']);
  if (project.role === 'viewer') throw badRequest('project_id: you can only view this project; filing into it needs the editor role', ['project_id']);
}

/** Records that a chat or canvas uses an asset it did not create: its audience may then view it. Idempotent. */
export async function addReference(trx: Knex | Knex.Transaction, from: { type: ResourceType; id: string }, assetId: string): Promise<void> {
  await trx('resource_references')
    .insert({ from_type: from.type, from_id: from.id, asset_id: assetId })
    .onConflict(['from_type', 'from_id', 'asset_id'])
    .ignore();
}
