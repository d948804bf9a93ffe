import { balanceAlertCheckJob, balanceAlertEmailJob, cycleRefillsJob } from '../billing/jobs.ts';
import { invitationEmailJob } from '../invitations/jobs.ts';
import { sweepRateLimitWindowsJob } from '../platform/maintenance/jobs.ts';
import { assetEnrichmentJob, assetImportJob } from '../assets/jobs.ts';
import { deleteExpiredIdempotencyKeysJob, expireCreditGrantsJob, expireCreditHoldsJob, meteredOperationJob } from '../credits/jobs.ts';
import type { JobDefinition } from './define.ts';

/**
 * Every job type of the platform, in one place: the API enqueues them, `release` creates their
 * queues and `workers/` registers a handler for each (a job without a handler fails worker start).
 * Definitions live beside their domain (`src/<domain>/jobs.ts`) and are listed here.
 */
export const allJobs: readonly JobDefinition[] = [invitationEmailJob, sweepRateLimitWindowsJob, cycleRefillsJob, balanceAlertCheckJob, balanceAlertEmailJob, assetImportJob, assetEnrichmentJob, expireCreditHoldsJob, expireCreditGrantsJob, meteredOperationJob, deleteExpiredIdempotencyKeysJob];
