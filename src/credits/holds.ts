/**
 * Credit holds: reserve before work, capture what the work used, release the rest. This file
 * places them; how a hold resolves — captures, settle, release, expiry, a capture pending on it —
 * is ./hold-resolutions.ts. Lock order everywhere: member limit row → hold row → balance row → grants.
 *
 * A hold and a capture are one statement each, `credit_reserve` and `credit_capture`
 * (migrations/20261127185000_credit_attribution_at_capture.ts): the organization's balance row, its
 * lock, is held from inside that one call to the commit, never across round trips. Either runs
 * inside the caller's transaction (the hold commits with the caller's work) or alone (autocommitted):
 * then it goes with the same organization's holds (or captures) that this process's other callers
 * asked for while one was in flight, one statement and one commit per batch (./batches.ts).
 * A hold moves `held` and writes the hold and one ledger row; grants are attributed when a capture
 * spends from them.
 */
import type { Knex } from 'knex';
import { badRequest, conflict } from '../core/errors.ts';
import type { CreditPeriod, CreditPeriods } from './cycle.ts';
import { expireDueGrantsOf } from './ledger.ts';
import { balanceExhausted, spendingLimitExhausted } from './limits.ts';
import { type CreditHold, type HoldRow, holdColumns, holdFromJson, type ReserveAnswer, toHold } from './hold-model.ts';
import { inTransaction, isTransaction } from '../db/transaction.ts';
import { reserveBatched } from './batches.ts';

export type { CreditHold, CreditCapture, ReserveAnswer } from './hold-model.ts';

/** Abandoned holds expire after this long unless the caller asks otherwise. */
export const DEFAULT_HOLD_SECONDS = 15 * 60;
export const MAX_HOLD_SECONDS = 24 * 3600;

export interface HoldInput {
  organizationId: string;
  userId: string;
  amount: number;
  /** What the credits pay for, e.g. `chat_run`, `net2_profile`, `generation`. */
  reason: string;
  /** Caller's id for the work; placing a hold again with the same run id returns the first hold. */
  runId?: string | undefined;
  /** The run id was made just now (a fresh UUID), so no earlier hold can have it: skip the replay check. */
  runIsNew?: boolean | undefined;
  conversationId?: string | null | undefined;
  messageId?: string | null | undefined;
  toolCallId?: string | null | undefined;
  expiresInSeconds?: number | undefined;
  description?: string | undefined;
}

export interface Resolution {
  hold: CreditHold;
  /** True when this call only replayed an earlier identical one. */
  replayed: boolean;
}

export interface Placement extends Resolution {
  /** The organization's available credits right after this hold (absent on a replay). */
  available?: number;
}

/**
 * Reserves credits or throws 402 naming the member's spending limit or the workspace balance.
 * `periods` (`deps.creditPeriods`) says which credit period the member's limit counts in.
 */
export async function placeHold(db: Knex, periods: CreditPeriods, input: HoldInput): Promise<CreditHold> {
  return (await placeHoldOnce(db, periods, input)).hold;
}

/**
 * The statement that reserves, given `credit_reserve`'s thirteen arguments in order: by default that
 * function alone; a caller may run it inside a statement of its own that writes its work only when
 * the hold is reserved (a metered read's call and job: src/metering/accept.ts).
 */
export type ReserveStatement = (db: Knex, args: readonly Knex.Value[]) => Promise<ReserveAnswer>;

/** `credit_reserve` and nothing else: in the caller's transaction, or batched with this process's other autocommitted holds. */
const reserveOnly: ReserveStatement = async (db, args) =>
  isTransaction(db)
    ? ((await db.raw('SELECT * FROM credit_reserve(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [...args])).rows[0] as ReserveAnswer)
    : reserveBatched(db, args);

/** `db` may be a transaction (the hold commits with the caller's work) or not (the hold is one autocommitted statement). */
export async function placeHoldOnce(db: Knex, periods: CreditPeriods, input: HoldInput, statement: ReserveStatement = reserveOnly): Promise<Placement> {
  if (!Number.isSafeInteger(input.amount) || input.amount <= 0) throw badRequest('amount: must be a positive integer number of credits', ['amount']);
  const seconds = input.expiresInSeconds ?? DEFAULT_HOLD_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_HOLD_SECONDS)
    throw badRequest(`expires_in_seconds: must be an integer from 1 to ${MAX_HOLD_SECONDS}`, ['expires_in_seconds']);
  let period: CreditPeriod | null = null;
  for (;;) {
    const { outcome, hold, detail } = await statement(db, [
      input.organizationId,
      input.userId,
      input.runId ?? null,
      input.runIsNew ?? false,
      input.reason,
      input.amount,
      input.conversationId ?? null,
      input.messageId ?? null,
      input.toolCallId ?? null,
      seconds,
      input.description ?? `Reserved for ${input.reason}`,
      period?.start ?? null,
      period?.end ?? null,
    ]);
    switch (outcome) {
      case 'reserved':
        return { hold: holdFromJson(hold!), replayed: false, available: Number(detail!.available) };
      case 'replayed':
        return { hold: holdFromJson(hold!), replayed: true };
      case 'run_conflict':
        throw conflict(`run_id: "${input.runId}" already reserved credits with another amount, member or conversation`, ['run_id']);
      case 'limit':
        throw spendingLimitExhausted(Number(detail!.limit), Number(detail!.used), input.amount);
      case 'balance':
        throw balanceExhausted(Number(detail!.available), input.amount);
      // Neither wrote anything: do what the server asked for, then ask again.
      case 'needs_period':
        period = await periods.current(db, input.organizationId);
        continue;
      case 'needs_expiry':
        await inTransaction(db, (trx) => expireDueGrantsOf(trx, input.organizationId));
        continue;
      default:
        throw new Error(`credit_reserve answered ${outcome}`);
    }
  }
}

const triedOnly = Symbol('tried only');

/**
 * 402 (as `placeHold` would answer) unless a hold of `amount` for the member would be placed right
 * now: tried for real by the same reserve and rolled back, so the rules cannot drift apart. Only a
 * precheck — work whose hold is placed later can still be refused then.
 */
export async function requireHoldable(
  db: Knex,
  periods: CreditPeriods,
  input: Pick<HoldInput, 'organizationId' | 'userId' | 'amount' | 'reason'>,
): Promise<void> {
  await db
    .transaction(async (trx) => {
      await placeHoldOnce(trx, periods, input);
      throw triedOnly;
    })
    .catch((error: unknown) => {
      if (error !== triedOnly) throw error;
    });
}

export async function getHold(db: Knex, holdId: string): Promise<CreditHold | null> {
  const row = (await db('credit_holds').where({ id: holdId }).first(holdColumns)) as HoldRow | undefined;
  return row ? toHold(row) : null;
}
