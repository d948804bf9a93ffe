/**
 * Accepting a metered call (web side): quote, check the caller's attribution and run lock, then in
 * ONE transaction write the call, enqueue its job and place the credit hold — the hold last, so the
 * organization's balance row is locked only from the reserve to the commit. A refused hold (402)
 * rolls back the call and the job with it: nothing is billed, nothing runs.
 */
import type { Actor } from '../access/index.ts';
import { isMessageOf, runHoldingLock } from '../conversations/index.ts';
import { badRequest, conflict, isAppError } from '../core/errors.ts';
import { placeHold } from '../credits/index.ts';
import type { Deps } from '../platform/deps.ts';
import { holdRunIdOf, insertCall } from './calls.ts';
import { meteredCallJob } from './jobs.ts';
import { quoteOf, type ReadOperation } from './operation.ts';

/** The billing fields every metered call takes besides its input (spec §4.5). */
export interface CallTerms {
  organization_id: string;
  max_credits?: number | undefined;
  tool_call_id?: string | null | undefined;
  conversation_id?: string | null | undefined;
  message_id?: string | null | undefined;
  run_lock?: boolean | undefined;
}

/** How long past the read timeout a hold may stay open before the expiry job releases it (a backstop: settling releases it first). */
const HOLD_GRACE_SECONDS = 120;

/** Writes the call (id chosen by the caller, who already listens for its answer), its job and its hold; returns the quote. */
export async function acceptCall(
  deps: Deps,
  actor: Actor,
  operation: ReadOperation,
  terms: CallTerms,
  input: unknown,
  call: { id: string; requestId?: string | undefined },
): Promise<{ credits: number; pages: number }> {
  const quote = quoteOf(operation, input);
  if (terms.max_credits !== undefined && quote.credits > terms.max_credits)
    throw badRequest(`max_credits: the quoted ceiling is ${quote.credits} credits, more than max_credits (${terms.max_credits}); nothing was charged`, [
      'max_credits',
    ]);
  const chatRunId = await checkAttribution(deps, actor, terms);

  await deps.db.transaction(async (trx) => {
    await insertCall(trx, {
      id: call.id,
      organization_id: terms.organization_id,
      user_id: actor.userId,
      operation: operation.name,
      input,
      quoted_credits: quote.credits,
      quoted_pages: quote.pages,
      max_credits: terms.max_credits ?? null,
      tool_call_id: terms.tool_call_id ?? null,
      conversation_id: terms.conversation_id ?? null,
      message_id: terms.message_id ?? null,
      run_lock: terms.run_lock ?? false,
      chat_run_id: chatRunId,
      request_id: call.requestId ?? null,
    });
    await deps.jobs.enqueue(trx, meteredCallJob, { call_id: call.id });
    await placeHold(trx, deps.creditPeriods, {
      organizationId: terms.organization_id,
      userId: actor.userId,
      amount: quote.credits,
      reason: operation.name,
      runId: holdRunIdOf(call.id),
      runIsNew: true,
      conversationId: terms.conversation_id,
      messageId: terms.message_id,
      toolCallId: terms.tool_call_id,
      expiresInSeconds: Math.ceil(deps.config.READ_TIMEOUT_MS / 1000) + HOLD_GRACE_SECONDS,
      description: `Reserved for ${operation.name}`,
    });
  });
  return quote;
}

/**
 * The conversation and message a call is attributed to must be ones the caller can read in the
 * same organization; with `run_lock` the conversation's turn must hold its lock now (checked again
 * at capture). Returns the run holding the lock, if asked for.
 */
async function checkAttribution(deps: Deps, actor: Actor, terms: CallTerms): Promise<string | null> {
  const conversationId = terms.conversation_id ?? null;
  if (conversationId === null) {
    if (terms.message_id) throw badRequest('conversation_id: is required with message_id', ['conversation_id']);
    if (terms.run_lock) throw badRequest('conversation_id: is required with run_lock', ['conversation_id']);
    return null;
  }
  const unknown = badRequest('conversation_id: is not a conversation you can read in this organization', ['conversation_id']);
  const { row } = await actor.resource(deps.db, 'chat_conversation', conversationId, 'read').catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? unknown : error;
  });
  if (row.organization_id !== terms.organization_id || row.deleted_at !== null) throw unknown;
  if (terms.message_id && !(await isMessageOf(deps.db, conversationId, terms.message_id)))
    throw badRequest('message_id: is not a message of that conversation', ['message_id']);
  if (!terms.run_lock) return null;
  const holder = await runHoldingLock(deps.db, conversationId);
  if (holder === null) throw conflict('run_lock: the conversation’s turn no longer holds the run lock (it was stopped or has ended)', ['run_lock']);
  return holder;
}
