import { expect } from 'chai';
import { expireGrant, grantCredits, listLiveGrants } from '../../src/credits/ledger.ts';
import { placeHold } from '../../src/credits/holds.ts';
import { captureFromHold, captureHold, releaseHold, settleHold, expireHold } from '../../src/credits/hold-resolutions.ts';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { adjustCredits } from '../../src/credits/adjustments.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { balanceOf, createOrganization, entriesOf, failure } from './support.ts';

const creditPeriods = createCreditPeriods();

describe('credits ledger (internal API)', () => {
  const ctx = useServer({ STARTER_CREDITS: '100' }, { pool: 4 });

  it('grants the starter credits inside POST /organizations, on the ledger and the balance', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const grants = await ctx.db('credit_grants').where({ organization_id: org }).select('source', 'amount', 'remaining', 'priority', 'expires_at');
    expect(grants).to.deep.equal([{ source: 'starter', amount: 100, remaining: 100, priority: 10, expires_at: null }]);
    const entries = await entriesOf(ctx.db, org);
    expect(entries.map((e) => [e.kind, e.amount, e.from_account, e.to_account])).to.deep.equal([['grant', 100, 'issued', 'available']]);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 0, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('rejects UPDATE and DELETE of ledger entries', async () => {
    const org = await createOrganization(ctx.server, newUser());
    const update = await failure(ctx.db('credit_ledger_entries').where({ organization_id: org }).update({ amount: 1 }));
    expect(update.message).to.match(/credit ledger entries are immutable \(UPDATE rejected\)/);
    const remove = await failure(ctx.db('credit_ledger_entries').where({ organization_id: org }).delete());
    expect(remove.message).to.match(/immutable \(DELETE rejected\)/);
  });

  it('captures part of a hold, releases the rest, and resolves the hold only once', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 40, reason: 'social_read' }));
    expect(hold).to.include({ amount: 40, captured: 0, released: 0, status: 'held', resolution: null });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 0, held: 40, expired: 0 });

    const captured = await ctx.db.transaction((trx) => captureHold(trx, hold.id, 25, { description: 'two profiles' }));
    expect(captured).to.include({ amount: 40, captured: 25, released: 15, status: 'captured', resolution: 'capture' });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 25, held: 0, expired: 0 });

    // An identical replay returns the same hold and writes nothing; anything else is a 409.
    const count = (await entriesOf(ctx.db, org)).length;
    const replay = await ctx.db.transaction((trx) => captureHold(trx, hold.id, 25));
    expect(replay).to.deep.equal(captured);
    expect((await entriesOf(ctx.db, org)).length).to.equal(count);
    const twice = await failure(ctx.db.transaction((trx) => captureHold(trx, hold.id, 30)));
    expect([twice.status, twice.code, twice.message]).to.deep.equal([409, 'conflict', 'hold: the hold is already captured; it resolves only once']);
    const release = await failure(ctx.db.transaction((trx) => releaseHold(trx, hold.id)));
    expect(release.status).to.equal(409);

    const entries = await entriesOf(ctx.db, org);
    expect(entries.slice(1).map((e) => [e.kind, e.amount, e.from_account, e.to_account])).to.deep.equal([
      ['hold', 40, 'available', 'held'],
      ['capture', 25, 'held', 'spent'],
      ['release', 15, 'held', 'available'],
    ]);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('refuses a capture after release, and a capture beyond the hold', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 10, reason: 'generation' }));
    const tooMuch = await failure(ctx.db.transaction((trx) => captureFromHold(trx, hold.id, 11)));
    expect([tooMuch.status, tooMuch.message]).to.deep.equal([409, 'amount: 11 credits exceed what is left on the hold (10)']);
    await ctx.db.transaction((trx) => releaseHold(trx, hold.id));
    const after = await failure(ctx.db.transaction((trx) => captureFromHold(trx, hold.id, 5)));
    expect([after.status, after.message]).to.deep.equal([409, 'hold: the hold is already released; it resolves only once']);
    const settle = await failure(ctx.db.transaction((trx) => settleHold(trx, hold.id)));
    expect(settle.status).to.equal(409);
    const again = await ctx.db.transaction((trx) => releaseHold(trx, hold.id));
    expect(again.replayed).to.equal(true);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 0, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('draws grants down by earliest expiry, then priority, then creation', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner); // starter: 100, never expires, priority 10
    const day = 24 * 3600 * 1000;
    const now = Date.now();
    const grant = (amount: number, expiresIn: number | null, priority?: number) =>
      ctx.db.transaction((trx) =>
        grantCredits(trx, {
          organizationId: org,
          source: 'purchase',
          amount,
          expiresAt: expiresIn === null ? null : new Date(now + expiresIn),
          priority,
          description: `g${amount}`,
        }),
      );
    const later = await grant(30, 2 * day);
    const soonLow = await grant(20, day, 100);
    const soonHigh = await grant(10, day, 5);
    const forever = await grant(50, null, 1);
    const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 70, reason: 'test' }));
    // The hold is covered by the front of the draw-down order: that is what each grant no longer offers.
    const offered = Object.fromEntries((await listLiveGrants(ctx.db, org)).map((g) => [g.id, g.remaining]));
    expect([offered[soonHigh.id], offered[soonLow.id], offered[later.id], offered[forever.id]]).to.deep.equal([0, 0, 0, 40]);
    // The capture spends in the same order (one ledger row per grant drawn); the rest goes back to the pool.
    await ctx.db.transaction((trx) => captureHold(trx, hold.id, 35));
    const captures = await ctx.db('credit_ledger_entries').where({ hold_id: hold.id, kind: 'capture' }).orderBy('seq').select('grant_id', 'amount');
    expect(captures).to.deep.equal([
      { grant_id: soonHigh.id, amount: 10 },
      { grant_id: soonLow.id, amount: 20 },
      { grant_id: later.id, amount: 5 },
    ]);
    const remaining = await ctx.db('credit_grants').whereIn('id', [soonHigh.id, soonLow.id, later.id, forever.id]).select('id', 'remaining');
    expect(Object.fromEntries(remaining.map((r) => [r.id, r.remaining]))).to.deep.equal({
      [soonHigh.id]: 0,
      [soonLow.id]: 0,
      [later.id]: 25,
      [forever.id]: 50,
    });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('expires a grant exactly once, and credits a hold returns to an expired grant expire too', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const grant = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'plan_cycle', amount: 50, expiresAt: new Date(Date.now() + 3600_000), description: 'Plan credits' }),
    );
    const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 30, reason: 'test' }));
    // The grant's time runs out (the grants table is mutable; only ledger rows are not).
    await ctx
      .db('credit_grants')
      .where({ id: grant.id })
      .update({ expires_at: ctx.db.raw("now() - interval '1 second'") });
    expect(await ctx.db.transaction((trx) => expireGrant(trx, grant.id))).to.equal(20);
    expect(await ctx.db.transaction((trx) => expireGrant(trx, grant.id))).to.equal(0);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 150, captured: 0, held: 30, expired: 20 });
    await ctx.db.transaction((trx) => captureHold(trx, hold.id, 10));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 150, captured: 10, held: 0, expired: 40 });
    // Holds and releases move credits between available and held and name no grant; what is spent
    // or expires names the grant it came from (the expired one, whose credits the hold kept).
    const kinds = (await entriesOf(ctx.db, org)).map((e) => [e.kind, e.amount, e.grant_id === grant.id]);
    expect(kinds).to.deep.equal([
      ['grant', 100, false],
      ['plan_refill', 50, true],
      ['hold', 30, false],
      ['expiry', 20, true],
      ['capture', 10, true],
      ['release', 20, false],
      ['expiry', 20, true],
    ]);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('an expired grant keeps what open holds cover: captures spend it first, what a release leaves uncovered lapses', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner); // starter: 100, never expires
    const plan = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'plan_cycle', amount: 50, expiresAt: new Date(Date.now() + 3600_000), description: 'Plan credits' }),
    );
    const hold = (amount: number) =>
      ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount, reason: 'test' }));
    const first = await hold(30);
    const second = await hold(40);
    // 70 held: the plan grant (first in draw-down order) covers 50 of them, the starter grant 20.
    expect((await listLiveGrants(ctx.db, org)).map((g) => [g.source, g.remaining])).to.deep.equal([
      ['plan_cycle', 0],
      ['starter', 80],
    ]);
    await ctx
      .db('credit_grants')
      .where({ id: plan.id })
      .update({ expires_at: ctx.db.raw("now() - interval '1 second'") });
    // All of the plan grant is covered, so nothing expires yet: its 50 credits linger for the holds.
    expect(await ctx.db.transaction((trx) => expireGrant(trx, plan.id))).to.equal(0);
    const lingering = () => ctx.db('credit_balances').where({ organization_id: org }).first('lingering');
    expect(await lingering()).to.deep.equal({ lingering: 50 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);

    // The first hold spends 10 (from the lingering credits) and gives 20 back: 40 still held, 40 linger.
    await ctx.db.transaction((trx) => captureHold(trx, first.id, 10));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 150, captured: 10, held: 40, expired: 0 });
    expect(await lingering()).to.deep.equal({ lingering: 40 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);

    // The second hold gives everything back: nothing is held, so the 40 lingering credits lapse.
    await ctx.db.transaction((trx) => releaseHold(trx, second.id));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 150, captured: 10, held: 0, expired: 40 });
    expect(await lingering()).to.deep.equal({ lingering: 0 });
    const entries = (await entriesOf(ctx.db, org)).slice(2).map((e) => [e.kind, e.amount, e.grant_id === plan.id]);
    expect(entries).to.deep.equal([
      ['hold', 30, false],
      ['hold', 40, false],
      ['capture', 10, true],
      ['release', 20, false],
      ['release', 40, false],
      ['expiry', 40, true],
    ]);
    // What is left is the starter grant, untouched.
    expect((await listLiveGrants(ctx.db, org)).map((g) => [g.source, g.remaining])).to.deep.equal([['starter', 100]]);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('a negative adjustment takes back credits right behind what open holds cover', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner); // starter: 100, never expires
    const soon = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'purchase', amount: 50, expiresAt: new Date(Date.now() + 3600_000), description: 'Soon' }),
    );
    const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 30, reason: 'test' }));
    // The hold covers 30 of the soonest grant; the 40 taken back are its other 20, then 20 of the starter grant.
    await ctx.db.transaction((trx) => adjustCredits(trx, { organizationId: org, amount: -40, reason: 'Correction', userId: owner.id, adjustedById: owner.id }));
    const adjusted = (await entriesOf(ctx.db, org)).filter((e) => e.kind === 'adjustment').map((e) => [e.amount, e.grant_id === soon.id]);
    expect(adjusted).to.deep.equal([
      [20, true],
      [20, false],
    ]);
    expect((await listLiveGrants(ctx.db, org)).map((g) => [g.source, g.remaining])).to.deep.equal([
      ['purchase', 0],
      ['starter', 80],
    ]);
    // The hold still spends what it covered.
    await ctx.db.transaction((trx) => captureHold(trx, hold.id, 30));
    expect(await ctx.db('credit_grants').where({ id: soon.id }).first('remaining')).to.deep.equal({ remaining: 0 });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 110, captured: 30, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('expires an overdue hold once, releasing what it did not capture', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const hold = await ctx.db.transaction((trx) =>
      placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount: 30, reason: 'chat_run', runId: 'run-x' }),
    );
    await ctx.db.transaction((trx) => captureFromHold(trx, hold.id, 12, { captureKey: 'c1' }));
    expect(await ctx.db.transaction((trx) => expireHold(trx, hold.id))).to.equal(false); // not due yet
    await ctx
      .db('credit_holds')
      .where({ id: hold.id })
      .update({ expires_at: ctx.db.raw("now() - interval '1 second'") });
    const late = await failure(ctx.db.transaction((trx) => captureFromHold(trx, hold.id, 1, { captureKey: 'c2' })));
    expect(late.status).to.equal(409);
    expect(await ctx.db.transaction((trx) => expireHold(trx, hold.id))).to.equal(true);
    expect(await ctx.db.transaction((trx) => expireHold(trx, hold.id))).to.equal(false);
    const row = await ctx.db('credit_holds').where({ id: hold.id }).first('status', 'resolution', 'captured', 'released');
    expect(row).to.deep.equal({ status: 'expired', resolution: 'expiry', captured: 12, released: 18 });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 12, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });
});
