import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { expireDueHolds } from '../../src/credits/expiry.ts';
import { meteredOperationJob } from '../../src/credits/jobs.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { useChildProcesses } from '../support/processes.ts';
import { createDb, eventually, expireAttemptsQuickly, isolatedDatabase, jobState, spawnWorker } from '../jobs/support.ts';
import type { Db } from '../../src/db/knex.ts';

/** A real worker process SIGKILLed between reserving credits and capturing them. */
describe('credits: worker killed between hold and capture', function () {
  this.timeout(90_000);
  let url: string;
  let db: Db;
  const worker = useChildProcesses(() => spawnWorker(url));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    await expireAttemptsQuickly(url, meteredOperationJob.name, 3);
  });
  after(async () => {
    await db.destroy();
  });

  /** An organization with 100 credits and a metered job enqueued in the same transaction. */
  async function seed(holdSeconds: number): Promise<{ org: string; jobId: string; runId: string }> {
    const boss = createBoss(url, 'web');
    await boss.start();
    try {
      return await db.transaction(async (trx) => {
        const userId = `user_${randomUUID().slice(0, 8)}`;
        await trx('users').insert({ id: userId, email: `${userId}@example.test`, name: 'Crash' });
        const [org] = await trx('organizations')
          .insert({ name: 'Crash Co', slug: `crash-${randomUUID().slice(0, 8)}`, created_by_id: userId })
          .returning('id');
        await grantCredits(trx, { organizationId: org.id, source: 'purchase', amount: 100, description: 'Test credits' });
        const key = randomUUID();
        const jobId = await new JobQueue(boss).enqueue(trx, meteredOperationJob, {
          organization_id: org.id,
          user_id: userId,
          operation_key: key,
          operation: 'sandbox.wait',
          estimate: 20,
          hold_seconds: holdSeconds,
          input: { duration_ms: 1500, used: 7 },
        });
        return { org: org.id as string, jobId, runId: `job:${key}` };
      });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  }

  const holdOf = (org: string, runId: string) =>
    db('credit_holds').where({ organization_id: org, run_id: runId }).first('id', 'status', 'resolution', 'amount', 'captured', 'released');
  const kindsOf = async (org: string) =>
    (await db('credit_ledger_entries').where({ organization_id: org }).orderBy('seq').select('kind', 'amount')).map((e) => `${e.kind}:${e.amount}`);

  async function killAfterHold(org: string, runId: string, jobId: string) {
    const first = worker();
    await eventually(async () => (await holdOf(org, runId))?.status === 'held');
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');
    expect((await holdOf(org, runId))?.status).to.equal('held');
    expect((await jobState(db, jobId))?.state).to.equal('active');
  }

  it('the retried job finds its hold and captures it exactly once', async () => {
    const { org, jobId, runId } = await seed(600);
    await killAfterHold(org, runId, jobId);
    worker();
    const done = await eventually(async () => {
      const job = await jobState(db, jobId);
      return job?.state === 'completed' ? job : undefined;
    }, 200);
    expect(done.retry_count).to.be.at.least(1);
    expect(await holdOf(org, runId)).to.deep.include({ status: 'captured', resolution: 'capture', amount: 20, captured: 7, released: 13 });
    expect(await kindsOf(org)).to.deep.equal(['purchase:100', 'hold:20', 'capture:7', 'release:13']);
    expect(await db('credit_holds').where({ organization_id: org }).count('* as n').first()).to.deep.equal({ n: 1 });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a hold abandoned past its expiry is released once, and the late retry captures nothing', async () => {
    const { org, jobId, runId } = await seed(1);
    await killAfterHold(org, runId, jobId);
    await eventually(
      async () => (await db('credit_holds').where({ organization_id: org, run_id: runId }).where('expires_at', '<=', db.fn.now()).first()) ?? undefined,
      200,
    );
    // The scheduled expiry job's work, run directly (its cron fires once a minute).
    expect(await expireDueHolds(db)).to.be.at.least(1);
    expect(await holdOf(org, runId)).to.deep.include({ status: 'expired', resolution: 'expiry', captured: 0, released: 20 });
    worker();
    await eventually(async () => (await jobState(db, jobId))?.state === 'completed', 200);
    expect(await holdOf(org, runId)).to.deep.include({ status: 'expired', captured: 0, released: 20 });
    expect(await kindsOf(org)).to.deep.equal(['purchase:100', 'hold:20', 'release:20']);
    expect(await db('credit_balances').where({ organization_id: org }).first('granted', 'captured', 'held', 'expired')).to.deep.equal({
      granted: 100,
      captured: 0,
      held: 0,
      expired: 0,
    });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
