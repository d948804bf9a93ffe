import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { useChildProcesses } from '../support/processes.ts';
import { createDb, eventually, expireAttemptsQuickly, isolatedDatabase, jobState, outboxRows, seedInvitation, spawnWorker } from './support.ts';

/** Real worker processes on their own database: killed mid-job, and stopped gracefully. */
describe('worker processes', function () {
  this.timeout(60_000);
  let url: string;
  let db: Db;
  const worker = useChildProcesses((env: Record<string, string> = {}) => spawnWorker(url, env));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    await expireAttemptsQuickly(url, invitationEmailJob.name, 2);
  });
  after(async () => {
    await db.destroy();
  });

  it('retries the job of a worker killed after the side effect, and the e-mail is recorded exactly once', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    // The first worker records the e-mail, then stalls before completing the job.
    const first = worker({ EMAIL_SANDBOX_DELAY_MS: '60000' });
    await eventually(async () => (await jobState(db, jobId))?.state === 'active' && (await outboxRows(db, invitationId)).length === 1);
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'active', retry_count: 0 });

    // The retried attempt is not NOTIFYed: the backstop poll finds it.
    worker({ WORKER_POLL_INTERVAL_SECONDS: '1' });
    const done = await eventually(async () => {
      const job = await jobState(db, jobId);
      return job?.state === 'completed' ? job : undefined;
    });
    expect(done.retry_count).to.equal(1);
    const rows = await outboxRows(db, invitationId);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ provider: 'sandbox', subject: 'Inviter invited you to Crash Co' });
  });

  it('finishes the running job on SIGTERM, then exits 0', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    const child = worker({ EMAIL_SANDBOX_DELAY_MS: '1500' });
    await eventually(async () => (await outboxRows(db, invitationId)).length === 1);
    expect((await jobState(db, jobId))?.state).to.equal('active');
    child.child.kill('SIGTERM');
    const exit = await child.exited;
    expect({ code: exit.code, signal: exit.signal }).to.deep.equal({ code: 0, signal: null });
    expect(await jobState(db, jobId)).to.deep.equal({ state: 'completed', retry_count: 0 });
  });
});
