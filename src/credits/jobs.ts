import { defineJob } from '../jobs/define.ts';
import { jsonValue, z } from '../core/zod.ts';

const nothing = z.object({}).strict();

/** Resolves abandoned holds whose time ran out (captures kept, rest released). Every minute. */
export const expireCreditHoldsJob = defineJob({
  name: 'credits.expire-holds',
  version: 1,
  payload: nothing,
  // The next minute's run picks up anything left, so a failed pass needs no long retry chain.
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
  handler: () => import('./handlers.ts').then((m) => m.expireCreditHolds),
});

/** Expires what is left of grants past their `expires_at`. Every minute. */
export const expireCreditGrantsJob = defineJob({
  name: 'credits.expire-grants',
  version: 1,
  payload: nothing,
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
  handler: () => import('./handlers.ts').then((m) => m.expireCreditGrants),
});

const meteredOperationPayload = z.object({
  organization_id: z.string().min(1),
  user_id: z.string().min(1),
  /** Unique per organization: the hold's run id is `job:<operation_key>`. */
  operation_key: z.string().min(1).max(200),
  /** A metered operation of `Deps.metered` (src/metered-operations.ts). */
  operation: z.string().min(1),
  /** Credits reserved up front: the most the operation may cost. */
  estimate: z.number().int().min(1),
  hold_seconds: z
    .number()
    .int()
    .min(1)
    .max(24 * 3600)
    .default(900),
  conversation_id: z.string().optional(),
  tool_call_id: z.string().optional(),
  input: jsonValue.optional(),
});
export type MeteredOperationPayload = z.output<typeof meteredOperationPayload>;

/**
 * Work paid in credits, done by a worker in three crash-safe steps: reserve (a hold keyed by
 * `operation_key`, so a retried attempt finds the same hold), perform, capture what was used.
 * A worker dying between the steps leaves a hold that the retry captures, or the expiry job
 * releases if the retry never comes or comes too late: either way it resolves exactly once.
 */
export const meteredOperationJob = defineJob({
  name: 'credits.metered-operation',
  version: 1,
  payload: meteredOperationPayload,
  policy: { retryLimit: 5, retryDelaySeconds: 2, expireInSeconds: 15 * 60 },
  handler: () => import('./handlers.ts').then((m) => m.runMeteredOperation),
});

const organizationScope = z.object({ organization_id: z.string().optional() });
export type OrganizationScope = z.output<typeof organizationScope>;

// The two low-balance alert jobs keep their `billing.` queue names from before credits owned them:
// a new name would be a new queue, stranding the jobs already queued under the old one.

/** Compares an organization's available credits with its alert thresholds (after credits move); every minute for all. */
export const balanceAlertCheckJob = defineJob({
  name: 'billing.balance-alert-check',
  version: 1,
  payload: organizationScope,
  policy: { retryLimit: 5, expireInSeconds: 5 * 60 },
  cron: '* * * * *',
  handler: () => import('./handlers.ts').then((m) => m.balanceAlertCheck),
});

const balanceAlertEmailPayload = z.object({ organization_id: z.string(), to: z.string(), subject: z.string(), text: z.string(), idempotency_key: z.string() });
export type BalanceAlertEmailPayload = z.output<typeof balanceAlertEmailPayload>;

/** One low-balance alert e-mail to one recipient. */
export const balanceAlertEmailJob = defineJob({
  name: 'billing.balance-alert-email',
  version: 1,
  payload: balanceAlertEmailPayload,
  handler: () => import('./handlers.ts').then((m) => m.balanceAlertEmail),
});
