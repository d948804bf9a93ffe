// Composition root of the jobs: every job type of the platform, bound to the code that runs it and
// ends its resource. A domain's jobs.ts declares a job (name, payload, policy — `defineJob`) and names
// no code; this list binds each definition to its handler and ends, loaded lazily, so the web process
// loads no worker code and no jobs.ts ↔ handlers.ts circle exists. `release` creates their queues;
// workers derive from this list the queues they work, their handlers and their cron schedules.
// A new job: a `defineJob` next to its domain and one `bindJob` line here.
import { bindJob, type JobDefinition, type RunnableJob } from '../jobs/define.ts';
import { assetEnrichmentJob, assetImportJob } from '../assets/jobs.ts';
import { cleanUpUploadsJob } from '../assets/uploads/jobs.ts';
import { cycleRefillsJob } from '../billing/jobs.ts';
import { connectionRevocationJob } from '../connectors/index.ts';
import { approvalExpiryJob, chatRunJob } from '../conversations/jobs.ts';
import { balanceAlertCheckJob, balanceAlertEmailJob, expireCreditGrantsJob, expireCreditHoldsJob } from '../credits/jobs.ts';
import { deleteOldEventsJob } from '../events/jobs.ts';
import { generationCancelUpstreamJob, generationJob } from '../generations/jobs.ts';
import { invitationEmailJob } from '../invitations/jobs.ts';
import { meteredCallJob } from '../metering/jobs.ts';
import { bulkActionJob, consoleSnapshotJob } from '../operations/jobs.ts';
import { deleteExpiredIdempotencyKeysJob, sweepRateLimitWindowsJob } from '../platform/maintenance/jobs.ts';
import {
  dispatchScheduledTasksJob,
  scheduledTaskEmailJob,
  scheduledTaskFinishJob,
  scheduledTaskRunJob,
  scheduledTaskStartJob,
} from '../scheduled-tasks/jobs.ts';
import { refreshTrendsJob } from '../social/trends/jobs.ts';
import { webhookDeliveryJob, webhookEndpointDisabledEmailJob } from '../webhooks/jobs.ts';

export const allJobs: readonly RunnableJob[] = [
  bindJob(invitationEmailJob, {
    handler: () => import('../invitations/handlers.ts').then((m) => m.emailInvitation),
  }),
  bindJob(assetImportJob, {
    handler: () => import('../assets/handlers.ts').then((m) => m.importLink),
    ends: () => import('../assets/import-ends.ts').then((m) => m.importEnds),
  }),
  bindJob(assetEnrichmentJob, {
    handler: () => import('../assets/handlers.ts').then((m) => m.enrichAsset),
    ends: () => import('../assets/enrichment-ends.ts').then((m) => m.enrichmentEnds),
  }),
  bindJob(cleanUpUploadsJob, {
    handler: () => import('../assets/uploads/cleanup.ts').then((m) => m.cleanUpUploads),
  }),
  bindJob(cycleRefillsJob, {
    handler: () => import('../billing/handlers.ts').then((m) => m.cycleRefills),
  }),
  bindJob(balanceAlertCheckJob, {
    handler: () => import('../credits/handlers.ts').then((m) => m.balanceAlertCheck),
  }),
  bindJob(balanceAlertEmailJob, {
    handler: () => import('../credits/handlers.ts').then((m) => m.balanceAlertEmail),
  }),
  bindJob(expireCreditHoldsJob, {
    handler: () => import('../credits/handlers.ts').then((m) => m.expireCreditHolds),
  }),
  bindJob(expireCreditGrantsJob, {
    handler: () => import('../credits/handlers.ts').then((m) => m.expireCreditGrants),
  }),
  bindJob(chatRunJob, {
    handler: () => import('../conversations/handlers.ts').then((m) => m.runChat),
    ends: () => import('../conversations/run-ends.ts').then((m) => m.chatRunEnds),
  }),
  bindJob(approvalExpiryJob, {
    handler: () => import('../conversations/tools/approvals.ts').then((m) => m.expireApproval),
  }),
  bindJob(meteredCallJob, {
    handler: () => import('../metering/perform.ts').then((m) => m.performCall),
    ends: () => import('../metering/ends.ts').then((m) => m.meteredCallEnds),
  }),
  bindJob(generationJob, {
    handler: () => import('../generations/handlers.ts').then((m) => m.runGeneration),
    ends: () => import('../generations/ends.ts').then((m) => m.generationEnds),
  }),
  bindJob(generationCancelUpstreamJob, {
    handler: () => import('../generations/cancel-upstream.ts').then((m) => m.cancelUpstream),
  }),
  bindJob(dispatchScheduledTasksJob, {
    handler: () => import('../scheduled-tasks/handlers.ts').then((m) => m.dispatchScheduledTasks),
  }),
  bindJob(scheduledTaskStartJob, {
    handler: () => import('../scheduled-tasks/handlers.ts').then((m) => m.startScheduledRuns),
    ends: () => import('../scheduled-tasks/ends.ts').then((m) => m.runBatchStartEnds),
  }),
  bindJob(scheduledTaskRunJob, {
    handler: () => import('../scheduled-tasks/handlers.ts').then((m) => m.startScheduledRun),
    ends: () => import('../scheduled-tasks/ends.ts').then((m) => m.runStartEnds),
  }),
  bindJob(scheduledTaskFinishJob, {
    handler: () => import('../scheduled-tasks/handlers.ts').then((m) => m.finishScheduledRun),
    ends: () => import('../scheduled-tasks/ends.ts').then((m) => m.runFinishEnds),
  }),
  bindJob(scheduledTaskEmailJob, {
    handler: () => import('../scheduled-tasks/handlers.ts').then((m) => m.emailRunAnswer),
  }),
  bindJob(refreshTrendsJob, {
    handler: () => import('../social/trends/handlers.ts').then((m) => m.refreshTrends),
  }),
  bindJob(sweepRateLimitWindowsJob, {
    handler: () => import('../platform/maintenance/handlers.ts').then((m) => m.sweepRateLimits),
  }),
  bindJob(deleteExpiredIdempotencyKeysJob, {
    handler: () => import('../platform/maintenance/handlers.ts').then((m) => m.deleteIdempotencyKeys),
  }),
  bindJob(bulkActionJob, {
    handler: () => import('../operations/bulk-runner.ts').then((m) => m.runBulkAction),
  }),
  bindJob(deleteOldEventsJob, {
    handler: () => import('../events/handlers.ts').then((m) => m.deleteOldEventsHandler),
  }),
  bindJob(webhookDeliveryJob, {
    handler: () => import('../webhooks/deliver.ts').then((m) => m.deliverWebhook),
    ends: () => import('../webhooks/ends.ts').then((m) => m.deliveryEnds),
  }),
  bindJob(webhookEndpointDisabledEmailJob, {
    handler: () => import('../webhooks/deliver.ts').then((m) => m.sendEndpointDisabledEmail),
  }),
  bindJob(connectionRevocationJob, {
    handler: () => import('../connectors/oauth/revoke.ts').then((m) => m.revokeConnection),
  }),
  bindJob(consoleSnapshotJob, {
    handler: () => import('../operations/snapshot.ts').then((m) => m.takeSnapshot),
  }),
];

/** The bound job of `definition` — what a test runs with `runJob` to call a handler as a worker would. */
export function runnableJob(definition: JobDefinition): RunnableJob {
  const job = allJobs.find((candidate) => candidate.name === definition.name);
  if (!job) throw new Error(`${definition.name} is not bound in src/app/jobs.ts`);
  return job;
}
