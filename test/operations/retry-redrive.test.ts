import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { z } from 'zod';
import { createDb, type Db } from '../../src/db/knex.ts';
import { allJobs } from '../../src/app/jobs.ts';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import type { JobContext } from '../../src/jobs/define.ts';
import { testJob } from '../support/jobs.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { newOperator, type TestUser } from '../support/factories.ts';
import { type ApiResponse, startTestServer, type TestServer } from '../support/server.ts';

/**
 * A job that fails for good (no retries: straight to its dead-letter queue) while its work id is in
 * `failing`, and records every run in `race_runs`, so a test counts exactly how many times each
 * piece of work ran.
 */
const failing = new Set<string>();

const raceJob = testJob({
  name: 'test.race',
  version: 1,
  nature: 'computes',
  payload: z.object({ work_id: z.string() }).strict(),
  policy: { retryLimit: 0, heartbeatSeconds: null },
  handler: () =>
    Promise.resolve(async (payload: { work_id: string }, { deps, job }: JobContext) => {
      const fails = failing.has(payload.work_id);
      await deps.db('race_runs').insert({ work_id: payload.work_id, job_id: job.id, failed: fails });
      if (fails) throw new Error(`failing on purpose: ${payload.work_id}`);
    }),
});
const DEAD = raceJob.deadLetter;

const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;

describe('job console: retry and redrive of one failure exclude each other (issue 18)', function () {
  this.timeout(180_000);
  let url: string;
  let db: Db;
  let server: TestServer;
  let worker: WorkerProcess;
  let queue: JobQueue;
  let stopBoss: () => Promise<void>;
  let operator: TestUser;
  const post = (path: string, body: unknown = {}) => server.request('post', path, { token: operator.token, body });
  const get = (path: string) => server.request('get', path, { token: operator.token });

  before(async () => {
    url = await isolatedDatabase();
    const release = createBoss(url, 'release');
    await release.start();
    await ensureQueues(release, [raceJob]);
    await release.stop({ graceful: false, close: true });
    db = createDb(url, { max: 6 });
    await db.raw(
      `CREATE TABLE race_runs (work_id text NOT NULL, job_id uuid NOT NULL, failed boolean NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
    const overrides = { OPS_BULK_BATCH_SIZE: '1', OPS_BULK_PAUSE_MS: '0' };
    server = await startTestServer(overrides, { databaseUrl: url });
    const config = testConfig({ WORKER_HEARTBEAT_SECONDS: '0.5', WORKER_CONCURRENCY: '8', WORKER_POLL_INTERVAL_SECONDS: '0.5', ...overrides });
    worker = await startWorker(config, url, createLogger(config, 'test-worker'), { jobs: [...allJobs, raceJob] });
    const boss = createBoss(url, 'web');
    await boss.start();
    stopBoss = () => boss.stop({ graceful: false, close: true });
    queue = new JobQueue(boss, [...allJobs, raceJob]);
    operator = newOperator();
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await stopBoss?.();
    await db?.destroy();
  });

  /** `n` pieces of work whose jobs failed for good, each with its dead letter waiting in DEAD. */
  async function failures(n: number): Promise<{ workId: string; jobId: string; deadLetterId: string }[]> {
    const work = Array.from({ length: n }, () => randomUUID());
    for (const workId of work) failing.add(workId);
    const jobIds = await db.transaction(async (trx) => {
      const ids: string[] = [];
      for (const workId of work) ids.push(await queue.enqueue(trx, raceJob, { work_id: workId }, { organizationId: null }));
      return ids;
    });
    await eventually(`${n} jobs failed and dead-lettered`, async () => {
      const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ? AND source_id = ANY(?::uuid[]) AND state = 'created'`, [
        DEAD,
        jobIds,
      ]);
      return rows[0].n === n;
    });
    const letters = (await db('pgboss.job').where({ name: DEAD }).whereIn('source_id', jobIds).select('id', 'source_id')) as {
      id: string;
      source_id: string;
    }[];
    const letterOf = new Map(letters.map((letter) => [letter.source_id, letter.id]));
    for (const workId of work) failing.delete(workId);
    return work.map((workId, i) => ({ workId, jobId: jobIds[i]!, deadLetterId: letterOf.get(jobIds[i]!)! }));
  }

  const stateOf = async (id: string) => ((await db('pgboss.job').where({ id }).first('state')) as { state: string } | undefined)?.state;
  const successfulRuns = async (workIds: readonly string[]) =>
    (await db('race_runs').whereIn('work_id', workIds).where({ failed: false }).select('work_id', 'job_id')) as { work_id: string; job_id: string }[];

  /** Starts a bulk redrive of these dead letters (their queue, created since `from`) and returns its id. */
  async function bulkRedrive(from: Date): Promise<string> {
    const created = await post('/ops/bulk-actions', { action: 'redrive', filter: { queue: DEAD, from: from.toISOString() }, reason: 'race' });
    expect(created.status, show(created)).to.equal(202);
    return created.body.bulk_action.id as string;
  }

  async function finished(bulkId: string) {
    return eventually('the bulk redrive finished', async () => {
      const res = await get(`/ops/bulk-actions/${bulkId}`);
      return res.body.bulk_action.state === 'completed' && res.body.bulk_action;
    });
  }

  const outcomes = async (bulkId: string) =>
    new Map(
      (
        (await db('bulk_action_items').where({ bulk_action_id: bulkId }).select('job_id', 'outcome', 'skip_reason')) as {
          job_id: string;
          outcome: string;
          skip_reason: string | null;
        }[]
      ).map((item) => [item.job_id, item]),
    );

  /** Nothing of the race queue or its dead letters is waiting or running: no run can still come. */
  const quiet = async () => {
    const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pgboss.job WHERE name IN (?, ?) AND state IN ('created', 'retry', 'active')`, [
      raceJob.name,
      DEAD,
    ]);
    return rows[0].n === 0;
  };

  it('retry first: its dead letter is cancelled with it (named in the audit record); a redrive of it afterwards is skipped, "already retried"', async () => {
    const from = new Date(Date.now() - 1000);
    const [failure] = await failures(1);
    const { workId, jobId, deadLetterId } = failure!;

    const retried = await post(`/ops/jobs/${jobId}/retry`, { reason: 'fixed' });
    expect(retried.status, show(retried)).to.equal(200);
    expect(await stateOf(deadLetterId)).to.equal('cancelled');
    const [action] = (await db('operator_actions').whereRaw('job_ids @> ARRAY[?]::uuid[]', [jobId]).select('action', 'target')) as {
      action: string;
      target: Record<string, unknown>;
    }[];
    expect(action).to.deep.equal({ action: 'job.retry', target: { queue: raceJob.name, from_state: 'failed', dead_letter_cancelled: deadLetterId } });

    // A bulk redrive now finds nothing to take; one that snapshotted the dead letter earlier skips it (the bulk runner's call).
    const none = await post('/ops/bulk-actions', { action: 'redrive', filter: { queue: DEAD, from: from.toISOString() }, reason: 'late' });
    expect(none.status, show(none)).to.equal(400);
    const late = await db.transaction((trx) => queue.commands.redrive(trx, DEAD, [deadLetterId]));
    expect(late.done).to.deep.equal([]);
    expect(late.skipped).to.have.length(1);
    expect(late.skipped[0]!.reason).to.match(
      new RegExp(`^already retried: its failed job ${jobId} was retried instead \\(it is (retry|created|active|completed)\\)$`),
    );

    await eventually('the retried job completed', async () => (await stateOf(jobId)) === 'completed');
    expect(await quiet()).to.equal(true);
    expect(await successfulRuns([workId])).to.deep.equal([{ work_id: workId, job_id: jobId }]);
  });

  it('redrive first: a retry of the failed job afterwards is 409 "already redriven", naming the job it became; nothing is recorded', async () => {
    const from = new Date(Date.now() - 1000);
    const [failure] = await failures(1);
    const { workId, jobId } = failure!;
    const bulk = await finished(await bulkRedrive(from));
    expect(bulk).to.include({ total: 1, done: 1, skipped: 0 });
    const [run] = await eventually('the redriven job ran', async () => {
      const runs = await successfulRuns([workId]);
      return runs.length > 0 && runs;
    });
    const redrivenAs = run!.job_id;
    expect(redrivenAs).to.not.equal(jobId);

    const refused = await post(`/ops/jobs/${jobId}/retry`, { reason: 'again' });
    expect(refused.status, show(refused)).to.equal(409);
    expect(refused.body.code).to.equal('conflict');
    expect(refused.body.message).to.match(
      new RegExp(`^this job is failed and already redriven: its dead letter was moved back as job ${redrivenAs} \\(it is (active|completed)\\)$`),
    );
    expect(await stateOf(jobId)).to.equal('failed');
    expect(await db('operator_actions').whereRaw('job_ids @> ARRAY[?]::uuid[]', [jobId]).count('* as n').first()).to.deep.equal({ n: 0 });
    await eventually('quiet', quiet);
    expect(await successfulRuns([workId])).to.deep.equal([{ work_id: workId, job_id: redrivenAs }]);
  });

  it('at the same time: the second waits on the failed job’s row lock and then sees the first (both orders)', async () => {
    const [first, second] = await failures(2);
    // pg-boss's own connections wait too: a backend of this database waiting on a row lock.
    const waitingOnLock = async () => {
      const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      return rows[0].n > 0;
    };

    // A retry holds the locks; the redrive of the same failure waits, then is skipped.
    const retrying = await db.transaction();
    const retried = await queue.commands.retryFailed(retrying, raceJob.name, [first!.jobId]);
    expect(retried.done).to.deep.equal([first!.jobId]);
    expect(retried.deadLettersCancelled.get(first!.jobId)).to.equal(first!.deadLetterId);
    const redrive = db.transaction((trx) => queue.commands.redrive(trx, DEAD, [first!.deadLetterId]));
    await eventually('the redrive waits on the lock', waitingOnLock);
    await retrying.commit();
    const redriven = await redrive;
    expect(redriven.done).to.deep.equal([]);
    expect(redriven.skipped.map((s) => s.cause.kind)).to.deep.equal(['retried']);

    // A redrive holds the locks; the console's retry of the same failure waits, then answers 409.
    const redriving = await db.transaction();
    const moved = await queue.commands.redrive(redriving, DEAD, [second!.deadLetterId]);
    expect(moved).to.deep.equal({ done: [second!.deadLetterId], skipped: [] });
    const retry = post(`/ops/jobs/${second!.jobId}/retry`, {});
    await eventually('the retry waits on the lock', waitingOnLock);
    await redriving.commit();
    const refused = await retry;
    expect(refused.status, show(refused)).to.equal(409);
    expect(refused.body.message).to.include('already redriven');

    await eventually('quiet', quiet);
    const runs = await successfulRuns([first!.workId, second!.workId]);
    expect(runs.map((r) => r.work_id).sort()).to.deep.equal([first!.workId, second!.workId].sort());
    expect(runs.find((r) => r.work_id === first!.workId)!.job_id).to.equal(first!.jobId);
    expect(runs.find((r) => r.work_id === second!.workId)!.job_id).to.not.equal(second!.jobId);
  });

  it('a bulk retry skips a failure already redriven, with the reason; the others are retried and their dead letters cancelled', async () => {
    const [redriven, plain] = await failures(2);
    // Exactly these two jobs: the window starts at the older one's creation.
    const { rows } = await db.raw(`SELECT min(created_on)::text AS from FROM pgboss.job WHERE id = ANY(?::uuid[])`, [[redriven!.jobId, plain!.jobId]]);
    const moved = await db.transaction((trx) => queue.commands.redrive(trx, DEAD, [redriven!.deadLetterId]));
    expect(moved.done).to.deep.equal([redriven!.deadLetterId]);

    const created = await post('/ops/bulk-actions', {
      action: 'retry',
      filter: { queue: raceJob.name, state: 'failed', from: new Date(rows[0].from).toISOString() },
      reason: 'retry them all',
    });
    expect(created.status, show(created)).to.equal(202);
    expect(created.body.bulk_action.total).to.equal(2);
    const bulk = await finished(created.body.bulk_action.id);
    expect(bulk).to.include({ done: 1, skipped: 1 });
    const items = await outcomes(created.body.bulk_action.id);
    expect(items.get(plain!.jobId)).to.include({ outcome: 'done', skip_reason: null });
    expect(items.get(redriven!.jobId)!.outcome).to.equal('skipped');
    expect(items.get(redriven!.jobId)!.skip_reason).to.match(
      /^already redriven: its dead letter was moved back as job [0-9a-f-]{36} \(it is (created|active|completed)\)$/,
    );
    expect(await stateOf(plain!.deadLetterId)).to.equal('cancelled');
    expect(await stateOf(redriven!.jobId)).to.equal('failed');

    await eventually('quiet', quiet);
    const runs = await successfulRuns([redriven!.workId, plain!.workId]);
    expect(runs.map((r) => r.work_id).sort()).to.deep.equal([redriven!.workId, plain!.workId].sort());
  });

  it('retry + redrive raced 100 times: 100 single runs, one winner per race', async () => {
    const from = new Date(Date.now() - 1000);
    const work = await failures(100);
    const byLetter = new Map(work.map((w) => [w.deadLetterId, w]));
    const bulkId = await bulkRedrive(from);
    // The bulk redrive works its dead letters one batch at a time in id order; once it has started,
    // the retries come from the other end, so the two meet in the middle, some pairs at once.
    await eventually('the bulk redrive started', async () => {
      const { bulk_action: bulk } = (await get(`/ops/bulk-actions/${bulkId}`)).body;
      return bulk.done + bulk.skipped > 0;
    });
    const retryOrder = [...work].sort((a, b) => (a.deadLetterId < b.deadLetterId ? 1 : -1));
    const answers = new Map<string, ApiResponse>();
    const lanes = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < retryOrder.length; i += 8) {
        const { jobId } = retryOrder[i]!;
        answers.set(jobId, await post(`/ops/jobs/${jobId}/retry`, { reason: 'race' }));
      }
    });
    await Promise.all(lanes);
    const bulk = await finished(bulkId);
    expect(bulk.total).to.equal(100);
    const items = await outcomes(bulkId);

    let retriedWins = 0;
    for (const [deadLetterId, { jobId }] of byLetter) {
      const answer = answers.get(jobId)!;
      const item = items.get(deadLetterId)!;
      if (answer.status === 200) {
        retriedWins += 1;
        expect(item.outcome, `${jobId}: retried, yet its dead letter ${item.outcome}`).to.equal('skipped');
        expect(item.skip_reason).to.match(/^already retried: /);
      } else {
        expect(answer.status, show(answer)).to.equal(409);
        expect(answer.body.message).to.match(/^this job is failed and already redriven: /);
        expect(item.outcome, `${jobId}: refused, yet its dead letter was ${item.skip_reason}`).to.equal('done');
      }
    }
    expect(bulk).to.include({ done: 100 - retriedWins, skipped: retriedWins });
    console.log(`      race: ${retriedWins} retries won, ${100 - retriedWins} redrives won`);

    await eventually('every piece of work ran once more', async () => (await successfulRuns(work.map((w) => w.workId))).length >= 100);
    await eventually('quiet', quiet);
    const runs = await successfulRuns(work.map((w) => w.workId));
    expect(runs).to.have.length(100);
    expect(new Set(runs.map((r) => r.work_id)).size).to.equal(100);
  });
});
