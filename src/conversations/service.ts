import { changeLive, fileIntoProjectOnCreate, restore, softDelete } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest } from '../core/errors.ts';
import { requireReadableSkill } from '../skills/index.ts';
import { checkToolNames } from './tools/names.ts';
import { isMessageOf } from './messages.ts';
import type { Actor } from '../access/index.ts';
import { type Deps, onTransaction } from '../platform/deps.ts';
import type { z } from '../core/zod.ts';
import type { ConversationRow } from './presenter.ts';
import type { createConversationBody, updateConversationBody } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

const type = 'chat_conversation';

export type NewConversation = z.output<typeof createConversationBody>;

/** A conversation, optionally inside a project the caller can edit (the route checked `resources.create`). */
export async function createConversation(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  input: NewConversation,
  options: { scheduleId?: string | undefined } = {},
): Promise<ConversationRow> {
  return inTransaction(deps.db, async (trx) => {
    const [row] = (await trx('conversations')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        title: input.title ?? null,
        visibility: input.visibility ?? 'private',
        project_id: input.project_id ?? null,
        schedule_id: options.scheduleId ?? null,
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
export async function getConversation(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<ConversationRow> {
  return (await actor.resource<ConversationRow>(deps.db, type, id, 'read')).row;
}

/** Renames, sets its chat settings (skill, tools) and/or switches the active branch; switching branches is reading, not a setting (no activity entry). */
export function updateConversation(
  deps: Pick<Deps, 'db' | 'reads'>,
  actor: Actor,
  id: string,
  changes: z.output<typeof updateConversationBody>,
): Promise<ConversationRow> {
  return changeLive<ConversationRow>(deps, actor, type, id, async (trx, before) => {
    const { active_leaf_id, tools, approval_tools, ...settings } = changes;
    if (active_leaf_id !== undefined && !(await isMessageOf(trx, id, active_leaf_id)))
      throw badRequest('active_leaf_id: is not a message of this conversation', ['active_leaf_id']);
    if (settings.skill_id) await requireReadableSkill(onTransaction(deps, trx), actor, before.organization_id, settings.skill_id, 'skill_id');
    if (tools) await checkToolNames(trx, deps.reads, before.organization_id, actor.userId, tools);
    if (approval_tools) await checkToolNames(trx, deps.reads, before.organization_id, actor.userId, approval_tools, 'approval_tools');
    // Every setting changed is an activity entry (the tool lists stored as jsonb text).
    const changed = { ...settings, ...(tools !== undefined && { tools }), ...(approval_tools !== undefined && { approval_tools }) };
    const renamed = Object.keys(changed).length > 0;
    const [row] = (await trx('conversations')
      .where({ id })
      .update({
        ...settings,
        ...(tools !== undefined && { tools: tools === null ? null : JSON.stringify(tools) }),
        ...(approval_tools !== undefined && { approval_tools: JSON.stringify(approval_tools) }),
        ...(active_leaf_id !== undefined && { active_leaf_id }),
        ...(renamed && { updated_at: trx.fn.now() }),
      })
      .returning('*')) as ConversationRow[];
    if (renamed) {
      await recordActivity(trx, {
        organizationId: before.organization_id,
        actorId: actor.userId,
        action: 'conversation.updated',
        subjectType: type,
        subjectId: id,
        data: { before: Object.fromEntries(Object.keys(changed).map((k) => [k, before[k as keyof ConversationRow]])), after: changed },
      });
    }
    return row!;
  });
}

const titled = (row: ConversationRow) => ({ title: row.title });

/** Soft delete. Deleting a deleted conversation changes nothing (a retried DELETE is safe). */
export const deleteConversation = (deps: Pick<Deps, 'db'>, actor: Actor, id: string) => softDelete<ConversationRow>(deps, actor, type, id, titled);

/** Restoring a live conversation returns it unchanged (a retried restore is safe). */
export const restoreConversation = (deps: Pick<Deps, 'db'>, actor: Actor, id: string) =>
  restore<ConversationRow>(deps, actor, type, id, { returning: ['*'], activityData: titled });
