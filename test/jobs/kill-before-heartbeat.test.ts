import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { useChildProcesses } from '../support/processes.ts';
import { createDb, eventually, isolatedDatabase, jobState, logLines, outboxRows, seedInvitation, spawnWorker, tuneQueue } from './support.ts';

const HOST_SWEEP = 'the worker process was gone (found by a worker on its host)';
const NO_HEARTBEAT = 'no heartbeat: the worker running it was gone or frozen';
const UNSEEN = 'no worker recorded this attempt: the worker that fetched it stopped before it began';

/**
 * A worker killed before its first registry heartbeat — right after it fetched a job, so no
 * heartbeat ever listed that job — has its job back within two heartbeat intervals plus one beat
 * of another worker (src/jobs/worker-registry.ts), not after pg-boss's next supervise pass. Real
 * worker processes; the second runs pg-boss's production supervise interval (30 s), so it is our
 * registry beat that finds the job. No timing is asserted: REPORT_RECOVERY=1 prints the recovery.
 */
describe('a worker killed before its first heartbeat', function () {
  this.timeout(120_000);
  const queue = invitationEmailJob.name;
  let url: string;
  let db: Db;
  const worker = useChildProcesses((env: Record<string, string> = {}) => spawnWorker(url, { LOG_LEVEL: 'info', ...env }));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
  });
  after(async () => {
    await db.destroy();
  });

  /** A worker process working its queues; its first registry heartbeat is WORKER_HEARTBEAT_SECONDS (5) after it registered. */
  const startWorker = async (env: Record<string, string> = {}) => {
    const child = worker(env);
    await child.waitForOutput(/"msg":"worker started"/);
    const row = (await db('job_workers').where({ pid: child.child.pid }).first('id')) as { id: string };
    return { process: child, id: row.id };
  };

  /** Kills the worker's process group at once and checks the premise: no heartbeat of it ever listed a job. */
  const kill = async (victim: Awaited<ReturnType<typeof startWorker>>) => {
    process.kill(-victim.process.child.pid!, 'SIGKILL');
    const killedAt = Date.now();
    expect((await victim.process.exited).signal).to.equal('SIGKILL');
    expect(await db('job_workers').where({ id: victim.id }).first('in_flight', db.raw('last_heartbeat_at = started_at AS never_beat'))).to.deep.equal({
      in_flight: [],
      never_beat: true,
    });
    return killedAt;
  };

  const attempts = (jobId: string) =>
    db('job_attempts')
      .where({ job_id: jobId })
      .orderBy([{ column: 'attempt' }, { column: 'id' }])
      .select('attempt', 'outcome', 'worker_id', db.raw(`error->>'message' AS message`));

  /** When the retry began (pg-boss's started_on of the completed job), after the kill. */
  const report = async (what: string, jobId: string, killedAt: number) => {
    const { started_on } = (await db('pgboss.job').where({ id: jobId }).first('started_on')) as { started_on: Date };
    const [killed] = await attempts(jobId);
    if (process.env.REPORT_RECOVERY)
      console.log(`      ${what}: retried ${((started_on.getTime() - killedAt) / 1000).toFixed(1)} s after the kill (${JSON.stringify(killed ?? null)})`);
  };

  it('killed right after its fetch: its job is failed for its stale pg-boss heartbeat (or as the lost worker’s) and a second worker completes it', async () => {
    const first = await startWorker({ EMAIL_SANDBOX_DELAY_MS: '60000' });
    const { invitationId, jobId } = await seedInvitation(db, url);
    await eventually('the first worker fetched the job', async () => (await jobState(db, jobId))?.state === 'active', { everyMs: 5 });
    const killedAt = await kill(first);

    const second = await startWorker({ WORKER_SUPERVISE_INTERVAL_SECONDS: '30' });
    await eventually('the second worker completed the job', async () => (await jobState(db, jobId))?.state === 'completed', { everyMs: 100 });
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 1 });
    expect(await outboxRows(db, invitationId)).to.have.length(1);
    await report('killed right after its fetch', jobId, killedAt);

    const history = await eventually('the killed attempt is closed in the history', async () => {
      const rows = await attempts(jobId);
      return rows.length === 2 && rows.every((row) => row.outcome !== null) && rows;
    });
    expect(history[1]).to.deep.equal({ attempt: 1, outcome: 'completed', worker_id: second.id, message: null });
    // Killed before its start reached the history (written within 100 ms of the fetch): recorded with no
    // worker — by the sweep that failed the job for its heartbeat, or, should the retry begin first, by the
    // retry's own start filling in the attempt nobody recorded; killed after: closed by the host's sweep.
    expect(history[0]).to.deep.equal(
      history[0].worker_id === null
        ? { attempt: 0, outcome: 'lost', worker_id: null, message: history[0].message === UNSEEN ? UNSEEN : NO_HEARTBEAT }
        : { attempt: 0, outcome: 'lost', worker_id: first.id, message: HOST_SWEEP },
    );
    const found = logLines(second.process.stdout()).filter(
      (line) => line.msg === 'attempts whose heartbeat stopped failed so they are retried' || (line.msg.startsWith('worker lost') && line.failed === 1),
    );
    expect(found, second.process.stdout()).to.have.length(1);
  });

  it('killed once its attempt was written, on a queue with no pg-boss heartbeat: the host’s sweep fails the attempt it wrote', async () => {
    await tuneQueue(url, queue, { heartbeatSeconds: null });
    const first = await startWorker({ EMAIL_SANDBOX_DELAY_MS: '60000' });
    const { invitationId, jobId } = await seedInvitation(db, url);
    await eventually(
      'the first worker wrote the attempt',
      () => db('job_attempts').where({ job_id: jobId, worker_id: first.id }).whereNull('ended_at').first('id'),
      {
        everyMs: 5,
      },
    );
    const killedAt = await kill(first);

    const second = await startWorker({ WORKER_SUPERVISE_INTERVAL_SECONDS: '30' });
    await eventually('the second worker completed the job', async () => (await jobState(db, jobId))?.state === 'completed', { everyMs: 100 });
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 1 });
    expect(await outboxRows(db, invitationId)).to.have.length(1);
    await report('killed after its attempt was written (no pg-boss heartbeat)', jobId, killedAt);

    const history = await eventually('both attempts are in the history', async () => {
      const rows = await attempts(jobId);
      return rows.length === 2 && rows.every((row) => row.outcome !== null) && rows;
    });
    expect(history).to.deep.equal([
      { attempt: 0, outcome: 'lost', worker_id: first.id, message: HOST_SWEEP },
      { attempt: 1, outcome: 'completed', worker_id: second.id, message: null },
    ]);
    const lost = logLines(second.process.stdout()).filter((line) => line.msg.startsWith('worker lost') && line.worker_id === first.id);
    expect(lost.map((line) => ({ jobs: line.jobs, failed: line.failed, reason: line.reason }))).to.deep.equal([
      { jobs: 1, failed: 1, reason: 'its process is gone' },
    ]);
  });
});
