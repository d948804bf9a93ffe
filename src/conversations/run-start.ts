// Starting a chat run over HTTP: the run and its credit hold in one transaction, so a caller without
// credits gets 402 at once instead of a run that fails on the worker.
import type { Actor } from '../access/index.ts';
import type { z } from '../core/zod.ts';
import { MAX_HOLD_SECONDS } from '../credits/index.ts';
import { reserveCall } from '../metering/index.ts';
import type { Deps } from '../platform/deps.ts';
import { TURN_HOLD_DESCRIPTION, turnCall, turnCeiling, turnPricing } from './run-pricing.ts';
import type { startRunBody } from './run-schema.ts';
import { type RunRow, startRun } from './runs.ts';

/**
 * The hold is placed while the run is queued, so it must outlive the queue and every attempt; the
 * run's end settles it in any case (the runtime ends every job), expiry being only the backstop.
 */
const QUEUED_TURN_HOLD_SECONDS = MAX_HOLD_SECONDS;

/**
 * Acquires the lock, enqueues the turn and holds its ceiling (`max_credits`, else the default from
 * the prompt and the model's prices) from the caller's balance and spending limit: the real hold,
 * under the balance row's lock, so concurrent starts cannot overdraw. No credits → 402
 * `payment_required` naming `balance` or `spending_limit`, and nothing is written.
 */
export function startPaidRun(deps: Deps, actor: Actor, conversationId: string, input: z.output<typeof startRunBody>): Promise<RunRow> {
  return startRun(deps, actor, conversationId, input, {
    reserve: async (trx, run) => {
      const ceiling = turnCeiling(run.max_credits, await turnPricing(deps, run, trx));
      const hold = await reserveCall(trx, deps, turnCall(run, ceiling), { description: TURN_HOLD_DESCRIPTION, expiresInSeconds: QUEUED_TURN_HOLD_SECONDS });
      return hold.id;
    },
  });
}
