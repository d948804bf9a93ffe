import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { captureHold, releaseHold } from '../../src/credits/hold-resolutions.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { migrationsDir } from '../../src/db/migrate.ts';
import { testDatabase } from '../support/hooks.ts';
import { balanceOf } from './support.ts';

const MIGRATION = '20261127185000_credit_attribution_at_capture.ts';

/** Runs the migration's `up` or `down` on `db` (knex's bookkeeping is not the point here). */
async function migration(db: Knex, direction: 'up' | 'down'): Promise<void> {
  const module = (await import(pathToFileURL(path.join(migrationsDir, MIGRATION)).href)) as Knex.Migration;
  await db.transaction(async (trx) => {
    await module[direction]!(trx);
  });
}

/**
 * Holds placed under attribution at hold time (allocations) are folded into their grants by the
 * migration: the ledger reconciles before and after, and the holds then resolve on the new rules.
 */
describe('credits: moving attribution from hold to capture (migration)', () => {
  let db: Db;
  before(async function () {
    this.timeout(60_000);
    db = createDb(await testDatabase().createMigratedDatabase('attribution'), { max: 2 });
    await migration(db, 'down');
  });
  after(async () => {
    await db.destroy();
  });

  it('folds open allocations into their grants (and an expired grant’s into lingering), reconciling exactly', async () => {
    await db('users').insert({ id: 'u-fold', email: 'fold@example.test', name: 'Fold' });
    await db('organizations').insert({ id: 'o-fold', name: 'Fold', slug: 'fold', created_by_id: 'u-fold' });
    await db('credit_balances').insert({ organization_id: 'o-fold', granted: 150 });
    const grant = async (amount: number, expires: string | null) => {
      const [row] = await db('credit_grants')
        .insert({
          organization_id: 'o-fold',
          source: 'purchase',
          amount,
          remaining: amount,
          description: 'g',
          expires_at: expires === null ? null : db.raw(`now() + interval '${expires}'`),
        })
        .returning('id');
      await db('credit_ledger_entries').insert({
        organization_id: 'o-fold',
        kind: 'purchase',
        amount,
        from_account: 'issued',
        to_account: 'available',
        grant_id: row.id,
        description: 'g',
      });
      return row.id as string;
    };
    const forever = await grant(100, null);
    const soon = await grant(50, '1 hour');
    // The old functions: A (30) is allocated from the soon grant, B (40) from its last 20 and 20 of the other.
    const reserve = async (runId: string, amount: number) =>
      (
        await db.raw(`SELECT hold->>'id' AS id FROM credit_reserve('o-fold', 'u-fold', ?, true, 'test', ?, NULL, NULL, NULL, 600, 'Reserved', NULL, NULL)`, [
          runId,
          amount,
        ])
      ).rows[0].id as string;
    const a = await reserve('a', 30);
    const b = await reserve('b', 40);
    await db.raw(`SELECT * FROM credit_capture(?, 10, 'part', NULL, NULL, '{}'::jsonb, false)`, [a]);
    // The soon grant expires with nothing left to expire (the old rule: its reserved credits lapse when released).
    await db('credit_grants')
      .where({ id: soon })
      .update({ expires_at: db.raw("now() - interval '1 second'"), expired_at: db.fn.now() });
    expect(await balanceOf(db, 'o-fold')).to.deep.equal({ granted: 150, captured: 10, held: 60, expired: 0 });
    expect(await unreservedOf(db)).to.deep.equal({ soon: 0, forever: 80 });

    await migration(db, 'up');
    // Remaining now counts reserved credits: the soon grant keeps the 40 its open holds reserved, lingering.
    const remaining = async () =>
      Object.fromEntries((await db('credit_grants').whereIn('id', [soon, forever]).select('id', 'remaining')).map((g) => [g.id, g.remaining]));
    expect(await remaining()).to.deep.equal({ [soon]: 40, [forever]: 100 });
    expect(await db('credit_balances').where({ organization_id: 'o-fold' }).first('lingering')).to.deep.equal({ lingering: 40 });
    expect(await reconcileCredits(db, 'o-fold')).to.deep.equal([]);

    // Resolved on the new rules: A gives its 20 back (40 still held cover the 40 lingering), B spends 25
    // of them and gives 15 back: what is left of the expired grant lapses.
    await db.transaction((trx) => releaseHold(trx, a));
    await db.transaction((trx) => captureHold(trx, b, 25));
    expect(await balanceOf(db, 'o-fold')).to.deep.equal({ granted: 150, captured: 35, held: 0, expired: 15 });
    expect(await remaining()).to.deep.equal({ [soon]: 0, [forever]: 100 });
    expect(await db('credit_balances').where({ organization_id: 'o-fold' }).first('lingering')).to.deep.equal({ lingering: 0 });
    expect(await reconcileCredits(db, 'o-fold')).to.deep.equal([]);

    /** What the grants had left under the old rules (neither reserved, spent nor expired). */
    async function unreservedOf(conn: Knex) {
      const rows = await conn('credit_grants').whereIn('id', [soon, forever]).select('id', 'remaining');
      return Object.fromEntries(rows.map((g) => [g.id === soon ? 'soon' : 'forever', g.remaining]));
    }
  });
});
