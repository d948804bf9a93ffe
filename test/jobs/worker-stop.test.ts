import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { useChildProcesses } from '../support/processes.ts';
import { createDb, eventually, isolatedDatabase, jobState, logLines, outboxRows, seedInvitation, spawnWorker, tuneQueue } from './support.ts';

/** Real worker processes: a stop that hands back what it could not finish, and a start that recovers what a hard kill left. */
describe('worker stop and restart', function () {
  this.timeout(90_000);
  const queue = invitationEmailJob.name;
  let url: string;
  let db: Db;
  const worker = useChildProcesses((env: Record<string, string> = {}) => spawnWorker(url, env));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
  });
  after(async () => {
    await db.destroy();
  });

  it('hands back a job still running after the grace: created, no attempt used, and another worker runs it to completion', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    const first = worker({ EMAIL_SANDBOX_DELAY_MS: '60000', SHUTDOWN_GRACE_MS: '500', LOG_LEVEL: 'info' });
    await eventually('the first worker recorded the e-mail and is still running the job', async () => {
      return (await outboxRows(db, invitationId)).length === 1 && (await jobState(db, jobId))?.state === 'active';
    });

    first.child.kill('SIGTERM');
    const exit = await first.exited;
    expect({ code: exit.code, signal: exit.signal }, exit.stderr).to.deep.equal({ code: 0, signal: null });
    const lines = logLines(exit.stdout);
    expect(lines.find((line) => line.msg === 'handing back the jobs still running after the grace')?.jobs).to.deep.equal([jobId]);
    expect(lines.filter((line) => line.level >= 40)).to.deep.equal([]);
    // Claimable now, at the attempt it had: the next claim does not count as a retry.
    expect(await db('pgboss.job').where({ id: jobId }).first('state', 'retry_count', db.raw('start_after <= now() AS claimable'))).to.deep.equal({
      state: 'created',
      retry_count: 0,
      claimable: true,
    });

    worker();
    await eventually('a second worker completed the job', async () => (await jobState(db, jobId))?.state === 'completed');
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 0 });
    expect(await outboxRows(db, invitationId)).to.have.length(1);
  });

  it('a worker SIGKILLed with a job in flight: the next worker on the same host retries the job at once', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    const first = worker({ EMAIL_SANDBOX_DELAY_MS: '60000', WORKER_HEARTBEAT_SECONDS: '1' });
    const killed = await eventually<{ id: string }>('the first worker reported the job in its heartbeat', () =>
      db('job_workers')
        .where({ pid: first.child.pid })
        .whereRaw('in_flight @> ?::jsonb', [JSON.stringify([{ job_id: jobId }])])
        .first('id'),
    );
    process.kill(-first.child.pid!, 'SIGKILL');
    await first.exited;

    const next = worker({ WORKER_HEARTBEAT_SECONDS: '1', LOG_LEVEL: 'info' });
    await eventually('the next worker completed the job', async () => (await jobState(db, jobId))?.state === 'completed');
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 1 });
    expect(await outboxRows(db, invitationId)).to.have.length(1);
    // Declared lost by the host's sweep (the process was gone), not by WORKER_LOST_AFTER_SECONDS or pg-boss's heartbeat.
    const history = await eventually('the attempt history has both attempts', async () => {
      const attempts = await db('job_attempts').where({ job_id: jobId }).orderBy('id').select('outcome', 'worker_id', db.raw(`error->>'message' AS message`));
      // Each is written when it begins and completed at its end: wait for both ends.
      return attempts.length === 2 && attempts.every((a) => a.outcome !== null) && attempts;
    });
    expect(history[0]).to.deep.equal({ outcome: 'lost', worker_id: killed.id, message: 'the worker process was gone (found by a worker on its host)' });
    expect(history[1].outcome).to.equal('completed');
    expect(await db('job_workers').where({ id: killed.id }).first(db.raw('lost_at IS NOT NULL AS lost'))).to.deep.equal({ lost: true });
    const lost = logLines(next.stdout()).filter((line) => line.msg.startsWith('worker lost') && line.worker_id === killed.id);
    expect(lost.map((line) => line.reason)).to.deep.equal(['its process is gone']);
  });

  it('at start, runs pg-boss supervision at once: an attempt whose heartbeat went stale while no worker ran is retried', async () => {
    const { jobId } = await seedInvitation(db, url);
    // A worker that died with its machine: the job was claimed, and its heartbeat stopped long ago.
    await tuneQueue(url, queue, { heartbeatSeconds: 10, retryDelay: 0, retryBackoff: false });
    const boss = createBoss(url, 'web');
    await boss.start();
    try {
      const [claimed] = await boss.fetch(queue);
      expect(claimed?.id).to.equal(jobId);
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    await db('pgboss.job')
      .where({ id: jobId })
      .update({ heartbeat_on: db.raw(`now() - interval '1 hour'`) });
    // So did the last monitor pass before it (pg-boss monitors a queue at most once per interval, across all workers).
    await db('pgboss.queue')
      .where({ name: queue })
      .update({ monitor_on: db.raw(`now() - interval '1 hour'`), monitor_claim_on: null });

    // Its periodic supervision would come only an interval (here 30 minutes) after start.
    worker({ WORKER_SUPERVISE_INTERVAL_SECONDS: '1800' });
    await eventually('the job was retried and completed', async () => (await jobState(db, jobId))?.state === 'completed');
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 1 });
  });
});
