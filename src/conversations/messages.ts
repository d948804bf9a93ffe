import type { Knex } from 'knex';
import { changeLive } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { badRequest, notFound } from '../core/errors.ts';
import { decodeCursor, encodeCursor, type Page } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import type { listMessagesQuery, messageSchema, postMessageBody } from './message-schema.ts';
import type { ConversationRow } from './presenter.ts';

const type = 'chat_conversation';

export interface MessageRow {
  id: string;
  conversation_id: string;
  parent_id: string | null;
  role: 'user' | 'assistant' | 'system' | 'tool';
  content: string;
  created_by_id: string | null;
  credits: number | null;
  tool_calls: { id: string; name: string; arguments: string }[] | null;
  tool_call_id: string | null;
  created_at: Date;
  sibling_count: number | string;
  sibling_index: number | string;
}

export const messageColumns = (a: string) =>
  ['id', 'conversation_id', 'parent_id', 'role', 'content', 'created_by_id', 'credits', 'tool_calls', 'tool_call_id', 'created_at']
    .map((c) => `${a}.${c}`)
    .join(', ');

/** sibling_count and sibling_index of the message aliased `a`: siblings share its parent, ordered by (created_at, id). */
export const siblingColumns = (a: string) => {
  const sameParent = `s.conversation_id = ${a}.conversation_id AND (s.parent_id = ${a}.parent_id OR (s.parent_id IS NULL AND ${a}.parent_id IS NULL))`;
  return `(SELECT count(*) FROM conversation_messages s WHERE ${sameParent})::int AS sibling_count,
    (SELECT count(*) FROM conversation_messages s WHERE ${sameParent} AND (s.created_at, s.id) <= (${a}.created_at, ${a}.id))::int AS sibling_index`;
};

export function presentMessage(row: MessageRow): z.input<typeof messageSchema> {
  return {
    id: row.id,
    conversation_id: row.conversation_id,
    parent_id: row.parent_id,
    role: row.role,
    content: row.content,
    created_by_id: row.created_by_id,
    credits: row.credits,
    tool_calls: row.tool_calls ?? null,
    tool_call_id: row.tool_call_id ?? null,
    created_at: row.created_at.toISOString(),
    sibling_count: Number(row.sibling_count),
    sibling_index: Number(row.sibling_index),
  };
}

/** Whether `messageId` is a message of the conversation. */
export async function isMessageOf(db: Knex, conversationId: string, messageId: string): Promise<boolean> {
  return Boolean(await db('conversation_messages').where({ id: messageId, conversation_id: conversationId }).first('id'));
}

/**
 * Appends a message under `parent_id` (an older one starts a branch) or the active leaf; it becomes
 * the active leaf. The conversation row is locked, so concurrent posts chain instead of forking by accident.
 */
export function postMessage(deps: Pick<Deps, 'db'>, actor: Actor, conversationId: string, input: z.output<typeof postMessageBody>): Promise<MessageRow> {
  return changeLive<ConversationRow, MessageRow>(deps, actor, type, conversationId, async (trx, conversation) => {
    if (input.parent_id !== undefined && !(await isMessageOf(trx, conversationId, input.parent_id)))
      throw badRequest('parent_id: is not a message of this conversation', ['parent_id']);
    const parentId = input.parent_id ?? conversation.active_leaf_id;
    const [inserted] = (await trx('conversation_messages')
      .insert({
        conversation_id: conversationId,
        organization_id: conversation.organization_id,
        parent_id: parentId,
        role: input.role,
        content: input.content,
        created_by_id: actor.userId,
      })
      .returning(['id'])) as { id: string }[];
    await trx('conversations')
      .where({ id: conversationId })
      .update({
        active_leaf_id: inserted!.id,
        // In SQL: a JS Date would drop the microseconds.
        last_message_at: trx.raw('(SELECT created_at FROM conversation_messages WHERE id = ?)', [inserted!.id]),
        message_count: trx.raw('message_count + 1'),
      });
    const { rows } = await trx.raw(`SELECT ${messageColumns('m')}, ${siblingColumns('m')} FROM conversation_messages m WHERE m.id = ?`, [inserted!.id]);
    return rows[0] as MessageRow;
  });
}

/**
 * The branch from the root to `leaf_id` (default the active leaf), oldest first. Keyset-paged by
 * depth; the cursor also carries the leaf, so later pages stay on the branch the first one read
 * even if the active leaf moves meanwhile.
 */
export async function listMessages(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  conversationId: string,
  query: z.output<typeof listMessagesQuery>,
): Promise<Page<MessageRow>> {
  const { row: conversation } = await actor.resource<ConversationRow>(deps.db, type, conversationId, 'read');
  let leafId = query.leaf_id ?? conversation.active_leaf_id;
  let after = -1;
  if (query.cursor !== undefined) {
    const [cursorLeaf, depth] = decodeCursor(query.cursor, 2);
    if (typeof cursorLeaf !== 'string' || typeof depth !== 'number' || (query.leaf_id !== undefined && query.leaf_id !== cursorLeaf))
      throw badRequest('query.cursor: is not a cursor this list issued', ['cursor']);
    leafId = cursorLeaf;
    after = depth;
  }
  if (leafId === null) return { items: [], next_cursor: null };
  if (!(await isMessageOf(deps.db, conversationId, leafId))) throw notFound('message');
  const { rows } = await deps.db.raw(
    `WITH RECURSIVE branch AS (
       SELECT m.*, 0 AS height FROM conversation_messages m WHERE m.id = ? AND m.conversation_id = ?
       UNION ALL
       SELECT p.*, b.height + 1 FROM conversation_messages p JOIN branch b ON p.id = b.parent_id
     ), ordered AS (
       SELECT b.*, (max(b.height) OVER () - b.height) AS depth FROM branch b
     )
     SELECT ${messageColumns('o')}, o.depth, ${siblingColumns('o')}
       FROM ordered o WHERE o.depth > ? ORDER BY o.depth LIMIT ?`,
    [leafId, conversationId, after, query.limit + 1],
  );
  const page = (rows as (MessageRow & { depth: number })[]).map((row) => ({ ...row, depth: Number(row.depth) }));
  const more = page.length > query.limit;
  const items = page.slice(0, query.limit);
  const next_cursor = more ? encodeCursor([leafId, items.at(-1)!.depth]) : null;
  return { items: items.map(({ depth: _depth, ...row }) => row), next_cursor };
}
