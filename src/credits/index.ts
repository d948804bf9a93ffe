/**
 * Credits — the public module: what other domains may use (import from here only). Routes are
 * mounted by the composition root; jobs are listed in src/app/jobs.ts.
 *   grantCredits / grantStarterCredits   add credits to an organization's ledger, inside the caller's transaction
 *   readBalance / availableOf            the organization's balance row and what of it is available
 *   CreditPeriods / calendarMonth        how credit periods are cut (billing provides the billing-cycle one)
 *   placeHold(Once) / captureHold / releaseHold / getHold   a credit hold for work (reserve → capture, rest released: holds.ts places,
 *                                        hold-resolutions.ts resolves); a HoldRef
 *                                        names a hold by id or by its run (found by the statement that resolves it);
 *                                        autocommitted, they go in batches per organization (batches.ts)
 *   pendingCaptureColumn / postPendingCapture(OfRun)   a final capture decided in the settling transaction (locking the hold
 *                                        only), posted by its own statement after the commit; crash-safe (the hold is its journal)
 *   ReserveStatement                     placeHoldOnce's reserve run inside a caller's statement (a metered read's accept)
 *   requireHoldable                      402 unless such a hold would be placed now (a precheck, tried and rolled back)
 *   enqueueBalanceAlertCheck             after moving credits: check the low-balance alerts now, not at the next sweep
 */
export { availableOf, type BalanceRow, readBalance, readBalances } from './entries.ts';
export { enqueueBalanceAlertCheck } from './balance-alerts.ts';
export { calendarMonth, type CreditPeriod, type CreditPeriods } from './cycle.ts';
export {
  getHold,
  type HoldInput,
  MAX_HOLD_SECONDS,
  placeHold,
  placeHoldOnce,
  type ReserveAnswer,
  type ReserveStatement,
  requireHoldable,
} from './holds.ts';
export {
  captureHold,
  type HoldRef,
  type PendingCaptureSql,
  pendingCaptureColumn,
  postPendingCapture,
  postPendingCaptureOfRun,
  releaseHold,
} from './hold-resolutions.ts';
export type { CreditHold } from './hold-model.ts';
export { type CreditGrant, type GrantInput, type GrantSource, grantCredits, grantStarterCredits } from './ledger.ts';
export { creditsSchema } from './schema.ts';
