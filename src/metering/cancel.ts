import { inTransaction } from '../db/transaction.ts';
import type { EndReason } from '../jobs/define.ts';
import { cancelWorkOn } from '../jobs/ends.ts';
import type { Deps } from '../platform/deps.ts';
import { type CallRow, loadCall } from './calls.ts';
import { meteredCallJob } from './jobs.ts';
import { outcomeOfEnd, settleCall } from './settle.ts';

/**
 * Stops a metered call from the web side (a hang-up, a timeout): its job is canceled and the call
 * settles with that end — `timeout` as a failure, anything else as canceled. A call whose job is
 * gone (deleted by an operator) is settled directly. Returns the call as it now stands (settled by
 * the worker first, if its result won the race).
 */
export async function cancelCall(deps: Deps, callId: string, reason: EndReason): Promise<CallRow> {
  await inTransaction(deps.db, async (trx) => {
    if ((await cancelWorkOn(trx, deps, meteredCallJob, 'call_id', callId, reason)) === 0) await settleCall(trx, callId, outcomeOfEnd('canceled', reason));
  });
  return (await loadCall(deps.db, callId))!;
}
