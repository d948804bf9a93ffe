import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';

/**
 * Issue 36: a scheduled task acts later for its creator. Bob creates a task mailing Carol and is then
 * removed; the next run fired for the creator (the job console's trigger, as a scheduled slot) fails
 * saying why, nothing is held or charged to Bob, and Carol gets no answer.
 */
describe('scheduled tasks: the creator removed between runs', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let org: string;

  before(async () => {
    stack = await startStack({ CHAT_SANDBOX_DELAY_MS: '20', WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    ({ server, db } = stack);
    [alice, bob, carol] = [newUser(), newUser(), newUser()];
    org = await createOrganization(server, alice);
    await addMember(db, org, bob);
    await addMember(db, org, carol);
  });
  after(() => stack?.stop());

  it('the next run for the creator fails saying why; nothing is charged to them, no e-mail goes out', async () => {
    const created = await server.request('post', '/scheduled-tasks', {
      token: bob.token,
      body: {
        organization_id: org,
        title: 'Bob’s brief',
        prompt: 'Name a colour.',
        schedule: { cron: '0 7 * * *', timezone: 'UTC' },
        email_recipients: [carol.id],
        visibility: 'workspace',
      },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const taskId = created.body.scheduled_task.id as string;
    expect((await server.request('delete', `/organizations/${org}/members/${bob.id}`, { token: alice.token })).status).to.equal(204);

    const fired = await server.request('post', `/ops/schedules/task:${taskId}/trigger`, { token: alice.token });
    expect(fired.status, JSON.stringify(fired.body)).to.equal(202);
    const queued = await db('scheduled_task_runs').where({ task_id: taskId }).first();
    expect(queued).to.include({ trigger: 'manual', requested_by_id: null });
    const run = await eventually('the run ended', async () => {
      const row = await db('scheduled_task_runs').where({ id: queued.id }).first();
      return ['queued', 'running'].includes(row.status) ? null : row;
    });
    expect(run).to.include({ status: 'failed', conversation_id: null, chat_run_id: null });
    expect(run.error).to.deep.equal({
      code: 'forbidden',
      message: `the run acts as ${bob.id} (the task’s creator), who is no longer a member of the organization`,
    });
    // Nothing held or charged to Bob; no conversation opened in his name.
    expect(await db('credit_holds').where({ organization_id: org, user_id: bob.id })).to.deep.equal([]);
    expect(await db('chat_runs').where({ organization_id: org, user_id: bob.id })).to.deep.equal([]);
    expect(await db('conversations').where({ schedule_id: taskId })).to.deep.equal([]);
    // Carol, who can read the task, gets no answer of a run that did not happen.
    expect(await db('email_outbox').whereLike('idempotency_key', `scheduled-task-run:${run.id}:%`)).to.deep.equal([]);
  });
});
