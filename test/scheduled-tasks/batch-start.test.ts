import { expect } from 'chai';
import type { PgBoss } from 'pg-boss';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { dispatchDueTasks } from '../../src/scheduled-tasks/dispatcher.ts';
import { scheduledTaskStartJob } from '../../src/scheduled-tasks/jobs.ts';
import { runnableJob } from '../../src/app/jobs.ts';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import { addMember, createOrganization, createSkill, newUser, type TestUser } from '../support/factories.ts';
import { type Stack, startStack } from '../support/stack.ts';

/**
 * The dispatcher's batch of due runs starts in one job (src/scheduled-tasks/start.ts) on a real
 * worker: every run its own conversation and chat turn, run to the end; a run its creator can no
 * longer start fails alone, saying why, and leaves nothing behind; the start job sent again (a
 * retry after its step committed) starts nothing twice; a run of a task disabled meanwhile is canceled.
 */
describe('scheduled tasks: a batch of due runs starts at once', function () {
  this.timeout(60_000);
  let stack: Stack;
  let db: Db;
  let boss: PgBoss;
  let jobs: JobQueue;
  let owner: TestUser;
  let member: TestUser;
  let org: string;

  before(async () => {
    stack = await startStack({ WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    db = stack.db;
    boss = createBoss(stack.url, 'web');
    await boss.start();
    jobs = new JobQueue(boss, [runnableJob(scheduledTaskStartJob)]);
    owner = newUser();
    member = newUser();
    org = await createOrganization(stack.server, owner);
    await addMember(db, org, member);
  });
  after(async () => {
    await boss?.stop({ graceful: false, close: true });
    await stack?.stop();
  });

  async function task(by: TestUser, fields: Record<string, unknown> = {}) {
    const [row] = await db('scheduled_tasks')
      .insert({
        organization_id: org,
        created_by_id: by.id,
        title: `Brief by ${by.name}`,
        prompt: 'Three ideas for lunch.',
        cron: '0 7 * * *',
        timezone: 'UTC',
        model: 'sandbox-chat',
        next_run_at: new Date(Date.now() - 1000),
        ...fields,
      })
      .returning('id');
    return row.id as string;
  }
  const runOf = (taskId: string) => db('scheduled_task_runs').where({ task_id: taskId }).first();
  const ended = (taskId: string) =>
    eventually(`the run of task ${taskId} ended`, async () => {
      const run = await runOf(taskId);
      return run && !['queued', 'running'].includes(run.status) ? run : null;
    });
  const counts = async () => ({
    conversations: Number((await db('conversations').where({ organization_id: org }).count('* as n').first())?.n),
    chatRuns: Number((await db('chat_runs').where({ organization_id: org }).count('* as n').first())?.n),
  });

  it('one job starts the batch; each run answers in a conversation of its own; a refused one fails alone; sent again it starts nothing twice', async () => {
    const skill = await createSkill(stack.server, owner, org, { body: 'You plan team lunches for twelve people.' });
    const plain = await task(owner);
    const withSkill = await task(owner, { skill_id: skill.id });
    const byFormerMember = await task(member);
    // The creator left the organization after creating the task: their runs cannot act for them.
    await db('organization_members').where({ organization_id: org, user_id: member.id }).delete();

    expect(await dispatchDueTasks({ db, jobs }, new Date())).to.equal(3);
    const runIds = (await db('scheduled_task_runs').whereIn('task_id', [plain, withSkill, byFormerMember]).select('id')).map((r) => r.id as string);
    const startJobs = await db('pgboss.job').where({ name: scheduledTaskStartJob.name }).select('id', 'data');
    expect(startJobs).to.have.length(1);
    expect([...startJobs[0].data.run_ids].sort()).to.deep.equal([...runIds].sort());

    const [first, second, refused] = [await ended(plain), await ended(withSkill), await ended(byFormerMember)];
    expect(first).to.include({ status: 'succeeded', error: null });
    expect(second).to.include({ status: 'succeeded', error: null });
    expect(first.started_at).to.be.an.instanceOf(Date);
    expect(first.conversation_id).to.not.equal(second.conversation_id);
    const conversation = await db('conversations').where({ id: first.conversation_id }).first();
    expect(conversation).to.include({ schedule_id: plain, created_by_id: owner.id, message_count: 2, active_run_id: null });
    const withSkillMessages = await db('conversation_messages')
      .where({ conversation_id: second.conversation_id })
      .orderByRaw('created_at, parent_id IS NOT NULL')
      .select('role', 'content');
    expect(withSkillMessages.map((m) => m.role)).to.deep.equal(['system', 'user', 'assistant']);
    expect(withSkillMessages[0].content).to.equal('You plan team lunches for twelve people.');
    const activity = await db('activity_events').where({ subject_id: first.conversation_id, action: 'conversation.created' }).first();
    expect(activity).to.include({ organization_id: org, actor_id: owner.id, subject_type: 'chat_conversation' });
    // Refused alone: failed with the reason, nothing of it written.
    expect(refused.status).to.equal('failed');
    expect(refused.error.code).to.be.a('string').and.not.equal('');
    expect(refused).to.include({ conversation_id: null, chat_run_id: null });
    expect(await db('conversations').where({ schedule_id: byFormerMember }).first()).to.equal(undefined);
    await eventually('the start job completed', async () =>
      (await db('pgboss.job').where({ id: startJobs[0].id }).first('state')).state === 'completed' ? true : null,
    );

    // The same batch again (as a retry after the step committed would): every run has started or ended, nothing is opened twice.
    const before = await counts();
    expect(before).to.deep.equal({ conversations: 2, chatRuns: 2 });
    const disabled = await task(owner, { enabled: false, next_run_at: null });
    const [stoppedRun] = await db('scheduled_task_runs')
      .insert({ task_id: disabled, organization_id: org, trigger: 'schedule', scheduled_for: new Date(), prompt: 'x', email_recipients: [] })
      .returning('id');
    const again = await db.transaction((trx) => jobs.enqueue(trx, scheduledTaskStartJob, { run_ids: [...runIds, stoppedRun.id] }, { organizationId: null }));
    await eventually('the second start job completed', async () =>
      (await db('pgboss.job').where({ id: again }).first('state')).state === 'completed' ? true : null,
    );
    expect(await counts()).to.deep.equal(before);
    expect(await db('scheduled_task_runs').where({ id: stoppedRun.id }).first('status', 'error', 'finished_at')).to.deep.include({
      status: 'canceled',
      error: { code: 'task_stopped', message: 'the task was disabled or deleted before this run started' },
    });
    expect((await runOf(plain)).status).to.equal('succeeded');
  });
});
