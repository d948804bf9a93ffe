import { z } from 'zod';
import { defineJob } from '../jobs/define.ts';

/** Works a bulk action's snapshot in throttled batches until done or aborted (./bulk-runner.ts). Safe to retry: finished items are skipped. */
export const bulkActionJob = defineJob({
  name: 'operations.bulk-action',
  version: 1,
  nature: 'computes',
  payload: z.object({ bulk_action_id: z.string().uuid() }).strict(),
  searchable: ['bulk_action_id'],
  policy: { expireInSeconds: 3600, retryLimit: 10 },
});

/**
 * Every minute: the per-minute throughput per queue and organization (so charts read a small table,
 * not the job table), and the pauses whose expiry passed are closed.
 */
export const consoleSnapshotJob = defineJob({
  name: 'operations.snapshot',
  version: 1,
  nature: 'computes',
  payload: z.object({}).strict(),
  cron: '* * * * *',
  policy: { retryLimit: 1, expireInSeconds: 120 },
});
