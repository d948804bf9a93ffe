import { expect } from 'chai';
import { addMember, createOrganization, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/** The scheduled-task resource: validation naming the field, next runs in the task's timezone, enable/disable, delete/restore, recipients. */
describe('scheduled tasks (the resource)', () => {
  const ctx = useServer();

  async function workspace() {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const member = newUser();
    await addMember(ctx.db, org, member);
    const create = (body: Record<string, unknown>) =>
      ctx.server.request('post', '/scheduled-tasks', {
        token: owner.token,
        body: {
          organization_id: org,
          title: 'Weekly digest',
          prompt: 'Summarise the week',
          schedule: { cron: '30 8 * * 1', timezone: 'Europe/Berlin' },
          ...body,
        },
      });
    return { owner, org, member, create };
  }

  it('creates a task with its next run and the next five in its timezone; disabling stops them, enabling resumes', async () => {
    const { owner, member, create } = await workspace();
    // Recipients must be able to read the task: a member reads it once it is visible to the workspace.
    const res = await create({ email_recipients: [member.id, owner.id, member.id], visibility: 'workspace' });
    expect(res.status).to.equal(201);
    // Wrapped in one field named after it (CONVENTIONS §4), as organizations are.
    expect(Object.keys(res.body)).to.deep.equal(['scheduled_task']);
    const task = res.body.scheduled_task;
    expect(task).to.include({ title: 'Weekly digest', enabled: true, visibility: 'workspace', created_by_id: owner.id });
    expect(task.schedule).to.deep.equal({ cron: '30 8 * * 1', timezone: 'Europe/Berlin' });
    expect(task.email_recipients).to.deep.equal([member.id, owner.id]);
    expect(task.upcoming_runs).to.have.length(5);
    expect(task.upcoming_runs[0].utc).to.equal(task.next_run_at);
    for (const run of task.upcoming_runs) {
      // 08:30 local on Mondays, whatever the offset (+01:00 in winter, +02:00 in summer).
      expect(run.at).to.match(/T08:30:00\+0[12]:00$/);
      expect(new Date(run.at).toISOString()).to.equal(run.utc);
      expect(new Date(run.utc).getUTCDay()).to.equal(1);
    }
    expect(new Date(task.next_run_at).getTime()).to.be.greaterThan(Date.now());

    const off = await ctx.server.request('patch', `/scheduled-tasks/${task.id}`, { token: owner.token, body: { enabled: false } });
    expect(off.status).to.equal(200);
    expect(off.body.scheduled_task).to.include({ enabled: false, next_run_at: null });
    expect(off.body.scheduled_task.upcoming_runs).to.deep.equal([]);
    const on = await ctx.server.request('patch', `/scheduled-tasks/${task.id}`, {
      token: owner.token,
      body: { enabled: true, schedule: { cron: '0 18 * * *', timezone: 'America/New_York' } },
    });
    expect(on.body.scheduled_task.next_run_at).to.be.a('string');
    expect(on.body.scheduled_task.upcoming_runs[0].at).to.match(/T18:00:00-0[45]:00$/);

    const fetched = await ctx.server.request('get', `/scheduled-tasks/${task.id}`, { token: owner.token });
    expect(fetched.status).to.equal(200);
    expect(fetched.body.scheduled_task.id).to.equal(task.id);

    const recipients = await ctx.server.request('get', `/scheduled-tasks/${task.id}/runs/email-recipients`, { token: owner.token });
    expect(recipients.status).to.equal(200);
    expect(recipients.body.items.map((r: { user_id: string }) => r.user_id)).to.deep.equal([member.id, owner.id]);
    expect(recipients.body.items[1]).to.deep.equal({ user_id: owner.id, email: owner.email, name: owner.name });

    expect((await ctx.server.request('delete', `/scheduled-tasks/${task.id}`, { token: owner.token })).status).to.equal(204);
    const deleted = await ctx.db('scheduled_tasks').where({ id: task.id }).first('deleted_at');
    expect(deleted.deleted_at).to.be.instanceOf(Date);
    const restored = await ctx.server.request('post', `/scheduled-tasks/${task.id}/restore`, { token: owner.token });
    expect(restored.status).to.equal(200);
    expect(restored.body.scheduled_task.deleted_at).to.equal(null);
    // Resumes from the next slot after now (the slots missed while deleted are not caught up).
    expect(new Date(restored.body.scheduled_task.next_run_at).getTime()).to.be.greaterThan(Date.now());
    expect(restored.body.scheduled_task.upcoming_runs[0].utc).to.equal(restored.body.scheduled_task.next_run_at);
  });

  it('refuses bad settings with 400 naming the field', async () => {
    const { create } = await workspace();
    for (const [body, path, message] of [
      [{ schedule: { cron: '61 * * * *', timezone: 'UTC' } }, ['schedule', 'cron'], /^schedule\.cron: is not a valid cron expression/],
      [{ schedule: { cron: '* * * * *', timezone: 'UTC' } }, ['schedule', 'cron'], /^schedule\.cron: runs every 1 minute; the minimum interval is 5 minutes$/],
      // One minute apart only from 29 February to 1 March 2028.
      [
        { schedule: { cron: '0,59 0,6,12,18,23 1,29 * *', timezone: 'UTC' } },
        ['schedule', 'cron'],
        /^schedule\.cron: runs as little as 1 minute apart \(2028-02-29 23:59 and 2028-03-01 00:00, UTC time\); the minimum interval is 5 minutes$/,
      ],
      [
        { schedule: { cron: '0 9 * * *', timezone: 'Mars/Olympus' } },
        ['schedule', 'timezone'],
        /^schedule\.timezone: "Mars\/Olympus" is not a known IANA time zone/,
      ],
      [{ email_recipients: ['user_nobody'] }, ['email_recipients'], /^email_recipients: user_nobody is not a member of the organization$/],
      [{ model: 'no-such-model' }, ['model'], /^model: /],
      [{ skill_id: '00000000-0000-4000-8000-000000000000' }, ['skill_id'], /^skill_id: /],
      [{ title: '' }, ['title'], /title/],
    ] as const) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.data.issues[0].path, JSON.stringify(body)).to.deep.equal(path);
      expect(res.body.message, JSON.stringify(body)).to.match(message);
    }
  });
});
