import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { testDataDir } from '../support/config.ts';
import type { Knex } from 'knex';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { isLeaseLost } from '../../src/jobs/define.ts';
import { Lease } from '../../src/jobs/lease.ts';
import { createDb, eventually, isolatedDatabase, retryDeadAttemptsQuickly, seedInvitation, spawnWorker } from './support.ts';

/**
 * Fencing (issue 18): a worker frozen with SIGSTOP loses its lease when its heartbeat goes stale;
 * another worker retries its jobs and finishes them. Resumed with SIGCONT, the frozen worker's
 * handlers complete their provider calls — and write nothing: every settle runs under the
 * attempt's lease (job id + retry count, the row locked and checked), so each generation has one
 * asset and one capture, and the history records the frozen attempts as superseded.
 */
describe('jobs: a frozen worker resumed after its jobs were retried elsewhere writes nothing', function () {
  this.timeout(120_000);
  const GENERATIONS = 4;
  let url: string;
  let db: Db;
  let server: TestServer;
  let alice: TestUser;
  let org: string;
  // Each generation takes the sandbox 6 s: long enough to freeze the first worker mid-call.
  // Generations wait: a worker has WORKER_WAITING_SLOTS (128) of them and one organization may use them all, so all four run on the first worker.
  const worker = useChildProcesses(() => spawnWorker(url, { DATA_DIR: testDataDir(), GENERATION_SANDBOX_DELAY_MS: '6000', WORKER_HEARTBEAT_SECONDS: '1' }));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    await retryDeadAttemptsQuickly(url, generationJob.name);
    server = await startTestServer({}, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
  });

  it('every generation ends with one asset and one capture; the frozen attempts are superseded', async () => {
    const frozen = worker();
    const ids: string[] = [];
    for (let i = 0; i < GENERATIONS; i++) {
      const res = await server.request('post', '/generations', { token: alice.token, body: { organization_id: org, kind: 'image', prompt: `Harbour ${i}` } });
      expect(res.status).to.equal(201);
      ids.push(res.body.generation.id);
    }
    await eventually(
      'the first worker runs them all',
      async () => (await db('generations').whereIn('id', ids).where({ status: 'running' })).length === GENERATIONS,
    );
    const frozenWorker = (await eventually('the first worker registered', async () => db('job_workers').where({ pid: frozen.child.pid }).first('id'))) as {
      id: string;
    };
    process.kill(-frozen.child.pid!, 'SIGSTOP');

    // A second worker: pg-boss's monitor fails the silent attempts (10 s heartbeat), and it retries and finishes them.
    worker();
    const allSucceeded = async () => (await db('generations').whereIn('id', ids).where({ status: 'succeeded' })).length === GENERATIONS;
    // Frozen in the middle of a progress write, the worker holds its job's row lock until it resumes,
    // and that job's retry waits for it: resumed after 45 s at the latest, it still writes nothing of its own.
    const retried = await eventually('the retries finished every generation', allSucceeded, { timeoutMs: 45_000 }).then(
      () => true,
      () => false,
    );

    // Resumed: its provider calls return, and each of its attempts tries to settle.
    process.kill(-frozen.child.pid!, 'SIGCONT');
    if (!retried) await eventually('the retries finished every generation once it resumed', allSucceeded, { timeoutMs: 90_000 });
    const jobs = (await db('pgboss.job').where({ name: generationJob.name }).select('id')) as { id: string }[];
    await eventually('the resumed worker recorded each of its attempts', async () => {
      const attempts = await db('job_attempts')
        .whereIn(
          'job_id',
          jobs.map((j) => j.id),
        )
        .where({ worker_id: frozenWorker.id })
        .whereNotNull('outcome');
      return attempts.length === GENERATIONS ? attempts : null;
    });
    const outcomes = await db('job_attempts')
      .whereIn(
        'job_id',
        jobs.map((j) => j.id),
      )
      .where({ worker_id: frozenWorker.id })
      .select('attempt', 'outcome');
    // Superseded: it resumed and found its lease gone. On a slow machine the registry may first declare
    // the silent worker lost (WORKER_LOST_AFTER_SECONDS) and close its attempts `lost`; either way it wrote nothing.
    expect(outcomes.map((row: { attempt: number }) => row.attempt)).to.deep.equal(Array.from({ length: GENERATIONS }, () => 0));
    expect(outcomes.filter((row: { outcome: string }) => row.outcome !== 'superseded' && row.outcome !== 'lost')).to.deep.equal([]);

    // Exactly once: one asset per generation, one hold and one capture per call, a ledger that reconciles.
    const generations = await db('generations').whereIn('id', ids).select('id', 'asset_ids', 'call_id');
    expect(generations.every((g) => g.asset_ids.length === 1)).to.equal(true);
    expect(await db('assets').whereIn('generation_id', ids)).to.have.length(GENERATIONS);
    const ledger = await db('credit_ledger_entries as e')
      .join('credit_holds as h', 'h.id', 'e.hold_id')
      .whereIn(
        'h.run_id',
        generations.map((g) => `metered-call:${g.call_id}`),
      )
      .groupBy('e.kind')
      .select('e.kind', db.raw('count(*)::int AS n'));
    expect(Object.fromEntries(ledger.map((row) => [row.kind, row.n]))).to.deep.equal({ hold: GENERATIONS, capture: GENERATIONS });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a lease is the attempt: once its job was retried, its steps and its end write nothing (LeaseLost)', async () => {
    const boss = createBoss(url, 'web');
    await boss.start();
    try {
      // An invitation e-mail job (any queue does): fetched once, failed back to retry, fetched again.
      const { jobId } = await seedInvitation(db, url);
      const queue = invitationEmailJob.name;
      const [first] = await boss.fetch(queue);
      expect(first?.id).to.equal(jobId);
      await boss.fail(queue, { id: jobId, retryCount: first!.retryCount }, { message: 'the first attempt froze' });
      await boss.update(queue, undefined, { id: jobId, startAfter: 0 });
      const [second] = await boss.fetch(queue);
      expect(second).to.include({ id: jobId, retryCount: 1 });

      const stale = new Lease(db, { queue, id: jobId, attempt: 0 });
      const current = new Lease(db, { queue, id: jobId, attempt: 1 });
      // What an attempt's step would write (any row of ours will do).
      const write = (trx: Knex.Transaction) =>
        trx('job_ends').insert({ job_id: jobId, queue, attempt: 0, end: 'failed', reason: JSON.stringify({ code: 'fence', message: 'written by a step' }) });
      const written = () => db('job_ends').where({ job_id: jobId });
      const lost = await stale.step(write).catch((error: unknown) => error);
      expect(isLeaseLost(lost), String(lost)).to.equal(true);
      expect(await written()).to.have.length(0);
      await current.step(write);
      expect(await written()).to.have.length(1);
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  });
});
