import type { BillingProvider } from '../providers/billing/index.ts';
import { grantStarterCredits } from '../credits/index.ts';
import type { OrganizationCreatedListener } from '../platform/deps.ts';

/**
 * Billing decides what a new organization starts with: sandbox billing gives it the starter
 * credits (STARTER_CREDITS); with a real billing provider, credits come from purchases and plan
 * cycles. Runs in the organization's creating transaction, so the grant is made exactly once.
 */
export function starterGrant(billing: Pick<BillingProvider, 'name'>, starterCredits: number): OrganizationCreatedListener {
  return async (trx, { organizationId }) => {
    if (billing.name === 'sandbox') await grantStarterCredits(trx, organizationId, starterCredits);
  };
}
