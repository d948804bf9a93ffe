import type { JobHandler } from '../handler.ts';
import { deleteExpiredIdempotencyKeysHandler, expireCreditGrantsHandler, expireCreditHoldsHandler, meteredOperationHandler } from './credits.ts';
import { assetEnrichmentHandler } from './asset-enrichment.ts';
import { assetImportHandler } from './asset-import.ts';
import { balanceAlertCheckHandler, balanceAlertEmailHandler, cycleRefillsHandler } from './billing.ts';
import { sweepRateLimitWindowsHandler } from './sweep-rate-limit-windows.ts';
import { invitationEmailHandler } from './invitation-email.ts';

/** One handler per job type of `src/jobs/queues.ts`. */
export const handlers: readonly JobHandler<any>[] = [invitationEmailHandler, sweepRateLimitWindowsHandler, cycleRefillsHandler, balanceAlertCheckHandler, balanceAlertEmailHandler, assetImportHandler, assetEnrichmentHandler, expireCreditHoldsHandler, expireCreditGrantsHandler, meteredOperationHandler, deleteExpiredIdempotencyKeysHandler];
