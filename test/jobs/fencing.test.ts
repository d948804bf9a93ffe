import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { testDataDir } from '../support/config.ts';
import { createDb, eventually, isolatedDatabase, retryDeadAttemptsQuickly, spawnWorker } from './support.ts';

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
    await eventually(
      'the retries finished every generation',
      async () => (await db('generations').whereIn('id', ids).where({ status: 'succeeded' })).length === GENERATIONS,
      {
        timeoutMs: 90_000,
      },
    );

    // Resumed: its provider calls return, and each of its attempts tries to settle.
    process.kill(-frozen.child.pid!, 'SIGCONT');
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
    expect(outcomes).to.deep.equal(Array.from({ length: GENERATIONS }, () => ({ attempt: 0, outcome: 'superseded' })));

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
});
