import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { testDatabase } from '../support/hooks.ts';
import { nodeWithTsx, run } from '../support/processes.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { balanceOf, createOrganization } from './support.ts';

/**
 * SIGKILL a process in the middle of its batched holds and captures, again and again: a batch is one
 * transaction, so each dies whole or commits whole. Afterwards the ledger reconciles to the credit,
 * and what is held is exactly what the open holds (those whose capture the kill cut off) still hold.
 */
describe('credit batches: a process killed mid-batch, five times', () => {
  const ctx = useServer({ STARTER_CREDITS: '100000' });

  it('leaves every credit accounted for: the ledger reconciles and held equals the open holds', async function () {
    this.timeout(120_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    for (let round = 0; round < 5; round++) {
      const child = run(...nodeWithTsx('test/credits/batch-load-child.ts'), { DATABASE_URL: testDatabase().url, ORGANIZATION_ID: org, USER_ID: owner.id });
      // Killed at a different point of its work each round: after 50 to 250 pairs.
      const target = 50 * (1 + ((round * 3) % 5));
      await child.waitForOutput(new RegExp(`pairs ${target}\\b`));
      child.child.kill('SIGKILL');
      expect((await child.exited).signal).to.equal('SIGKILL');
    }
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
    const balance = (await balanceOf(ctx.db, org))!;
    const open = await ctx.db('credit_holds').where({ organization_id: org, status: 'held' }).sum('amount as n').first();
    expect(balance.held).to.equal(Number(open?.n ?? 0));
    const captured = await ctx.db('credit_holds').where({ organization_id: org, status: 'captured' }).count('* as n').first();
    expect(balance.captured).to.equal(3 * Number(captured?.n));
    expect(balance.granted - balance.captured - balance.held - balance.expired).to.be.at.least(0);
  });
});
