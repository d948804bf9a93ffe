/**
 * Credit holds: reserve before work, capture what the work used, release the rest. Each hold
 * resolves exactly once (final capture, settle, release or expiry); a replay of the same
 * resolution returns the stored result and writes nothing, any other second resolution is a 409.
 * Lock order everywhere: member limit row → hold row → balance row → grants.
 *
 * The part that holds the organization's balance row locked is one call each: `credit_reserve` and
 * `credit_resolve_hold` (migrations/20261123060000_credit_hold_functions.ts). Everything that can
 * happen before the lock (replay checks, the spending limit, the hold row's own lock, the capture
 * row) happens here first, so the hot row is held for one server-side call and the commit.
 */
import type { Knex } from 'knex';
import { badRequest, conflict, notFound } from '../core/errors.ts';
import { readBalance, availableOf } from './entries.ts';
import { expireDueGrantsOf } from './ledger.ts';
import type { CreditPeriods } from './cycle.ts';
import { balanceExhausted, checkSpendingLimit } from './limits.ts';
import { holdColumns, toHold, type CreditCapture, type CreditHold, type HoldRow, toCapture, type CaptureRow } from './hold-model.ts';

export type { CreditHold, CreditCapture } from './hold-model.ts';

/** Abandoned holds expire after this long unless the caller asks otherwise. */
export const DEFAULT_HOLD_SECONDS = 15 * 60;
export const MAX_HOLD_SECONDS = 24 * 3600;

export interface HoldInput {
  organizationId: string;
  userId: string;
  amount: number;
  /** What the credits pay for, e.g. `chat_run`, `social_read`, `generation`. */
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

const sameRequest = (row: HoldRow, input: HoldInput) =>
  row.amount === input.amount &&
  row.user_id === input.userId &&
  row.reason === input.reason &&
  row.conversation_id === (input.conversationId ?? null) &&
  row.message_id === (input.messageId ?? null);

/**
 * Reserves credits or throws 402 naming the member's spending limit or the workspace balance.
 * `periods` (`deps.creditPeriods`) says which credit period the member's limit counts in.
 */
export async function placeHold(trx: Knex.Transaction, periods: CreditPeriods, input: HoldInput): Promise<CreditHold> {
  return (await placeHoldOnce(trx, periods, input)).hold;
}

export async function placeHoldOnce(trx: Knex.Transaction, periods: CreditPeriods, input: HoldInput): Promise<Resolution> {
  if (!Number.isSafeInteger(input.amount) || input.amount <= 0) throw badRequest('amount: must be a positive integer number of credits', ['amount']);
  const seconds = input.expiresInSeconds ?? DEFAULT_HOLD_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_HOLD_SECONDS)
    throw badRequest(`expires_in_seconds: must be an integer from 1 to ${MAX_HOLD_SECONDS}`, ['expires_in_seconds']);
  if (input.runId !== undefined && !input.runIsNew) {
    // Same run id placed concurrently: the second waits here and then finds the first hold.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`credit-run:${input.organizationId}:${input.runId}`]);
    const existing = (await trx('credit_holds').where({ organization_id: input.organizationId, run_id: input.runId }).first(holdColumns)) as
      | HoldRow
      | undefined;
    if (existing) {
      if (!sameRequest(existing, input))
        throw conflict(`run_id: "${input.runId}" already reserved credits with another amount, member or conversation`, ['run_id']);
      return { hold: toHold(existing), replayed: true };
    }
  }
  await checkSpendingLimit(trx, periods, input.organizationId, input.userId, input.amount);
  await expireDueGrantsOf(trx, input.organizationId);
  // The gate: reserved only if available at the moment the balance row is locked (until commit).
  // Nothing is written when it refuses, so a caller that catches the 402 inside its transaction keeps no half-made hold.
  const { rows } = await trx.raw('SELECT * FROM credit_reserve(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
    input.organizationId,
    input.userId,
    input.runId ?? null,
    input.reason,
    input.amount,
    input.conversationId ?? null,
    input.messageId ?? null,
    input.toolCallId ?? null,
    seconds,
    input.description ?? `Reserved for ${input.reason}`,
  ]);
  const row = rows[0] as HoldRow | undefined;
  if (!row) throw balanceExhausted(availableOf(await readBalance(trx, input.organizationId)), input.amount);
  return { hold: toHold(row), replayed: false };
}

interface ResolveStep {
  /** Credits spent now (0: none). */
  capture: number;
  /** The capture row the ledger entries point at. */
  captureId?: string | undefined;
  toolCallId?: string | null | undefined;
  captureDescription?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** Omitted: the hold stays open (a partial capture). Else it resolves and the rest is released. */
  final?: { status: CreditHold['status']; resolution: NonNullable<CreditHold['resolution']>; description: string; metadata?: Record<string, unknown> };
}

/** The locked part of a capture or resolution: one call (see the migration). The hold is locked and checked by the caller. */
async function resolveStep(trx: Knex.Transaction, row: HoldRow, step: ResolveStep): Promise<HoldRow> {
  const { rows } = await trx.raw('SELECT * FROM credit_resolve_hold(?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?::jsonb)', [
    row.id,
    step.capture,
    step.captureId ?? null,
    step.toolCallId ?? null,
    step.captureDescription ?? `Used for ${row.reason}`,
    JSON.stringify(step.metadata ?? {}),
    step.final?.status ?? null,
    step.final?.resolution ?? null,
    step.final?.description ?? null,
    JSON.stringify(step.final?.metadata ?? {}),
  ]);
  return rows[0] as HoldRow;
}

async function lockHold(trx: Knex.Transaction, holdId: string): Promise<HoldRow> {
  const row = (await trx('credit_holds')
    .where({ id: holdId })
    .forUpdate()
    .first([...holdColumns, trx.raw('expires_at <= now() AS overdue')])) as (HoldRow & { overdue: boolean }) | undefined;
  if (!row) throw notFound('credit hold');
  return row;
}

function assertOpen(row: HoldRow & { overdue?: boolean }): void {
  if (row.status !== 'held') throw conflict(`hold: the hold is already ${row.status}; it resolves only once`, ['hold']);
  if (row.overdue) throw conflict(`hold: the hold expired at ${row.expires_at.toISOString()}`, ['hold']);
}

export interface CaptureOptions {
  /** Replay key: a capture repeated with the same key returns the first result. */
  captureKey?: string | undefined;
  toolCallId?: string | null | undefined;
  description?: string | undefined;
  /** Kept on the capture's ledger rows, e.g. `{ model }` for usage reports by model. */
  metadata?: Record<string, unknown> | undefined;
}

/** Records part of a hold as spent; the hold stays open for more captures until settled. */
export async function captureFromHold(
  trx: Knex.Transaction,
  holdId: string,
  amount: number,
  options: CaptureOptions = {},
): Promise<Resolution & { capture: CreditCapture }> {
  const row = await lockHold(trx, holdId);
  if (options.captureKey !== undefined) {
    const previous = (await trx('credit_captures').where({ hold_id: holdId, capture_key: options.captureKey }).first()) as CaptureRow | undefined;
    if (previous) {
      if (previous.amount !== amount || (options.toolCallId ?? null) !== previous.tool_call_id)
        throw conflict(`capture_id: "${options.captureKey}" already captured ${previous.amount} credits`, ['capture_id']);
      return { hold: toHold(row), capture: toCapture(previous), replayed: true };
    }
  }
  assertOpen(row);
  const capture = await recordCapture(trx, row, amount, options);
  const updated = await resolveStep(trx, row, { capture: amount, captureId: capture.id, ...captureText(options) });
  return { hold: toHold(updated), capture, replayed: false };
}

const captureText = (options: CaptureOptions) => ({ toolCallId: options.toolCallId, captureDescription: options.description, metadata: options.metadata });

/** Validates the amount and writes the capture row (the hold row is locked; the balance is not yet). */
async function recordCapture(trx: Knex.Transaction, row: HoldRow, amount: number, options: CaptureOptions): Promise<CreditCapture> {
  if (!Number.isSafeInteger(amount) || amount < 0) throw badRequest('amount: must be a non-negative integer number of credits', ['amount']);
  const left = row.amount - row.captured - row.released;
  if (amount > left) throw conflict(`amount: ${amount} credits exceed what is left on the hold (${left})`, ['amount']);
  const [capture] = (await trx('credit_captures')
    .insert({
      hold_id: row.id,
      capture_key: options.captureKey ?? null,
      amount,
      tool_call_id: options.toolCallId ?? null,
      description: options.description ?? null,
    })
    .returning('*')) as CaptureRow[];
  return toCapture(capture!);
}

/** Final capture: `amount` is spent, the rest of the hold is released, the hold is resolved. */
export async function captureHold(trx: Knex.Transaction, holdId: string, amount: number, options: CaptureOptions = {}): Promise<CreditHold> {
  const key = options.captureKey ?? 'final';
  const row = await lockHold(trx, holdId);
  if (row.status !== 'held') {
    const previous = (await trx('credit_captures').where({ hold_id: holdId, capture_key: key }).first('amount')) as { amount: number } | undefined;
    if (row.resolution === 'capture' && previous?.amount === amount) return toHold(row);
    throw conflict(`hold: the hold is already ${row.status}; it resolves only once`, ['hold']);
  }
  assertOpen(row);
  const capture = await recordCapture(trx, row, amount, { ...options, captureKey: key });
  return toHold(
    await resolveStep(trx, row, {
      capture: amount,
      captureId: capture.id,
      ...captureText(options),
      final: { status: 'captured', resolution: 'capture', description: 'Released: not used' },
    }),
  );
}

/** Closes a chat run: captures so far are final, the rest is released. Replays return the same hold. */
export async function settleHold(trx: Knex.Transaction, holdId: string): Promise<Resolution> {
  const row = await lockHold(trx, holdId);
  if (row.status !== 'held') {
    if (row.resolution === 'settle' || row.resolution === 'capture') return { hold: toHold(row), replayed: true };
    throw conflict(`hold: the hold is already ${row.status}; it resolves only once`, ['hold']);
  }
  assertOpen(row);
  const status = row.captured > 0 ? 'captured' : 'released';
  return {
    hold: toHold(await resolveStep(trx, row, { capture: 0, final: { status, resolution: 'settle', description: 'Released at settle: not used' } })),
    replayed: false,
  };
}

/** Gives the whole (uncaptured part of the) hold back. */
export async function releaseHold(trx: Knex.Transaction, holdId: string, options: { description?: string } = {}): Promise<Resolution> {
  const row = await lockHold(trx, holdId);
  if (row.status !== 'held') {
    if (row.resolution === 'release') return { hold: toHold(row), replayed: true };
    throw conflict(`hold: the hold is already ${row.status}; it resolves only once`, ['hold']);
  }
  const final = { status: 'released', resolution: 'release', description: options.description ?? 'Released' } as const;
  return { hold: toHold(await resolveStep(trx, row, { capture: 0, final })), replayed: false };
}

/** The expiry job's step: an overdue open hold releases what it did not capture. False if nothing to do. */
export async function expireHold(trx: Knex.Transaction, holdId: string): Promise<boolean> {
  const row = await lockHold(trx, holdId).catch(() => null);
  if (row?.status !== 'held' || !(row as HoldRow & { overdue: boolean }).overdue) return false;
  const final = { status: 'expired', resolution: 'expiry', description: 'Released: hold expired unused', metadata: { reason: 'hold_expired' } } as const;
  await resolveStep(trx, row, { capture: 0, final });
  return true;
}

export async function getHold(db: Knex, holdId: string): Promise<CreditHold | null> {
  const row = (await db('credit_holds').where({ id: holdId }).first(holdColumns)) as HoldRow | undefined;
  return row ? toHold(row) : null;
}

export async function findHoldByRun(db: Knex, organizationId: string, runId: string): Promise<CreditHold | null> {
  const row = (await db('credit_holds').where({ organization_id: organizationId, run_id: runId }).first(holdColumns)) as HoldRow | undefined;
  return row ? toHold(row) : null;
}
