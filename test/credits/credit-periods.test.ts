import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { periodContaining } from '../../src/providers/billing/plans.ts';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { calendarMonth, type CreditPeriods } from '../../src/credits/cycle.ts';
import { placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { chatRunJob } from '../../src/conversations/jobs.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { setSpendingLimit } from '../../src/credits/limits.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createDb, eventually, isolatedDatabase, jobState, spawnWorker } from '../jobs/support.ts';
import { useChildProcesses } from '../support/processes.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { failure } from './support.ts';

const creditPeriods = createCreditPeriods();
/** What a process fell back to when nothing had installed billing's resolver (the defect). */
const calendarMonths: CreditPeriods = { current: async (_db, _organizationId, now = new Date()) => calendarMonth(now) };

/**
 * A member spends 40 of a 50-credit limit, then a new billing period begins (a subscription whose
 * cycle is anchored just after that spend). Counted in billing periods the member has 50 again;
 * counted in calendar months they have 10. Returns the anchor.
 */
async function spendThenStartBillingPeriod(db: Knex, organizationId: string, userId: string): Promise<Date> {
  await db.transaction((trx) => setSpendingLimit(trx, organizationId, userId, 50, userId));
  await db.transaction(async (trx) => {
    const hold = await placeHold(trx, creditPeriods, { organizationId, userId, amount: 40, reason: 'chat_run' });
    await captureHold(trx, hold.id, 40);
  });
  const { rows } = await db.raw(`SELECT max(created_at) + interval '1 millisecond' AS anchor FROM credit_ledger_entries WHERE organization_id = ?`, [
    organizationId,
  ]);
  const anchor = rows[0].anchor as Date;
  const { start, end } = periodContaining(anchor, anchor);
  await db('billing_subscriptions')
    .insert({ organization_id: organizationId, provider: 'sandbox', plan: 'free', cycle_anchor: anchor, current_period_start: start, current_period_end: end })
    .onConflict('organization_id')
    .merge(['cycle_anchor', 'current_period_start', 'current_period_end']);
  while (Date.now() <= anchor.getTime()) await sleep(5);
  return anchor;
}

describe('credit periods come from the deps (billing cycles in every process, no import side effects)', () => {
  describe('web process', () => {
    const ctx = useServer({ STARTER_CREDITS: '1000' });

    it('reports and enforces a spending limit in the billing period, not the calendar month', async () => {
      const owner = newUser();
      const member = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, member, 'member');
      const anchor = await spendThenStartBillingPeriod(ctx.db, org, member.id);
      const period = periodContaining(anchor, new Date());

      const credits = await ctx.server.request('get', `/organizations/${org}/members/${member.id}/credits`, { token: owner.token });
      expect(credits.status).to.equal(200);
      expect(credits.body).to.deep.include({ period_start: period.start.toISOString(), period_end: period.end.toISOString(), spent: 0, remaining: 50 });
      const cycle = await ctx.server.request('get', `/organizations/${org}/credits/cycle`, { token: owner.token });
      expect(cycle.body).to.deep.include({ period_start: period.start.toISOString(), used: 0 });

      // Calendar months (what a process that never loaded billing used to count) would refuse 50…
      expect(
        await failure(ctx.db.transaction((trx) => placeHold(trx, calendarMonths, { organizationId: org, userId: member.id, amount: 50, reason: 'chat_run' }))),
      ).to.include({ code: 'payment_required' });
      // …the deps' billing periods allow it.
      const hold = await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: member.id, amount: 50, reason: 'chat_run' }));
      expect(hold).to.include({ amount: 50, status: 'held' });
    });
  });

  describe('worker process', function () {
    this.timeout(60_000);
    let url: string;
    let db: Knex;
    const worker = useChildProcesses(() => spawnWorker(url));

    before(async () => {
      url = await isolatedDatabase();
      db = createDb(url, { max: 3 });
    });
    after(async () => {
      await db.destroy();
    });

    it('a fresh worker (billing code loaded only through its deps) holds a chat run’s credits under the billing-period limit', async () => {
      const userId = `user_${randomUUID().slice(0, 8)}`;
      await db('users').insert({ id: userId, email: `${userId}@example.test`, name: 'Member' });
      const [org] = await db('organizations')
        .insert({ name: 'Cycle Co', slug: `cycle-${randomUUID().slice(0, 8)}`, created_by_id: userId })
        .returning('id');
      await db.transaction((trx) => grantCredits(trx, { organizationId: org.id, source: 'purchase', amount: 100, description: 'Test credits' }));
      await spendThenStartBillingPeriod(db, org.id, userId);

      // A chat run of 30 credits, as POST /conversations/{id}/run leaves it: the worker places its hold.
      const [conversation] = await db('conversations').insert({ organization_id: org.id, created_by_id: userId, title: 'Cycle' }).returning('id');
      const [question] = await db('conversation_messages')
        .insert({ conversation_id: conversation.id, organization_id: org.id, role: 'user', content: 'Hello?', created_by_id: userId })
        .returning('id');
      const [run] = await db('chat_runs')
        .insert({ conversation_id: conversation.id, organization_id: org.id, user_id: userId, model: 'sandbox-chat', message_id: question.id, max_credits: 30 })
        .returning('id');
      await db('conversations').where({ id: conversation.id }).update({ active_run_id: run.id, active_run_at: db.fn.now() });
      const boss = createBoss(url, 'web');
      await boss.start();
      const jobId = await db
        .transaction((trx) => new JobQueue(boss).enqueue(trx, chatRunJob, { run_id: run.id }, { organizationId: run.organization_id }))
        .finally(() => boss.stop({ graceful: false, close: true }));

      worker();
      await eventually(async () => (await jobState(db, jobId))?.state === 'completed', 200);
      // 40 spent last period + 30 reserved now is over 50 only if the worker counted calendar months.
      expect(await db('chat_runs').where({ id: run.id }).first('status', 'error')).to.deep.equal({ status: 'succeeded', error: null });
      const hold = await db('credit_holds').where({ organization_id: org.id, run_id: run.id }).first('status', 'amount');
      expect(hold).to.deep.equal({ status: 'captured', amount: 30 });
    });
  });
});
