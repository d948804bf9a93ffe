import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

/** Deletes events past the 30-day retention window. Hourly; a missed run is caught up by the next. */
export const deleteOldEventsJob = defineJob({
  name: 'events.delete-old-events',
  version: 1,
  nature: 'computes',
  payload: z.object({}).strict(),
  policy: { retryLimit: 1, retryDelaySeconds: 60, expireInSeconds: 600, deleteAfterSeconds: 3600 },
  cron: '23 * * * *',
});
