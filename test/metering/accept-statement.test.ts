import { expect } from 'chai';
import { setSpendingLimit } from '../../src/credits/limits.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { meteredCallJob } from '../../src/metering/index.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';

/**
 * A metered read is accepted by ONE statement (metered_call_accept): its call, its job and then its
 * hold. A refusal (402) deletes the call and the job in that statement, so nothing is left and
 * nothing runs; a member under a spending limit is asked for the credit period before anything is
 * written, and then reads as anyone else.
 */
describe('metered reads: the one accept statement', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ STARTER_CREDITS: '3', WORKER_POLL_INTERVAL_SECONDS: '0.5', WORKER_CONCURRENCY: '4' });
  });
  after(async () => {
    await stack.stop();
  });

  const read = (user: TestUser, org: string, username: string) =>
    stack.server.request('post', '/social/net2_profile', { token: user.token, body: { organization_id: org, input: { username } } });
  const left = async (org: string) => ({
    calls: Number((await stack.db('metered_calls').where({ organization_id: org }).count('* as n').first())!.n),
    jobs: Number((await stack.db('pgboss.job').where({ name: meteredCallJob.name, group_id: org }).count('* as n').first())!.n),
    holds: Number((await stack.db('credit_holds').where({ organization_id: org }).count('* as n').first())!.n),
  });

  it('refused (402: balance, spending limit): no call, no job, no hold is left; a limited member within the limit reads', async () => {
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(stack.server, owner);
    await addMember(stack.db, org, member);

    await stack.db.transaction((trx) => setSpendingLimit(trx, org, member.id, 0, owner.id));
    const limited = await read(member, org, 'ada');
    expect(limited.status).to.equal(402);
    expect(limited.body.data.issues[0].path).to.deep.equal(['spending_limit']);
    expect(await left(org)).to.deep.equal({ calls: 0, jobs: 0, holds: 0 });

    await stack.db.transaction((trx) => setSpendingLimit(trx, org, member.id, 2, owner.id));
    const within = await read(member, org, 'grace');
    expect(within.status).to.equal(200);
    expect(within.body.credits_charged).to.equal(1);
    expect(await left(org)).to.deep.equal({ calls: 1, jobs: 1, holds: 1 });

    // 3 starter credits, 1 spent: the owner's reads take the other 2, the next one is refused.
    for (const username of ['hopper', 'lovelace']) expect((await read(owner, org, username)).status).to.equal(200);
    const broke = await read(owner, org, 'turing');
    expect(broke.status).to.equal(402);
    expect(broke.body.data.issues[0].path).to.deep.equal(['balance']);
    expect(await left(org)).to.deep.equal({ calls: 3, jobs: 3, holds: 3 });
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });
});
