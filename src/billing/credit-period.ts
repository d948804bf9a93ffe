import { setCreditPeriodResolver } from '../credits/cycle.ts';
import { periodContaining } from './plans.ts';

// Credit periods (spending limits, /credits/cycle) follow the subscription's billing cycle.
setCreditPeriodResolver(async (db, organizationId, now) => {
  const row = await db('billing_subscriptions').where({ organization_id: organizationId }).first('cycle_anchor');
  return row ? periodContaining(row.cycle_anchor as Date, now) : null;
});
