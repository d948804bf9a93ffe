import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { openJobsNaming, startNow } from './boss-sql/index.ts';
import type { JobDefinition } from './define.ts';

const continueBrand = Symbol.for('workspace-platform.ContinueLater');

/**
 * Thrown by a handler's wait that would outlast its bound (JOB_WAIT_BOUND_SECONDS): the attempt ends
 * here and the runtime snoozes the job — the same job, due again after `seconds`, no retry used, no
 * slot held meanwhile (src/jobs/runtime.ts). Whatever the next attempt needs to resume (a prediction
 * id) must be in a step already: the job's durable state is its rows, not this attempt's memory.
 */
export class ContinueLater extends Error {
  readonly [continueBrand] = true;
  readonly seconds: number;
  readonly why: string;
  constructor(seconds: number, why: string) {
    super(`continues in ${seconds} s: ${why}`);
    this.seconds = seconds;
    this.why = why;
    this.name = 'ContinueLater';
  }
}
export const isContinueLater = (error: unknown): error is ContinueLater => typeof error === 'object' && error !== null && continueBrand in error;

/** Waits `ms` inside the attempt, or throws ContinueLater when it would take the attempt past its wait budget. */
export type BoundedWait = (ms: number, signal: AbortSignal) => Promise<void>;

/**
 * A waiter with `budgetMs` of in-slot waiting for the whole attempt: short waits (a poll's first
 * few hundred milliseconds, a 429's second) are slept through, and the first wait that would exceed
 * the budget ends the attempt as a continuation of `ms` instead. Pass 0 to continue on every wait
 * (an attempt resuming a wait that already outlasted the bound). The continuation is never later
 * than `latestMs` from now, so a deadline (the work's timeout) is still met by the next attempt.
 */
export function boundedWait(budgetMs: number, why: string, latestMs = Number.POSITIVE_INFINITY): BoundedWait {
  let left = budgetMs;
  return async (ms, signal) => {
    if (ms > left) throw new ContinueLater(Math.max(0.1, Math.min(ms, latestMs) / 1000), why);
    left -= ms;
    await sleep(ms, undefined, { signal }).catch((error: unknown) => {
      throw signal.aborted ? signal.reason : error;
    });
  };
}

/**
 * Wakes the waiting jobs of `definition` working on the resource whose id is `value` under the
 * searchable payload field `field` (a generation's by `generation_id`): a continuation due later is
 * made due now and a slot woken at commit (the provider's webhook said the wait is over). A job
 * running, finished or held back by a pause is left as it is. Returns how many were woken.
 */
export async function wakeWorkOn<J extends JobDefinition>(
  trx: Knex.Transaction,
  definition: J,
  field: J['searchable'][number],
  value: string,
): Promise<number> {
  let woken = 0;
  for (const id of await openJobsNaming(trx, definition.name, field, value)) if ((await startNow(trx, definition.name, id)) === 'started') woken += 1;
  return woken;
}
