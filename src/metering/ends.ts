// How a metered call's job ends, for the call: the runtime applies these in the transaction that ends the job
// (a result's capture is then posted right after that commit).
import type { JobEnds } from '../jobs/define.ts';
import type { MeteredCallPayload } from './jobs.ts';
import type { PerformedCall } from './perform.ts';
import { outcomeOfEnd, settleCall, settleReadResult } from './settle.ts';

export const meteredCallEnds: JobEnds<MeteredCallPayload, PerformedCall> = {
  // The capture is posted after the commit, by its own statement (see settleReadResult).
  succeeded: (trx, { call_id }, performed, { deps }) => settleReadResult(trx, deps.db, call_id, { status: 'succeeded', ...performed }),
  async failed(trx, { call_id }, reason) {
    await settleCall(trx, call_id, outcomeOfEnd('failed', reason));
  },
  async canceled(trx, { call_id }, reason) {
    await settleCall(trx, call_id, outcomeOfEnd('canceled', reason));
  },
};
