import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { balanceAlertCheckJob } from '../../src/credits/jobs.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/**
 * A chat run's begin is where available credits fall: when its hold crosses one of the
 * organization's alert thresholds (read by the hold's own statement) or runs the balance out, a
 * balance-alert check is queued at once; otherwise nothing is queued (the minute's sweep suffices).
 */
describe('POST /organizations/{id}/credits/chat-runs/begin: low-balance alert checks', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' });

  const begin = async (user: TestUser, org: string, amount: number) => {
    const res = await ctx.server.request('post', `/organizations/${org}/credits/chat-runs/begin`, {
      token: user.token,
      body: { run_id: `run_${randomUUID()}`, amount },
    });
    expect(res.status).to.equal(201);
  };
  const checksQueued = async (org: string) =>
    Number((await ctx.db('pgboss.job').where({ name: balanceAlertCheckJob.name }).whereRaw(`data->>'organization_id' = ?`, [org]).count('* as n').first())!.n);

  it('its thresholds, the default ones (100) or none when disabled: a check is queued exactly when a hold crosses one', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    // No policy row: the default threshold of 100.
    await begin(owner, org, 850); // 1000 → 150
    expect(await checksQueued(org)).to.equal(0);
    await begin(owner, org, 100); // 150 → 50 crosses 100
    expect(await checksQueued(org)).to.equal(1);

    const custom = await createOrganization(ctx.server, owner);
    await ctx
      .db('organization_alert_policies')
      .insert({ organization_id: custom, enabled: true, low_balance_thresholds: [600], notify_roles: ['owner'], extra_recipients: [] });
    await begin(owner, custom, 300); // 1000 → 700
    expect(await checksQueued(custom)).to.equal(0);
    await begin(owner, custom, 200); // 700 → 500 crosses 600
    expect(await checksQueued(custom)).to.equal(1);
    await begin(owner, custom, 450); // 500 → 50: crosses no threshold of its own (100 is not one)
    expect(await checksQueued(custom)).to.equal(1);

    const quiet = await createOrganization(ctx.server, owner);
    await ctx
      .db('organization_alert_policies')
      .insert({ organization_id: quiet, enabled: false, low_balance_thresholds: [600], notify_roles: ['owner'], extra_recipients: [] });
    await begin(owner, quiet, 500); // crosses 600, but alerts are off
    expect(await checksQueued(quiet)).to.equal(0);
    await begin(owner, quiet, 500); // runs out: checked whatever the policy says
    expect(await checksQueued(quiet)).to.equal(1);
  });
});
