import { inTransaction } from '../db/transaction.ts';
import type { EndReason } from '../jobs/define.ts';
import { cancelWorkOn } from '../jobs/ends.ts';
import type { Deps } from '../platform/deps.ts';
import { type CallRow, holdRunIdOfCall, loadCall } from './calls.ts';
import { postPendingCaptureOfRun } from '../credits/index.ts';
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
  const call = (await loadCall(deps.db, callId))!;
  // Its result won the race, but the worker that settled it may have died before posting the capture
  // (src/metering/settle.ts settleReadResult): post it now, so the answer is given with its charge in the ledger.
  if (call.status === 'succeeded') await postPendingCaptureOfRun(deps.db, call.organization_id, holdRunIdOfCall(call));
  return call;
}
