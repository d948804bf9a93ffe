import { AppError, notFound } from '../core/errors.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { publicAccess } from '../http/authorize.ts';
import { z } from '../core/zod.ts';
import { type BillingWebhookEvent, WebhookSignatureError } from '../providers/billing/types.ts';
import { applyWebhookEvent } from './webhooks.ts';

// Stripe's event object, loosely: the signature over the raw body, not this schema, vouches for it.
const stripeEvent = z.object({ id: z.string(), type: z.string() }).passthrough().openapi('StripeEvent');

/**
 * Notifications from Stripe. Not an operation of the API: no bearer token (Stripe cannot send
 * one); the `Stripe-Signature` header over the raw body authenticates the request instead.
 */
export const billingWebhookRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/billing/webhooks/stripe',
    operationId: 'receiveStripeWebhook',
    summary: 'Receive a Stripe event (authenticated by its Stripe-Signature header)',
    tag: 'Billing',
    public: true,
    authorize: publicAccess('the Stripe-Signature header over the raw body authenticates it'),
    headers: z.object({ 'stripe-signature': z.string().optional() }),
    body: stripeEvent,
    response: {
      status: 200,
      description: 'Received; `outcome` says whether it changed anything',
      schema: z.object({ received: z.literal(true), outcome: z.enum(['applied', 'duplicate', 'unknown_organization', 'ignored']) }),
    },
    errors: [404],
    handler: async ({ ctx, deps }) => {
      if (deps.providers.billing.name !== 'stripe') throw notFound('Stripe billing');
      const raw = (ctx.request as { rawBody?: string }).rawBody ?? '';
      let event: BillingWebhookEvent;
      try {
        event = deps.providers.billing.parseWebhook(raw, ctx.get('stripe-signature') || undefined);
      } catch (error) {
        if (error instanceof WebhookSignatureError)
          throw new AppError('validation_failed', `Stripe-Signature: ${error.message}`, [{ path: ['Stripe-Signature'], message: error.message }]);
        throw error;
      }
      return { received: true as const, outcome: await applyWebhookEvent(deps, event) };
    },
  }),
];
