// Worker side of the chat run (loaded by the `handler` of chatRunJob in ./jobs.ts): hold credits,
// stream the answer; the runtime then ends the run through ./run-ends.ts.
import { isAppError } from '../core/errors.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { progressPublisher } from '../jobs/progress.ts';
import { reserveCall, startCall } from '../metering/index.ts';
import type { ChatUsage } from '../providers/chat/index.ts';
import { recordContext, turnContext } from './context/turn.ts';
import type { ChatRunPayload } from './jobs.ts';
import { estimateTokens, TURN_HOLD_DESCRIPTION, type TurnAnswer, turnCall, turnCeiling, turnPricing } from './run-pricing.ts';
import { notifyRunEvent } from './run-notify.ts';
import { LIVE_RUN_STATUSES, type RunRow } from './run-row.ts';

/** How often a streaming run publishes its snapshot (SSE followers re-read it). */
const SNAPSHOT_MS = 250;

/** Reserve → stream. The runtime's `succeeded` end appends the answer, captures and unlocks; a retry repeats nothing done. */
export async function runChat({ run_id }: ChatRunPayload, job: JobContext): Promise<TurnAnswer | NothingToDo> {
  const { deps, log, signal } = job;
  const pending = (await deps.db('chat_runs').where({ id: run_id }).first()) as RunRow | undefined;
  if (!pending || !(LIVE_RUN_STATUSES as readonly string[]).includes(pending.status)) return nothingToDo('the run has ended');
  const pricing = await turnPricing(deps, pending);
  // Knowledge as system context, the branch fitted to the model's window (./context/); the run records what was sent.
  const { prompt, parameters, context } = await turnContext(deps, pending, pricing);

  // Running, with its call and hold: one step, so a retry finds the call it reserved (keyed by the run) or none.
  // The hold is placed when the run is started (./runs.ts); a run queued before that was so gets it here.
  const run = await job.step(async (trx) => {
    let holdId = pending.hold_id;
    if (holdId === null) {
      const hold = await reserveCall(trx, deps, turnCall(pending, turnCeiling(pending.max_credits, pricing)), { description: TURN_HOLD_DESCRIPTION }).catch(
        (error: unknown) => {
          // No credits (balance or spending limit): the run fails saying so; nothing to retry.
          if (isAppError(error, 'payment_required')) throw failForGood('payment_required', error.message);
          throw error;
        },
      );
      holdId = hold.id;
    }
    await startCall(trx, pending.id);
    await recordContext(trx, pending.id, context);
    const [updated] = (await trx('chat_runs')
      .where({ id: pending.id })
      .update({ hold_id: holdId, status: trx.raw(`CASE WHEN status = 'queued' THEN 'running' ELSE status END`), updated_at: trx.fn.now() })
      .returning('*')) as RunRow[];
    return updated!;
  });

  let answer = '';
  let usage: ChatUsage | undefined;
  const snapshot = progressPublisher<string>(job, SNAPSHOT_MS, async (trx, text) => {
    await trx('chat_runs').where({ id: run.id }).update({ snapshot: text, heartbeat_at: trx.fn.now(), updated_at: trx.fn.now() });
    // Delivered at commit: followers (./run-events.ts) re-read the snapshot.
    await notifyRunEvent(trx, run, text.length);
  });
  try {
    for await (const chunk of deps.providers.chat.stream({ model: run.model, messages: prompt, parameters, signal })) {
      if ('delta' in chunk) {
        const first = answer.length === 0;
        answer += chunk.delta;
        // The first words go out at once (followers see the turn start); later ones at most every SNAPSHOT_MS.
        snapshot.publish(answer, first);
      } else usage = chunk.usage;
    }
  } catch (error) {
    // A cancel or a lost lease: the runtime knows which, and this attempt writes nothing more.
    if (signal.aborted) throw error;
    log.warn({ err: error, run_id }, 'chat run failed at the provider');
    if (job.lastAttempt) throw failForGood('provider_failed', error instanceof Error ? error.message : String(error), error);
    throw error;
  } finally {
    snapshot.stop();
  }
  return { answer, usage: usage ?? { input_tokens: context.tokens, output_tokens: estimateTokens(answer) } };
}
