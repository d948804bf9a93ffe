import { isMember } from '../members/index.ts';
/**
 * Corrections of an organization's balance by an operator: always new ledger rows, never edits.
 * Adding credits is a grant of source `adjustment`; taking credits back draws them from grants in
 * draw-down order (as holds do) and moves them available → issued, so they leave the balance the
 * way they came in and `reconcileCredits` stays exact.
 */
import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { conflict, notFound } from '../core/errors.ts';
import { type IdempotentRequest, withIdempotency } from '../platform/idempotency.ts';
import type { Actor } from '../access/index.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import { drawFromGrants } from './allocations.ts';
import { enqueueBalanceAlertCheck } from './balance-alerts.ts';
import { availableOf, ensureBalanceRow, readBalance, withdrawAvailable, writeEntries } from './entries.ts';
import { expireDueGrantsOf, grantCredits } from './ledger.ts';
import type { adjustmentBody, adjustmentEnvelope } from './schema.ts';
import { creditsOf } from './service.ts';
import { entryColumns, presentEntry, type EntryRow } from './transactions.ts';

export interface AdjustmentInput {
  organizationId: string;
  /** Non-zero: positive adds credits, negative takes them back. */
  amount: number;
  reason: string;
  /** The member the correction is for. */
  userId: string;
  /** The operator who made it. */
  adjustedById: string;
}

/** Writes the adjustment's ledger rows and returns their ids; 409 naming `amount` if a debit exceeds `available`. */
export async function adjustCredits(trx: Knex.Transaction, input: AdjustmentInput): Promise<string[]> {
  const metadata = { reason: input.reason, adjusted_by: input.adjustedById };
  if (input.amount > 0) {
    const grant = await grantCredits(trx, {
      organizationId: input.organizationId,
      source: 'adjustment',
      amount: input.amount,
      description: input.reason,
      userId: input.userId,
      metadata,
    });
    return trx('credit_ledger_entries').where({ grant_id: grant.id }).pluck('id');
  }
  const amount = -input.amount;
  await ensureBalanceRow(trx, input.organizationId);
  // Due grants expire first, so the debit never draws on credits that are already gone.
  await expireDueGrantsOf(trx, input.organizationId);
  // The conditional update (and behind it the CHECK constraint) keeps the balance from going below zero.
  if (!(await withdrawAvailable(trx, input.organizationId, amount))) {
    const available = availableOf(await readBalance(trx, input.organizationId));
    throw conflict(`amount: cannot take back ${amount} credits, only ${available} are available`, ['amount']);
  }
  const pieces = await drawFromGrants(trx, input.organizationId, amount);
  // available → issued: the credits are un-issued, so `granted` falls and reconciliation stays exact.
  return writeEntries(
    trx,
    pieces.map((piece) => ({
      organizationId: input.organizationId,
      kind: 'adjustment',
      amount: piece.amount,
      from: 'available',
      to: 'issued',
      grantId: piece.grantId,
      userId: input.userId,
      description: input.reason,
      metadata,
    })),
  );
}

export async function createAdjustment(
  deps: Pick<Deps, 'db' | 'jobs'>,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof adjustmentBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof adjustmentEnvelope>> {
  const userId = body.user_id ?? actor.userId;
  if (body.user_id !== undefined && !(await isMember(deps.db, organizationId, body.user_id))) throw notFound('member');
  return withIdempotency(
    deps.db,
    idempotency,
    async (trx) => {
      const ids = await adjustCredits(trx, { organizationId, amount: body.amount, reason: body.reason, userId, adjustedById: actor.userId });
      await recordActivity(trx, {
        organizationId,
        actorId: actor.userId,
        action: 'credits.adjusted',
        subjectType: 'organization',
        subjectId: organizationId,
        data: { amount: body.amount, reason: body.reason, user_id: userId },
      });
      // A debit may cross an alert threshold: check at once rather than at the next sweep.
      if (body.amount < 0) await enqueueBalanceAlertCheck(deps, trx, organizationId);
      const rows = (await trx('credit_ledger_entries as e')
        .leftJoin('credit_holds as h', 'h.id', 'e.hold_id')
        .whereIn('e.id', ids)
        .orderBy('e.seq')
        .select(entryColumns)) as EntryRow[];
      return { transactions: rows.map(presentEntry), credits: await creditsOf(trx, organizationId) };
    },
    201,
  );
}
