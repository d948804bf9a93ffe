import { expect } from 'chai';
import type { Deps } from '../../src/platform/deps.ts';
import { cycleRefillsJob } from '../../src/billing/jobs.ts';
import { runJob, type JobContext } from '../../src/jobs/define.ts';
import { runnableJob } from '../../src/app/jobs.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, startTestServer, type TestServer } from '../support/server.ts';
import { workerDeps } from './support.ts';

const cycleRefillsHandler = { run: (payload: unknown, context: JobContext) => runJob(runnableJob(cycleRefillsJob), payload, context) };

describe('plan-cycle refills (billing.cycle-refills handler)', () => {
  let server: TestServer;
  let deps: Deps;
  let context: JobContext;
  let close: () => Promise<void>;

  before(async () => {
    server = await startTestServer();
    ({ deps, context, close } = await workerDeps());
  });
  after(async () => {
    await server.stop();
    await close();
  });

  const refillGrants = (org: string) => deps.db('credit_grants').where({ organization_id: org, source: 'plan_cycle' }).orderBy('seq');
  const balance = async (org: string) => {
    const row = await deps.db('credit_balances').where({ organization_id: org }).first();
    return row.granted - row.captured - row.held - row.expired;
  };

  it('grants the plan credits once per period, however often (or concurrently) the handler runs', async () => {
    const owner = newUser();
    const org = await createOrganization(server, owner);
    // A pro subscription (its row is created on first read).
    expect((await server.request('get', `/organizations/${org}/subscription`, { token: owner.token })).status).to.equal(200);
    await deps.db('billing_subscriptions').where({ organization_id: org }).update({ plan: 'pro' });
    const before = await balance(org);
    await cycleRefillsHandler.run({ organization_id: org }, context);
    await cycleRefillsHandler.run({ organization_id: org }, context);
    await Promise.all([cycleRefillsHandler.run({ organization_id: org }, context), cycleRefillsHandler.run({}, context)]);

    const grants = await refillGrants(org);
    expect(grants).to.have.length(1);
    expect(grants[0]).to.include({ amount: 5000, remaining: 5000 });
    const subscription = await deps.db('billing_subscriptions').where({ organization_id: org }).first();
    expect(grants[0].expires_at.toISOString()).to.equal(subscription.current_period_end.toISOString());
    const refills = await deps.db('plan_cycle_refills').where({ organization_id: org });
    expect(refills.map((r) => [r.period_start.toISOString(), r.plan, r.credits])).to.deep.equal([
      [subscription.current_period_start.toISOString(), 'pro', 5000],
    ]);
    expect(await balance(org)).to.equal(before + 5000);
    const ledger = await deps.db('credit_ledger_entries').where({ organization_id: org, kind: 'plan_refill' });
    expect(ledger.map((e) => e.amount)).to.deep.equal([5000]);
    const events = await deps.db('billing_events').where({ organization_id: org, type: 'credits.plan_refill' });
    expect(events).to.have.length(1);
  });

  it('rolls into the next period at its end, applies the scheduled plan, and refills at the new plan once', async () => {
    const org = await createOrganization(server, newUser());
    await cycleRefillsHandler.run({ organization_id: org }, context);
    // Free has no allowance: the period is recorded, nothing granted.
    expect(await deps.db('plan_cycle_refills').where({ organization_id: org }).pluck('credits')).to.deep.equal([0]);
    expect(await refillGrants(org)).to.have.length(0);
    // Pretend the period began 40 days ago and a downgrade team → pro waits for its end.
    const anchor = new Date(Date.now() - 40 * 86_400_000);
    const end = new Date(anchor);
    end.setUTCMonth(end.getUTCMonth() + 1);
    await deps
      .db('billing_subscriptions')
      .where({ organization_id: org })
      .update({ plan: 'team', cycle_anchor: anchor, current_period_start: anchor, current_period_end: end, scheduled_plan: 'pro', scheduled_change_at: end });

    await cycleRefillsHandler.run({ organization_id: org }, context);
    await cycleRefillsHandler.run({ organization_id: org }, context);

    const subscription = await deps.db('billing_subscriptions').where({ organization_id: org }).first();
    expect(subscription).to.include({ plan: 'pro', scheduled_plan: null, scheduled_change_at: null });
    expect(subscription.current_period_start.toISOString()).to.equal(end.toISOString());
    expect(subscription.current_period_end.getTime()).to.be.above(Date.now());
    const grants = await refillGrants(org);
    expect(grants.map((g) => g.amount)).to.deep.equal([5000]);
    // The plan change and its refill share one transaction.
    const events = await deps.db('billing_events').where({ organization_id: org }).select('type', 'created_at');
    expect(events.map((e) => e.type).sort()).to.deep.equal(['credits.plan_refill', 'subscription.plan_changed']);
    expect(events[0].created_at.getTime()).to.equal(events[1].created_at.getTime());
  });
});
