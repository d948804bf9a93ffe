// Composition root of the jobs: every job type of the platform. `release` creates their queues;
// workers derive from this list the queues they work, their handlers (loaded lazily) and their
// cron schedules. A new job is a `defineJob` next to its domain, added here — nothing else.
import { assetEnrichmentJob, assetImportJob } from './assets/jobs.ts';
import { cycleRefillsJob } from './billing/jobs.ts';
import { balanceAlertCheckJob, balanceAlertEmailJob, expireCreditGrantsJob, expireCreditHoldsJob } from './credits/jobs.ts';
import { approvalExpiryJob, chatRunJob } from './conversations/jobs.ts';
import { invitationEmailJob } from './invitations/jobs.ts';
import { generationJob } from './generations/jobs.ts';
import type { JobDefinition } from './jobs/define.ts';
import { meteredCallJob } from './metering/jobs.ts';
import { bulkActionJob, consoleSnapshotJob } from './operations/jobs.ts';
import {
  dispatchScheduledTasksJob,
  scheduledTaskEmailJob,
  scheduledTaskFinishJob,
  scheduledTaskRunJob,
  scheduledTaskStartJob,
} from './scheduled-tasks/jobs.ts';
import { refreshTrendsJob } from './social/trends/jobs.ts';
import { deleteExpiredIdempotencyKeysJob, sweepRateLimitWindowsJob } from './platform/maintenance/jobs.ts';

export const allJobs: readonly JobDefinition[] = [
  invitationEmailJob,
  assetImportJob,
  assetEnrichmentJob,
  cycleRefillsJob,
  balanceAlertCheckJob,
  balanceAlertEmailJob,
  expireCreditHoldsJob,
  expireCreditGrantsJob,
  chatRunJob,
  approvalExpiryJob,
  meteredCallJob,
  generationJob,
  dispatchScheduledTasksJob,
  scheduledTaskStartJob,
  scheduledTaskRunJob,
  scheduledTaskFinishJob,
  scheduledTaskEmailJob,
  refreshTrendsJob,
  sweepRateLimitWindowsJob,
  deleteExpiredIdempotencyKeysJob,
  bulkActionJob,
  consoleSnapshotJob,
];
