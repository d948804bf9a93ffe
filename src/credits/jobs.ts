import { defineJob } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

const nothing = z.object({}).strict();

/** Resolves abandoned holds whose time ran out (captures kept, rest released). Every minute. */
export const expireCreditHoldsJob = defineJob({
  name: 'credits.expire-holds',
  version: 1,
  nature: 'computes',
  payload: nothing,
  // The next minute's run picks up anything left, so a failed pass needs no long retry chain.
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
});

/** Expires what is left of grants past their `expires_at`. Every minute. */
export const expireCreditGrantsJob = defineJob({
  name: 'credits.expire-grants',
  version: 1,
  nature: 'computes',
  payload: nothing,
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
});

const organizationScope = z.object({ organization_id: z.string().optional() });
export type OrganizationScope = z.output<typeof organizationScope>;

// The two low-balance alert jobs keep their `billing.` queue names from before credits owned them:
// a new name would be a new queue, stranding the jobs already queued under the old one.

/** Compares an organization's available credits with its alert thresholds (after credits move); every minute for all. */
export const balanceAlertCheckJob = defineJob({
  name: 'billing.balance-alert-check',
  version: 1,
  nature: 'computes',
  payload: organizationScope,
  searchable: ['organization_id'],
  policy: { retryLimit: 5, expireInSeconds: 5 * 60 },
  cron: '* * * * *',
});

const balanceAlertEmailPayload = z.object({ organization_id: z.string(), to: z.string(), subject: z.string(), text: z.string(), idempotency_key: z.string() });
export type BalanceAlertEmailPayload = z.output<typeof balanceAlertEmailPayload>;

/** One low-balance alert e-mail to one recipient. */
export const balanceAlertEmailJob = defineJob({
  name: 'billing.balance-alert-email',
  version: 1,
  nature: 'waits',
  payload: balanceAlertEmailPayload,
  searchable: ['organization_id'],
  sensitive: ['to', 'subject', 'text'],
});
