import { expect } from 'chai';
import * as plans from 'pg-boss/dist/plans.js';
import { z } from 'zod';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import { CLAIM_RECORDED, claimRecordingAttempts, recordClaims } from '../../src/jobs/boss-sql/index.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { testJob } from '../support/jobs.ts';
import { snooze } from '../../src/jobs/define.ts';
import { isolatedDatabase } from './support.ts';

/**
 * A worker's claim writes each attempt's start in the fetch statement itself (src/jobs/boss-sql/claims.ts),
 * so the history holds every attempt — even one whose worker dies before its handler starts — at no
 * extra round trip. The rewrite depends on the shape of pg-boss's fetch: the first test fails, naming
 * the shape, when a pg-boss upgrade changes it (the runtime then writes starts itself, one statement more).
 */
describe('jobs: claims that write their attempts', function () {
  this.timeout(60_000);

  const shapes = {
    'one job, no groups': { limit: 1 },
    'a batch': { limit: 5 },
    'fair share per organization (local group limit, fetched like no groups)': { limit: 1, ignoreGroups: ['org_x'] },
    'a fleet-wide group limit (webhook endpoints)': { limit: 1, groupConcurrency: 4 },
    'one job per group': { limit: 1, groupConcurrency: 1 },
    priorities: { limit: 1, minPriority: 0, maxPriority: 10 },
    'with metadata': { limit: 1, includeMetadata: true },
  } as const;
  for (const [shape, options] of Object.entries(shapes)) {
    it(`recognises pg-boss's fetch statement: ${shape}`, () => {
      const query = plans.fetchNextJob({ schema: 'pgboss', table: 'job', name: 'q', policy: 'standard', ...options } as Parameters<
        typeof plans.fetchNextJob
      >[0]);
      const claim = claimRecordingAttempts(query.text, query.values, '00000000-0000-4000-8000-000000000001');
      expect(claim, `pg-boss's fetch (${shape}) is no longer recognised: re-check src/jobs/boss-sql/claims.ts`).to.not.equal(null);
      expect(claim!.values).to.have.length((query.values?.length ?? 0) + 1);
      // The job row's retry limit comes back exactly once (a snooze raises it).
      expect(claim!.text.match(/"retryLimit"/g)).to.have.length(1);
      expect(claim!.text).to.include(`true AS "${CLAIM_RECORDED}"`);
    });
  }

  it("recognises pg-boss's restore of jobs fetched beyond a local group limit, and takes back their starts", () => {
    const claim = claimRecordingAttempts(
      plans.restoreJobs('pgboss', 'job'),
      ['q', ['00000000-0000-4000-8000-000000000002']],
      '00000000-0000-4000-8000-000000000001',
    );
    expect(claim, "pg-boss's restore is no longer recognised: re-check src/jobs/boss-sql/claims.ts").to.not.equal(null);
    expect(claim!.text).to.match(/DELETE FROM job_attempts/);
  });

  it('leaves every other statement alone, and fetches of queues the worker does not run', () => {
    const fetch = plans.fetchNextJob({ schema: 'pgboss', table: 'job', name: '__pgboss__send-it', policy: 'standard', limit: 1 } as Parameters<
      typeof plans.fetchNextJob
    >[0]);
    expect(claimRecordingAttempts(fetch.text, fetch.values, '00000000-0000-4000-8000-000000000001', new Set(['q']))).to.equal(null);
    const others = [plans.completeJobs('pgboss', 'job', false, true), plans.failJobsById('pgboss', 'job', true), plans.resumeJobs('pgboss', 'job'), 'SELECT 1'];
    for (const text of others) expect(claimRecordingAttempts(text, [], '00000000-0000-4000-8000-000000000001')).to.equal(null);
  });

  describe('on a real worker', () => {
    let url: string;
    let db: Db;
    let worker: WorkerProcess;
    let boss: ReturnType<typeof createBoss>;
    let queue: JobQueue;
    let release: () => void = () => undefined;
    const blocked = new Promise<void>((resolve) => (release = resolve));

    const holdingJob = testJob({
      name: 'test.claims.holding',
      version: 1,
      payload: z.object({ n: z.number() }).strict(),
      policy: { retryLimit: 2, retryDelaySeconds: 1, retryBackoff: true, retryDelayMaxSeconds: 1, heartbeatSeconds: null },
      handler: () =>
        Promise.resolve(async (payload: { n: number }) => {
          if (payload.n === 1) await blocked;
        }),
    });
    let failures = 0;
    const flakyJob = testJob({
      name: 'test.claims.flaky',
      version: 1,
      payload: z.object({ n: z.number() }).strict(),
      policy: { retryLimit: 2, retryDelaySeconds: 1, retryBackoff: true, retryDelayMaxSeconds: 1, heartbeatSeconds: null },
      handler: () =>
        Promise.resolve(async () => {
          if (failures++ === 0) throw new Error('first attempt fails');
        }),
    });

    let calls = 0;
    const snoozingJob = testJob({
      name: 'test.claims.snoozing',
      version: 1,
      payload: z.object({}).strict(),
      // One retry: two snoozes must not use it up.
      policy: { retryLimit: 1, retryDelaySeconds: 1, retryBackoff: true, retryDelayMaxSeconds: 1, heartbeatSeconds: null },
      handler: () =>
        Promise.resolve(async () => {
          calls += 1;
          // At once, then after a second: a stale settle of the snoozed attempt must never land on the next claim.
          if (calls <= 2) return snooze(calls - 1, 'every slot is held');
          if (calls === 3) throw new Error('the first real attempt fails');
          return undefined;
        }),
    });

    before(async () => {
      url = await isolatedDatabase();
      const releaseBoss = createBoss(url, 'release');
      await releaseBoss.start();
      await ensureQueues(releaseBoss, [holdingJob, flakyJob, snoozingJob]);
      await releaseBoss.stop({ graceful: false, close: true });
      db = createDb(url, { max: 4 });
      const config = testConfig({ WORKER_POLL_INTERVAL_SECONDS: '0.5' });
      worker = await startWorker(config, url, createLogger(config, 'test-worker'), { jobs: [holdingJob, flakyJob, snoozingJob] });
      boss = createBoss(url, 'web');
      await boss.start();
      queue = new JobQueue(boss, [holdingJob, flakyJob, snoozingJob]);
    });
    after(async () => {
      release();
      await worker?.stop();
      await boss?.stop({ graceful: false, close: true });
      await db?.destroy();
    });

    it('a running attempt is in the history, credited to its worker, before it ends; its end completes that one row', async () => {
      const id = await db.transaction((trx) => queue.enqueue(trx, holdingJob, { n: 1 }, { organizationId: 'org_claims' }));
      const open = await eventually('the running attempt is recorded', async () => {
        const rows = await db('job_attempts').where({ job_id: id });
        return rows.length === 1 && rows;
      });
      expect(open[0]).to.include({ queue: holdingJob.name, organization_id: 'org_claims', attempt: 0, worker_id: worker.id, ended_at: null, outcome: null });
      release();
      const ended = await eventually('the attempt ended', async () => {
        const rows = await db('job_attempts').where({ job_id: id });
        return rows.every((row: { ended_at: Date | null }) => row.ended_at !== null) && rows;
      });
      expect(ended.map((row: { attempt: number; outcome: string; worker_id: string }) => [row.attempt, row.outcome, row.worker_id])).to.deep.equal([
        [0, 'completed', worker.id],
      ]);
    });

    it('a retried job has one row per attempt, each by this worker, and no attempt taken for lost', async () => {
      const id = await db.transaction((trx) => queue.enqueue(trx, flakyJob, { n: 2 }, { organizationId: 'org_claims' }));
      const rows = await eventually('both attempts ended', async () => {
        const found = await db('job_attempts').where({ job_id: id }).orderBy('attempt');
        return found.length === 2 && found.every((row: { ended_at: Date | null }) => row.ended_at !== null) && found;
      });
      expect(rows.map((row: { attempt: number; outcome: string; worker_id: string }) => [row.attempt, row.outcome, row.worker_id])).to.deep.equal([
        [0, 'failed', worker.id],
        [1, 'completed', worker.id],
      ]);
    });

    it('a snoozed job runs again without using a retry: snoozed twice, failed once, it still gets its retry', async () => {
      const id = await db.transaction((trx) => queue.enqueue(trx, snoozingJob, {}, { organizationId: 'org_claims' }));
      const rows = await eventually(
        'four attempts ended',
        async () => {
          const found = await db('job_attempts').where({ job_id: id }).orderBy('attempt');
          return found.length === 4 && found.every((row: { ended_at: Date | null }) => row.ended_at !== null) && found;
        },
        { timeoutMs: 30_000 },
      );
      expect(
        rows.map((row: { attempt: number; outcome: string; error: { code: string } | null }) => [row.attempt, row.outcome, row.error?.code ?? null]),
      ).to.deep.equal([
        [0, 'deferred', 'snoozed'],
        [1, 'deferred', 'snoozed'],
        [2, 'failed', 'failed'],
        [3, 'completed', null],
      ]);
      expect(await db('pgboss.job').where({ id }).first('state', 'retry_count', 'retry_limit')).to.deep.equal({
        state: 'completed',
        retry_count: 3,
        retry_limit: 3,
      });
      expect(calls).to.equal(4);
    });
  });

  it('a claim by a worker that dies before its handler runs is still in the history', async () => {
    const url = await isolatedDatabase();
    const job = testJob({
      name: 'test.claims.orphan',
      version: 1,
      payload: z.object({}).strict(),
      policy: { retryLimit: 1, retryDelaySeconds: 1, retryBackoff: true, retryDelayMaxSeconds: 1, heartbeatSeconds: null },
      handler: () => Promise.resolve(async () => undefined),
    });
    const setup = createBoss(url, 'release');
    await setup.start();
    await ensureQueues(setup, [job]);
    await setup.stop({ graceful: false, close: true });
    const db = createDb(url, { max: 2 });
    // A worker's pg-boss that fetches and is never heard of again (the process killed right after its fetch).
    const doomed = createBoss(url, 'worker', { supervise: false, schedule: false });
    recordClaims(doomed, '00000000-0000-4000-8000-00000000dead', [job.name]);
    await doomed.start();
    try {
      const id = await doomed.send(job.name, {});
      const [fetched] = await doomed.fetch(job.name);
      expect(fetched?.id).to.equal(id);
      expect((fetched as unknown as Record<string, unknown>)[CLAIM_RECORDED]).to.equal(true);
      const rows = await db('job_attempts').where({ job_id: id });
      expect(rows.map((row: { attempt: number; worker_id: string; ended_at: Date | null }) => [row.attempt, row.worker_id, row.ended_at])).to.deep.equal([
        [0, '00000000-0000-4000-8000-00000000dead', null],
      ]);
    } finally {
      await doomed.stop({ graceful: false, close: true });
      await db.destroy();
    }
  });
});
