// Worker side of the chat run (loaded by the `handler` of chatRunJob in ./jobs.ts): hold credits,
// stream the answer; the runtime then ends the run through ./run-ends.ts.
import { isAppError } from '../core/errors.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { reserveCall, startCall } from '../metering/index.ts';
import { recordContext, turnContext } from './context/turn.ts';
import type { ChatRunPayload } from './jobs.ts';
import { TURN_HOLD_DESCRIPTION, type TurnAnswer, turnCall, turnCeiling, turnPricing } from './run-pricing.ts';
import { LIVE_RUN_STATUSES, type RunRow } from './run-row.ts';
import { affordableTools, turnTools } from './tools/catalog.ts';
import { answerWithTools, offeredTools } from './tools/loop.ts';

/** Reserve → stream (with tool rounds). The runtime's `succeeded` end appends the answer, captures and unlocks; a retry repeats nothing done. */
export async function runChat({ run_id }: ChatRunPayload, job: JobContext): Promise<TurnAnswer | NothingToDo> {
  const { deps } = job;
  const pending = (await deps.db('chat_runs').where({ id: run_id }).first()) as RunRow | undefined;
  if (!pending || !(LIVE_RUN_STATUSES as readonly string[]).includes(pending.status)) return nothingToDo('the run has ended');
  const pricing = await turnPricing(deps, pending);
  // Knowledge as system context, the branch fitted to the model's window around the tools offered
  // (./context/, ./tools/catalog.ts); the run records what was sent.
  const asked = pricing.prompt.at(-1)?.content ?? '';
  const tools = affordableTools(await turnTools(deps, pending), pricing.window, typeof asked === 'string' ? asked : '');
  const { prompt, refit, parameters, context } = await turnContext(deps, pending, pricing, offeredTools(tools));

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

  // Model → tool calls → model until it answers (./tools/loop.ts): streamed, snapshots published, each round recorded.
  // The fitted prompt; each round's calls and results follow it, the whole fitted to the window again.
  return answerWithTools(job, run, { ...pricing, prompt, refit, parameters }, tools);
}
