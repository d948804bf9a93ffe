import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { setSpendingLimit } from '../../src/credits/limits.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { testDatabase } from '../support/hooks.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, balanceOf, createOrganization } from './support.ts';

const creditPeriods = createCreditPeriods();

/** Opens `count` connections and waits until all are connected, so the work really starts together. */
async function separateConnections(count: number): Promise<Db[]> {
  const dbs = Array.from({ length: count }, () => createDb(testDatabase().url, { max: 1 }));
  await Promise.all(dbs.map((db) => db.raw('SELECT 1')));
  return dbs;
}

describe('credits under concurrency', () => {
  const ctx = useServer({ STARTER_CREDITS: '100' });

  it('50 holds on 50 connections against a balance covering 10: exactly 10 succeed, 40 get 402, never negative', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const dbs = await separateConnections(50);
    // Watches the balance while the holds race; the CHECK must make a negative value impossible.
    let watching = true;
    const lowest: number[] = [];
    const watcher = (async () => {
      while (watching) {
        const b = await balanceOf(ctx.db, org);
        lowest.push(b.granted - b.captured - b.held - b.expired);
      }
    })();
    try {
      const results = await Promise.allSettled(
        dbs.map((conn) => conn.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 10, reason: 'race' }))),
      );
      const ok = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(ok.length).to.equal(10);
      expect(refused.length).to.equal(40);
      for (const r of refused) {
        expect(r.reason.status).to.equal(402);
        expect(r.reason.code).to.equal('payment_required');
        expect(r.reason.issues[0].path).to.deep.equal(['balance']);
      }
    } finally {
      watching = false;
      await watcher;
      await Promise.all(dbs.map((conn) => conn.destroy()));
    }
    expect(Math.min(...lowest)).to.be.at.least(0);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 0, held: 100, expired: 0 });
    expect(await ctx.db('credit_holds').where({ organization_id: org, status: 'held' }).count('* as n').first()).to.deep.equal({ n: 10 });
    const sum = await ctx
      .db('credit_ledger_entries')
      .where({ organization_id: org })
      .select(
        ctx.db.raw(
          "coalesce(sum(amount) FILTER (WHERE to_account = 'held'), 0)::bigint AS held, coalesce(sum(amount) FILTER (WHERE from_account = 'issued'), 0)::bigint AS granted",
        ),
      )
      .first();
    expect(sum).to.deep.equal({ held: 100, granted: 100 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('concurrent captures of one hold: the first resolves it, every other is a 409', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 50, reason: 'race' }));
    const dbs = await separateConnections(10);
    try {
      const results = await Promise.allSettled(dbs.map((conn, i) => conn.transaction((trx) => captureHold(trx, hold.id, 10 + i))));
      const ok = results.filter((r) => r.status === 'fulfilled');
      expect(ok.length).to.equal(1);
      const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(rejected.map((r) => r.reason.status)).to.deep.equal(Array(9).fill(409));
    } finally {
      await Promise.all(dbs.map((conn) => conn.destroy()));
    }
    const b = await balanceOf(ctx.db, org);
    expect(b.held).to.equal(0);
    expect(b.captured).to.be.within(10, 19);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('a member limit holds under concurrency and the 402 names the spending limit', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member);
    await ctx.db.transaction((trx) => setSpendingLimit(trx, org, member.id, 30, owner.id));
    const dbs = await separateConnections(10);
    try {
      const results = await Promise.allSettled(
        dbs.map((conn) => conn.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: member.id, amount: 10, reason: 'race' }))),
      );
      expect(results.filter((r) => r.status === 'fulfilled').length).to.equal(3);
      for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
        expect(r.reason.status).to.equal(402);
        expect(r.reason.issues[0].path).to.deep.equal(['spending_limit']);
        expect(r.reason.message).to.match(
          /^spending_limit: the member's spending limit is exhausted \(limit 30 credits this period, 30 used or held, 10 needed\)$/,
        );
      }
    } finally {
      await Promise.all(dbs.map((conn) => conn.destroy()));
    }
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 0, held: 30, expired: 0 });
  });
});
