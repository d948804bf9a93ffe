import { fileIntoProjectOnCreate, requireLive } from '../access/index.ts';
import { recordActivity } from '../activity/record.ts';
import type { Actor } from '../access/actor.ts';
import type { Deps } from '../platform/deps.ts';
import type { ConversationRow } from './presenter.ts';

const type = 'chat_conversation';

export interface NewConversation {
  organization_id: string;
  title?: string | null | undefined;
  project_id?: string | undefined;
  visibility?: 'private' | 'workspace' | undefined;
}

/** Members whose role may create resources start a conversation, optionally inside a project they can edit. */
export async function createConversation(deps: Deps, actor: Actor, input: NewConversation): Promise<ConversationRow> {
  return deps.db.transaction(async (trx) => {
    const [row] = (await trx('conversations')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        title: input.title ?? null,
        visibility: input.visibility ?? 'private',
        project_id: input.project_id ?? null,
      })
      .returning('*')) as ConversationRow[];
    if (input.project_id) await fileIntoProjectOnCreate(trx, actor, { type, id: row!.id, organizationId: input.organization_id }, input.project_id);
    await recordActivity(trx, {
      organizationId: input.organization_id,
      actorId: actor.userId,
      action: 'conversation.created',
      subjectType: type,
      subjectId: row!.id,
      data: { title: row!.title, visibility: row!.visibility, project_id: row!.project_id },
    });
    return row!;
  });
}

/** Deleted conversations stay readable (with `deleted_at`) so they can be inspected and restored. */
export async function getConversation(deps: Deps, actor: Actor, id: string): Promise<ConversationRow> {
  return (await actor.resource<ConversationRow>(deps.db, type, id, 'read')).row;
}

export async function updateConversation(deps: Deps, actor: Actor, id: string, changes: { title?: string | null | undefined }): Promise<ConversationRow> {
  return deps.db.transaction(async (trx) => {
    const { row: before } = await actor.resource<ConversationRow>(trx, type, id, 'edit', { forUpdate: true });
    requireLive(before, type);
    const [row] = (await trx('conversations').where({ id }).update({ ...changes, updated_at: trx.fn.now() }).returning('*')) as ConversationRow[];
    await recordActivity(trx, {
      organizationId: before.organization_id,
      actorId: actor.userId,
      action: 'conversation.updated',
      subjectType: type,
      subjectId: id,
      data: { before: { title: before.title }, after: changes },
    });
    return row!;
  });
}

/** Soft delete. Deleting a deleted conversation changes nothing (a retried DELETE is safe). */
export async function deleteConversation(deps: Deps, actor: Actor, id: string): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const { row } = await actor.resource<ConversationRow>(trx, type, id, 'delete', { forUpdate: true });
    if (row.deleted_at) return;
    await trx('conversations').where({ id }).update({ deleted_at: trx.fn.now(), deleted_by_id: actor.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, { organizationId: row.organization_id, actorId: actor.userId, action: 'conversation.deleted', subjectType: type, subjectId: id, data: { title: row.title } });
  });
}

/** Restoring a live conversation returns it unchanged (a retried restore is safe). */
export async function restoreConversation(deps: Deps, actor: Actor, id: string): Promise<ConversationRow> {
  return deps.db.transaction(async (trx) => {
    const { row } = await actor.resource<ConversationRow>(trx, type, id, 'restore', { forUpdate: true });
    if (!row.deleted_at) return row;
    const [restored] = (await trx('conversations').where({ id }).update({ deleted_at: null, deleted_by_id: null, updated_at: trx.fn.now() }).returning('*')) as ConversationRow[];
    await recordActivity(trx, { organizationId: row.organization_id, actorId: actor.userId, action: 'conversation.restored', subjectType: type, subjectId: id, data: { title: row.title } });
    return restored!;
  });
}
