import { expect } from 'chai';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { type CreditHold, placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { setSpendingLimit } from '../../src/credits/limits.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { testDatabase } from '../support/hooks.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, balanceOf, createOrganization } from './support.ts';

/**
 * Autocommitted holds and captures of one process go to the database in batches
 * (src/credits/batches.ts, migrations/20261128020000_credit_batches.ts). Every call here goes
 * through one pool, so calls made while one of the organization's statements is in flight share
 * the next: each must still be decided exactly as it would be alone.
 */
const creditPeriods = createCreditPeriods();
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** In how many transactions (statements: each is autocommitted) the organization's holds were written. */
async function transactionsOf(db: Db, organizationId: string): Promise<number> {
  const row = await db('credit_holds').where({ organization_id: organizationId }).first(db.raw('count(DISTINCT xmin::text)::int AS n'));
  return row.n as number;
}

const settle = async <T>(calls: Promise<T>[]) => {
  const results = await Promise.allSettled(calls);
  return {
    placed: results.filter((r): r is PromiseFulfilledResult<Awaited<T>> => r.status === 'fulfilled').map((r) => r.value),
    refused: results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason),
    results,
  };
};

describe('credit holds and captures in batches: one pool, many callers at once', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' });
  let db: Db;
  before(async () => {
    db = createDb(testDatabase().url, { max: 4 });
  });
  after(async () => {
    await db.destroy();
  });

  it('200 holds at once against 1,500 credits in two grants: exactly 150 placed in a handful of statements, then their captures draw the grants in order', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const purchase = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'purchase', amount: 500, description: 'Batch credits', expiresAt: new Date(Date.now() + 86_400_000) }),
    );
    const { placed, refused } = await settle(
      Array.from({ length: 200 }, () => placeHold(db, creditPeriods, { organizationId: org, userId: owner.id, amount: 10, reason: 'batch' })),
    );
    expect(placed.length).to.equal(150);
    expect(refused.map((error) => [error.status, error.issues[0].path[0]])).to.deep.equal(Array.from({ length: 50 }, () => [402, 'balance']));
    expect(new Set(placed.map((hold) => hold.id)).size).to.equal(150);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1500, captured: 0, held: 1500, expired: 0 });
    expect(Number((await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'hold' }).count('* as n').first())?.n)).to.equal(150);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);

    // Capture 7 of each hold (every one straddling nothing, some straddling the grants' boundary).
    const captured = await Promise.all(placed.map((hold) => captureHold(db, hold, 7)));
    expect(captured.map((hold) => [hold.status, hold.captured, hold.released])).to.deep.equal(placed.map(() => ['captured', 7, 3]));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1500, captured: 1050, held: 0, expired: 0 });
    const entries = await ctx
      .db('credit_ledger_entries')
      .where({ organization_id: org })
      .whereIn('kind', ['capture', 'release'])
      .select('kind', 'grant_id', 'amount');
    expect(sum(entries.filter((e) => e.kind === 'capture').map((e) => Number(e.amount)))).to.equal(1050);
    expect(sum(entries.filter((e) => e.kind === 'release').map((e) => Number(e.amount)))).to.equal(450);
    // The purchase expires first: the captures spent all of it, the starter grant the other 550.
    expect(sum(entries.filter((e) => e.grant_id === purchase.id).map((e) => Number(e.amount)))).to.equal(500);
    expect(await ctx.db('credit_grants').where({ id: purchase.id }).first('remaining')).to.deep.equal({ remaining: 0 });
    expect(await ctx.db('credit_grants').where({ organization_id: org, source: 'starter' }).first('remaining')).to.deep.equal({ remaining: 450 });
    expect(
      Number(
        (
          await ctx
            .db('credit_captures')
            .whereIn(
              'hold_id',
              placed.map((hold) => hold.id),
            )
            .count('* as n')
            .first()
        )?.n,
      ),
    ).to.equal(150);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('100 holds of one organization at once are written in a handful of transactions, not 100', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const holds = await Promise.all(
      Array.from({ length: 100 }, () => placeHold(db, creditPeriods, { organizationId: org, userId: owner.id, amount: 1, reason: 'batch count' })),
    );
    expect(holds.length).to.equal(100);
    // Two sent alone while nothing of the organization was in flight, the rest in batches of up to 64.
    expect(await transactionsOf(ctx.db, org)).to.be.within(2, 20);
    // Alone, each hold is its own transaction.
    const alone = await createOrganization(ctx.server, owner);
    for (let i = 0; i < 5; i++) await placeHold(db, creditPeriods, { organizationId: alone, userId: owner.id, amount: 1, reason: 'batch count' });
    expect(await transactionsOf(ctx.db, alone)).to.equal(5);
  });

  it('holds of different sizes in one batch: every placed one was affordable in order, every refused one was not', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    // 1..23 credits each, 2,400 in all against 1,000: an organization whose batch does not fit decides its holds one by one.
    const amounts = Array.from({ length: 200 }, (_, i) => 1 + ((i * 7) % 23));
    const { results } = await settle(
      amounts.map((amount) => placeHold(db, creditPeriods, { organizationId: org, userId: owner.id, amount, reason: 'batch sizes' })),
    );
    const placed = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value as CreditHold] : []));
    const refusedAmounts = amounts.filter((_, i) => results[i]!.status === 'rejected');
    for (const r of results) if (r.status === 'rejected') expect([r.reason.status, r.reason.issues[0].path[0]]).to.deep.equal([402, 'balance']);
    const held = sum(placed.map((hold) => hold.amount));
    const balance = (await balanceOf(ctx.db, org))!;
    const available = balance.granted - balance.captured - balance.held - balance.expired;
    expect(balance).to.deep.equal({ granted: 1000, captured: 0, held, expired: 0 });
    expect(refusedAmounts.length).to.be.greaterThan(0);
    expect(Math.min(...refusedAmounts)).to.be.greaterThan(available);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it("a member's spending limit in a batch: exactly the holds within it are placed, the rest get 402 naming the limit", async function () {
    this.timeout(60_000);
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member);
    await ctx.db.transaction((trx) => setSpendingLimit(trx, org, member.id, 250, owner.id));
    const { placed, refused } = await settle(
      Array.from({ length: 100 }, () => placeHold(db, creditPeriods, { organizationId: org, userId: member.id, amount: 10, reason: 'batch limit' })),
    );
    expect(placed.length).to.equal(25);
    expect(refused.map((error) => [error.status, error.issues[0].path[0]])).to.deep.equal(Array.from({ length: 75 }, () => [402, 'spending_limit']));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1000, captured: 0, held: 250, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('one bad call in a batch fails alone: the others are placed, nothing of the bad one is written', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    // The member that does not exist breaks the hold's foreign key: the whole batch statement is refused, then each is sent alone.
    const users = Array.from({ length: 12 }, (_, i) => (i === 9 ? 'no-such-user' : owner.id));
    const { placed, refused } = await settle(
      users.map((userId) => placeHold(db, creditPeriods, { organizationId: org, userId, amount: 10, reason: 'batch bad' })),
    );
    expect(placed.length).to.equal(11);
    expect(refused.map((error) => error.code)).to.deep.equal(['23503']);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1000, captured: 0, held: 110, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('captures in one batch that are not all plain (one hold already resolved, one captured twice): each decided alone, the resolved one a 409', async function () {
    this.timeout(60_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const holds = await Promise.all(
      Array.from({ length: 10 }, () => placeHold(ctx.db, creditPeriods, { organizationId: org, userId: owner.id, amount: 10, reason: 'batch mixed' })),
    );
    await captureHold(ctx.db, holds[0]!.id, 4);
    const { placed, refused } = await settle([...holds, holds[5]!].map((hold) => captureHold(db, hold, 6)));
    // The first is resolved already (409), the sixth's second final capture replays onto the first (the same hold back).
    expect(refused.map((error) => error.status)).to.deep.equal([409]);
    expect(placed.map((hold) => [hold.id, hold.captured])).to.deep.equal([...holds.slice(1), holds[5]!].map((hold) => [hold.id, 6]));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1000, captured: 4 + 9 * 6, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('two processes (pools) batching holds and captures over three organizations with spending limits at once: no deadlock, every credit exact', async function () {
    this.timeout(90_000);
    const other = createDb(testDatabase().url, { max: 4 });
    try {
      const owner = newUser();
      const members = [newUser(), newUser(), newUser()];
      const orgs = [await createOrganization(ctx.server, owner), await createOrganization(ctx.server, owner), await createOrganization(ctx.server, owner)];
      for (const org of orgs)
        for (const member of members) {
          await addMember(ctx.db, org, member);
          await ctx.db.transaction((trx) => setSpendingLimit(trx, org, member.id, 300, owner.id));
        }
      const [{ deadlocks: before }] = (await ctx.db.raw('SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()')).rows;
      const work = Array.from({ length: 240 }, async (_, i) => {
        const pool = i % 2 === 0 ? db : other;
        const hold = await placeHold(pool, creditPeriods, { organizationId: orgs[i % 3]!, userId: members[(i >> 1) % 3]!.id, amount: 5, reason: 'two pools' });
        return captureHold(pool, hold, 3);
      });
      const { placed, refused } = await settle(work);
      expect(refused.map((error) => error.status)).to.deep.equal([]);
      expect(placed.length).to.equal(240);
      for (const org of orgs) {
        expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1000, captured: 240, held: 0, expired: 0 });
        expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
      }
      const [{ deadlocks: after }] = (await ctx.db.raw('SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()')).rows;
      expect(after - before).to.equal(0);
    } finally {
      await other.destroy();
    }
  });
});
