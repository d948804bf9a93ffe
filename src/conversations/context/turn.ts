// What a turn sends its model: the project knowledge as system context, then as much of the branch
// as fits the model's window; and the record of it that the run keeps (`context`).
import type { Knex } from 'knex';
import { failForGood } from '../../jobs/define.ts';
import type { Deps } from '../../platform/deps.ts';
import type { ChatMessage, ChatParameters } from '../../providers/chat/index.ts';
import { type KnowledgeSource, turnKnowledge } from './knowledge.ts';
import { type ContextRecord, ContextWindowTooSmall, fitPrompt, toolsTokens } from './window.ts';

/** A run's `context`: what the fit did and which knowledge it sent. */
export interface RunContext extends ContextRecord {
  knowledge: KnowledgeSource[];
}

export interface TurnPrompt {
  prompt: ChatMessage[];
  /**
   * The prompt again with the turn's own rounds after the branch (assistant tool calls, tool
   * results), fitted the same way: a round's results never push a request past the window.
   */
  refit: (rounds: readonly ChatMessage[]) => ChatMessage[];
  /** The model's parameters, `max_tokens` lowered when it left the prompt no room. */
  parameters: ChatParameters;
  context: RunContext;
}

/**
 * The turn's prompt from the branch and pricing the run already read (./run-pricing.ts): knowledge
 * first, newest messages kept, oldest left out, tool results cut — the request never exceeds the
 * window. A window too small for the answered message fails the run for good (no retry helps).
 */
export async function turnContext(
  deps: Pick<Deps, 'db'>,
  run: { conversation_id: string; user_id: string },
  pricing: { prompt: ChatMessage[]; parameters: ChatParameters; window: number },
  /** The tools the turn offers: their definitions take room in the window too. */
  tools: readonly unknown[] = [],
): Promise<TurnPrompt> {
  const knowledge = await turnKnowledge(deps, run);
  const fitWith = (rounds: readonly ChatMessage[]) =>
    fitPrompt({
      system: knowledge.system,
      history: [...pricing.prompt, ...rounds],
      window: pricing.window,
      maxTokens: pricing.parameters.max_tokens,
      reservedTokens: toolsTokens(tools),
    });
  try {
    const fit = fitWith([]);
    return {
      prompt: fit.messages as ChatMessage[],
      refit: (rounds) => (rounds.length === 0 ? (fit.messages as ChatMessage[]) : (fitWith(rounds).messages as ChatMessage[])),
      parameters: fit.cappedMaxTokens === undefined ? pricing.parameters : { ...pricing.parameters, max_tokens: fit.cappedMaxTokens },
      context: { ...fit.record, knowledge: knowledge.sources },
    };
  } catch (error) {
    if (error instanceof ContextWindowTooSmall) throw failForGood('context_window_too_small', error.message, error);
    throw error;
  }
}

/** Keeps on the run what its prompt held (in the step that starts it, so a retry rewrites it with what it sends). */
export async function recordContext(trx: Knex.Transaction, runId: string, context: RunContext): Promise<void> {
  await trx('chat_runs')
    .where({ id: runId })
    .update({ context: JSON.stringify(context) });
}
