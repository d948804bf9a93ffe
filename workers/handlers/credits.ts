import { isAppError } from '../../src/core/errors.ts';
import { expireDueGrants, expireDueHolds } from '../../src/credits/expiry.ts';
import { captureHold, placeHoldOnce } from '../../src/credits/holds.ts';
import { deleteExpiredIdempotencyKeysJob, expireCreditGrantsJob, expireCreditHoldsJob, meteredOperationJob } from '../../src/credits/jobs.ts';
import { deleteExpiredIdempotencyKeys } from '../../src/http/idempotency.ts';
import { meteredOperation } from '../../src/credits/metered.ts';
import { handle } from '../handler.ts';

export const expireCreditHoldsHandler = handle(expireCreditHoldsJob, async (_payload, { deps, log }) => {
  const expired = await expireDueHolds(deps.db);
  if (expired) log.info({ expired }, 'credit holds expired');
});

export const expireCreditGrantsHandler = handle(expireCreditGrantsJob, async (_payload, { deps, log }) => {
  const expired = await expireDueGrants(deps.db);
  if (expired) log.info({ expired }, 'credit grants expired');
});

// A plain DELETE of old rows: repeating it after a crash deletes nothing twice.
export const deleteExpiredIdempotencyKeysHandler = handle(deleteExpiredIdempotencyKeysJob, async (_payload, { deps, log }) => {
  const deleted = await deleteExpiredIdempotencyKeys(deps.db);
  if (deleted) log.info({ deleted }, 'expired idempotency keys deleted');
});

/** Reserve → perform → capture; each step is its own transaction and safe to repeat (see the job). */
export const meteredOperationHandler = handle(meteredOperationJob, async (payload, { deps, log, signal }) => {
  const perform = meteredOperation(payload.operation);
  if (!perform) throw new Error(`no metered operation named ${payload.operation}`);
  let hold;
  try {
    ({ hold } = await deps.db.transaction((trx) =>
      placeHoldOnce(trx, {
        organizationId: payload.organization_id,
        userId: payload.user_id,
        amount: payload.estimate,
        reason: payload.operation,
        runId: `job:${payload.operation_key}`,
        conversationId: payload.conversation_id,
        toolCallId: payload.tool_call_id,
        expiresInSeconds: payload.hold_seconds,
      }),
    ));
  } catch (error) {
    // No credits: the operation is not done, and retrying will not change that.
    if (isAppError(error, 'payment_required')) return log.warn({ reason: error.message }, 'metered operation refused: no credits');
    throw error;
  }
  // A previous attempt already finished (captured) or gave up (expired): nothing more to do.
  if (hold.status !== 'held') return log.info({ hold_id: hold.id, status: hold.status }, 'metered operation already resolved');
  const used = await perform(payload.input, { deps, signal });
  // Never charge more than was reserved.
  const amount = Math.min(Math.max(0, Math.floor(used)), hold.amount);
  try {
    await deps.db.transaction((trx) => captureHold(trx, hold.id, amount, { description: `Used by ${payload.operation}` }));
  } catch (error) {
    // The hold expired while we worked: the expiry released it, and it stays released.
    if (isAppError(error, 'conflict')) return log.warn({ hold_id: hold.id, reason: error.message }, 'metered operation finished after its hold was resolved');
    throw error;
  }
});
