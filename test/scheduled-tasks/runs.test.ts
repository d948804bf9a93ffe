import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { eventually } from '../jobs/support.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { fakeSmtp } from '../support/smtp.ts';
import { type Stack, startStack } from '../support/stack.ts';

/**
 * Runs end to end: a real web process and worker; each run opens a conversation, performs a chat
 * run through the conversations machinery (sandbox model, slowed to stop it mid-stream) and mails
 * the answer through the sandbox outbox.
 */
describe('scheduled task runs (trigger, one-off, cancel, skipped, e-mail)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let owner: TestUser;
  let member: TestUser;
  let org: string;

  before(async () => {
    stack = await startStack({ CHAT_SANDBOX_DELAY_MS: '40', WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    ({ server, db } = stack);
    owner = newUser();
    member = newUser();
    org = await createOrganization(server, owner);
    await addMember(db, org, member);
  });
  after(() => stack?.stop());

  async function createTask(body: Record<string, unknown> = {}) {
    const res = await server.request('post', '/scheduled-tasks', {
      token: owner.token,
      body: {
        organization_id: org,
        title: 'Morning brief',
        prompt: 'Give me three ideas for a team lunch.',
        schedule: { cron: '0 7 * * *', timezone: 'Europe/Lisbon' },
        email_recipients: [member.id],
        // The recipients must be able to read the task.
        visibility: 'workspace',
        ...body,
      },
    });
    expect(res.status).to.equal(201);
    return res.body.scheduled_task.id as string;
  }
  const ended = (runId: string) =>
    eventually(`run ${runId} ended`, async () => {
      const run = await db('scheduled_task_runs').where({ id: runId }).first();
      return ['queued', 'running'].includes(run.status) ? null : run;
    });

  it('trigger: a conversation of its own answers the prompt (after the skill), the credits are recorded, the answer is e-mailed', async () => {
    const skill = await server.request('post', '/skills', {
      token: owner.token,
      body: { organization_id: org, name: 'Lunch planner', description: 'Plans lunches', body: 'You plan team lunches for twelve people.' },
    });
    expect(skill.status).to.equal(201);
    const taskId = await createTask({ skill_id: skill.body.skill?.id ?? skill.body.id });
    const res = await server.request('post', `/scheduled-tasks/${taskId}/trigger`, { token: owner.token });
    // Accepted, not yet done: 202 with the queued run (CONVENTIONS §4).
    expect(res.status).to.equal(202);
    expect(res.body.run).to.include({
      task_id: taskId,
      trigger: 'manual',
      status: 'queued',
      prompt: 'Give me three ideas for a team lunch.',
      requested_by_id: owner.id,
    });
    const run = await ended(res.body.run.id);
    expect(run).to.include({ status: 'succeeded', error: null });
    expect(run.credits_used).to.be.greaterThan(0);
    const conversation = await db('conversations').where({ id: run.conversation_id }).first();
    expect(conversation).to.include({ schedule_id: taskId, created_by_id: owner.id, message_count: 3 });
    // The run writes its conversation in one transaction (one created_at): the tree orders the first two.
    const turns = await db('conversation_messages')
      .where({ conversation_id: run.conversation_id })
      .orderByRaw('created_at, parent_id IS NOT NULL')
      .select('role', 'content');
    expect(turns.slice(0, 2)).to.deep.equal([
      { role: 'system', content: 'You plan team lunches for twelve people.' },
      { role: 'user', content: 'Give me three ideas for a team lunch.' },
    ]);
    const answer = await db('conversation_messages').where({ conversation_id: run.conversation_id, role: 'assistant' }).first('content');
    expect(answer.content).to.match(/^\[sandbox answer\]/);
    const mail = await eventually('the answer was e-mailed', async () =>
      db('email_outbox')
        .where({ idempotency_key: `scheduled-task-run:${run.id}:${member.id}` })
        .first(),
    );
    expect(mail).to.include({ to_address: member.email, subject: 'Scheduled task: Morning brief' });
    expect(mail.text_body).to.include(answer.content);
    expect(mail.text_body).to.include(`/conversations/${run.conversation_id}`);
    // Scheduled conversations stay out of the default conversation list.
    const list = await server.request('get', '/conversations', { token: owner.token, query: { organization_id: org } });
    expect(list.body.items.map((c: { id: string }) => c.id)).not.to.include(run.conversation_id);

    const runs = await server.request('get', '/scheduled-task-runs', { token: owner.token, query: { organization_id: org, task_id: taskId } });
    expect(runs.body.items.map((r: { id: string; status: string }) => [r.id, r.status])).to.deep.equal([[run.id, 'succeeded']]);
    expect(runs.body.items[0]).not.to.have.property('state');
    const succeeded = await server.request('get', '/scheduled-task-runs', {
      token: owner.token,
      query: { organization_id: org, task_id: taskId, status: 'succeeded' },
    });
    expect(succeeded.body.items.map((r: { id: string }) => r.id)).to.deep.equal([run.id]);
    const failed = await server.request('get', '/scheduled-task-runs', {
      token: owner.token,
      query: { organization_id: org, task_id: taskId, status: 'failed' },
    });
    expect(failed.body.items).to.deep.equal([]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a one-off run with overrides; over its credit cap it is refused (402) when triggered, skipped with the reason when the console fires it', async () => {
    const taskId = await createTask({ max_credits_per_run: 1_000_000 });
    const refused = await server.request('post', `/scheduled-tasks/${taskId}/runs`, {
      token: owner.token,
      body: { prompt: 'One-off question', email_recipients: [] },
    });
    expect(refused.status).to.equal(402);
    expect(refused.body.data.issues[0].path).to.deep.equal(['balance']);
    expect(await db('scheduled_task_runs').where({ task_id: taskId })).to.deep.equal([]);
    // The job console's "trigger now" is charged to the creator and checked only when the run starts.
    const res = await server.request('post', `/ops/schedules/task:${taskId}/trigger`, { token: owner.token });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const queued = await db('scheduled_task_runs').where({ task_id: taskId }).first();
    expect(queued).to.include({ trigger: 'manual', max_credits: 1_000_000, requested_by_id: null });
    const run = await ended(queued.id);
    expect(run).to.include({ status: 'skipped', credits_used: 0 });
    expect(run.error.code).to.equal('payment_required');
    // The organization's alert policy is applied at once: a low-balance check was enqueued with the skip.
    const checks = await db('pgboss.job')
      .where({ name: 'billing.balance-alert-check.v1' })
      .whereRaw(`data->>'organization_id' = ?`, [org])
      .count('* as n')
      .first();
    expect(Number(checks?.n)).to.be.at.least(1);
    const bad = await server.request('post', `/scheduled-tasks/${taskId}/runs`, { token: owner.token, body: { email_recipients: ['user_nobody'] } });
    expect(bad.status).to.equal(400);
    expect(bad.body.data.issues[0].path).to.deep.equal(['email_recipients']);
  });

  it('cancel: the running chat run is stopped and charged only what it used; a member without access gets 404', async () => {
    const taskId = await createTask({ email_recipients: [], visibility: 'private' });
    const res = await server.request('post', `/scheduled-tasks/${taskId}/trigger`, { token: owner.token });
    const runId = res.body.run.id as string;
    const started = await eventually('the chat run is streaming', async () => {
      const run = await db('scheduled_task_runs').where({ id: runId }).first();
      if (!run.chat_run_id) return null;
      const chat = await db('chat_runs').where({ id: run.chat_run_id }).first();
      return chat.snapshot.length > 0 ? chat : null;
    });
    expect((await server.request('post', `/scheduled-tasks/${taskId}/runs/cancel`, { token: member.token })).status).to.equal(404);
    const cancel = await server.request('post', `/scheduled-tasks/${taskId}/runs/cancel`, { token: owner.token });
    expect(cancel.status).to.equal(200);
    expect(cancel.body).to.deep.equal({ canceled: 1 });
    const chat = await eventually('the chat run stopped', async () => {
      const row = await db('chat_runs').where({ id: started.id }).first();
      return row.credits_charged !== null ? row : null;
    });
    expect(chat.status).to.equal('stopped');
    const run = await eventually('the run recorded its credits', async () => {
      const row = await db('scheduled_task_runs').where({ id: runId }).first();
      return row.credits_used !== null ? row : null;
    });
    expect(run).to.include({ status: 'canceled', credits_used: chat.credits_charged });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});

/** The same run's e-mail through a real SMTP server (a fake one on loopback, as test/jobs/smtp-email.test.ts does). */
describe('scheduled task runs: the answer by SMTP', function () {
  this.timeout(60_000);
  let stack: Stack;
  let smtp: Awaited<ReturnType<typeof fakeSmtp>>;

  before(async () => {
    smtp = await fakeSmtp();
    stack = await startStack({ WORKER_POLL_INTERVAL_SECONDS: '0.5', SMTP_URL: smtp.url, EMAIL_FROM: 'Workspace <no-reply@mail.example.test>' });
  });
  after(async () => {
    await stack?.stop();
    await smtp?.close();
  });

  it('reaches the recipient with the answer and a link to the conversation', async () => {
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(stack.server, owner);
    await addMember(stack.db, org, member);
    const created = await stack.server.request('post', '/scheduled-tasks', {
      token: owner.token,
      body: {
        organization_id: org,
        title: 'SMTP brief',
        prompt: 'Name a colour.',
        schedule: { cron: '0 7 * * *', timezone: 'UTC' },
        email_recipients: [member.id],
        visibility: 'workspace',
      },
    });
    const res = await stack.server.request('post', `/scheduled-tasks/${created.body.scheduled_task.id}/trigger`, { token: owner.token });
    const mail = await eventually('the SMTP server received the answer', async () => smtp.received.find((m) => m.to.includes(member.email)));
    expect(mail.raw).to.match(/Subject: Scheduled task: SMTP brief/);
    const run = await stack.db('scheduled_task_runs').where({ id: res.body.run.id }).first();
    // The text as the recipient reads it: quoted-printable soft line breaks (`=` at a line's end) joined.
    const text = mail.raw.replace(/=\r?\n/g, '');
    expect(text).to.include(`/conversations/${run.conversation_id}`);
    expect(text).to.include('[sandbox answer]');
  });
});
