import { emailAddress, singleLine, timestamp, z } from '../core/zod.ts';
import { planKeys } from '../providers/billing/plans.ts';

const planKey = z.enum(planKeys).openapi({ description: 'Plan of the catalog: `free`, `pro` or `team`.' });
const timing = z.enum(['now', 'period_end']).openapi({
  description:
    '`now`: switch at once, pay the prorated difference and receive the prorated credit difference. `period_end`: switch when the current period ends. Default: upgrades `now`, downgrades `period_end`.',
});

export const planSchema = z
  .object({
    key: planKey,
    name: z.string(),
    amount: z.number().openapi({ description: 'Price per monthly period, in major units of `currency`.' }),
    currency: z.string(),
    interval: z.literal('month'),
    monthly_credits: z.number().int().openapi({ description: 'Credits granted at the start of every period.' }),
  })
  .openapi('Plan');

export const subscriptionSchema = z
  .object({
    organization_id: z.string(),
    plan: planSchema,
    status: z.string().openapi({ description: '`active`, `trialing`, `past_due`, `canceled`, `incomplete` or `unpaid`.' }),
    provider: z.enum(['sandbox', 'stripe']),
    current_period_start: timestamp,
    current_period_end: timestamp,
    scheduled_change: z
      .object({ plan: planSchema, effective_at: timestamp })
      .nullable()
      .openapi({ description: 'A plan change waiting for the end of the period; cancel it with DELETE .../subscription/scheduled-change.' }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Subscription');

export const subscriptionEnvelope = z.object({ subscription: subscriptionSchema });

export const changePlanBody = z.object({ plan: planKey, timing: timing.optional() }).strict();

export const previewQuery = z.object({ plan: planKey, timing: timing.optional() });

export const previewSchema = z
  .object({
    preview: z.object({
      from_plan: planSchema,
      to_plan: planSchema,
      timing,
      effective_at: timestamp.openapi({ description: 'When the new plan takes effect.' }),
      amount_due: z.number().openapi({ description: 'Charged now, in major units of `currency` (0 when nothing is charged now).' }),
      currency: z.string(),
      credit_change: z.number().int().openapi({ description: 'Credits granted now by the change (prorated allowance difference); 0 for scheduled changes.' }),
      sandbox: z.boolean().openapi({ description: 'True when computed by the sandbox billing provider (nothing is charged).' }),
    }),
  })
  .openapi('SubscriptionPreview');

export const address = z
  .object({
    line1: z.string().min(1).max(200),
    line2: z.string().max(200).nullable().optional(),
    city: z.string().min(1).max(100),
    postal_code: z.string().min(1).max(20),
    state: z.string().max(100).nullable().optional(),
    country: z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as "DE"'),
  })
  .strict()
  .openapi('BillingAddress');

export const createCustomerBody = z
  .object({
    name: singleLine(200),
    email: emailAddress(),
    address: address.nullable().optional(),
    tax_id: singleLine(64).nullable().optional(),
  })
  .strict();

export const updateCustomerBody = createCustomerBody.partial().strict();

export const customerSchema = z
  .object({
    organization_id: z.string(),
    provider: z.enum(['sandbox', 'stripe']),
    provider_customer_id: z.string(),
    name: z.string(),
    email: z.string(),
    address: address.nullable(),
    tax_id: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('BillingCustomer');

export const customerEnvelope = z.object({ customer: customerSchema });

export const portalSessionBody = z
  .object({ return_url: z.string().url().max(2000).optional().openapi({ description: 'Where the portal sends the user back; default: the service URL.' }) })
  .strict();

export const portalSessionSchema = z
  .object({
    url: z.string().url().optional().openapi({
      description:
        'The portal link, a one-time secret: never stored, so a replayed answer (`Idempotent-Replayed: true`) leaves it out; open a new session for a new link.',
    }),
    expires_at: timestamp,
  })
  .openapi('BillingPortalSession');

export const billingSummarySchema = z
  .object({
    provider: z.enum(['sandbox', 'stripe']),
    // A union, not .nullable(): a nullable reference renders as allOf[ref, null], which admits no null.
    customer: z.union([customerSchema, z.null()]),
    subscription: subscriptionSchema,
    plan: planSchema,
  })
  .openapi('BillingSummary');

export const billingEventSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    title: z.string(),
    description: z.string(),
    created_at: z.string(),
    amount: z.number().optional(),
    currency: z.string().optional(),
  })
  .openapi('BillingEvent');

export const billingEventsQuery = z.object({
  days: z.coerce.number().int().min(1).max(365).default(30).openapi({ description: 'Events of the last `days` days (1–365, default 30).' }),
  limit: z.coerce.number().int().min(1).max(100).default(50).openapi({ description: 'At most this many events, newest first (1–100, default 50).' }),
});

export const billingEventsSchema = z.object({ events: z.array(billingEventSchema) }).openapi('BillingEvents');
