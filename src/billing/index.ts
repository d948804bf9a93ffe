/**
 * Billing — the public module (import from here only): `billingCyclePeriods` makes credit periods
 * (spending limits, /credits/cycle) follow the subscription's billing cycle; the composition root
 * (src/credit-periods.ts) gives it to every process through `Deps.creditPeriods`.
 */
export { billingCyclePeriods } from './credit-period.ts';
