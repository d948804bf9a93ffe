import { defineJob } from '../../jobs/define.ts';
import { z } from '../../core/zod.ts';

const nothing = z.object({}).strict();

/** Deletes old rate-limit windows. Every minute. */
export const sweepRateLimitWindowsJob = defineJob({
  name: 'maintenance.sweep-rate-limit-windows',
  version: 1,
  nature: 'computes',
  payload: nothing,
  // The next minute's run does the same work, so a failed sweep needs no long retry chain.
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 60, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
});

/** Deletes stored Idempotency-Key responses older than 24 hours (the replay window). Hourly. */
export const deleteExpiredIdempotencyKeysJob = defineJob({
  // The queue keeps the name it had when credits owned it: its schedule and history stay attached.
  name: 'credits.delete-expired-idempotency-keys',
  version: 1,
  nature: 'computes',
  payload: nothing,
  policy: { retryLimit: 1, retryDelaySeconds: 60, expireInSeconds: 600, deleteAfterSeconds: 3600 },
  cron: '7 * * * *',
});
