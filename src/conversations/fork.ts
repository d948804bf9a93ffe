import { randomUUID } from 'node:crypto';
import { requireLive } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest } from '../core/errors.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import type { forkBody } from './message-schema.ts';
import type { ConversationRow } from './presenter.ts';
import { inTransaction } from '../db/transaction.ts';

const type = 'chat_conversation';
const TITLE_MAX = 300;
const SUFFIX = ' (fork)';

const forkTitle = (title: string | null) => (title === null ? null : `${title.slice(0, TITLE_MAX - SUFFIX.length)}${SUFFIX}`);

/**
 * A new private conversation of the caller holding a copy of the source's messages up to
 * `message_id` (its branch, or with mode `all` every message created at or before it), with new
 * ids and parents remapped. Reading the source is enough; creating needs `resources.create`.
 */
export async function forkConversation(deps: Pick<Deps, 'db'>, actor: Actor, sourceId: string, input: z.output<typeof forkBody>): Promise<ConversationRow> {
  return inTransaction(deps.db, async (trx) => {
    const { row: source } = await actor.resource<ConversationRow>(trx, type, sourceId, 'read');
    await actor.within(source.organization_id, 'resources.create');
    requireLive(source, type);
    const target = (await trx('conversation_messages').where({ id: input.message_id, conversation_id: sourceId }).first('id')) as { id: string } | undefined;
    if (!target) throw badRequest('message_id: is not a message of this conversation', ['message_id']);

    const { rows: ids } =
      input.mode === 'branch'
        ? await trx.raw(
            `WITH RECURSIVE branch AS (
               SELECT id, parent_id FROM conversation_messages WHERE id = ?
               UNION ALL
               SELECT p.id, p.parent_id FROM conversation_messages p JOIN branch b ON p.id = b.parent_id
             ) SELECT id FROM branch`,
            [target.id],
          )
        : // Parents are never younger than their children, so this set holds every parent it needs.
          await trx.raw(
            'SELECT id FROM conversation_messages WHERE conversation_id = ? AND created_at <= (SELECT created_at FROM conversation_messages WHERE id = ?)',
            [sourceId, target.id],
          );
    const oldIds = (ids as { id: string }[]).map((r) => r.id);
    const newIds = oldIds.map(() => randomUUID());

    const [fork] = (await trx('conversations')
      .insert({
        organization_id: source.organization_id,
        created_by_id: actor.userId,
        title: forkTitle(source.title),
        visibility: 'private',
        forked_from_conversation_id: source.id,
        // The chat settings go with the messages (a turn checks the skill's access again).
        skill_id: source.skill_id,
        tools: source.tools === null ? null : JSON.stringify(source.tools),
        approval_tools: JSON.stringify(source.approval_tools),
      })
      .returning('*')) as ConversationRow[];
    // One statement: the parent foreign keys are checked at its end, whatever the row order.
    const { rows: copied } = await trx.raw(
      `WITH ids AS (SELECT * FROM unnest(?::uuid[], ?::uuid[]) AS t(old_id, new_id))
       INSERT INTO conversation_messages (id, conversation_id, organization_id, parent_id, role, content, created_by_id, credits, metadata, tool_calls, tool_call_id, created_at)
       SELECT i.new_id, ?, m.organization_id, p.new_id, m.role, m.content, m.created_by_id, m.credits, m.metadata, m.tool_calls, m.tool_call_id, m.created_at
         FROM ids i JOIN conversation_messages m ON m.id = i.old_id LEFT JOIN ids p ON p.old_id = m.parent_id
       RETURNING id`,
      [oldIds, newIds, fork!.id],
    );
    const [row] = (await trx('conversations')
      .where({ id: fork!.id })
      .update({
        message_count: copied.length,
        // In SQL: a JS Date would drop the microseconds.
        last_message_at: trx.raw('(SELECT max(created_at) FROM conversation_messages WHERE conversation_id = ?)', [fork!.id]),
        active_leaf_id: newIds[oldIds.indexOf(target.id)],
      })
      .returning('*')) as ConversationRow[];
    await recordActivity(trx, {
      organizationId: source.organization_id,
      actorId: actor.userId,
      action: 'conversation.created',
      subjectType: type,
      subjectId: row!.id,
      data: { title: row!.title, visibility: row!.visibility, project_id: null, forked_from_conversation_id: source.id, mode: input.mode },
    });
    return row!;
  });
}
