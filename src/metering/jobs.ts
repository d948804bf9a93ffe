import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

const meteredCallPayload = z.object({ call_id: z.string().uuid() });
export type MeteredCallPayload = z.output<typeof meteredCallPayload>;

/**
 * One metered read on a worker: call the provider and validate what it answered against the
 * operation's output schema; the call settles with the job's end (capture what it cost, release
 * the rest; or release all on a failure, a cancel or a timeout). Settling is once per call whatever
 * retries, cancels or timeouts race it. Retried only when the worker died or hit an unexpected
 * error; provider failures end it at once.
 */
export const meteredCallJob = defineJob({
  name: 'metering.call',
  version: 1,
  nature: 'waits',
  payload: meteredCallPayload,
  searchable: ['call_id'],
  policy: { retryLimit: 2, retryDelaySeconds: 1, expireInSeconds: 10 * 60 },
  expectedSeconds: 30,
});
