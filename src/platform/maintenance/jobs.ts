import { defineJob, type JobDefinition } from '../../jobs/define.ts';
import { z } from '../../core/zod.ts';

/** Deletes old rate-limit windows; scheduled every minute by the workers. */
export const sweepRateLimitWindowsJob = defineJob({
  name: 'maintenance.sweep-rate-limit-windows',
  version: 1,
  payload: z.object({}).strict(),
  // The next minute's run does the same work, so a failed sweep needs no long retry chain.
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 60, deleteAfterSeconds: 3600 },
});

/** Cron schedules (UTC) the worker registers at start; pg-boss sends each once across all workers. */
export const maintenanceSchedules: readonly { job: JobDefinition; cron: string }[] = [{ job: sweepRateLimitWindowsJob, cron: '* * * * *' }];
