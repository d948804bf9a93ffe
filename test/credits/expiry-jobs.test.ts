import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expireCreditGrantsJob, expireCreditHoldsJob } from '../../src/credits/jobs.ts';
import { deleteExpiredIdempotencyKeysJob } from '../../src/platform/maintenance/jobs.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { placeHold } from '../../src/credits/holds.ts';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { createDb, eventually, isolatedDatabase, jobState } from '../jobs/support.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const creditPeriods = createCreditPeriods();

/** The scheduled expiry jobs, run by a real worker on real pg-boss queues. */
describe('credits expiry jobs', function () {
  this.timeout(60_000);
  let url: string;
  let db: Db;
  let worker: WorkerProcess;
  let boss: ReturnType<typeof createBoss>;

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    const config = testConfig();
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    boss = createBoss(url, 'web');
    await boss.start();
  });
  after(async () => {
    await worker.stop();
    await boss.stop({ graceful: false, close: true });
    await db.destroy();
  });

  async function runJob(job: typeof expireCreditHoldsJob | typeof expireCreditGrantsJob | typeof deleteExpiredIdempotencyKeysJob): Promise<void> {
    const id = await db.transaction((trx) => new JobQueue(boss).enqueue(trx, job, {}, { organizationId: null }));
    await eventually(async () => (await jobState(db, id))?.state === 'completed', 100);
  }

  it('expires due grants and abandoned holds once each, however often the jobs run', async () => {
    const userId = `user_${randomUUID().slice(0, 8)}`;
    await db('users').insert({ id: userId, email: `${userId}@example.test`, name: 'Exp' });
    const [{ id: org }] = await db('organizations')
      .insert({ name: 'Exp Co', slug: `exp-${randomUUID().slice(0, 8)}`, created_by_id: userId })
      .returning('id');
    const plan = await db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'plan_cycle', amount: 60, expiresAt: new Date(Date.now() + 3600_000), description: 'Plan credits' }),
    );
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 40, description: 'Bought' }));
    const hold = await db.transaction((trx) =>
      placeHold(trx, creditPeriods, { organizationId: org, userId, amount: 25, reason: 'chat_run', expiresInSeconds: 600 }),
    );
    // Time passes (only the mutable tables are moved; the ledger is untouched).
    await db('credit_grants')
      .where({ id: plan.id })
      .update({ expires_at: db.raw("now() - interval '1 second'") });
    await db('credit_holds')
      .where({ id: hold.id })
      .update({ expires_at: db.raw("now() - interval '1 second'") });

    await runJob(expireCreditGrantsJob);
    await runJob(expireCreditHoldsJob);
    await runJob(expireCreditGrantsJob);
    await runJob(expireCreditHoldsJob);

    const entries = (await db('credit_ledger_entries').where({ organization_id: org }).orderBy('seq').select('kind', 'amount', 'grant_id')).map(
      (e) => `${e.kind}:${e.amount}:${e.grant_id === plan.id ? 'plan' : 'other'}`,
    );
    // The hold and its release name no grant (the expired plan grant kept the 25 held credits until the hold let them go).
    expect(entries).to.deep.equal(['plan_refill:60:plan', 'purchase:40:other', 'hold:25:other', 'expiry:35:plan', 'release:25:other', 'expiry:25:plan']);
    expect(await db('credit_holds').where({ id: hold.id }).first('status', 'resolution', 'released')).to.deep.equal({
      status: 'expired',
      resolution: 'expiry',
      released: 25,
    });
    expect(await db('credit_balances').where({ organization_id: org }).first('granted', 'captured', 'held', 'expired')).to.deep.equal({
      granted: 100,
      captured: 0,
      held: 0,
      expired: 60,
    });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('deletes Idempotency-Key responses older than 24 hours and keeps younger ones', async () => {
    const org = `org_${randomUUID().slice(0, 8)}`;
    const key = (name: string, age: string) => ({
      organization_id: org,
      key_hash: sha256(name),
      operation: 'adjustCredits',
      request_hash: 'h',
      response_status: 201,
      response_body: '{}',
      created_at: db.raw(`now() - interval '${age}'`),
    });
    await db('idempotency_keys').insert([
      key('old', '25 hours'),
      key('just-expired', '24 hours 1 minute'),
      key('young', '23 hours 59 minutes'),
      key('new', '0 seconds'),
    ]);
    await runJob(deleteExpiredIdempotencyKeysJob);
    expect(await db('idempotency_keys').where({ organization_id: org }).pluck('key_hash')).to.have.members([sha256('new'), sha256('young')]);
    // Running again deletes nothing more.
    await runJob(deleteExpiredIdempotencyKeysJob);
    expect(await db('idempotency_keys').where({ organization_id: org }).pluck('key_hash')).to.have.members([sha256('new'), sha256('young')]);
  });
});
