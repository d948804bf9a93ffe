import type { Knex } from 'knex';
import { AppError } from '../core/errors.ts';
import type { CreditPeriod, CreditPeriods } from './cycle.ts';

export interface MemberSpending {
  userId: string;
  spendingLimit: number | null;
  period: CreditPeriod;
  /** Captured by the member in the period. */
  spent: number;
  /** Reserved by the member's open holds. */
  held: number;
  /** What the member may still reserve; null without a limit. */
  remaining: number | null;
}

/** Captured in the period plus currently held: what counts against a member's limit. */
export async function memberUsage(db: Knex, organizationId: string, userId: string, period: CreditPeriod): Promise<{ spent: number; held: number }> {
  const { rows } = await db.raw(
    `SELECT
       (SELECT coalesce(sum(amount), 0) FROM credit_ledger_entries
         WHERE organization_id = ? AND user_id = ? AND kind = 'capture' AND created_at >= ? AND created_at < ?) AS spent,
       (SELECT coalesce(sum(amount - captured - released), 0) FROM credit_holds
         WHERE organization_id = ? AND user_id = ? AND status = 'held') AS held`,
    [organizationId, userId, period.start, period.end, organizationId, userId],
  );
  return { spent: Number(rows[0].spent), held: Number(rows[0].held) };
}

export async function memberSpending(db: Knex, periods: CreditPeriods, organizationId: string, userId: string): Promise<MemberSpending> {
  const period = await periods.current(db, organizationId);
  const limit = (await db('credit_member_limits').where({ organization_id: organizationId, user_id: userId }).first('spending_limit')) as
    | { spending_limit: number | null }
    | undefined;
  const usage = await memberUsage(db, organizationId, userId, period);
  const spendingLimit = limit?.spending_limit ?? null;
  return { userId, spendingLimit, period, ...usage, remaining: spendingLimit === null ? null : Math.max(0, spendingLimit - usage.spent - usage.held) };
}

export async function setSpendingLimit(
  trx: Knex.Transaction,
  organizationId: string,
  userId: string,
  spendingLimit: number | null,
  byUserId: string,
): Promise<void> {
  await trx.raw(
    `INSERT INTO credit_member_limits (organization_id, user_id, spending_limit, updated_by_id) VALUES (?, ?, ?, ?)
     ON CONFLICT (organization_id, user_id) DO UPDATE SET spending_limit = excluded.spending_limit, updated_by_id = excluded.updated_by_id, updated_at = now()`,
    [organizationId, userId, spendingLimit, byUserId],
  );
}

/** 402 when a hold would take the member past their limit (checked inside `credit_reserve`, under the limit row's lock). */
export function spendingLimitExhausted(limit: number, used: number, amount: number): AppError {
  const message = `spending_limit: the member's spending limit is exhausted (limit ${limit} credits this period, ${used} used or held, ${amount} needed)`;
  return new AppError('payment_required', message, [{ path: ['spending_limit'], message }]);
}

export function balanceExhausted(available: number, amount: number): AppError {
  const message = `balance: the workspace balance is exhausted (${available} credits available, ${amount} needed)`;
  return new AppError('payment_required', message, [{ path: ['balance'], message }]);
}
