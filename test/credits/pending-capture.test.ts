import { expect } from 'chai';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { expireDueHolds } from '../../src/credits/expiry.ts';
import { getHold, placeHold } from '../../src/credits/holds.ts';
import { postPendingCapture } from '../../src/credits/hold-resolutions.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { balanceOf, createOrganization, entriesOf } from './support.ts';

const creditPeriods = createCreditPeriods();

/**
 * A final capture decided in the transaction that settles the work (a metered read's job end) is
 * recorded on its hold as pending and posted by its own statement after that commit. The hold is
 * the journal: a worker killed between the two leaves it there, and it is posted once — never
 * released unused, never captured twice.
 */
describe('credit holds: a capture pending on its hold', () => {
  const ctx = useServer({ STARTER_CREDITS: '0' }, { pool: 10 });

  /** The settling transaction's decision, as `pendingCaptureColumn` writes it: the hold's id, or null when nothing was written. */
  const pend = async (db: Db, org: string, runId: string, amount: number): Promise<string | null> =>
    (
      await db.raw(`SELECT credit_pend_capture(?, ?, 'net2_profile', ?, 'tool-1', 'Used by net2_profile', '{"operation":"net2_profile","requests":1}') AS id`, [
        org,
        runId,
        amount,
      ])
    ).rows[0].id;

  async function setup() {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    await ctx.db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Bought' }));
    const hold = await placeHold(ctx.db, creditPeriods, { organizationId: org, userId: owner.id, amount: 30, reason: 'net2_profile', runId: 'metered-call:a' });
    return { org, hold };
  }

  it('a worker killed before posting: the hold expiry pass posts the capture (overdue or not) instead of releasing the hold, and the ledger reconciles', async () => {
    const { org, hold } = await setup();
    expect(await pend(ctx.db, org, 'metered-call:a', 12)).to.equal(hold.id);
    // One decision per hold: a second one writes nothing.
    expect(await pend(ctx.db, org, 'metered-call:a', 5)).to.equal(null);
    // Decided, not posted: the balance still shows the whole hold held.
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 0, held: 30, expired: 0 });

    // The worker died; the hold ran out of time meanwhile.
    await ctx
      .db('credit_holds')
      .where({ id: hold.id })
      .update({ expires_at: ctx.db.raw(`now() - interval '1 second'`) });
    expect(await expireDueHolds(ctx.db)).to.equal(0);

    const after = await getHold(ctx.db, hold.id);
    expect({ status: after!.status, resolution: after!.resolution, captured: after!.captured, released: after!.released }).to.deep.equal({
      status: 'captured',
      resolution: 'capture',
      captured: 12,
      released: 18,
    });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 12, held: 0, expired: 0 });
    const ledger = (await entriesOf(ctx.db, org)).map((e) => [e.kind, Number(e.amount), e.from_account, e.to_account]);
    expect(ledger).to.deep.equal([
      ['purchase', 100, 'issued', 'available'],
      ['hold', 30, 'available', 'held'],
      ['capture', 12, 'held', 'spent'],
      ['release', 18, 'held', 'available'],
    ]);
    const capture = await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'capture' }).first('description', 'metadata', 'tool_call_id');
    expect(capture).to.deep.equal({ description: 'Used by net2_profile', metadata: { operation: 'net2_profile', requests: 1 }, tool_call_id: 'tool-1' });
    // Posting again (the worker back, a waiting request giving up) changes nothing.
    expect(await postPendingCapture(ctx.db, hold.id)).to.equal(false);
    expect(await ctx.db('credit_ledger_entries').where({ organization_id: org }).count('* as n').first()).to.deep.equal({ n: 4 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('posted by 20 racing posters: exactly one posts it; a hold past its time or with too little left takes no decision', async () => {
    const { org, hold } = await setup();
    expect(await pend(ctx.db, org, 'metered-call:a', 30)).to.equal(hold.id);
    const posted = await Promise.all(Array.from({ length: 20 }, () => postPendingCapture(ctx.db, hold.id)));
    expect(posted.filter(Boolean)).to.have.length(1);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 30, held: 0, expired: 0 });
    expect(await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'capture' }).count('* as n').first()).to.deep.equal({ n: 1 });

    const owner = await ctx.db('credit_holds').where({ id: hold.id }).first('user_id');
    const late = await placeHold(ctx.db, creditPeriods, {
      organizationId: org,
      userId: owner.user_id,
      amount: 10,
      reason: 'net2_profile',
      runId: 'metered-call:b',
    });
    expect(await pend(ctx.db, org, 'metered-call:b', 11)).to.equal(null);
    await ctx
      .db('credit_holds')
      .where({ id: late.id })
      .update({ expires_at: ctx.db.raw(`now() - interval '1 second'`) });
    expect(await pend(ctx.db, org, 'metered-call:b', 5)).to.equal(null);
    // Not pending, so the expiry pass releases it as any abandoned hold.
    expect(await expireDueHolds(ctx.db)).to.equal(1);
    expect((await getHold(ctx.db, late.id))!.status).to.equal('expired');
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 100, captured: 30, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });
});
