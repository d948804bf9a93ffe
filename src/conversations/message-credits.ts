/**
 * Stamping a turn's cost on its message. The cost of a message is the sum of the credits-ledger
 * captures attributed to it:
 * - the captures of a worker chat run's hold (`chat_runs.hold_id`) belong to the run's answer
 *   (`chat_runs.answer_message_id`), although its ledger rows name the answered message
 *   (`message_id` is set when the hold is placed, before the answer exists);
 * - any other capture (client-driven chat runs, tool calls) belongs to the message its ledger row
 *   names (`message_id`).
 * Recomputed from the ledger each time, so repeating the stamp gives the same result.
 */
import type { Actor } from '../access/index.ts';
import { changeLive } from '../access/index.ts';
import { badRequest } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import { isMessageOf, type MessageRow, messageColumns, siblingColumns } from './messages.ts';
import type { ConversationRow } from './presenter.ts';

export function stampMessageCredits(deps: Pick<Deps, 'db'>, actor: Actor, conversationId: string, messageId: string): Promise<MessageRow> {
  return changeLive<ConversationRow, MessageRow>(deps, actor, 'chat_conversation', conversationId, async (trx, conversation) => {
    if (!(await isMessageOf(trx, conversationId, messageId))) throw badRequest('message_id: is not a message of this conversation', ['message_id']);
    const { rows } = await trx.raw(
      `SELECT COALESCE(sum(e.amount), 0)::int AS credits
         FROM credit_ledger_entries e
        WHERE e.organization_id = ? AND e.kind = 'capture'
          AND (e.hold_id IN (SELECT r.hold_id FROM chat_runs r WHERE r.answer_message_id = ? AND r.hold_id IS NOT NULL)
               OR (e.message_id = ? AND NOT EXISTS (SELECT 1 FROM chat_runs r WHERE r.hold_id = e.hold_id)))`,
      [conversation.organization_id, messageId, messageId],
    );
    await trx('conversation_messages')
      .where({ id: messageId })
      .update({ credits: (rows[0] as { credits: number }).credits });
    const message = await trx.raw(`SELECT ${messageColumns('m')}, ${siblingColumns('m')} FROM conversation_messages m WHERE m.id = ?`, [messageId]);
    return message.rows[0] as MessageRow;
  });
}
