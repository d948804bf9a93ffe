import type { z } from '../core/zod.ts';
import { plans, toMajor, type Plan } from '../providers/billing/plans.ts';
import type { address } from './schema.ts';
import type { SubscriptionRow } from './subscription-store.ts';

export const presentPlan = (plan: Plan) => ({
  key: plan.key,
  name: plan.name,
  amount: toMajor(plan.priceMinor),
  currency: plan.currency,
  interval: 'month' as const,
  monthly_credits: plan.monthlyCredits,
});

export const presentSubscription = (row: SubscriptionRow) => ({
  organization_id: row.organization_id,
  plan: presentPlan(plans[row.plan]),
  status: row.status,
  provider: row.provider,
  current_period_start: row.current_period_start.toISOString(),
  current_period_end: row.current_period_end.toISOString(),
  scheduled_change:
    row.scheduled_plan && row.scheduled_change_at
      ? { plan: presentPlan(plans[row.scheduled_plan]), effective_at: row.scheduled_change_at.toISOString() }
      : null,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

export interface CustomerRow {
  organization_id: string;
  provider: 'sandbox' | 'stripe';
  provider_customer_id: string;
  name: string;
  email: string;
  /** jsonb written from the validated `address` body, so it has that shape. */
  address: z.input<typeof address> | null;
  tax_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export const presentCustomer = (row: CustomerRow) => ({
  organization_id: row.organization_id,
  provider: row.provider,
  provider_customer_id: row.provider_customer_id,
  name: row.name,
  email: row.email,
  address: row.address ?? null,
  tax_id: row.tax_id,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});
