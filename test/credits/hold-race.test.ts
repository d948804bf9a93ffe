import { expect } from 'chai';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { type CreditHold, placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { grantCredits, listLiveGrants } from '../../src/credits/ledger.ts';
import { setSpendingLimit } from '../../src/credits/limits.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { testDatabase } from '../support/hooks.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, balanceOf, createOrganization } from './support.ts';

const creditPeriods = createCreditPeriods();
const PARALLEL = 200;

/** One connection per hold, all connected before the race starts, so the 200 holds really run at once. */
async function separateConnections(count: number): Promise<Db[]> {
  const dbs = Array.from({ length: count }, () => createDb(testDatabase().url, { max: 1 }));
  await Promise.all(dbs.map((db) => db.raw('SELECT 1')));
  return dbs;
}

/** Settled results of `holds`, split into the placed holds and the refusals (which must all be 402). */
async function race(holds: Promise<CreditHold>[]): Promise<{ placed: CreditHold[]; refused: { status: number; issues: { path: string[] }[] }[] }> {
  const results = await Promise.allSettled(holds);
  const placed = results.filter((r): r is PromiseFulfilledResult<CreditHold> => r.status === 'fulfilled').map((r) => r.value);
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
  for (const reason of refused) expect(reason.status, String(reason.stack ?? reason)).to.equal(402);
  return { placed, refused };
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe('credit holds: 200 in parallel on one organization', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' });
  let dbs: Db[] = [];

  beforeEach(async function () {
    this.timeout(60_000);
    dbs = await separateConnections(PARALLEL);
  });
  afterEach(async () => {
    await Promise.all(dbs.map((db) => db.destroy()));
  });

  it('holds of 10 against 1,500 credits in two grants: exactly 150 are placed, 50 get 402, then their 150 captures in parallel reconcile', async function () {
    this.timeout(120_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    // A second grant that expires first, so the race also draws across grants in draw-down order.
    const purchase = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'purchase', amount: 500, description: 'Race credits', expiresAt: new Date(Date.now() + 86_400_000) }),
    );
    // Half autocommitted (one statement), half inside a caller's transaction, as the real callers do.
    const { placed, refused } = await race(
      dbs.map((db, i) =>
        i % 2 === 0
          ? placeHold(db, creditPeriods, { organizationId: org, userId: owner.id, amount: 10, reason: 'race' })
          : db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 10, reason: 'race' })),
      ),
    );
    expect(placed.length).to.equal(150);
    expect(refused.length).to.equal(50);
    for (const reason of refused) expect(reason.issues[0]!.path).to.deep.equal(['balance']);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1500, captured: 0, held: 1500, expired: 0 });
    // The holds are covered by the front of the draw-down order: neither grant offers a credit more.
    expect((await listLiveGrants(ctx.db, org)).map((grant) => grant.remaining)).to.deep.equal([0, 0]);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);

    // Every placed hold captured at once (7 of 10, the rest released): the balance moves exactly.
    const captured = await Promise.all(placed.map((hold, i) => captureHold(dbs[i]!, hold.id, 7)));
    expect(captured.map((hold) => hold.status)).to.deep.equal(placed.map(() => 'captured'));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1500, captured: 1050, held: 0, expired: 0 });
    expect(await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'capture' }).sum('amount as n').first()).to.deep.equal({ n: '1050' });
    expect(await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'release' }).sum('amount as n').first()).to.deep.equal({ n: '450' });
    // The purchase expires first, so the captures spent it completely; the starter grant paid the rest.
    expect(await ctx.db('credit_grants').where({ id: purchase.id }).first('remaining')).to.deep.equal({ remaining: 0 });
    expect(await ctx.db('credit_grants').where({ organization_id: org, source: 'starter' }).first('remaining')).to.deep.equal({ remaining: 450 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('holds of different sizes: every placed one was affordable, every refused one was not, and not a credit is lost', async function () {
    this.timeout(120_000);
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    // 1..23 credits each, 2,400 in all against 1,000.
    const amounts = Array.from({ length: PARALLEL }, (_, i) => 1 + ((i * 7) % 23));
    expect(sum(amounts)).to.be.greaterThan(1000);
    const results = await Promise.allSettled(
      dbs.map((db, i) => placeHold(db, creditPeriods, { organizationId: org, userId: owner.id, amount: amounts[i]!, reason: 'race sizes' })),
    );
    const placed = results.filter((r): r is PromiseFulfilledResult<CreditHold> => r.status === 'fulfilled').map((r) => r.value);
    const refusedAmounts = amounts.filter((_, i) => results[i]!.status === 'rejected');
    for (const r of results)
      if (r.status === 'rejected') {
        expect(r.reason.status, String(r.reason.stack ?? r.reason)).to.equal(402);
        expect(r.reason.issues[0].path).to.deep.equal(['balance']);
      }
    expect(placed.map((hold) => hold.amount)).to.have.members(amounts.filter((_, i) => results[i]!.status === 'fulfilled'));
    const held = sum(placed.map((hold) => hold.amount));
    const balance = await balanceOf(ctx.db, org);
    const available = balance!.granted - balance!.captured - balance!.held - balance!.expired;
    expect(balance).to.deep.equal({ granted: 1000, captured: 0, held, expired: 0 });
    expect(refusedAmounts.length).to.be.greaterThan(0);
    // Availability only fell during the race, so every refused hold asked for more than what is left even now…
    expect(Math.min(...refusedAmounts)).to.be.greaterThan(available);
    // …and the holds placed add up exactly to what left the balance.
    expect(held + available).to.equal(1000);
    expect(await ctx.db('credit_holds').where({ organization_id: org, status: 'held' }).sum('amount as n').first()).to.deep.equal({ n: String(held) });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it("one member's spending limit under the same race: exactly the holds within the limit are placed, the rest get 402 naming the limit", async function () {
    this.timeout(120_000);
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member);
    await ctx.db.transaction((trx) => setSpendingLimit(trx, org, member.id, 250, owner.id));
    const { placed, refused } = await race(
      dbs.map((db) => placeHold(db, creditPeriods, { organizationId: org, userId: member.id, amount: 10, reason: 'race limit' })),
    );
    expect(placed.length).to.equal(25);
    expect(refused.length).to.equal(175);
    for (const reason of refused) expect(reason.issues[0]!.path).to.deep.equal(['spending_limit']);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1000, captured: 0, held: 250, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });
});
