import { calendarMonth, type CreditPeriods } from '../credits/index.ts';
import { periodContaining } from '../providers/billing/plans.ts';

/**
 * Credit periods (spending limits, /credits/cycle) follow the subscription's billing cycle; an
 * organization without a subscription row counts calendar months. Given to credits through
 * `Deps.creditPeriods` (src/app/credit-periods.ts), so credits never imports billing.
 */
export const billingCyclePeriods: CreditPeriods = {
  async current(db, organizationId, now = new Date()) {
    const row = await db('billing_subscriptions').where({ organization_id: organizationId }).first('cycle_anchor');
    return row ? periodContaining(row.cycle_anchor as Date, now) : calendarMonth(now);
  },
};
