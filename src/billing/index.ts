/**
 * Billing — the public module (import from here only): `billingCyclePeriods` makes credit periods
 * (spending limits, /credits/cycle) follow the subscription's billing cycle; the composition root
 * (src/app/credit-periods.ts) gives it to every process through `Deps.creditPeriods`. `starterGrant`
 * listens to organization creation (`Deps.organizationCreated`) and grants the starter credits.
 */
export { billingCyclePeriods } from './credit-period.ts';
export { starterGrant } from './starter-grant.ts';
export { subscriptionSchema } from './schema.ts';
