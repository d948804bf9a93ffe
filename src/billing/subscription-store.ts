import type { Knex } from 'knex';
import { recordEvent } from '../core/events.ts';
import { organizationCreatedAt } from '../organizations/index.ts';
import { periodContaining, plans, type Plan, type PlanKey } from '../providers/billing/plans.ts';
import { presentSubscription } from './presenter.ts';

export interface SubscriptionRow {
  organization_id: string;
  provider: 'sandbox' | 'stripe';
  provider_subscription_id: string | null;
  plan: PlanKey;
  status: string;
  cycle_anchor: Date;
  current_period_start: Date;
  current_period_end: Date;
  scheduled_plan: PlanKey | null;
  scheduled_change_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * The organization's subscription row, created on first use: every organization starts on the
 * free plan, its periods anchored at the organization's creation. Locked when `forUpdate`.
 */
export async function loadSubscription(
  trx: Knex.Transaction | Knex,
  organizationId: string,
  provider: string,
  options: { forUpdate?: boolean } = {},
): Promise<SubscriptionRow> {
  const existing = await selectRow(trx, organizationId, options.forUpdate);
  if (existing) return existing;
  const anchor = (await organizationCreatedAt(trx, organizationId)) as Date;
  const period = periodContaining(anchor, new Date());
  await trx('billing_subscriptions')
    .insert({
      organization_id: organizationId,
      provider,
      plan: 'free',
      cycle_anchor: anchor,
      current_period_start: period.start,
      current_period_end: period.end,
    })
    .onConflict('organization_id')
    .ignore();
  return (await selectRow(trx, organizationId, options.forUpdate))!;
}

async function selectRow(trx: Knex.Transaction | Knex, organizationId: string, forUpdate = false): Promise<SubscriptionRow | undefined> {
  const query = trx('billing_subscriptions').where({ organization_id: organizationId }).first();
  if (forUpdate) query.forUpdate();
  return query;
}

export async function updateSubscription(
  trx: Knex.Transaction,
  organizationId: string,
  changes: Partial<Omit<SubscriptionRow, 'organization_id' | 'created_at'>>,
): Promise<SubscriptionRow> {
  const [row] = await trx('billing_subscriptions')
    .where({ organization_id: organizationId })
    .update({ ...changes, updated_at: trx.fn.now() })
    .returning('*');
  // Every change of the subscription (plan, schedule, status, period) goes through here: one event each.
  await recordEvent(trx, {
    organizationId,
    type: 'billing.subscription.updated',
    subject: null,
    object: presentSubscription(row as SubscriptionRow),
  });
  return row as SubscriptionRow;
}

/**
 * Moves a subscription whose period has ended into the period containing `now`, switching to the
 * scheduled plan when its date has come. The caller holds the row lock.
 */
export async function rollSubscriptionForward(
  trx: Knex.Transaction,
  row: SubscriptionRow,
  now: Date,
): Promise<{ row: SubscriptionRow; switchedFrom: Plan | null }> {
  if (now < row.current_period_end) return { row, switchedFrom: null };
  const period = periodContaining(row.cycle_anchor, now);
  const switching = row.scheduled_plan !== null && row.scheduled_change_at !== null && row.scheduled_change_at <= period.start;
  const updated = await updateSubscription(trx, row.organization_id, {
    current_period_start: period.start,
    current_period_end: period.end,
    ...(switching && { plan: row.scheduled_plan!, scheduled_plan: null, scheduled_change_at: null }),
    // A paid subscription scheduled down to free was cancelled at the provider at this period end.
    ...(switching && row.scheduled_plan === 'free' && { provider_subscription_id: null }),
  });
  return { row: updated, switchedFrom: switching ? plans[row.plan] : null };
}
