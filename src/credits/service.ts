import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import type { z } from '../core/zod.ts';
import type { Actor } from '../access/index.ts';
import { notFound } from '../core/errors.ts';
import { isMember } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import { availableOf, readBalance } from './entries.ts';
import { listLiveGrants } from './ledger.ts';
import { memberSpending, setSpendingLimit } from './limits.ts';
import { presentGrant } from './presenter.ts';
import type { creditsSchema, cycleSchema, memberCreditsSchema } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

export async function getCredits(deps: Pick<Deps, 'db'>, organizationId: string): Promise<z.input<typeof creditsSchema>> {
  return creditsOf(deps.db, organizationId);
}

/** The credits view of an organization, read with `db` (a transaction sees its own changes). */
export async function creditsOf(db: Knex, organizationId: string): Promise<z.input<typeof creditsSchema>> {
  const balance = await readBalance(db, organizationId);
  const grants = await listLiveGrants(db, organizationId);
  const available = availableOf(balance);
  return { organization_id: organizationId, balance: available + balance.held, held: balance.held, available, grants: grants.map(presentGrant) };
}

export async function getCycle(deps: Pick<Deps, 'creditPeriods' | 'db'>, organizationId: string): Promise<z.input<typeof cycleSchema>> {
  const period = await deps.creditPeriods.current(deps.db, organizationId);
  const { rows } = await deps.db.raw(
    `SELECT coalesce(sum(amount) FILTER (WHERE from_account = 'issued'), 0)::bigint AS granted,
            coalesce(sum(amount) FILTER (WHERE kind = 'capture'), 0)::bigint AS used,
            coalesce(sum(amount) FILTER (WHERE to_account = 'expired'), 0)::bigint AS expired
       FROM credit_ledger_entries WHERE organization_id = ? AND created_at >= ? AND created_at < ?`,
    [organizationId, period.start, period.end],
  );
  const balance = await readBalance(deps.db, organizationId);
  const available = availableOf(balance);
  return {
    organization_id: organizationId,
    period_start: period.start.toISOString(),
    period_end: period.end.toISOString(),
    granted: rows[0].granted,
    used: rows[0].used,
    expired: rows[0].expired,
    held: balance.held,
    balance: available + balance.held,
    available,
  };
}

/** A member sees their own credits; seeing another member's needs credits.view. */
export async function getMemberCredits(
  deps: Pick<Deps, 'creditPeriods' | 'db'>,
  organizationId: string,
  userId: string,
): Promise<z.input<typeof memberCreditsSchema>> {
  await requireTargetMember(deps, organizationId, userId);
  return presentMemberCredits(organizationId, await memberSpending(deps.db, deps.creditPeriods, organizationId, userId));
}

export async function updateMemberCredits(
  deps: Pick<Deps, 'creditPeriods' | 'db'>,
  actor: Actor,
  organizationId: string,
  userId: string,
  spendingLimit: number | null,
): Promise<z.input<typeof memberCreditsSchema>> {
  await requireTargetMember(deps, organizationId, userId);
  await inTransaction(deps.db, async (trx) => {
    await setSpendingLimit(trx, organizationId, userId, spendingLimit, actor.userId);
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'member.spending_limit_changed',
      subjectType: 'member',
      subjectId: userId,
      data: { spending_limit: spendingLimit },
    });
  });
  return presentMemberCredits(organizationId, await memberSpending(deps.db, deps.creditPeriods, organizationId, userId));
}

async function requireTargetMember(deps: Pick<Deps, 'db'>, organizationId: string, userId: string): Promise<void> {
  if (!(await isMember(deps.db, organizationId, userId))) throw notFound('member');
}

function presentMemberCredits(organizationId: string, spending: Awaited<ReturnType<typeof memberSpending>>): z.input<typeof memberCreditsSchema> {
  return {
    organization_id: organizationId,
    user_id: spending.userId,
    spending_limit: spending.spendingLimit,
    period_start: spending.period.start.toISOString(),
    period_end: spending.period.end.toISOString(),
    spent: spending.spent,
    held: spending.held,
    remaining: spending.remaining,
  };
}
