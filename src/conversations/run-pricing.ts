// What a chat turn costs: the model's prices, the prompt it answers, and credits for the tokens used.
import type { Knex } from 'knex';
import { effectiveChatModel, effectivePrices } from '../chat-models/index.ts';
import type { NewCall } from '../metering/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { ChatMessage, ChatUsage } from '../providers/chat/index.ts';
import type { RunRow } from './runs.ts';

/** A chat turn's metered call's operation (and its hold's reason: the credit reports group by it). */
export const CHAT_RUN_OPERATION = 'chat_run';

/** How a turn's hold reads in the ledger. */
export const TURN_HOLD_DESCRIPTION = 'Reserved for a chat run';

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
  /** The turn waits for a tool's job (an image generation) whose end continues it: the run stays live, nothing is settled. */
  suspended?: boolean;
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

/** Answer length assumed for the credit ceiling when neither the run nor the model names one. */
const DEFAULT_MAX_TOKENS = 1024;

/** A model's prices, default parameters and provider (who serves it) for a prompt, as the organization has the model. */
async function pricingOf(db: Knex | Knex.Transaction, model: string, organizationId: string, prompt: ChatMessage[]) {
  const effective = await effectiveChatModel({ db: db as Knex }, model, organizationId);
  const parameters = { ...(effective.copy?.default_parameters ?? {}) };
  // A branch longer than the window is trimmed to it before it is sent (./context/): never priced above it.
  const promptTokens = Math.min(
    effective.model.context_window,
    prompt.reduce((sum, m) => sum + estimateTokens(m.content), 0),
  );
  return {
    prices: effectivePrices(effective),
    prompt,
    parameters,
    promptTokens,
    window: effective.model.context_window,
    provider: effective.model.provider,
  };
}

/** The run's model prices, its prompt and the model's default parameters. */
export async function turnPricing(deps: Pick<Deps, 'db'>, run: RunRow, db: Knex | Knex.Transaction = deps.db) {
  return pricingOf(db, run.model, run.organization_id, await promptOf(db, run));
}

/**
 * The credits a turn holds: `max_credits` when asked for, else the default — the prompt and the
 * model's `max_tokens` (else DEFAULT_MAX_TOKENS) at the model's prices, at least 1.
 */
export function turnCeiling(maxCredits: number | null, pricing: Awaited<ReturnType<typeof pricingOf>>): number {
  const { prices, parameters, promptTokens } = pricing;
  return maxCredits ?? Math.max(1, creditsFor({ input_tokens: promptTokens, output_tokens: parameters.max_tokens ?? DEFAULT_MAX_TOKENS }, prices));
}

/** The default hold of a turn not run yet: `prompt` answered by `model` in the organization. */
export async function defaultTurnCeiling(db: Knex | Knex.Transaction, model: string, organizationId: string, prompt: ChatMessage[]): Promise<number> {
  return turnCeiling(null, await pricingOf(db, model, organizationId, prompt));
}
