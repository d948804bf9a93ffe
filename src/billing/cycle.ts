import type { Deps } from '../platform/deps.ts';
import { grantCredits } from '../credits/index.ts';
import { recordBillingEvent } from './events.ts';
import { plans } from '../providers/billing/plans.ts';
import { loadSubscription, rollSubscriptionForward } from './subscription-store.ts';
import { inTransaction } from '../db/transaction.ts';
import { liveOrganizations } from '../organizations/index.ts';

/** Organizations looked at per run; the schedule comes back for the rest. */
const BATCH = 500;

/**
 * Plan-cycle refills: for every live organization whose current period has no refill yet, roll
 * the subscription into the current period (applying a scheduled plan change) and grant the plan's
 * monthly credits, expiring at the period end. The primary key (organization_id, period_start) of
 * `plan_cycle_refills`, inserted in the same transaction as the grant, makes it once per period.
 */
export async function runCycleRefills(
  deps: Pick<Deps, 'db' | 'providers'>,
  options: { organizationId?: string | undefined; now?: Date } = {},
): Promise<{ periods: number }> {
  const now = options.now ?? new Date();
  const due = await liveOrganizations(deps.db)
    .leftJoin('billing_subscriptions as s', 's.organization_id', 'o.id')
    .modify((query) => {
      if (options.organizationId) query.where('o.id', options.organizationId);
    })
    .where((query) =>
      query
        .whereNull('s.organization_id')
        .orWhere('s.current_period_end', '<=', now)
        .orWhereNotExists((refill) =>
          refill.select(1).from('plan_cycle_refills as r').whereRaw('r.organization_id = s.organization_id AND r.period_start = s.current_period_start'),
        ),
    )
    .orderBy('o.id')
    .limit(BATCH)
    .pluck('o.id');
  let periods = 0;
  for (const organizationId of due as string[]) {
    if (await refillOrganization(deps, organizationId, now)) periods += 1;
  }
  return { periods };
}

async function refillOrganization(deps: Pick<Deps, 'db' | 'providers'>, organizationId: string, now: Date): Promise<boolean> {
  return inTransaction(deps.db, async (trx) => {
    const locked = await loadSubscription(trx, organizationId, deps.providers.billing.name, { forUpdate: true });
    const { row, switchedFrom } = await rollSubscriptionForward(trx, locked, now);
    const plan = plans[row.plan];
    const inserted = await trx('plan_cycle_refills')
      .insert({
        organization_id: organizationId,
        period_start: row.current_period_start,
        period_end: row.current_period_end,
        plan: plan.key,
        credits: plan.monthlyCredits,
      })
      .onConflict(['organization_id', 'period_start'])
      .ignore()
      .returning('organization_id');
    if (inserted.length === 0) return false;
    if (switchedFrom) {
      await recordBillingEvent(trx, {
        organizationId,
        type: 'subscription.plan_changed',
        title: `Plan changed to ${plan.name}`,
        description: `The change from ${switchedFrom.name} to ${plan.name} scheduled for the period end took effect.`,
        data: { from: switchedFrom.key, to: plan.key, timing: 'period_end' },
      });
    }
    if (plan.monthlyCredits === 0) return true; // the period is recorded; there is nothing to grant
    await grantCredits(trx, {
      organizationId,
      source: 'plan_cycle',
      amount: plan.monthlyCredits,
      expiresAt: row.current_period_end,
      description: `${plan.name} plan credits for ${row.current_period_start.toISOString().slice(0, 10)} – ${row.current_period_end.toISOString().slice(0, 10)}`,
      metadata: { period_start: row.current_period_start.toISOString(), plan: plan.key },
    });
    await recordBillingEvent(trx, {
      organizationId,
      type: 'credits.plan_refill',
      title: `${plan.monthlyCredits} ${plan.name} plan credits granted`,
      description: `Monthly allowance for the period starting ${row.current_period_start.toISOString()}; unused credits expire at ${row.current_period_end.toISOString()}.`,
      data: { credits: plan.monthlyCredits, plan: plan.key, period_start: row.current_period_start.toISOString() },
    });
    return true;
  });
}
