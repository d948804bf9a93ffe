import type { Plan } from './plans.ts';

export interface BillingAddress {
  line1: string;
  line2?: string | null | undefined;
  city: string;
  postal_code: string;
  state?: string | null | undefined;
  /** ISO 3166-1 alpha-2 */
  country: string;
}

/** Who is billed: the organization's billing contact. */
export interface BillingContact {
  name: string;
  email: string;
  address: BillingAddress | null;
  taxId: string | null;
}

export type SubscriptionStatus = 'active' | 'trialing' | 'past_due' | 'canceled' | 'incomplete' | 'unpaid';

/** A subscription as the provider knows it (the free plan has no provider subscription). */
export interface ProviderSubscription {
  subscriptionId: string;
  plan: Plan;
  status: SubscriptionStatus;
  currentPeriodStart: Date;
  currentPeriodEnd: Date;
}

export interface PlanChangeInput {
  customerId: string;
  /** null while the organization is on the free plan. */
  subscriptionId: string | null;
  organizationId: string;
  from: Plan;
  to: Plan;
  /** Start and end of the current period and the moment of the change, for proration. */
  periodStart: Date;
  periodEnd: Date;
  now: Date;
}

export interface ProrationQuote {
  /** Charged now, in minor units of `currency` (0 for downgrades: no refunds mid-period). */
  amountDueMinor: number;
  currency: string;
}

/** A verified webhook notification, reduced to what billing acts on. */
export interface BillingWebhookEvent {
  /** The provider's event id: the key that makes processing exactly-once. */
  id: string;
  type: string;
  createdAt: Date;
  /** From metadata, or null when only `customerId` identifies the organization. */
  organizationId: string | null;
  customerId: string | null;
  action:
    | { kind: 'credit_purchase'; credits: number; amountMinor: number; currency: string; reference: string }
    | { kind: 'subscription_synced'; subscription: ProviderSubscription | null }
    | { kind: 'invoice'; paid: boolean; amountMinor: number; currency: string; reference: string }
    | { kind: 'ignored' };
}

export class WebhookSignatureError extends Error {}

/**
 * A payment provider. Implementations: `SandboxBillingProvider` (offline, default) and
 * `StripeBillingProvider` (the official `stripe` package) — selected by STRIPE_SECRET_KEY.
 */
export interface BillingProvider {
  readonly name: 'sandbox' | 'stripe';
  createCustomer(input: { organizationId: string; contact: BillingContact }): Promise<{ customerId: string }>;
  updateCustomer(customerId: string, contact: BillingContact): Promise<void>;
  getSubscription(subscriptionId: string): Promise<ProviderSubscription | null>;
  previewPlanChange(input: PlanChangeInput): Promise<ProrationQuote>;
  /**
   * `now`: the provider switches price immediately and charges the prorated difference.
   * `period_end`: the provider bills the new price from the next period on (no proration now).
   * Returns the provider subscription after the change, or null when the target is free.
   */
  changePlan(input: PlanChangeInput & { timing: 'now' | 'period_end' }): Promise<ProviderSubscription | null>;
  /** Undoes a `period_end` change: the next period is billed at the current plan again. */
  cancelScheduledChange(input: { subscriptionId: string; current: Plan; scheduled: Plan }): Promise<void>;
  createPortalSession(input: { customerId: string; returnUrl: string }): Promise<{ url: string; expiresAt: Date }>;
  /** Verifies the signature (throws `WebhookSignatureError`) and reads the event. */
  parseWebhook(rawBody: string, signature: string | undefined): BillingWebhookEvent;
}
