import { defineJob } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

const organizationScope = z.object({ organization_id: z.string().optional() });
export type OrganizationScope = z.output<typeof organizationScope>;

/** Plan-cycle refills; every 10 minutes for all organizations, or enqueued for one. */
export const cycleRefillsJob = defineJob({
  name: 'billing.cycle-refills',
  version: 1,
  payload: organizationScope,
  policy: { retryLimit: 3, expireInSeconds: 10 * 60 },
  cron: '*/10 * * * *',
  handler: () => import('./handlers.ts').then((m) => m.cycleRefills),
});

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
