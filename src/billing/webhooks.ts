import type { Knex } from 'knex';
import type { Deps } from '../platform/deps.ts';
import { grantCredits } from '../credits/index.ts';
import { recordBillingEvent } from './events.ts';
import { plans } from '../providers/billing/plans.ts';
import type { BillingWebhookEvent } from '../providers/billing/types.ts';
import { loadSubscription, updateSubscription } from './subscription-store.ts';
import { inTransaction } from '../db/transaction.ts';
import { organizationExists } from '../organizations/index.ts';

export type WebhookOutcome = 'applied' | 'duplicate' | 'unknown_organization' | 'ignored';

/**
 * Applies one verified provider event exactly once: its receipt row (primary key = provider +
 * event id) is inserted in the same transaction as its effects, so a replay — even a concurrent
 * one, which waits on the key — finds the receipt and changes nothing.
 */
export async function applyWebhookEvent(deps: Pick<Deps, 'db' | 'providers'>, event: BillingWebhookEvent): Promise<WebhookOutcome> {
  return inTransaction(deps.db, async (trx) => {
    const organizationId = await organizationOf(trx, event);
    const inserted = await trx('billing_webhook_receipts')
      .insert({ provider: deps.providers.billing.name, event_id: event.id, event_type: event.type, organization_id: organizationId })
      .onConflict(['provider', 'event_id'])
      .ignore()
      .returning('event_id');
    if (inserted.length === 0) return 'duplicate';
    if (!organizationId) return 'unknown_organization';
    const { action } = event;
    switch (action.kind) {
      case 'credit_purchase':
        await grantCredits(trx, {
          organizationId,
          source: 'purchase',
          amount: action.credits,
          description: `Purchase of ${action.credits} credits (${action.reference})`,
        });
        await recordBillingEvent(trx, {
          organizationId,
          type: 'credits.purchased',
          title: `${action.credits} credits purchased`,
          description: `Payment ${action.reference} added ${action.credits} credits to the balance.`,
          amountMinor: action.amountMinor,
          currency: action.currency,
          providerEventId: event.id,
          data: { credits: action.credits, reference: action.reference },
        });
        return 'applied';
      case 'invoice':
        await recordBillingEvent(trx, {
          organizationId,
          type: action.paid ? 'invoice.paid' : 'invoice.payment_failed',
          title: action.paid ? 'Invoice paid' : 'Invoice payment failed',
          description: action.paid
            ? `Invoice ${action.reference} was paid.`
            : `Payment of invoice ${action.reference} failed; update the payment method in the billing portal.`,
          amountMinor: action.amountMinor,
          currency: action.currency,
          providerEventId: event.id,
        });
        return 'applied';
      case 'subscription_synced': {
        const row = await loadSubscription(trx, organizationId, deps.providers.billing.name, { forUpdate: true });
        const synced = action.subscription;
        await updateSubscription(
          trx,
          organizationId,
          synced
            ? {
                provider_subscription_id: synced.subscriptionId,
                plan: synced.plan.key,
                status: synced.status,
                current_period_start: synced.currentPeriodStart,
                current_period_end: synced.currentPeriodEnd,
              }
            : { provider_subscription_id: null, plan: 'free', status: 'active', scheduled_plan: null, scheduled_change_at: null },
        );
        const plan = plans[synced?.plan.key ?? 'free'];
        await recordBillingEvent(trx, {
          organizationId,
          type: 'subscription.synced',
          title: `Subscription updated by ${deps.providers.billing.name}`,
          description:
            plan.key === row.plan
              ? `The ${plan.name} subscription is ${synced?.status ?? 'ended'}.`
              : `The plan is now ${plan.name} (was ${plans[row.plan].name}).`,
          providerEventId: event.id,
        });
        return 'applied';
      }
      case 'ignored':
        return 'ignored';
    }
  });
}

async function organizationOf(trx: Knex.Transaction, event: BillingWebhookEvent): Promise<string | null> {
  if (event.organizationId && (await organizationExists(trx, event.organizationId))) return event.organizationId;
  if (!event.customerId) return null;
  const customer = await trx('billing_customers').where({ provider: 'stripe', provider_customer_id: event.customerId }).first('organization_id');
  return customer?.organization_id ?? null;
}
