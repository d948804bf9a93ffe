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
import { captureHold, type HoldRef, releaseHold } from '../credits/index.ts';
import { inTransaction } from '../db/transaction.ts';
import type { EndReason } from '../jobs/define.ts';
import { type CallErrorCode, type CallRow, holdRunIdOfCall, isOpen, lockCall } from './calls.ts';
import { callSettledNotice } from './notify.ts';

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
    const call = await lockCall(trx, callId);
    if (!call) throw new Error(`no metered call ${callId}`);
    if (!isOpen(call)) return call;
    // The call's hold (placed for its quote, with its operation as the reason), found by the statement that resolves it.
    const hold = { organizationId: call.organization_id, runId: holdRunIdOfCall(call), reason: call.operation, userId: null, what: 'credit hold of the call' };

    if (outcome.status === 'succeeded') {
      // A read made under the run lock is billed only if its turn still holds the lock now; the
      // share lock keeps a stop from committing between this check and the capture.
      if (call.run_lock && (call.conversation_id === null || (await runHoldingLock(trx, call.conversation_id, { share: true })) !== call.chat_run_id)) {
        const refused = {
          code: 'run_lock' as const,
          message: 'run_lock: the conversation’s turn no longer holds the run lock (it was stopped); nothing was charged',
        };
        return release(trx, call, hold, 'refused', refused, options);
      }
      const credits = Math.min(outcome.credits, call.quoted_credits);
      // The call row and the notification first, the capture last: the balance row is locked from the capture to the commit only.
      const settled = await finish(trx, call, { status: 'succeeded', result: JSON.stringify(outcome.result), pages: outcome.pages, credits_charged: credits });
      await options.alongside?.(trx, settled);
      await captureHold(trx, hold, credits, {
        toolCallId: call.tool_call_id,
        description: options.ledger?.captured ?? `Used by ${call.operation}`,
        metadata: options.ledger?.metadata ?? { operation: call.operation, requests: outcome.pages },
      });
      return settled;
    }
    return release(trx, call, hold, outcome.status, outcome.error, options);
  });
}

async function release(
  trx: Knex.Transaction,
  call: CallRow,
  hold: HoldRef,
  status: 'failed' | 'canceled' | 'refused',
  error: { code: CallErrorCode; message: string },
  options: SettleOptions,
): Promise<CallRow> {
  const settled = await finish(trx, call, { status, error: JSON.stringify(error), credits_charged: 0 });
  await options.alongside?.(trx, settled);
  await releaseHold(trx, hold, {
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
