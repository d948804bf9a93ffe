/**
 * The one settle path of every metered call, whoever drives it: the worker with a result or a
 * provider failure, the web process when the caller timed out or hung up. One transaction locks the
 * call, and only an open call settles — so a result arriving after a cancel, or a cancel after the
 * result, changes nothing, and no call is ever captured twice.
 *
 * Lock order: call row → conversation row (share; run-lock calls) → hold row → balance row.
 */
import type { Knex } from 'knex';
import { runHoldingLock } from '../conversations/index.ts';
import { captureHold, type HoldRef, pendingCaptureColumn, postPendingCapture, releaseHold } from '../credits/index.ts';
import { inTransaction } from '../db/transaction.ts';
import type { EndReason } from '../jobs/define.ts';
import { type CallErrorCode, type CallRow, holdRunIdOf, holdRunIdOfCall, isOpen, lockCall, OPEN_STATUSES } from './calls.ts';
import { callAnswerNotice, callSettledNotice } from './notify.ts';

export type CallOutcome =
  | { status: 'succeeded'; result: unknown; pages: number; credits: number }
  | { status: 'failed' | 'canceled'; error: { code: CallErrorCode; message: string } };

export interface SettleOptions {
  /** How the capture and the release read in the ledger (default: `Used by <operation>`, the operation and pages as metadata). */
  ledger?: { captured?: string; metadata?: Record<string, unknown>; released?: string };
  /**
   * The caller's own writes, in the settling transaction (only when this settle is the one that
   * happens): e.g. a generation's row and its assets, committed with the capture or not at all.
   */
  alongside?: (trx: Knex.Transaction, settled: CallRow) => Promise<void>;
}

/** Settles the call once (in the caller's transaction, if `db` is one); returns it as it now stands (unchanged when it was already settled). */
export function settleCall(db: Knex | Knex.Transaction, callId: string, outcome: CallOutcome, options: SettleOptions = {}): Promise<CallRow> {
  return inTransaction(db, async (trx) => {
    if (outcome.status === 'succeeded') {
      // The usual case, an open call under no run lock, settles in one statement (it locks the row as
      // lockCall would; one settled meanwhile does not match and takes the path below).
      const settled = await finishOpen(trx, callId, outcome);
      if (settled) return capture(trx, settled, outcome, options);
    }
    const call = await lockCall(trx, callId);
    if (!call) throw new Error(`no metered call ${callId}`);
    if (!isOpen(call)) return call;

    if (outcome.status === 'succeeded') {
      // A read made under the run lock is billed only if its turn still holds the lock now; the
      // share lock keeps a stop from committing between this check and the capture.
      if (call.run_lock && (call.conversation_id === null || (await runHoldingLock(trx, call.conversation_id, { share: true })) !== call.chat_run_id)) {
        const refused = {
          code: 'run_lock' as const,
          message: 'run_lock: the conversation’s turn no longer holds the run lock (it was stopped); nothing was charged',
        };
        return release(trx, call, 'refused', refused, options);
      }
      const credits = Math.min(outcome.credits, call.quoted_credits);
      return capture(trx, await finish(trx, call, { ...succeeded(outcome), credits_charged: credits }), outcome, options);
    }
    return release(trx, call, outcome.status, outcome.error, options);
  });
}

type Succeeded = Extract<CallOutcome, { status: 'succeeded' }>;

/**
 * A metered read's result, in its job's ending transaction: the usual case — an open call under no
 * run lock — settles in ONE statement that also records the read's final capture on its hold as
 * pending (locking the hold's row, not the organization's balance). It returns the step to run
 * right after the commit: the capture posted by its own autocommitted statement, which sends the
 * waiting request its answer (NOTIFY at that commit: the request answers only once the charge is in
 * the ledger). A crash between the two loses nothing: the pending capture is posted by the waiting
 * request when it gives up or by the hold expiry job (src/credits/expiry.ts), never released. Any
 * other call settles as `settleCall` does, all in this transaction (undefined: nothing after).
 */
export async function settleReadResult(trx: Knex.Transaction, db: Knex, callId: string, outcome: Succeeded): Promise<(() => Promise<unknown>) | undefined> {
  // The hold as `holdOf` names it, its capture as `capture` writes it, over the settled row.
  const pending = pendingCaptureColumn(trx, {
    organizationId: 's.organization_id',
    runId: `coalesce(s.hold_run_id, '${holdRunIdOf('')}' || s.id::text)`,
    reason: 's.operation',
    amount: 's.credits_charged',
    toolCallId: 's.tool_call_id',
    description: `'Used by ' || s.operation`,
    metadata: `jsonb_build_object('operation', s.operation, 'requests', s.pages)`,
  });
  const { rows } = await trx.raw(
    `WITH s AS (
       UPDATE metered_calls SET status = 'succeeded', result = ?::jsonb, pages = ?, credits_charged = least(?::integer, quoted_credits), finished_at = now()
        WHERE id = ? AND run_lock = false AND status IN ('queued', 'running')
       RETURNING *
     )
     SELECT s.*, ? FROM s`,
    [JSON.stringify(outcome.result), outcome.pages, outcome.credits, callId, pending],
  );
  const row = rows[0] as (CallRow & { pending_hold_id: string | null }) | undefined;
  if (!row) {
    await settleCall(trx, callId, outcome);
    return undefined;
  }
  const { pending_hold_id: holdId, ...settled } = row;
  if (holdId === null) {
    // Not pending: the hold is not open, ran out of time or has too little left. The usual capture says which (and throws).
    await capture(trx, settled, outcome, {});
    await trx.raw('SELECT ?', [callAnswerNotice(trx, settled)]);
    return undefined;
  }
  return () => postPendingCapture(db, holdId, callAnswerNotice(db, settled));
}

const succeeded = (outcome: Succeeded) => ({ status: 'succeeded', result: JSON.stringify(outcome.result), pages: outcome.pages });

/** The call's hold (placed for its quote, with its operation as the reason), found by the statement that resolves it. */
const holdOf = (call: CallRow): HoldRef => ({
  organizationId: call.organization_id,
  runId: holdRunIdOfCall(call),
  reason: call.operation,
  userId: null,
  what: 'credit hold of the call',
});

/** Settles an open call under no run lock as succeeded, notifying its waiting request; undefined when it is not such a call. */
async function finishOpen(trx: Knex.Transaction, callId: string, outcome: Succeeded): Promise<CallRow | undefined> {
  const [row] = (await trx('metered_calls')
    .where({ id: callId, run_lock: false })
    .whereIn('status', OPEN_STATUSES)
    .update({
      ...succeeded(outcome),
      credits_charged: trx.raw('least(?::integer, quoted_credits)', [outcome.credits]),
      // A call whose work ended before it wrote its start (a generation done within its first progress interval).
      started_at: trx.raw('coalesce(started_at, now())'),
      finished_at: trx.fn.now(),
    })
    .returning(['*', callSettledNotice(trx, callId)])) as (CallRow & { notified?: unknown })[];
  if (!row) return undefined;
  const { notified: _, ...settled } = row;
  return settled as CallRow;
}

/** After the call row (settled and notified) and the caller's own writes, the capture last: the balance row is locked from it to the commit only. */
async function capture(trx: Knex.Transaction, settled: CallRow, outcome: Succeeded, options: SettleOptions): Promise<CallRow> {
  await options.alongside?.(trx, settled);
  await captureHold(trx, holdOf(settled), settled.credits_charged!, {
    toolCallId: settled.tool_call_id,
    description: options.ledger?.captured ?? `Used by ${settled.operation}`,
    metadata: options.ledger?.metadata ?? { operation: settled.operation, requests: outcome.pages },
  });
  return settled;
}

async function release(
  trx: Knex.Transaction,
  call: CallRow,
  status: 'failed' | 'canceled' | 'refused',
  error: { code: CallErrorCode; message: string },
  options: SettleOptions,
): Promise<CallRow> {
  const settled = await finish(trx, call, { status, error: JSON.stringify(error), credits_charged: 0 });
  await options.alongside?.(trx, settled);
  await releaseHold(trx, holdOf(call), {
    description: options.ledger?.released ?? `Released: ${call.operation} ${status === 'failed' ? `failed (${error.code})` : status}`,
  });
  return settled;
}

/** The call's row settled, and its waiting request notified (at commit) by the same statement. */
async function finish(trx: Knex.Transaction, call: CallRow, changes: Record<string, unknown>): Promise<CallRow> {
  const [row] = (await trx('metered_calls')
    .where({ id: call.id })
    .update({ ...changes, finished_at: trx.fn.now() })
    .returning(['*', callSettledNotice(trx, call.id)])) as (CallRow & { notified?: unknown })[];
  const { notified: _, ...settled } = row!;
  return settled as CallRow;
}

/**
 * A job's end as its call's outcome: a cancel (the caller hung up, the generation was canceled, an
 * operator) or, with `timeout`, the web side giving up; a failure for good with the runtime's
 * reasons (`expired`, `lost`) in the call's own error codes.
 */
export function outcomeOfEnd(end: 'failed' | 'canceled', reason: EndReason): Extract<CallOutcome, { status: 'failed' | 'canceled' }> {
  const known: readonly string[] = ['timeout', 'failed', 'malformed', 'refused', 'canceled', 'run_lock'];
  if (end === 'canceled')
    return reason.code === 'timeout'
      ? { status: 'failed', error: { code: 'timeout', message: reason.message } }
      : { status: 'canceled', error: { code: 'canceled', message: reason.message } };
  const code = reason.code === 'expired' ? 'timeout' : known.includes(reason.code) ? (reason.code as CallErrorCode) : 'failed';
  return { status: 'failed', error: { code, message: reason.message } };
}
