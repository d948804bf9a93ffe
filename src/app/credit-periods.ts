// Composition root: credit periods (spending limits, /credits/cycle) follow the subscription's
// billing cycle. Built into the deps of every process, so none falls back to calendar months.
import { billingCyclePeriods } from '../billing/index.ts';
import type { CreditPeriods } from '../credits/index.ts';

export function createCreditPeriods(): CreditPeriods {
  return billingCyclePeriods;
}
