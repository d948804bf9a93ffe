// How a chat run's job ends, for the run: the answer appended and the credits it used captured (the
// rest released), or the hold released; the conversation's lock freed; followers told — all in the
// transaction that ends the job. Lock order: (job row) → conversation → run → hold → balance.
import type { Knex } from 'knex';
import { recordEvent } from '../core/events.ts';
import type { EndContext, EndReason, JobEnds } from '../jobs/define.ts';
import { outcomeOfEnd, settleCall } from '../metering/index.ts';
import type { ChatUsage } from '../providers/chat/index.ts';
import type { ChatRunPayload } from './jobs.ts';
import { creditsFor, estimateTokens, type TurnAnswer, turnPricing } from './run-pricing.ts';
import { notifyRunEvent } from './run-notify.ts';
import { LIVE_RUN_STATUSES, type RunRow } from './run-row.ts';
import { presentRun } from './runs.ts';
import { endRunningToolCalls, toolCreditsOf } from './tools/store.ts';

/** Locks the conversation, then the run (the order the API uses); null when the run already ended. */
async function lockLive(trx: Knex.Transaction, runId: string): Promise<RunRow | null> {
  const run = (await trx('chat_runs').where({ id: runId }).first('conversation_id')) as Pick<RunRow, 'conversation_id'> | undefined;
  if (!run) return null;
  await trx('conversations').where({ id: run.conversation_id }).forUpdate().first('id');
  const current = (await trx('chat_runs').where({ id: runId }).forUpdate().first()) as RunRow;
  return (LIVE_RUN_STATUSES as readonly string[]).includes(current.status) ? current : null;
}

/** Frees the conversation's lock if this run holds it, and tells its followers (at commit) how it ended. */
async function unlock(trx: Knex.Transaction, run: RunRow, length: number): Promise<void> {
  await trx('conversations').where({ id: run.conversation_id, active_run_id: run.id }).update({ active_run_id: null, active_run_at: null });
  await notifyRunEvent(trx, run, length);
}

const eventOfStatus = { succeeded: 'conversation.run.succeeded', stopped: 'conversation.run.canceled', failed: 'conversation.run.failed' } as const;

/** Ends the run row and records its event (about the conversation: its readers may see it). */
async function endRun(trx: Knex.Transaction, run: RunRow, changes: Partial<RunRow> & { status: keyof typeof eventOfStatus }): Promise<void> {
  const [ended] = (await trx('chat_runs')
    .where({ id: run.id })
    .update({
      ...changes,
      ...(changes.error && { error: JSON.stringify(changes.error) }),
      // An answer that does not extend what followers were sent starts a new stream epoch (./run-events.ts).
      ...(changes.snapshot !== undefined && !changes.snapshot.startsWith(run.snapshot) && { stream_epoch: run.stream_epoch + 1 }),
      updated_at: trx.fn.now(),
    })
    .returning('*')) as RunRow[];
  await recordEvent(trx, {
    organizationId: ended!.organization_id,
    type: eventOfStatus[changes.status],
    subject: { type: 'chat_conversation', id: ended!.conversation_id },
    object: presentRun(ended!),
  });
}

/** Appends `answer` as the assistant message under the answered one (it becomes the active leaf). */
async function appendAnswer(trx: Knex.Transaction, run: RunRow, answer: string): Promise<string> {
  const [inserted] = (await trx('conversation_messages')
    .insert({
      conversation_id: run.conversation_id,
      organization_id: run.organization_id,
      // Under the turn's last tool result, if it called tools (./tools/store.ts), so the branch keeps them.
      parent_id: run.tail_message_id ?? run.message_id,
      role: 'assistant',
      content: answer,
      metadata: { run_id: run.id, model: run.model },
    })
    .returning(['id', 'created_at'])) as { id: string; created_at: Date }[];
  await trx('conversations')
    .where({ id: run.conversation_id })
    .update({ active_leaf_id: inserted!.id, last_message_at: inserted!.created_at, message_count: trx.raw('message_count + 1') });
  return inserted!.id;
}

/** How a chat turn reads in the ledger (its call's capture and release). */
const turnLedger = (run: RunRow) => ({
  captured: `Used by a chat run (${run.model})`,
  metadata: { model: run.model },
  released: 'Released: the chat run did not answer',
});

/**
 * The answer kept (appended if any), what it used captured through its metered call's settle (the
 * rest released), the run in its end state, the lock freed.
 */
async function keep(trx: Knex.Transaction, context: EndContext, run: RunRow, answer: string, usage: ChatUsage, status: 'succeeded' | 'stopped'): Promise<void> {
  const answerId = answer.length > 0 ? await appendAnswer(trx, run, answer) : null;
  let charged = 0;
  if (run.hold_id !== null) {
    const { prices } = await turnPricing(context.deps, run, trx);
    // `max_credits` covers the turn's tool calls too: the model's share is what they left.
    const cap = run.max_credits === null ? Number.POSITIVE_INFINITY : Math.max(0, run.max_credits - (await toolCreditsOf(trx, run.id)));
    const outcome = {
      status: 'succeeded' as const,
      result: { answer_message_id: answerId, status },
      pages: 1,
      credits: Math.min(creditsFor(usage, prices), cap),
    };
    charged = (await settleCall(trx, run.id, outcome, { ledger: turnLedger(run) })).credits_charged ?? 0;
  }
  if (status === 'stopped') await endRunningToolCalls(trx, run.id, 'the turn was stopped');
  await endRun(trx, run, { status, snapshot: answer, answer_message_id: answerId, credits_charged: charged });
  await unlock(trx, run, answer.length);
}

/** The run did not answer: its call's hold goes back, it records why, the lock is freed. */
async function abandon(trx: Knex.Transaction, run: RunRow, error: EndReason): Promise<void> {
  if (run.hold_id !== null) await settleCall(trx, run.id, outcomeOfEnd('failed', error), { ledger: turnLedger(run) });
  await endRunningToolCalls(trx, run.id, 'the turn failed');
  await endRun(trx, run, { status: 'failed', error: { code: error.code, message: error.message }, credits_charged: 0 });
  await unlock(trx, run, run.snapshot.length);
}

export const chatRunEnds: JobEnds<ChatRunPayload, TurnAnswer> = {
  async succeeded(trx, { run_id }, { answer, usage, suspended }, context) {
    // Waiting for a tool's job (./tools/image.ts): that job's end sends the turn's next job, which goes on from its rounds.
    if (suspended) return;
    const run = await lockLive(trx, run_id);
    if (run) await keep(trx, context, run, answer, usage, 'succeeded');
  },
  async failed(trx, { run_id }, reason) {
    const run = await lockLive(trx, run_id);
    if (run) await abandon(trx, run, reason);
  },
  /** Stopped: the answer as followers last saw it (the snapshot) is kept, and charged with the prompt it answered. */
  async canceled(trx, { run_id }, _reason, context) {
    const run = await lockLive(trx, run_id);
    if (!run) return;
    // A run stopped while still queued never reached the model: its hold (placed at the start) goes back whole.
    const { promptTokens } = run.hold_id === null || run.status === 'queued' ? { promptTokens: 0 } : await turnPricing(context.deps, run, trx);
    // The prompt it was sent (fitted to the window, ./context/) when the run recorded it, else the branch's
    // estimate; and its finished tool rounds' usage (recorded with each round).
    const input = promptTokens === 0 ? 0 : (run.context?.tokens ?? promptTokens);
    const rounds = run.rounds_usage ?? { input_tokens: 0, output_tokens: 0 };
    const usage = { input_tokens: input + rounds.input_tokens, output_tokens: estimateTokens(run.snapshot) + rounds.output_tokens };
    await keep(trx, context, run, run.snapshot, usage, 'stopped');
  },
};
