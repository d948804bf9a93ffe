import { defineJob, type PayloadOf } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

/** Plan-cycle refills; every 10 minutes for all organizations, or enqueued for one. */
export const cycleRefillsJob = defineJob({
  name: 'billing.cycle-refills',
  version: 1,
  nature: 'computes',
  payload: z.object({ organization_id: z.string().optional() }),
  searchable: ['organization_id'],
  policy: { retryLimit: 3, expireInSeconds: 10 * 60 },
  cron: '*/10 * * * *',
});
export type OrganizationScope = PayloadOf<typeof cycleRefillsJob>;
