import { expect } from 'chai';
import * as plans from 'pg-boss/dist/plans.js';
import { z } from 'zod';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import { CLAIM_RECORDED, claimRecordingAttempts, failKeepingClaims, recordClaims } from '../../src/jobs/boss-sql/index.ts';
import { sweepLostWorkers } from '../../src/jobs/worker-registry.ts';
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
 * A worker's claim marks each job it claims with the worker in pg-boss's own fetch UPDATE
 * (src/jobs/boss-sql/claims.ts), and the history shows the attempt from that mark — even one whose
 * worker dies before its handler starts — with no write of its own on the fetch; pg-boss's fail keeps
 * the mark and writes the failed attempt's row. The rewrites depend on the shape of pg-boss's
 * statements: the first tests fail, naming the shape, when a pg-boss upgrade changes them (the
 * runtime then writes starts itself, one statement more).
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
      // One UPDATE, pg-boss's own, with the mark among its columns: nothing more on every slot's path.
      expect(claim!.text).to.match(/\bclaimed_by = \$\d+::uuid, state = 'active',/);
      expect(claim!.text).to.not.match(/\bINSERT\b/);
    });
  }

  const fails = {
    'by id, fenced (a worker ends its attempt, the sweeps fail a lost one)': plans.failJobsById('pgboss', 'job', true),
    'by id': plans.failJobsById('pgboss', 'job', false),
    'by id with outputs': plans.failJobsByIdWithOutputs('pgboss', 'job'),
    'expired (the monitor)': plans.failJobsByTimeout('pgboss', 'job', ['q'], false),
    'heartbeat timeout (the monitor)': plans.failJobsByHeartbeat('pgboss', 'job', ['q'], false),
  };
  for (const [shape, text] of Object.entries(fails)) {
    it(`recognises pg-boss's fail: ${shape}; it keeps the claim's mark and writes the failed attempt`, () => {
      const kept = failKeepingClaims(text);
      expect(kept, `pg-boss's fail (${shape}) is no longer recognised: re-check src/jobs/boss-sql/claims.ts`).to.not.equal(null);
      // Both re-inserts of the deleted job (retried, failed) name the mark in their columns and their select.
      expect(kept!.match(/\bsource_root_id, claimed_by\b/g)).to.have.length(4);
      expect(kept).to.match(/failed_attempts AS \(\s*INSERT INTO job_attempt_records/);
      expect(claimRecordingAttempts(text, [], '00000000-0000-4000-8000-000000000001')?.text).to.equal(kept);
    });
  }

  it('leaves every other statement alone, and fetches of queues the worker does not run', () => {
    const fetch = plans.fetchNextJob({ schema: 'pgboss', table: 'job', name: '__pgboss__send-it', policy: 'standard', limit: 1 } as Parameters<
      typeof plans.fetchNextJob
    >[0]);
    expect(claimRecordingAttempts(fetch.text, fetch.values, '00000000-0000-4000-8000-000000000001', new Set(['q']))).to.equal(null);
    // The restore of jobs fetched beyond a local group limit clears their start: the mark alone shows no attempt (tested below).
    const others = [
      plans.completeJobs('pgboss', 'job', false, true),
      plans.restoreJobs('pgboss', 'job'),
      plans.cancelJobs('pgboss', 'job', true),
      plans.resumeJobs('pgboss', 'job'),
      'SELECT 1',
    ];
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
      nature: 'computes',
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
      nature: 'computes',
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
      nature: 'computes',
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
      nature: 'computes',
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
  describe('the history from the claim’s mark, on a real database', () => {
    const W = '00000000-0000-4000-8000-0000000000a1';
    const B = '00000000-0000-4000-8000-0000000000b2';
    const job = testJob({
      name: 'test.claims.mark',
      version: 1,
      nature: 'computes',
      payload: z.object({ n: z.number() }).strict(),
      policy: { retryLimit: 2, retryDelaySeconds: 0, retryBackoff: true, retryDelayMaxSeconds: 1, heartbeatSeconds: null },
      handler: () => Promise.resolve(async () => undefined),
    });
    let url: string;
    let db: Db;
    const bosses: ReturnType<typeof createBoss>[] = [];
    const log = createLogger(testConfig(), 'test-claims');

    /** A worker's pg-boss with no runtime: its claims are marked as `id`'s, and nothing else writes (a process about to die). */
    const claimer = async (id: string, queues: string[] = [job.name]) => {
      const boss = createBoss(url, 'worker', { supervise: false, schedule: false });
      recordClaims(boss, id, queues);
      await boss.start();
      bosses.push(boss);
      return boss;
    };
    const history = (id: string) =>
      db('job_attempts')
        .where({ job_id: id })
        .orderBy('attempt')
        .select('attempt', 'worker_id', 'outcome', db.raw(`error->>'code' AS code`), db.raw('ended_at IS NOT NULL AS ended'));
    /** `id` registered as a worker last heard of a minute ago (killed then). */
    const registerSilent = (id: string) =>
      db('job_workers').insert({
        id,
        host: 'elsewhere',
        pid: 1,
        version: 'test',
        queues: [job.name],
        concurrency: 1,
        started_at: db.raw(`now() - interval '2 minutes'`),
        last_heartbeat_at: db.raw(`now() - interval '1 minute'`),
      });

    before(async () => {
      url = await isolatedDatabase();
      const setup = createBoss(url, 'release');
      await setup.start();
      await ensureQueues(setup, [job]);
      await setup.stop({ graceful: false, close: true });
      db = createDb(url, { max: 4 });
    });
    after(async () => {
      for (const boss of bosses) await boss.stop({ graceful: false, close: true });
      await db?.destroy();
    });

    it('a queue created after the release has the mark on its partition, and its claims show in the history', async () => {
      const setup = createBoss(url, 'release');
      await setup.start();
      try {
        // A queue of its own partition (pg-boss's `partition: true`), created LIKE the job table.
        await setup.createQueue('test.claims.later', { partition: true });
      } finally {
        await setup.stop({ graceful: false, close: true });
      }
      const { rows } = await db.raw(
        `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'claimed_by' AND NOT a.attisdropped) AS marked
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pgboss.job'::regclass`,
      );
      expect(rows.filter((row: { bound: string }) => row.bound.includes("'test.claims.later'"))).to.have.length(1);
      expect(rows.filter((row: { marked: boolean }) => !row.marked)).to.deep.equal([]);

      const boss = await claimer(W, ['test.claims.later']);
      const id = await boss.send('test.claims.later', {});
      const [fetched] = await boss.fetch('test.claims.later');
      expect(fetched?.id).to.equal(id);
      expect(await db('pgboss.job').where({ id }).first('claimed_by')).to.deep.equal({ claimed_by: W });
      expect(await history(id!)).to.deep.equal([{ attempt: 0, worker_id: W, outcome: null, code: null, ended: false }]);
    });

    it('an attempt its worker ended but died before writing stays in the history, and the lost-worker sweep writes it', async () => {
      const dying = '00000000-0000-4000-8000-0000000000c3';
      const boss = await claimer(dying);
      const id = await boss.send(job.name, { n: 1 });
      const [fetched] = await boss.fetch(job.name);
      expect(fetched?.id).to.equal(id);
      await boss.complete(job.name, id!);
      // No row yet: the history reads the end from the job.
      expect(await db('job_attempt_records').where({ job_id: id })).to.deep.equal([]);
      expect(await history(id!)).to.deep.equal([{ attempt: 0, worker_id: dying, outcome: 'completed', code: null, ended: true }]);

      await registerSilent(dying);
      const sweeper = await claimer(B);
      await sweepLostWorkers(db, sweeper, log, 30);
      expect(await db('job_attempt_records').where({ job_id: id }).select('attempt', 'worker_id', 'outcome')).to.deep.equal([
        { attempt: 0, worker_id: dying, outcome: 'completed' },
      ]);
    });

    it('an attempt failed under its worker (lost, expired) keeps its worker when the retry is claimed elsewhere; the sweep closes it lost', async () => {
      const killed = '00000000-0000-4000-8000-0000000000d4';
      const doomed = await claimer(killed);
      const id = await doomed.send(job.name, { n: 2 });
      const [fetched] = await doomed.fetch(job.name);
      expect(fetched?.id).to.equal(id);
      // Another worker fails it, as the sweeps and pg-boss's monitor do, and claims the retry at once.
      const other = await claimer(B);
      await other.fail(job.name, { id: id!, retryCount: 0 }, { message: 'its worker is gone' });
      expect(await db('pgboss.job').where({ id }).first('state', 'claimed_by')).to.deep.equal({ state: 'retry', claimed_by: killed });
      await other.update(job.name, undefined, { id: id!, startAfter: 0 });
      const [retry] = await other.fetch(job.name);
      expect(retry?.id).to.equal(id);
      expect(await history(id!)).to.deep.equal([
        { attempt: 0, worker_id: killed, outcome: null, code: null, ended: false },
        { attempt: 1, worker_id: B, outcome: null, code: null, ended: false },
      ]);

      await registerSilent(killed);
      await sweepLostWorkers(db, other, log, 30);
      expect(await history(id!)).to.deep.equal([
        { attempt: 0, worker_id: killed, outcome: 'lost', code: 'lost', ended: true },
        { attempt: 1, worker_id: B, outcome: null, code: null, ended: false },
      ]);
    });

    it("pg-boss's restore of a fetched job leaves no attempt: it goes back unstarted", async () => {
      const boss = await claimer(W);
      const id = await boss.send(job.name, { n: 3 });
      const [fetched] = await boss.fetch(job.name);
      expect(fetched?.id).to.equal(id);
      const restore = plans.restoreJobs('pgboss', 'job');
      await db.raw(restore.replace('$1', '?').replace('$2', '?'), [job.name, [id!]]);
      expect(await db('pgboss.job').where({ id }).first('state', 'started_on')).to.deep.equal({ state: 'created', started_on: null });
      expect(await history(id!)).to.deep.equal([]);
    });
  });
});
