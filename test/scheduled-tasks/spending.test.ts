import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { eventually } from '../jobs/support.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';

/**
 * Nobody spends beyond their rights through a scheduled task: a run is charged to whoever
 * triggered it (their spending limit applies), the per-run cap is raised only by the task's owner or
 * an admin, and answers go only to members who can read the task — checked again when they are sent.
 * Across roles: the owner (creator), an admin, an editor grant, a viewer grant, a removed member.
 */
describe('scheduled tasks: spending and recipients across roles', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;

  before(async () => {
    stack = await startStack({ CHAT_SANDBOX_DELAY_MS: '60', WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    ({ server, db } = stack);
  });
  after(() => stack?.stop());

  /** An organization, a private task of its owner (cap 20 per run), an editor and a viewer grant, an admin, a member without access, a removed member. */
  async function workspace(task: Record<string, unknown> = {}) {
    const owner = newUser();
    const org = await createOrganization(server, owner);
    const [admin, editor, viewer, other, removed] = [newUser(), newUser(), newUser(), newUser(), newUser()];
    await addMember(db, org, admin, 'admin');
    for (const user of [editor, viewer, other, removed]) await addMember(db, org, user);
    const created = await server.request('post', '/scheduled-tasks', {
      token: owner.token,
      body: {
        organization_id: org,
        title: 'Brief',
        prompt: 'Name three colours.',
        schedule: { cron: '0 7 * * *', timezone: 'UTC' },
        max_credits_per_run: 20,
        ...task,
      },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.scheduled_task.id as string;
    const grant = async (user: TestUser, role: string) => {
      const res = await server.request('post', `/access/scheduled_task/${id}/grants`, { token: owner.token, body: { user_id: user.id, role } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return res.body.id as string;
    };
    await grant(editor, 'editor');
    await grant(viewer, 'viewer');
    await grant(removed, 'editor');
    expect((await server.request('delete', `/organizations/${org}/members/${removed.id}`, { token: owner.token })).status).to.equal(204);
    const limit = async (user: TestUser, spending_limit: number | null) =>
      expect(
        (await server.request('patch', `/organizations/${org}/members/${user.id}/credits`, { token: owner.token, body: { spending_limit } })).status,
      ).to.equal(200);
    return { org, id, owner, admin, editor, viewer, other, removed, grant, limit };
  }
  const ended = (runId: string) =>
    eventually(`run ${runId} ended`, async () => {
      const run = await db('scheduled_task_runs').where({ id: runId }).first();
      return ['queued', 'running'].includes(run.status) ? null : run;
    });
  const patch = (user: TestUser, id: string, body: Record<string, unknown>) => server.request('patch', `/scheduled-tasks/${id}`, { token: user.token, body });

  it('a trigger is charged to whoever triggers it: limit 0 → 402 naming spending_limit and nothing queued; the run acts as and charges them', async () => {
    const w = await workspace();
    await w.limit(w.editor, 0);
    for (const [path, body] of [
      ['trigger', undefined],
      ['runs', { prompt: 'Something else' }],
    ] as const) {
      const res = await server.request('post', `/scheduled-tasks/${w.id}/${path}`, { token: w.editor.token, ...(body && { body }) });
      expect(res.status, path).to.equal(402);
      expect(res.body.code).to.equal('payment_required');
      expect(res.body.data.issues.map((i: { path: string[] }) => i.path)).to.deep.equal([['spending_limit']]);
      expect(res.body.message).to.equal("spending_limit: the member's spending limit is exhausted (limit 0 credits this period, 0 used or held, 20 needed)");
    }
    expect(await db('scheduled_task_runs').where({ task_id: w.id })).to.deep.equal([]);

    // Who may trigger at all: the viewer 403, the removed member and a member without access 404.
    for (const [user, status] of [
      [w.viewer, 403],
      [w.removed, 404],
      [w.other, 404],
    ] as const)
      expect((await server.request('post', `/scheduled-tasks/${w.id}/trigger`, { token: user.token })).status).to.equal(status);

    // With room under the limit the editor's run goes ahead, as the editor and on the editor's limit.
    await w.limit(w.editor, 100);
    const res = await server.request('post', `/scheduled-tasks/${w.id}/trigger`, { token: w.editor.token });
    expect(res.status).to.equal(202);
    expect(res.body.run).to.include({ requested_by_id: w.editor.id, max_credits: 20 });
    const run = await ended(res.body.run.id);
    expect(run.status).to.equal('succeeded');
    const chat = await db('chat_runs').where({ id: run.chat_run_id }).first();
    expect(chat.user_id).to.equal(w.editor.id);
    expect(await db('credit_holds').where({ run_id: run.chat_run_id }).first('user_id', 'amount')).to.deep.equal({ user_id: w.editor.id, amount: 20 });
    expect((await db('conversations').where({ id: run.conversation_id }).first('created_by_id')).created_by_id).to.equal(w.editor.id);
    const editorCredits = await server.request('get', `/organizations/${w.org}/members/${w.editor.id}/credits`, { token: w.owner.token });
    expect(editorCredits.body.spent).to.equal(run.credits_used);
    const ownerCredits = await server.request('get', `/organizations/${w.org}/members/${w.owner.id}/credits`, { token: w.owner.token });
    expect(ownerCredits.body.spent).to.equal(0);

    // A run nobody in particular asked for (the job console's) stays the creator's.
    const console = await server.request('post', `/ops/schedules/task:${w.id}/trigger`, { token: w.owner.token });
    expect(console.status).to.equal(202);
    const consoleRun = await ended((await db('scheduled_task_runs').where({ task_id: w.id, requested_by_id: null }).first('id')).id);
    expect((await db('chat_runs').where({ id: consoleRun.chat_run_id }).first('user_id')).user_id).to.equal(w.owner.id);
    expect(await reconcileCredits(db, w.org)).to.deep.equal([]);
  });

  it('max_credits_per_run above its effective value needs the owner or an admin (403 for an editor); lowering is the editor’s too', async () => {
    const w = await workspace();
    const raise = (user: TestUser, value: number | null) => patch(user, w.id, { max_credits_per_run: value });
    const cases: [TestUser, number | null, number][] = [
      [w.editor, 1_000_000, 403],
      [w.editor, 21, 403],
      [w.viewer, 5, 403],
      [w.removed, 5, 404],
      [w.other, 5, 404],
      [w.editor, 20, 200],
      [w.editor, 5, 200],
      [w.editor, 6, 403],
      [w.admin, 50, 200],
      [w.owner, 1_000_000, 200],
      [w.editor, 999_999, 200],
    ];
    for (const [user, value, status] of cases) {
      const res = await raise(user, value);
      const who = [w.editor, w.viewer, w.removed, w.other, w.admin, w.owner].indexOf(user);
      expect(res.status, `${['editor', 'viewer', 'removed', 'other', 'admin', 'owner'][who]} → ${value}: ${JSON.stringify(res.body)}`).to.equal(status);
    }
    const refused = await raise(w.editor, 1_000_000);
    expect(refused.body).to.deep.equal({
      code: 'forbidden',
      message:
        'max_credits_per_run: raising what each run may hold from 999999 to 1000000 credits needs the task’s owner or an organization admin; your role on it is "editor"',
      data: { issues: [] },
    });
    expect((await db('scheduled_tasks').where({ id: w.id }).first('max_credits_per_run')).max_credits_per_run).to.equal(999_999);

    // null means the default hold of a run (prompt and model): from a cap of 1 that is a raise, from a large cap a lowering.
    expect((await raise(w.owner, 1)).status).to.equal(200);
    const toDefault = await raise(w.editor, null);
    expect(toDefault.status).to.equal(403);
    expect(toDefault.body.message).to.match(/^max_credits_per_run: raising what each run may hold from 1 to \d+ credits needs/);
    expect((await raise(w.owner, 500_000)).status).to.equal(200);
    expect((await raise(w.editor, null)).status).to.equal(200);
    expect((await raise(w.editor, 500_000)).status).to.equal(403);
    // Other changes by the editor need no authority over the cap.
    expect((await patch(w.editor, w.id, { title: 'Renamed', prompt: 'Name four colours.' })).status).to.equal(200);
  });

  it('recipients must be able to read the task (400 naming email_recipients), on create, change and one-off runs', async () => {
    const w = await workspace();
    const cannot = (users: TestUser[]) =>
      `email_recipients: ${users.map((u) => u.id).join(', ')} cannot read this scheduled task (share it with ${users.length === 1 ? 'them' : 'each'} first, or make it visible to the workspace)`;
    const created = await server.request('post', '/scheduled-tasks', {
      token: w.owner.token,
      body: { organization_id: w.org, title: 'x', prompt: 'y', schedule: { cron: '0 7 * * *', timezone: 'UTC' }, email_recipients: [w.other.id, w.admin.id] },
    });
    expect(created.status).to.equal(400);
    expect(created.body).to.deep.equal({
      code: 'validation_failed',
      message: cannot([w.other]),
      data: { issues: [{ path: ['email_recipients'], message: cannot([w.other]) }] },
    });
    expect(await db('scheduled_tasks').where({ organization_id: w.org, title: 'x' })).to.deep.equal([]);

    const changed = await patch(w.editor, w.id, { email_recipients: [w.editor.id, w.other.id] });
    expect(changed.status).to.equal(400);
    expect(changed.body.message).to.equal(cannot([w.other]));
    const removed = await patch(w.owner, w.id, { email_recipients: [w.removed.id] });
    expect(removed.status).to.equal(400);
    expect(removed.body.message).to.equal(`email_recipients: ${w.removed.id} is not a member of the organization`);
    // Readers: the owner, an admin, the editor and viewer grants.
    const readers = await patch(w.editor, w.id, { email_recipients: [w.owner.id, w.admin.id, w.editor.id, w.viewer.id] });
    expect(readers.status, JSON.stringify(readers.body)).to.equal(200);
    expect(readers.body.scheduled_task.email_recipients).to.deep.equal([w.owner.id, w.admin.id, w.editor.id, w.viewer.id]);

    const oneOff = await server.request('post', `/scheduled-tasks/${w.id}/runs`, { token: w.editor.token, body: { email_recipients: [w.other.id] } });
    expect(oneOff.status).to.equal(400);
    expect(oneOff.body.message).to.equal(cannot([w.other]));
    // Visible to the workspace: every member reads it, so every member may receive it.
    const shared = await server.request('patch', `/access/scheduled_task/${w.id}`, {
      token: w.owner.token,
      body: { visibility: 'workspace', workspace_role: 'viewer' },
    });
    expect(shared.status, JSON.stringify(shared.body)).to.equal(200);
    expect((await patch(w.editor, w.id, { email_recipients: [w.other.id] })).status).to.equal(200);
  });

  it('a removed member leaves the recipients at once; the answer goes only to those who can still read the task when it is sent', async () => {
    const w = await workspace({ visibility: 'workspace', max_credits_per_run: 50 });
    const leaves = newUser();
    await addMember(db, w.org, leaves);
    // The member without a grant reads it through the workspace's access; the viewer through a grant.
    expect((await patch(w.owner, w.id, { email_recipients: [w.other.id, leaves.id, w.viewer.id] })).status).to.equal(200);

    const res = await server.request('post', `/scheduled-tasks/${w.id}/trigger`, { token: w.owner.token });
    expect(res.status).to.equal(202);
    // Removal drops the member from every task's recipients in the same transaction.
    expect((await server.request('delete', `/organizations/${w.org}/members/${leaves.id}`, { token: w.owner.token })).status).to.equal(204);
    // The task goes private: the member reading it through the workspace loses access; the viewer keeps their grant.
    const hidden = await server.request('patch', `/access/scheduled_task/${w.id}`, { token: w.owner.token, body: { visibility: 'private' } });
    expect(hidden.status, JSON.stringify(hidden.body)).to.equal(200);
    // The run was queued with all three and has not ended yet, so its e-mails go out after these changes.
    const queued = await db('scheduled_task_runs').where({ id: res.body.run.id }).first('status', 'email_recipients');
    expect(queued.status).to.be.oneOf(['queued', 'running']);
    expect(queued.email_recipients).to.deep.equal([w.other.id, leaves.id, w.viewer.id]);
    expect((await db('scheduled_tasks').where({ id: w.id }).first('email_recipients')).email_recipients).to.deep.equal([w.other.id, w.viewer.id]);

    const run = await ended(res.body.run.id);
    expect(run.status).to.equal('succeeded');
    const jobs = () => db('pgboss.job').where({ name: 'scheduled-tasks.email.v1' }).whereRaw(`data->>'run_id' = ?`, [run.id]);
    await eventually('every e-mail job ran', async () => {
      const states = (await jobs().select('state')).map((j) => j.state);
      return states.length === 3 && states.every((state) => state === 'completed') ? states : null;
    });
    const sent = await db('email_outbox').whereLike('idempotency_key', `scheduled-task-run:${run.id}:%`).select('to_address');
    expect(sent.map((m) => m.to_address)).to.deep.equal([w.viewer.email]);

    // Leaving the organization drops the member from the recipients too.
    expect((await server.request('post', `/organizations/${w.org}/leave`, { token: w.viewer.token })).status).to.equal(204);
    expect((await db('scheduled_tasks').where({ id: w.id }).first('email_recipients')).email_recipients).to.deep.equal([w.other.id]);
  });
});
