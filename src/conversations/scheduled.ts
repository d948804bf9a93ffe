// What a scheduled task's run does in conversations: a conversation of its own, the prompt, one chat run.
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { postMessage } from './messages.ts';
import type { EnqueueOptions } from '../jobs/enqueue.ts';
import { defaultTurnCeiling } from './run-pricing.ts';
import { chooseModel, getRun, type RunRow, startRun, stopRunById } from './runs.ts';
import { createConversation } from './service.ts';

export interface ScheduledTurn {
  organizationId: string;
  scheduleId: string;
  title: string;
  prompt: string;
  model: string | null;
  maxCredits: number | null;
  /** The task's skill: its instructions go first, as the system message the model reads before the prompt. */
  skillBody?: string | null | undefined;
}

/** A conversation marked with the task (`schedule_id`), the prompt as its first message; returns its id. */
export async function openScheduledConversation(deps: Deps, actor: Actor, turn: ScheduledTurn): Promise<string> {
  const conversation = await createConversation(deps, actor, { organization_id: turn.organizationId, title: turn.title }, { scheduleId: turn.scheduleId });
  if (turn.skillBody) await postMessage(deps, actor, conversation.id, { content: turn.skillBody, role: 'system' });
  await postMessage(deps, actor, conversation.id, { content: turn.prompt, role: 'user' });
  return conversation.id;
}

/**
 * Acquires the conversation's run lock and enqueues the chat run (the conversations machinery:
 * hold, stream, capture); `continueWith` is sent when the chat run's job ends, whichever way.
 */
export async function startScheduledTurn(
  deps: Deps,
  actor: Actor,
  conversationId: string,
  turn: Pick<ScheduledTurn, 'model' | 'maxCredits'>,
  continueWith: EnqueueOptions['continueWith'],
): Promise<RunRow> {
  const input = { ...(turn.model && { model: turn.model }), ...(turn.maxCredits && { max_credits: turn.maxCredits }) };
  return startRun(deps, actor, conversationId, input, { continueWith });
}

/**
 * What a scheduled turn holds when it starts: `maxCredits`, else the default hold of its turn — the
 * skill and the prompt at the prices of its model (else the organization's first available one)
 * with the model's `max_tokens` — as ./handlers.ts will compute it for the run.
 */
export async function scheduledTurnCeiling(
  deps: Deps,
  actor: Actor,
  turn: Pick<ScheduledTurn, 'organizationId' | 'prompt' | 'model' | 'maxCredits' | 'skillBody'>,
): Promise<number> {
  if (turn.maxCredits !== null) return turn.maxCredits;
  const model = await chooseModel(deps, actor, turn.organizationId, turn.model ?? undefined);
  const prompt = [...(turn.skillBody ? [{ role: 'system' as const, content: turn.skillBody }] : []), { role: 'user' as const, content: turn.prompt }];
  return defaultTurnCeiling(deps.db, model, turn.organizationId, prompt);
}

export { getRun as currentChatRun, stopRunById as stopChatRun };
