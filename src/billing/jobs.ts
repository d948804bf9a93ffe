import { defineJob } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

/** Plan-cycle refills; scheduled by the workers (cron), or enqueued for one organization. */
export const cycleRefillsJob = defineJob({
  name: 'billing.cycle-refills',
  version: 1,
  payload: z.object({ organization_id: z.string().optional() }),
  policy: { retryLimit: 3, expireInSeconds: 10 * 60 },
});

/** Compares an organization's available credits with its alert thresholds (after credits move). */
export const balanceAlertCheckJob = defineJob({
  name: 'billing.balance-alert-check',
  version: 1,
  payload: z.object({ organization_id: z.string().optional() }),
  policy: { retryLimit: 5, expireInSeconds: 5 * 60 },
});

/** One low-balance alert e-mail to one recipient. */
export const balanceAlertEmailJob = defineJob({
  name: 'billing.balance-alert-email',
  version: 1,
  payload: z.object({ organization_id: z.string(), to: z.string(), subject: z.string(), text: z.string(), idempotency_key: z.string() }),
});

/** Cron schedules the workers register (pg-boss `schedule`, run once across all workers). */
export const billingSchedules = [
  { job: cycleRefillsJob, cron: '*/10 * * * *' },
  { job: balanceAlertCheckJob, cron: '* * * * *' },
] as const;
