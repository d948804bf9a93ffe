// How a metered call's job ends, for the call: the runtime applies these in the transaction that ends the job.
import type { JobEnds } from '../jobs/define.ts';
import type { MeteredCallPayload } from './jobs.ts';
import type { PerformedCall } from './perform.ts';
import { outcomeOfEnd, settleCall } from './settle.ts';

export const meteredCallEnds: JobEnds<MeteredCallPayload, PerformedCall> = {
  async succeeded(trx, { call_id }, performed) {
    await settleCall(trx, call_id, { status: 'succeeded', ...performed });
  },
  async failed(trx, { call_id }, reason) {
    await settleCall(trx, call_id, outcomeOfEnd('failed', reason));
  },
  async canceled(trx, { call_id }, reason) {
    await settleCall(trx, call_id, outcomeOfEnd('canceled', reason));
  },
};
