import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { dispatchDueTasks } from '../../src/scheduled-tasks/dispatcher.ts';
import { isolatedDatabase } from '../jobs/support.ts';

/**
 * The dispatcher with an injected clock (no test waits for a real minute) on a database of its own
 * with no worker: three dispatchers racing fire each slot once; downtime folds into one run;
 * disabled and deleted tasks fire nothing; daylight-saving slots land where the timezone says.
 */
describe('scheduled tasks: the dispatcher fires each slot exactly once', function () {
  this.timeout(60_000);
  let url: string;
  const pools: Db[] = [];
  const bosses: ReturnType<typeof createBoss>[] = [];
  let db: Db;
  let org: string;
  let userId: string;

  before(async () => {
    url = await isolatedDatabase();
    for (let i = 0; i < 3; i++) {
      pools.push(createDb(url, { max: 3 }));
      const boss = createBoss(url, 'web');
      await boss.start();
      bosses.push(boss);
    }
    db = pools[0]!;
    userId = `user_${randomUUID().slice(0, 8)}`;
    await db('users').insert({ id: userId, email: `${userId}@example.test`, name: 'Scheduler' });
    [{ id: org }] = await db('organizations')
      .insert({ name: 'Cron Co', slug: `cron-${randomUUID().slice(0, 8)}`, created_by_id: userId })
      .returning('id');
  });
  after(async () => {
    for (const boss of bosses) await boss.stop({ graceful: false, close: true });
    for (const pool of pools) await pool.destroy();
  });

  /** Three dispatchers (each its own pool and queue sender), all at `now`. */
  const dispatchRacing = (now: Date) => Promise.all(pools.map((pool, i) => dispatchDueTasks({ db: pool, jobs: new JobQueue(bosses[i]!) }, now)));
  async function task(cron: string, timezone: string, nextRunAt: string, extra: Record<string, unknown> = {}) {
    const [row] = await db('scheduled_tasks')
      .insert({ organization_id: org, created_by_id: userId, title: `Task ${cron}`, prompt: 'Report', cron, timezone, next_run_at: nextRunAt, ...extra })
      .returning('id');
    return row.id as string;
  }
  const runsOf = (taskId: string) =>
    db('scheduled_task_runs').where({ task_id: taskId }).orderBy('scheduled_for').select('trigger', 'scheduled_for', 'missed_slots', 'status');
  const nextOf = async (taskId: string) => ((await db('scheduled_tasks').where({ id: taskId }).first('next_run_at')).next_run_at as Date | null)?.toISOString();
  const jobsOf = async (taskId: string) =>
    Number(
      (
        await db('pgboss.job')
          .where({ name: 'scheduled-tasks.start-runs.v1' })
          .whereRaw(`data->'run_ids' \\?| ARRAY(SELECT id::text FROM scheduled_task_runs WHERE task_id = ?)`, [taskId])
          .count('* as n')
          .first()
      )?.n,
    );

  it('three dispatchers at the same moment: one run, one job, next_run_at past now; again: nothing', async () => {
    const id = await task('0 * * * *', 'UTC', '2026-01-01T10:00:00Z');
    const created = await dispatchRacing(new Date('2026-01-01T10:00:30Z'));
    expect(created.reduce((a, b) => a + b, 0)).to.equal(1);
    expect(await runsOf(id)).to.deep.equal([{ trigger: 'schedule', scheduled_for: new Date('2026-01-01T10:00:00Z'), missed_slots: 0, status: 'queued' }]);
    expect(await jobsOf(id)).to.equal(1);
    expect(await nextOf(id)).to.equal('2026-01-01T11:00:00.000Z');
    expect((await dispatchRacing(new Date('2026-01-01T10:00:45Z'))).reduce((a, b) => a + b, 0)).to.equal(0);
    // The next slot, when its minute comes.
    await dispatchRacing(new Date('2026-01-01T11:00:05Z'));
    expect((await runsOf(id)).map((r) => r.scheduled_for.toISOString())).to.deep.equal(['2026-01-01T10:00:00.000Z', '2026-01-01T11:00:00.000Z']);
  });

  it('after five hours down: one run for the latest slot, saying five were missed; no storm', async () => {
    const id = await task('0 * * * *', 'UTC', '2026-01-02T05:00:00Z');
    await dispatchRacing(new Date('2026-01-02T10:00:30Z'));
    expect(await runsOf(id)).to.deep.equal([{ trigger: 'schedule', scheduled_for: new Date('2026-01-02T10:00:00Z'), missed_slots: 5, status: 'queued' }]);
    expect(await nextOf(id)).to.equal('2026-01-02T11:00:00.000Z');
  });

  it('disabled or deleted tasks fire nothing', async () => {
    const disabled = await task('*/5 * * * *', 'UTC', '2026-01-03T10:00:00Z', { enabled: false });
    const deleted = await task('*/5 * * * *', 'UTC', '2026-01-03T10:00:00Z', { deleted_at: new Date('2026-01-03T09:00:00Z'), deleted_by_id: userId });
    await dispatchRacing(new Date('2026-01-03T10:01:00Z'));
    expect(await runsOf(disabled)).to.deep.equal([]);
    expect(await runsOf(deleted)).to.deep.equal([]);
  });

  it('daylight saving in Europe/Berlin: 02:30 fires once at 03:00 on spring-forward day and once on fall-back day', async () => {
    const spring = await task('30 2 * * *', 'Europe/Berlin', '2026-03-29T01:00:00Z');
    await dispatchRacing(new Date('2026-03-29T01:00:10Z'));
    expect((await runsOf(spring)).map((r) => r.scheduled_for.toISOString())).to.deep.equal(['2026-03-29T01:00:00.000Z']);
    expect(await nextOf(spring)).to.equal('2026-03-30T00:30:00.000Z'); // 02:30 CEST

    const autumn = await task('30 2 * * *', 'Europe/Berlin', '2026-10-25T00:30:00Z');
    await dispatchRacing(new Date('2026-10-25T00:30:10Z'));
    // 02:30 happens twice that night (CEST, then CET): the task fires once, the next run is the next day.
    await dispatchRacing(new Date('2026-10-25T01:30:10Z'));
    expect((await runsOf(autumn)).map((r) => r.scheduled_for.toISOString())).to.deep.equal(['2026-10-25T00:30:00.000Z']);
    expect(await nextOf(autumn)).to.equal('2026-10-26T01:30:00.000Z'); // 02:30 CET
  });
});
