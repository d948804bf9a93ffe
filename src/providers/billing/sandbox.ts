import { randomUUID } from 'node:crypto';
import { isUpgrade, remainingFraction } from './plans.ts';
import { WebhookSignatureError, type BillingProvider, type PlanChangeInput, type ProrationQuote, type ProviderSubscription } from './types.ts';

/** Portal sessions of the sandbox are short-lived like Stripe's. */
const PORTAL_SESSION_SECONDS = 5 * 60;

/**
 * Offline billing: the catalog's prices, prorated by time left in the period; nothing is
 * charged and the database is the only record. Ids start with `sbx_` so they read as sandbox.
 */
export class SandboxBillingProvider implements BillingProvider {
  readonly name = 'sandbox';

  private readonly publicUrl: string;
  constructor(publicUrl: string) {
    this.publicUrl = publicUrl;
  }

  async createCustomer(): Promise<{ customerId: string }> {
    return { customerId: `sbx_cus_${randomUUID().replaceAll('-', '')}` };
  }

  async updateCustomer(): Promise<void> {}

  async getSubscription(): Promise<ProviderSubscription | null> {
    return null; // the sandbox keeps no state of its own
  }

  async previewPlanChange(input: PlanChangeInput): Promise<ProrationQuote> {
    if (!isUpgrade(input.from, input.to)) return { amountDueMinor: 0, currency: input.to.currency };
    const fraction = remainingFraction(input.periodStart, input.periodEnd, input.now);
    return { amountDueMinor: Math.round((input.to.priceMinor - input.from.priceMinor) * fraction), currency: input.to.currency };
  }

  async changePlan(input: PlanChangeInput & { timing: 'now' | 'period_end' }): Promise<ProviderSubscription | null> {
    const plan = input.timing === 'now' ? input.to : input.from;
    if (plan.priceMinor === 0) return null;
    return {
      subscriptionId: input.subscriptionId ?? `sbx_sub_${randomUUID().replaceAll('-', '')}`,
      plan,
      status: 'active',
      currentPeriodStart: input.periodStart,
      currentPeriodEnd: input.periodEnd,
    };
  }

  async cancelScheduledChange(): Promise<void> {}

  async createPortalSession(input: { customerId: string }): Promise<{ url: string; expiresAt: Date }> {
    const url = new URL('/sandbox/billing-portal', this.publicUrl);
    url.searchParams.set('customer', input.customerId);
    url.searchParams.set('session', randomUUID());
    return { url: url.toString(), expiresAt: new Date(Date.now() + PORTAL_SESSION_SECONDS * 1000) };
  }

  parseWebhook(): never {
    throw new WebhookSignatureError('the sandbox billing provider receives no webhooks');
  }
}
