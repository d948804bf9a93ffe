import { z } from '../../core/zod.ts';
import { defineJob } from '../../jobs/define.ts';

/**
 * Every minute: ends the uploads past their expiry (and those whose asset was deleted meanwhile)
 * and those whose creator left the organization or lost `resources.create` (`canceled`,
 * `uploader_lost_access`) — upload `expired`/`canceled`, asset `error` — and removes the bytes of every ended upload whose
 * removal has not happened yet (a crash between an end and its removal).
 */
export const cleanUpUploadsJob = defineJob({
  name: 'assets.clean-up-uploads',
  version: 1,
  nature: 'computes',
  payload: z.object({}).strict(),
  // The next minute's run does the same work, so a failed sweep needs no long retry chain.
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 300, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
});
