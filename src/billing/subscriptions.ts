import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { conflict, notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { grantCredits } from '../credits/index.ts';
import { recordBillingEvent } from './events.ts';
import { isUpgrade, plans, remainingFraction, toMajor, type Plan, type PlanKey } from '../providers/billing/plans.ts';
import { presentPlan } from './presenter.ts';
import type { PlanChangeInput } from '../providers/billing/types.ts';
import { loadSubscription, updateSubscription, type SubscriptionRow } from './subscription-store.ts';
import { inTransaction } from '../db/transaction.ts';

export type Timing = 'now' | 'period_end';

interface Quote {
  from: Plan;
  to: Plan;
  timing: Timing;
  effectiveAt: Date;
  amountDueMinor: number;
  currency: string;
  creditChange: number;
  input: PlanChangeInput;
}

export async function getSubscription(deps: Pick<Deps, 'db' | 'providers'>, organizationId: string): Promise<SubscriptionRow> {
  return inTransaction(deps.db, (trx) => loadSubscription(trx, organizationId, deps.providers.billing.name));
}

/** What a plan change would cost and grant, as the provider quotes it. Reads only. */
export async function previewPlanChange(deps: Pick<Deps, 'db' | 'providers'>, organizationId: string, target: PlanKey, timing: Timing | undefined) {
  const quote = await inTransaction(deps.db, async (trx) => {
    const row = await loadSubscription(trx, organizationId, deps.providers.billing.name);
    return quoteChange(deps, trx, row, target, timing);
  });
  return {
    preview: {
      from_plan: presentPlan(quote.from),
      to_plan: presentPlan(quote.to),
      timing: quote.timing,
      effective_at: quote.effectiveAt.toISOString(),
      amount_due: toMajor(quote.amountDueMinor),
      currency: quote.currency,
      credit_change: quote.creditChange,
      sandbox: deps.providers.billing.name === 'sandbox',
    },
  };
}

/**
 * Changes the plan now (prorated charge and credit grant) or schedules it for the period end.
 * The subscription row stays locked while the provider is called, so changes of one organization
 * happen one at a time.
 */
export async function changePlan(
  deps: Pick<Deps, 'db' | 'providers'>,
  actor: Actor,
  organizationId: string,
  target: PlanKey,
  timing: Timing | undefined,
): Promise<SubscriptionRow> {
  return inTransaction(deps.db, async (trx) => {
    const row = await loadSubscription(trx, organizationId, deps.providers.billing.name, { forUpdate: true });
    const quote = await quoteChange(deps, trx, row, target, timing);
    const provided = await deps.providers.billing.changePlan({ ...quote.input, timing: quote.timing });
    const event = { organizationId, actorId: actor.userId, data: { from: quote.from.key, to: quote.to.key, timing: quote.timing } };
    let updated: SubscriptionRow;
    if (quote.timing === 'now') {
      updated = await updateSubscription(trx, organizationId, {
        plan: quote.to.key,
        provider_subscription_id: provided?.subscriptionId ?? null,
        status: provided?.status ?? 'active',
        scheduled_plan: null,
        scheduled_change_at: null,
      });
      if (quote.creditChange > 0) {
        await grantCredits(trx, {
          organizationId,
          source: 'plan_cycle',
          amount: quote.creditChange,
          expiresAt: row.current_period_end,
          description: `Prorated ${quote.to.name} allowance for the rest of the period (upgrade from ${quote.from.name})`,
        });
      }
      await recordBillingEvent(trx, {
        ...event,
        type: 'subscription.plan_changed',
        title: `Plan changed to ${quote.to.name}`,
        description: `Changed from ${quote.from.name} to ${quote.to.name}; ${quote.creditChange} credits granted for the rest of the period.`,
        ...(quote.amountDueMinor > 0 && { amountMinor: quote.amountDueMinor, currency: quote.currency }),
      });
      await recordActivity(trx, {
        organizationId,
        actorId: actor.userId,
        action: 'subscription.plan_changed',
        subjectType: 'subscription',
        subjectId: organizationId,
        data: event.data,
      });
    } else {
      updated = await updateSubscription(trx, organizationId, { scheduled_plan: quote.to.key, scheduled_change_at: quote.effectiveAt });
      await recordBillingEvent(trx, {
        ...event,
        type: 'subscription.change_scheduled',
        title: `Change to ${quote.to.name} scheduled`,
        description: `The plan changes from ${quote.from.name} to ${quote.to.name} on ${quote.effectiveAt.toISOString()}.`,
      });
      await recordActivity(trx, {
        organizationId,
        actorId: actor.userId,
        action: 'subscription.change_scheduled',
        subjectType: 'subscription',
        subjectId: organizationId,
        data: event.data,
      });
    }
    return updated;
  });
}

export async function cancelScheduledChange(deps: Pick<Deps, 'db' | 'providers'>, actor: Actor, organizationId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const row = await loadSubscription(trx, organizationId, deps.providers.billing.name, { forUpdate: true });
    if (!row.scheduled_plan) throw notFound('scheduled plan change');
    const current = plans[row.plan];
    const scheduled = plans[row.scheduled_plan];
    if (row.provider_subscription_id) await deps.providers.billing.cancelScheduledChange({ subscriptionId: row.provider_subscription_id, current, scheduled });
    await updateSubscription(trx, organizationId, { scheduled_plan: null, scheduled_change_at: null });
    await recordBillingEvent(trx, {
      organizationId,
      actorId: actor.userId,
      type: 'subscription.scheduled_change_canceled',
      title: `Change to ${scheduled.name} canceled`,
      description: `The organization stays on ${current.name}.`,
      data: { plan: current.key, canceled: scheduled.key },
    });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'subscription.scheduled_change_canceled',
      subjectType: 'subscription',
      subjectId: organizationId,
      data: { canceled: scheduled.key },
    });
  });
}

async function quoteChange(
  deps: Pick<Deps, 'providers'>,
  trx: Knex.Transaction,
  row: SubscriptionRow,
  target: PlanKey,
  requested: Timing | undefined,
): Promise<Quote> {
  const from = plans[row.plan];
  const to = plans[target];
  if (from.key === to.key) throw conflict(`plan: the organization is already on the ${to.name} plan`, ['plan']);
  const customer = await trx('billing_customers').where({ organization_id: row.organization_id }).first('provider_customer_id');
  if (to.priceMinor > 0 && !customer) throw conflict('plan: a paid plan needs a billing customer; create one with POST .../billing/customer first', ['plan']);
  const timing: Timing = requested ?? (isUpgrade(from, to) ? 'now' : 'period_end');
  // Nothing is billed on free, so there is no provider subscription to switch at the period end.
  if (timing === 'period_end' && from.priceMinor === 0) throw conflict('timing: leaving the free plan takes effect now; omit timing or send "now"', ['timing']);
  const now = new Date();
  const input: PlanChangeInput = {
    customerId: customer?.provider_customer_id ?? '',
    subscriptionId: row.provider_subscription_id,
    organizationId: row.organization_id,
    from,
    to,
    periodStart: row.current_period_start,
    periodEnd: row.current_period_end,
    now,
  };
  if (timing === 'period_end') {
    return { from, to, timing, effectiveAt: row.current_period_end, amountDueMinor: 0, currency: to.currency, creditChange: 0, input };
  }
  const quote = await deps.providers.billing.previewPlanChange(input);
  const fraction = remainingFraction(row.current_period_start, row.current_period_end, now);
  // Only an upgrade adds credits; a downgrade now keeps what this period already granted.
  const creditChange = Math.max(0, Math.floor((to.monthlyCredits - from.monthlyCredits) * fraction));
  return { from, to, timing, effectiveAt: now, amountDueMinor: quote.amountDueMinor, currency: quote.currency, creditChange, input };
}
