import { notFound } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import { getCustomer } from './customers.ts';
import { listBillingEvents } from './events.ts';
import { plans } from '../providers/billing/plans.ts';
import { presentCustomer, presentPlan, presentSubscription } from './presenter.ts';
import { loadSubscription } from './subscription-store.ts';
import { inTransaction } from '../db/transaction.ts';

export async function billingSummary(deps: Pick<Deps, 'db' | 'providers'>, organizationId: string) {
  const subscription = await inTransaction(deps.db, (trx) => loadSubscription(trx, organizationId, deps.providers.billing.name));
  const customer = await getCustomer(deps, organizationId);
  return {
    provider: deps.providers.billing.name,
    customer: customer ? presentCustomer(customer) : null,
    subscription: presentSubscription(subscription),
    plan: presentPlan(plans[subscription.plan]),
  };
}

export async function billingEvents(deps: Pick<Deps, 'db'>, organizationId: string, days: number, limit: number) {
  return { events: await listBillingEvents(deps.db, organizationId, days, limit) };
}

/** A short-lived link to the provider's self-service portal (payment methods, invoices). */
export async function createPortalSession(deps: Pick<Deps, 'config' | 'db' | 'providers'>, organizationId: string, returnUrl: string | undefined) {
  const customer = await getCustomer(deps, organizationId);
  if (!customer) throw notFound('billing customer');
  const session = await deps.providers.billing.createPortalSession({
    customerId: customer.provider_customer_id,
    returnUrl: returnUrl ?? deps.config.PUBLIC_URL ?? `http://localhost:${deps.config.PORT}`,
  });
  return { url: session.url, expires_at: session.expiresAt.toISOString() };
}
