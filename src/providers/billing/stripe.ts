import Stripe from 'stripe';
import { planByStripeLookupKey, type Plan } from './plans.ts';
import {
  WebhookSignatureError,
  type BillingContact,
  type BillingProvider,
  type BillingWebhookEvent,
  type PlanChangeInput,
  type ProrationQuote,
  type ProviderSubscription,
  type SubscriptionStatus,
} from './types.ts';

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string | undefined;
  /** Tests point the client at a fake Stripe on loopback (`http://127.0.0.1:PORT`). */
  apiBase: string | undefined;
  returnUrl: string;
}

/** Stripe portal sessions live about five minutes; Stripe does not return the expiry itself. */
const PORTAL_SESSION_SECONDS = 5 * 60;

/** Billing through Stripe: customers, subscriptions priced by `lookup_key`, the customer portal, webhooks. */
export class StripeBillingProvider implements BillingProvider {
  readonly name = 'stripe';
  private readonly stripe: Stripe;

  private readonly settings: StripeSettings;
  constructor(settings: StripeSettings) {
    this.settings = settings;
    const base = settings.apiBase ? new URL(settings.apiBase) : undefined;
    this.stripe = new Stripe(settings.secretKey, {
      maxNetworkRetries: 2,
      timeout: 20_000,
      telemetry: false,
      ...(base && {
        host: base.hostname,
        port: base.port || (base.protocol === 'http:' ? 80 : 443),
        protocol: base.protocol === 'http:' ? 'http' : 'https',
      }),
    });
  }

  async createCustomer(input: { organizationId: string; contact: BillingContact }): Promise<{ customerId: string }> {
    const customer = await this.stripe.customers.create(
      { ...customerFields(input.contact), metadata: { organization_id: input.organizationId, tax_id: input.contact.taxId ?? '' } },
      // A retried request (our transaction failed after Stripe answered) must not make a second customer.
      { idempotencyKey: `workspace-customer-${input.organizationId}` },
    );
    return { customerId: customer.id };
  }

  async updateCustomer(customerId: string, contact: BillingContact): Promise<void> {
    await this.stripe.customers.update(customerId, { ...customerFields(contact), metadata: { tax_id: contact.taxId ?? '' } });
  }

  async getSubscription(subscriptionId: string): Promise<ProviderSubscription | null> {
    const subscription = await this.stripe.subscriptions.retrieve(subscriptionId);
    return readSubscription(subscription);
  }

  async previewPlanChange(input: PlanChangeInput): Promise<ProrationQuote> {
    if (input.to.priceMinor <= input.from.priceMinor) return { amountDueMinor: 0, currency: input.to.currency };
    const price = await this.priceId(input.to);
    const prorationDate = Math.floor(input.now.getTime() / 1000);
    const invoice = input.subscriptionId
      ? await this.stripe.invoices.createPreview({
          customer: input.customerId,
          subscription: input.subscriptionId,
          subscription_details: {
            items: [{ id: await this.itemId(input.subscriptionId), price }],
            proration_behavior: 'always_invoice',
            proration_date: prorationDate,
          },
        })
      : await this.stripe.invoices.createPreview({ customer: input.customerId, subscription_details: { items: [{ price }] } });
    return { amountDueMinor: invoice.amount_due, currency: invoice.currency };
  }

  async changePlan(input: PlanChangeInput & { timing: 'now' | 'period_end' }): Promise<ProviderSubscription | null> {
    const { subscriptionId, to, timing } = input;
    if (!subscriptionId) {
      if (to.priceMinor === 0 || timing === 'period_end') return null; // nothing billed yet: starts when the period turns
      const created = await this.stripe.subscriptions.create(
        { customer: input.customerId, items: [{ price: await this.priceId(to) }], metadata: { organization_id: input.organizationId } },
        { idempotencyKey: `workspace-subscribe-${input.organizationId}-${to.key}-${input.periodStart.toISOString()}` },
      );
      return readSubscription(created);
    }
    if (to.priceMinor === 0) {
      // Free has no Stripe price: leaving a paid plan cancels the Stripe subscription.
      if (timing === 'now') {
        await this.stripe.subscriptions.cancel(subscriptionId);
        return null;
      }
      return readSubscription(await this.stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: true }));
    }
    const updated = await this.stripe.subscriptions.update(subscriptionId, {
      items: [{ id: await this.itemId(subscriptionId), price: await this.priceId(to) }],
      // period_end: the current period stays paid at the old price; the next invoice uses the new one.
      proration_behavior: timing === 'now' ? 'always_invoice' : 'none',
      cancel_at_period_end: false,
    });
    return readSubscription(updated);
  }

  async cancelScheduledChange(input: { subscriptionId: string; current: Plan; scheduled: Plan }): Promise<void> {
    if (input.scheduled.priceMinor === 0) {
      await this.stripe.subscriptions.update(input.subscriptionId, { cancel_at_period_end: false });
      return;
    }
    await this.stripe.subscriptions.update(input.subscriptionId, {
      items: [{ id: await this.itemId(input.subscriptionId), price: await this.priceId(input.current) }],
      proration_behavior: 'none',
    });
  }

  async createPortalSession(input: { customerId: string; returnUrl: string }): Promise<{ url: string; expiresAt: Date }> {
    const session = await this.stripe.billingPortal.sessions.create({ customer: input.customerId, return_url: input.returnUrl });
    return { url: session.url, expiresAt: new Date((session.created + PORTAL_SESSION_SECONDS) * 1000) };
  }

  parseWebhook(rawBody: string, signature: string | undefined): BillingWebhookEvent {
    if (!this.settings.webhookSecret) throw new WebhookSignatureError('STRIPE_WEBHOOK_SECRET is not configured');
    if (!signature) throw new WebhookSignatureError('the Stripe-Signature header is missing');
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(rawBody, signature, this.settings.webhookSecret);
    } catch (error) {
      throw new WebhookSignatureError(`the Stripe-Signature header does not verify: ${(error as Error).message}`);
    }
    return readEvent(event);
  }

  private async priceId(plan: Plan): Promise<string> {
    if (!plan.stripeLookupKey) throw new Error(`plan ${plan.key} has no Stripe price`);
    const found = await this.stripe.prices.list({ lookup_keys: [plan.stripeLookupKey], active: true, limit: 1 });
    const price = found.data[0];
    if (!price) throw new Error(`Stripe has no active price with lookup_key ${plan.stripeLookupKey}`);
    return price.id;
  }

  private async itemId(subscriptionId: string): Promise<string> {
    const subscription = await this.stripe.subscriptions.retrieve(subscriptionId);
    const item = subscription.items.data[0];
    if (!item) throw new Error(`Stripe subscription ${subscriptionId} has no items`);
    return item.id;
  }
}

function customerFields(contact: BillingContact) {
  return {
    name: contact.name,
    email: contact.email,
    ...(contact.address && {
      address: {
        line1: contact.address.line1,
        line2: contact.address.line2 ?? '',
        city: contact.address.city,
        postal_code: contact.address.postal_code,
        state: contact.address.state ?? '',
        country: contact.address.country,
      },
    }),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: Stripe objects are read defensively, across API versions that move fields.
type Loose = Record<string, any>;

function readSubscription(subscription: Loose): ProviderSubscription | null {
  const item = subscription.items?.data?.[0] as Loose | undefined;
  const plan = planByStripeLookupKey(item?.price?.lookup_key);
  if (!plan) return null;
  // Newer API versions keep the period on the item, older ones on the subscription.
  const start = item?.current_period_start ?? subscription.current_period_start;
  const end = item?.current_period_end ?? subscription.current_period_end;
  return {
    subscriptionId: subscription.id,
    plan,
    status: subscription.status as SubscriptionStatus,
    currentPeriodStart: new Date(start * 1000),
    currentPeriodEnd: new Date(end * 1000),
  };
}

function readEvent(event: Stripe.Event): BillingWebhookEvent {
  const object = event.data.object as Loose;
  const metadata = (object.metadata ?? {}) as Record<string, string>;
  const customer = typeof object.customer === 'string' ? object.customer : (object.customer?.id ?? null);
  const base = {
    id: event.id,
    type: event.type,
    createdAt: new Date(event.created * 1000),
    organizationId: metadata.organization_id || null,
    customerId: customer,
  };
  switch (event.type) {
    case 'checkout.session.completed': {
      const credits = Number(metadata.credits);
      if (object.mode !== 'payment' || object.payment_status !== 'paid' || !Number.isInteger(credits) || credits <= 0)
        return { ...base, action: { kind: 'ignored' } };
      return {
        ...base,
        action: { kind: 'credit_purchase', credits, amountMinor: object.amount_total ?? 0, currency: object.currency ?? 'usd', reference: object.id },
      };
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
      return { ...base, action: { kind: 'subscription_synced', subscription: readSubscription(object) } };
    case 'customer.subscription.deleted':
      return { ...base, action: { kind: 'subscription_synced', subscription: null } };
    case 'invoice.paid':
    case 'invoice.payment_failed':
      return {
        ...base,
        action: {
          kind: 'invoice',
          paid: event.type === 'invoice.paid',
          amountMinor: object.amount_due ?? 0,
          currency: object.currency ?? 'usd',
          reference: object.id,
        },
      };
    default:
      return { ...base, action: { kind: 'ignored' } };
  }
}
