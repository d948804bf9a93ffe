import { expect } from 'chai';
import { runCli } from '../../src/operations/cli.ts';
import { consoleSnapshotJob } from '../../src/operations/jobs.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { flaky, flakyJob, idleJob, jobState, newAssetId, type OpsStack, startOpsStack } from './support.ts';

/**
 * The operator CLI's commands for every operator action (issue 25), run against a real web process and
 * worker through the typed client: delete, retry-now, bulk actions with their progress, pauses and
 * resumes, trigger, the audit log and the fairness panel, as an operator and as an organization's admin.
 */
describe('operator CLI: every operator action (npm run ops)', function () {
  this.timeout(90_000);
  let stack: OpsStack;
  let operator: TestUser;
  let owner: TestUser;
  let admin: TestUser;
  let org: string;
  const escaped = (text: string) => text.replaceAll('.', '\\.');

  before(async () => {
    stack = await startOpsStack({ OPS_BULK_BATCH_SIZE: '2', OPS_BULK_PAUSE_MS: '50' });
    operator = newOperator();
    owner = newUser();
    org = await createOrganization(stack.server, owner);
    admin = await newMember(stack.db, org, 'admin');
  });
  after(() => stack?.stop());
  beforeEach(() => {
    flaky.failing = false;
  });

  const cli = async (argv: string[], token = operator.token) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli([...argv, '--url', stack.server.url, '--token', token], {
      fetch: globalThis.fetch,
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(ms, 50))),
    });
    return { code, stdout, stderr };
  };

  it('jobs delete ID: deleted and on record; a running job is refused (exit 1, 409)', async () => {
    const id = await stack.send(idleJob, { asset_id: newAssetId() }, org);
    const deleted = await cli(['jobs', 'delete', id, '--reason', 'sent by mistake'], admin.token);
    expect(deleted.code, deleted.stderr).to.equal(0);
    expect(deleted.stdout).to.equal(`job ${id} deleted\n`);
    expect(await jobState(stack.db, id)).to.equal(undefined);

    const running = await stack.send(flakyJob, { asset_id: newAssetId(), hold: true }, org);
    await eventually('the held job runs', async () => (await jobState(stack.db, running)) === 'active');
    const refused = await cli(['jobs', 'delete', running]);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/^error: conflict: a running job cannot be deleted: cancel it first \(it is active\) \(HTTP 409\)\n$/);
    expect((await cli(['jobs', 'cancel', running, '--reason', 'test over'])).code).to.equal(0);
  });

  it('jobs retry-now ID: a job waiting out its backoff is due now and runs', async () => {
    const id = await stack.send(flakyJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 3600_000) });
    await stack
      .db('pgboss.job')
      .where({ id })
      .update({ state: 'retry', start_after: stack.db.raw("now() + interval '1 hour'") });
    const started = await cli(['jobs', 'retry-now', id, '--reason', 'upstream fixed'], admin.token);
    expect(started.code, started.stderr).to.equal(0);
    expect(started.stdout).to.match(
      new RegExp(`^job ${id} \\(${escaped(flakyJob.name)}\\): (retry|created|active|completed), due \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ\\n$`),
    );
    await eventually('the job completed', async () => (await jobState(stack.db, id)) === 'completed');
    const again = await cli(['jobs', 'retry-now', id], admin.token);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/^error: conflict: only a job waiting for a later start .+\(HTTP 409\)\n$/);
  });

  it('bulk cancel: previews, starts and follows the durable bulk action to its end; bulk list and show find it', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await stack.send(idleJob, { asset_id: newAssetId() }, org));
    const filter = ['--queue', idleJob.name, '--organization', org, '--state', 'created'];
    const dry = await cli(['bulk', 'cancel', ...filter, '--dry-run'], admin.token);
    expect(dry.code, dry.stderr).to.equal(0);
    expect(dry.stdout).to.equal('5 jobs would be cancelled\n');

    const run = await cli(['bulk', 'cancel', ...filter, '--reason', 'drop the batch', '--interval', '50'], admin.token);
    expect(run.code, `${run.stdout}\n${run.stderr}`).to.equal(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).to.equal('cancelling 5 jobs');
    expect(lines.at(-1)).to.equal('completed: 5/5 (5 cancelled, 0 skipped)');
    for (const line of lines.slice(1, -1)) expect(line).to.match(/^running: [0-5]\/5 \(\d cancelled, \d skipped\)$/);
    for (const id of ids) expect(await jobState(stack.db, id)).to.equal('cancelled');

    const list = await cli(['bulk', 'list', '--organization', org, '--json'], admin.token);
    const [bulk] = JSON.parse(list.stdout).items;
    expect(bulk).to.include({ action: 'cancel', state: 'completed', total: 5, done: 5, reason: 'drop the batch' });
    const shown = await cli(['bulk', 'show', bulk.id], admin.token);
    expect(shown.stdout).to.match(new RegExp(`^${bulk.id}\\s+cancel\\s+completed\\s+5\\s+0\\s+5\\s+${org}\\s`, 'm'));
    const abort = await cli(['bulk', 'abort', bulk.id], admin.token);
    expect(abort.code).to.equal(1);
    expect(abort.stderr).to.match(/already completed \(HTTP 409\)/);

    const none = await cli(['bulk', 'delete', '--queue', idleJob.name, '--organization', org, '--state', 'failed', '--reason', 'x'], admin.token);
    expect(none.code, none.stderr).to.equal(0);
    expect(none.stdout).to.equal('0 jobs would be deleted\n');
  });

  it('bulk retry and bulk delete: each works real jobs through a durable bulk action, its progress followed to the end', async () => {
    flaky.failing = true;
    const failed: string[] = [];
    for (let i = 0; i < 3; i++) failed.push(await stack.send(flakyJob, { asset_id: newAssetId() }, org));
    for (const id of failed) await eventually('the flaky job failed', async () => (await jobState(stack.db, id)) === 'failed');
    flaky.failing = false;
    const retried = await cli(
      ['bulk', 'retry', '--queue', flakyJob.name, '--organization', org, '--state', 'failed', '--reason', 'upstream back', '--interval', '50'],
      admin.token,
    );
    expect(retried.code, `${retried.stdout}\n${retried.stderr}`).to.equal(0);
    const retriedLines = retried.stdout.trimEnd().split('\n');
    expect(retriedLines[0]).to.equal('retrying 3 jobs');
    expect(retriedLines.at(-1)).to.equal('completed: 3/3 (3 retried, 0 skipped)');
    for (const id of failed) await eventually('the retried job completed', async () => (await jobState(stack.db, id)) === 'completed');

    const queued: string[] = [];
    for (let i = 0; i < 3; i++) queued.push(await stack.send(idleJob, { asset_id: newAssetId() }, org));
    const deleted = await cli(
      ['bulk', 'delete', '--queue', idleJob.name, '--organization', org, '--state', 'created', '--reason', 'sent twice', '--interval', '50'],
      admin.token,
    );
    expect(deleted.code, `${deleted.stdout}\n${deleted.stderr}`).to.equal(0);
    const deletedLines = deleted.stdout.trimEnd().split('\n');
    expect(deletedLines[0]).to.equal('deleting 3 jobs');
    expect(deletedLines.at(-1)).to.equal('completed: 3/3 (3 deleted, 0 skipped)');
    for (const id of queued) expect(await jobState(stack.db, id)).to.equal(undefined);
    const kinds = (await stack.db('bulk_actions').where({ organization_id: org }).orderBy('created_at').select('action', 'state', 'done')) as object[];
    expect(kinds.slice(-2)).to.deep.equal([
      { action: 'retry', state: 'completed', done: 3 },
      { action: 'delete', state: 'completed', done: 3 },
    ]);
  });

  it('pause organization / pause queue / resume: the pause defers, the resume restores, both listed and audited', async () => {
    const queued = await stack.send(idleJob, { asset_id: newAssetId() }, org);
    const paused = await cli(['pause', 'organization', org, '--queue', idleJob.name, '--reason', 'tenant storm'], admin.token);
    expect(paused.code, paused.stderr).to.equal(0);
    const [, pauseId] =
      paused.stdout.match(new RegExp(`^paused organization ${org} on ${escaped(idleJob.name)}: pause ([0-9a-f-]{36}); 1 queued jobs deferred\\n$`)) ?? [];
    expect(pauseId, paused.stdout).to.be.a('string');
    const pauses = await cli(['pauses', '--organization', org, '--json'], admin.token);
    expect(JSON.parse(pauses.stdout).items.map((p: { id: string }) => p.id)).to.include(pauseId);
    const resumed = await cli(['resume', pauseId!, '--reason', 'storm over'], admin.token);
    expect(resumed.code, resumed.stderr).to.equal(0);
    expect(resumed.stdout).to.equal(`resumed pause ${pauseId}: 1 deferred jobs due again\n`);
    expect(await jobState(stack.db, queued)).to.equal('created');

    // A whole queue is the operators' to pause; an admin is refused.
    const refused = await cli(['pause', 'queue', idleJob.name, '--reason', 'maintenance'], admin.token);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/\(HTTP 403\)\n$/);
    const whole = await cli(['pause', 'queue', idleJob.name, '--reason', 'maintenance', '--until', new Date(Date.now() + 3600_000).toISOString()]);
    expect(whole.code, whole.stderr).to.equal(0);
    const wholeId = whole.stdout.match(/pause ([0-9a-f-]{36})/)![1]!;
    expect((await cli(['resume', wholeId])).code).to.equal(0);

    const usage = await cli(['pause', 'organization', org, '--reason', 'no queue']);
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.match(/^pause organization needs --queue/);
  });

  it('trigger: runs a platform schedule now', async () => {
    const key = `cron:${consoleSnapshotJob.name}`;
    const triggered = await cli(['trigger', key]);
    expect(triggered.code, triggered.stderr).to.equal(0);
    const [, jobId] = triggered.stdout.match(new RegExp(`^triggered ${escaped(key)}: job ([0-9a-f-]{36})\\n$`)) ?? [];
    expect(jobId, triggered.stdout).to.be.a('string');
    await eventually('the triggered job completed', async () => (await jobState(stack.db, jobId!)) === 'completed');
  });

  it("trigger task:ID and pause schedule: an organization's scheduled task runs now, and its schedule pauses and resumes", async () => {
    const created = await stack.server.request('post', '/scheduled-tasks', {
      token: owner.token,
      body: { organization_id: org, title: 'Weekly brief', prompt: 'Summarise', schedule: { cron: '0 8 * * 1', timezone: 'UTC' } },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const key = `task:${created.body.scheduled_task.id}`;
    const triggered = await cli(['trigger', key], admin.token);
    expect(triggered.code, triggered.stderr).to.equal(0);
    const [, runId] = triggered.stdout.match(new RegExp(`^triggered ${key}, run ([0-9a-f-]{36})\\n$`)) ?? [];
    expect(runId, triggered.stdout).to.be.a('string');
    const run = await stack.db('scheduled_task_runs').where({ id: runId }).first('task_id', 'trigger');
    expect(run).to.deep.equal({ task_id: created.body.scheduled_task.id, trigger: 'manual' });

    // An admin names their organization; without it only operators may pause.
    const refused = await cli(['pause', 'schedule', key, '--reason', 'quiet week'], admin.token);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/\(HTTP 403\)\n$/);
    const paused = await cli(['pause', 'schedule', key, '--organization', org, '--reason', 'quiet week'], admin.token);
    expect(paused.code, paused.stderr).to.equal(0);
    const [, pauseId] = paused.stdout.match(new RegExp(`^paused schedule ${key}: pause ([0-9a-f-]{36}); 0 queued jobs deferred\\n$`)) ?? [];
    expect(pauseId, paused.stdout).to.be.a('string');
    expect(await stack.db('job_pauses').where({ id: pauseId }).first('scope', 'schedule', 'resumed_at')).to.deep.equal({
      scope: 'schedule',
      schedule: key,
      resumed_at: null,
    });
    const resumed = await cli(['resume', pauseId!, '--reason', 'back to work'], admin.token);
    expect(resumed.code, resumed.stderr).to.equal(0);
    expect((await stack.db('job_pauses').where({ id: pauseId }).first('resumed_at')).resumed_at).to.be.an.instanceOf(Date);
  });

  it("queues --internal and jobs list --origin: pg-boss's internal queues and the cron jobs only when asked", async () => {
    // The worker schedules the platform's crons, so pg-boss has its cron sender queue (__pgboss__send-it).
    const internal = (await stack.db('pgboss.queue').where('name', 'like', '\\_\\_pgboss\\_\\_%').pluck('name')) as string[];
    expect(internal).to.not.be.empty;
    const queueNames = (stdout: string) => stdout.split('\n').map((line) => line.split(/\s+/)[0]);
    const plain = await cli(['queues']);
    expect(plain.code, plain.stderr).to.equal(0);
    expect(queueNames(plain.stdout)).to.include(idleJob.name);
    for (const name of internal) expect(queueNames(plain.stdout)).not.to.include(name);
    const all = await cli(['queues', '--internal']);
    expect(queueNames(all.stdout)).to.include.members([idleJob.name, ...internal]);

    const cron = await stack.send(consoleSnapshotJob as never, {} as never, null);
    const work = await stack.send(idleJob, { asset_id: newAssetId() }, org);
    const ids = async (...origin: string[]) => {
      const run = await cli(['jobs', 'list', ...origin, '--limit', '100', '--json']);
      expect(run.code, run.stderr).to.equal(0);
      return (JSON.parse(run.stdout).items as { id: string }[]).map((job) => job.id);
    };
    expect(await ids())
      .to.include(work)
      .and.not.include(cron);
    expect(await ids('--origin', 'cron'))
      .to.include(cron)
      .and.not.include(work);
    expect(await ids('--origin', 'all')).to.include.members([cron, work]);
  });

  it('audit: the log of what was done, filterable by organization and action', async () => {
    const log = await cli(['audit', '--organization', org], admin.token);
    expect(log.code, log.stderr).to.equal(0);
    const [header, ...rows] = log.stdout.trimEnd().split('\n');
    expect(header).to.match(/^AT\s+WHO\s+ROLE\s+ORGANIZATION\s+ACTION\s+COUNT\s+REASON\s+TARGET$/);
    const actions = rows.map((row) => row.split(/\s{2,}/)[4]);
    expect(actions).to.include.members([
      'job.delete',
      'job.retry_now',
      'bulk.cancel',
      'bulk.retry',
      'bulk.delete',
      'pause.create',
      'pause.resume',
      'schedule.trigger',
    ]);
    const only = await cli(['audit', '--organization', org, '--action', 'job.delete', '--json'], admin.token);
    const entries = JSON.parse(only.stdout).items;
    expect(entries.map((e: { action: string; reason: string }) => [e.action, e.reason])).to.deep.equal([['job.delete', 'sent by mistake']]);
  });

  it('organizations: the fairness panel and its rule', async () => {
    const panel = await cli(['organizations']);
    expect(panel.code, panel.stderr).to.equal(0);
    expect(panel.stdout).to.match(/^ORGANIZATION\s+NAME\s+QUEUE\s+ACTIVE\s+QUEUED\s+LIMIT\s+FLEET SLOTS\s+CAPPED$/m);
    expect(panel.stdout).to.match(/^organizations share each queue by weight, by what each has in flight \(no cap\)$/m);
  });
});
