import { defineJob, type JobDefinition } from '../jobs/define.ts';
import { jsonValue, z } from '../core/zod.ts';

/** Resolves abandoned holds whose time ran out (captures kept, rest released). Every minute. */
export const expireCreditHoldsJob = defineJob({
  name: 'credits.expire-holds',
  version: 1,
  payload: z.object({}).strict(),
  // The next minute's run picks up anything left, so a failed pass needs no long retry chain.
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
});

/** Expires what is left of grants past their `expires_at`. Every minute. */
export const expireCreditGrantsJob = defineJob({
  name: 'credits.expire-grants',
  version: 1,
  payload: z.object({}).strict(),
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
});

/** Deletes stored Idempotency-Key responses older than 24 hours (the replay window). Hourly. */
export const deleteExpiredIdempotencyKeysJob = defineJob({
  name: 'credits.delete-expired-idempotency-keys',
  version: 1,
  payload: z.object({}).strict(),
  policy: { retryLimit: 1, retryDelaySeconds: 60, expireInSeconds: 600, deleteAfterSeconds: 3600 },
});

/**
 * Work paid in credits, done by a worker in three crash-safe steps: reserve (a hold keyed by
 * `operation_key`, so a retried attempt finds the same hold), perform, capture what was used.
 * A worker dying between the steps leaves a hold that the retry captures, or the expiry job
 * releases if the retry never comes or comes too late: either way it resolves exactly once.
 */
export const meteredOperationJob = defineJob({
  name: 'credits.metered-operation',
  version: 1,
  payload: z.object({
    organization_id: z.string().min(1),
    user_id: z.string().min(1),
    /** Unique per organization: the hold's run id is `job:<operation_key>`. */
    operation_key: z.string().min(1).max(200),
    /** A registered metered operation (src/credits/metered.ts). */
    operation: z.string().min(1),
    /** Credits reserved up front: the most the operation may cost. */
    estimate: z.number().int().min(1),
    hold_seconds: z.number().int().min(1).max(24 * 3600).default(900),
    conversation_id: z.string().optional(),
    tool_call_id: z.string().optional(),
    input: jsonValue.optional(),
  }),
  policy: { retryLimit: 5, retryDelaySeconds: 2, expireInSeconds: 15 * 60 },
});

export const creditSchedules: readonly { job: JobDefinition; cron: string }[] = [
  { job: expireCreditHoldsJob, cron: '* * * * *' },
  { job: expireCreditGrantsJob, cron: '* * * * *' },
  { job: deleteExpiredIdempotencyKeysJob, cron: '7 * * * *' },
];
