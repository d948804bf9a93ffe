import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { connectionBudget } from '../../src/db/budget.ts';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { testConfig } from '../support/config.ts';
import { useChildProcesses } from '../support/processes.ts';
import { createDb, eventually, isolatedDatabase, spawnWorker } from './support.ts';

type Db = ReturnType<typeof createDb>;

/** An organization with `count` invitations whose e-mail jobs (a waiting kind) are enqueued in one transaction. */
async function inviteMany(db: Db, url: string, count: number): Promise<{ organizationId: string; jobIds: string[] }> {
  const boss = createBoss(url, 'web');
  await boss.start();
  try {
    return await db.transaction(async (trx) => {
      const userId = `user_${randomUUID().slice(0, 8)}`;
      await trx('users').insert({ id: userId, email: `${userId}@example.test`, name: 'Inviter' });
      const [org] = await trx('organizations')
        .insert({ name: 'Busy Co', slug: `busy-${randomUUID().slice(0, 8)}`, created_by_id: userId })
        .returning('id');
      const invitations = await trx('invitations')
        .insert(
          Array.from({ length: count }, () => ({
            organization_id: org.id,
            email: `guest-${randomUUID().slice(0, 8)}@example.test`,
            role: 'member',
            invited_by_id: userId,
            expires_at: trx.raw(`now() + interval '7 days'`),
          })),
        )
        .returning('id');
      const queue = new JobQueue(boss);
      const jobIds: string[] = [];
      for (const invitation of invitations)
        jobIds.push(await queue.enqueue(trx, invitationEmailJob, { invitation_id: invitation.id }, { organizationId: org.id }));
      return { organizationId: org.id as string, jobIds };
    });
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

const jobsIn = async (db: Db, ids: string[], state: string) =>
  (await db.raw(`SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY(?::uuid[]) AND state = ?`, [ids, state])).rows[0].n as number;

describe('fair share between organizations on waiting work (issue 34)', function () {
  this.timeout(180_000);
  let url: string;
  let db: Db;
  const worker = useChildProcesses((env: Record<string, string>) => spawnWorker(url, env));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
  });
  after(async () => db.destroy());

  it("an organization's 200 waiting jobs use every slot, and another organization's one job starts and ends without waiting behind them, on a fixed pool", async () => {
    // Two workers × 16 waiting slots; each e-mail waits 500 ms on its (sandbox) provider.
    const env = { WORKER_WAITING_SLOTS: '16', EMAIL_SANDBOX_DELAY_MS: '500', WORKER_POLL_INTERVAL_SECONDS: '1', LOG_LEVEL: 'info' };
    const workers = [worker(env), worker(env)];
    for (const child of workers) await child.waitForOutput(/worker started/);

    const busy = await inviteMany(db, url, 200);
    // No small cap: the busy organization alone takes (nearly) every slot of both workers.
    let peakBusy = 0;
    await eventually('the busy organization runs on most of the fleet’s 32 slots', async () => {
      peakBusy = Math.max(peakBusy, await jobsIn(db, busy.jobIds, 'active'));
      return peakBusy >= 24;
    });

    const other = await inviteMany(db, url, 1);
    const [otherJob] = other.jobIds as [string];
    let peakConnections = 0;
    await eventually('the other organization’s job completes', async () => {
      const { rows } = await db.raw(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'workspace-worker%'`,
      );
      peakConnections = Math.max(peakConnections, rows[0].n);
      return (await jobsIn(db, [otherJob], 'completed')) === 1;
    });
    // An ordering, not a time: the other's job ended before half of the busy organization's had.
    const busyDone = await jobsIn(db, busy.jobIds, 'completed');
    expect(busyDone, 'busy jobs completed when the other one had').to.be.below(100);
    await eventually('every busy job completes', async () => (await jobsIn(db, busy.jobIds, 'completed')) === 200);
    const ordered = await db.raw(
      `SELECT (SELECT completed_on FROM pgboss.job WHERE id = ?) < (SELECT completed_on FROM pgboss.job WHERE id = ANY(?::uuid[]) ORDER BY completed_on LIMIT 1 OFFSET 99) AS before`,
      [otherJob, busy.jobIds],
    );
    expect(ordered.rows[0].before, 'the other organization’s job completed before the busy one’s 100th').to.equal(true);

    // 16 waiting slots per worker on every queue, yet connections stay within the fixed budget of each.
    const budget = connectionBudget(testConfig(env), 'worker');
    expect(peakConnections).to.be.at.most(2 * budget.total);
    for (const child of workers) child.child.kill('SIGTERM');
    for (const child of workers) expect((await child.exited).code).to.equal(0);
  });
});
