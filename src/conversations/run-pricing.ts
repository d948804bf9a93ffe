// What a chat turn costs: the model's prices, the prompt it answers, and credits for the tokens used.
import type { Knex } from 'knex';
import { effectiveChatModel, effectivePrices } from '../chat-models/index.ts';
import type { NewCall } from '../metering/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { ChatMessage, ChatUsage } from '../providers/chat/index.ts';
import type { RunRow } from './runs.ts';

/** A chat turn's metered call's operation (and its hold's reason: the credit reports group by it). */
export const CHAT_RUN_OPERATION = 'chat_run';

/** A chat turn as a metered call: the run's id is the call's and its hold's run id, its ceiling the quote. */
export function turnCall(run: RunRow, ceiling: number): NewCall {
  return {
    id: run.id,
    organization_id: run.organization_id,
    user_id: run.user_id,
    operation: CHAT_RUN_OPERATION,
    input: { model: run.model, message_id: run.message_id },
    quoted_credits: ceiling,
    quoted_pages: 1,
    max_credits: run.max_credits,
    tool_call_id: null,
    conversation_id: run.conversation_id,
    message_id: run.message_id,
    run_lock: false,
    chat_run_id: run.id,
    request_id: null,
    hold_run_id: run.id,
  };
}

type Prices = ReturnType<typeof effectivePrices>;

/** What a streamed turn hands its `succeeded` end. */
export interface TurnAnswer {
  answer: string;
  usage: ChatUsage;
}

/** About four characters a token (what the sandbox reports too), for a turn the provider never reported. */
export const estimateTokens = (text: string) => (text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4)));

export const creditsFor = (usage: ChatUsage, prices: Prices) =>
  Math.ceil((usage.input_tokens * prices.input_credits_per_1k_tokens + usage.output_tokens * prices.output_credits_per_1k_tokens) / 1000);

/** The branch root → answered message, as the model's prompt. */
async function promptOf(db: Knex | Knex.Transaction, run: RunRow): Promise<ChatMessage[]> {
  if (run.message_id === null) return [];
  const { rows } = await db.raw(
    `WITH RECURSIVE branch AS (
       SELECT m.id, m.parent_id, m.role, m.content, 0 AS height FROM conversation_messages m WHERE m.id = ? AND m.conversation_id = ?
       UNION ALL
       SELECT p.id, p.parent_id, p.role, p.content, b.height + 1 FROM conversation_messages p JOIN branch b ON p.id = b.parent_id
     )
     SELECT role, content FROM branch ORDER BY height DESC`,
    [run.message_id, run.conversation_id],
  );
  return rows as ChatMessage[];
}

/** The run's model prices, its prompt and the model's default parameters. */
export async function turnPricing(deps: Deps, run: RunRow, db: Knex | Knex.Transaction = deps.db) {
  const [effective, prompt] = await Promise.all([effectiveChatModel({ db: db as Knex }, run.model, run.organization_id), promptOf(db, run)]);
  const parameters = { ...(effective.copy?.default_parameters ?? {}) };
  return { prices: effectivePrices(effective), prompt, parameters, promptTokens: prompt.reduce((sum, m) => sum + estimateTokens(m.content), 0) };
}
