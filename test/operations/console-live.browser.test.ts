import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { consoleSnapshotJob } from '../../src/operations/jobs.ts';
import { startWorker } from '../../workers/main.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { openWatchedPage, requireChromium } from '../support/browser.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { flaky, flakyJob, idleJob, jobState, newAssetId, type OpsStack, startOpsStack } from './support.ts';

/**
 * The job console page (GET /ops) in headless Chromium against a real web process and worker (issue
 * 25): an organization's admin lands on their organization's own view; lists, queue health and
 * workers refresh live; bulk cancels, retries and deletes started from the page show their progress
 * to the end; "retry now" starts a job waiting out its backoff.
 */
describe('job console page: tenant landing, live refresh, bulk actions, retry now (browser)', function () {
  this.timeout(120_000);
  let stack: OpsStack;
  let browser: Browser;
  let page: Page;
  let operator: TestUser;
  let owner: TestUser;
  let otherOwner: TestUser;
  let admin: TestUser;
  let org: string;
  let otherOrg: string;
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  before(async function () {
    requireChromium(this, 'job console');
    stack = await startOpsStack({ OPS_BULK_BATCH_SIZE: '2', OPS_BULK_PAUSE_MS: '300' });
    operator = newOperator();
    owner = newUser();
    otherOwner = newUser();
    [org, otherOrg] = await Promise.all([createOrganization(stack.server, owner), createOrganization(stack.server, otherOwner)]);
    admin = await newMember(stack.db, org, 'admin');

    ({ browser, page } = await openWatchedPage(new URL(stack.server.url).origin, { foreign, pageErrors }));
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });
  beforeEach(() => {
    flaky.failing = false;
  });
  afterEach(() => {
    expect(foreign, 'requests to hosts other than the server').to.deep.equal([]);
    expect(pageErrors, 'errors reported by the page').to.deep.equal([]);
  });

  const rowOf = (id: string) => page.locator(`[data-testid="job-row"][data-job-id="${id}"]`);
  const signIn = async (token: string, hash = '#/jobs') => {
    await page.goto(`${stack.server.url}/ops${hash}`);
    // Live views poll every 500 ms here (5 s by default).
    await page.evaluate(() => sessionStorage.setItem('ops-console-live-ms', '500'));
    await page.getByTestId('token-input').fill(token);
    await page.getByTestId('sign-in').click();
  };

  it("an organization's admin lands on their organization's own jobs, never an error page nor another tenant's rows", async () => {
    const ours = await stack.send(idleJob, { asset_id: newAssetId() }, org);
    const theirs = await stack.send(idleJob, { asset_id: newAssetId() }, otherOrg);
    const task = async (organization: string, by: TestUser) => {
      const created = await stack.server.request('post', '/scheduled-tasks', {
        token: by.token,
        body: { organization_id: organization, title: 'Weekly brief', prompt: 'Summarise', schedule: { cron: '0 8 * * 1', timezone: 'UTC' } },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      return `task:${created.body.scheduled_task.id}`;
    };
    const [ourTask, theirTask] = [await task(org, owner), await task(otherOrg, otherOwner)];
    await signIn(admin.token);
    await rowOf(ours).waitFor();
    expect(await page.getByTestId('error').isHidden()).to.equal(true);
    expect(await rowOf(theirs).count()).to.equal(0);
    expect(await page.getByTestId('organization-switch').inputValue()).to.equal(org);
    expect(await page.getByTestId('nav-workers').isHidden()).to.equal(true);
    // Their queues, pauses and fairness panel open too (each scoped to their organization).
    for (const [nav, testid] of [
      ['nav-queues', 'queues-table'],
      ['nav-pauses', 'pauses-table'],
      ['nav-organizations', 'organizations-table'],
      ['nav-bulk', 'bulk-table'],
      ['nav-schedules', 'schedules-table'],
    ] as const) {
      await page.getByTestId(nav).click();
      await page.getByTestId(testid).waitFor();
      expect(await page.getByTestId('error').isHidden(), nav).to.equal(true);
    }
    // Their scheduled tasks (last and next run), not another organization's.
    await page.locator(`[data-testid="schedule-row"][data-key="${ourTask}"]`).waitFor();
    expect(await page.locator(`[data-testid="schedule-row"][data-key="${theirTask}"]`).count()).to.equal(0);
  });

  it('the job list refreshes live: a new job appears without a click', async () => {
    await page.getByTestId('nav-jobs').click();
    await page.getByTestId('jobs-table').waitFor();
    expect(await page.getByTestId('live-status').textContent()).to.match(/^live · checked /);
    const fresh = await stack.send(idleJob, { asset_id: newAssetId() }, org);
    await rowOf(fresh).waitFor({ timeout: 10_000 });
  });

  it('a bulk cancel from the page: preview, start, progress to the end, every job cancelled', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await stack.send(idleJob, { asset_id: newAssetId() }, org));
    await page.goto(`${stack.server.url}/ops#/jobs?${new URLSearchParams({ queue: idleJob.name, state: 'created' })}`);
    await page.getByTestId('jobs-table').waitFor();
    for (const id of ids) await rowOf(id).waitFor();
    const expected = await page.getByTestId('job-row').count();

    await page.getByTestId('bulk-panel').locator('summary').click();
    await page.getByTestId('bulk-action').selectOption('cancel');
    await page.getByTestId('bulk-preview').click();
    await page
      .getByTestId('bulk-count')
      .filter({ hasText: `${expected} jobs would be cancelled` })
      .waitFor();
    await page.getByTestId('bulk-reason').fill('tenant asked to drop the batch');
    await page.getByTestId('bulk-start').click();

    await page.getByTestId('bulk-progress').waitFor();
    await page
      .getByTestId('bulk-state')
      .filter({ hasText: /^completed$/ })
      .waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('bulk-done').textContent()).to.equal(`${expected} of ${expected} worked: ${expected} done, 0 skipped`);
    expect(
      await page
        .getByTestId('bulk-progress')
        .evaluate((el) => [(el as unknown as { value: number; max: number }).value, (el as unknown as { value: number; max: number }).max]),
    ).to.deep.equal([expected, expected]);
    for (const id of ids) expect(await jobState(stack.db, id)).to.equal('cancelled');
    const record = await stack.db('bulk_actions').orderBy('created_at', 'desc').first('action', 'organization_id', 'reason', 'created_by');
    expect(record).to.deep.equal({ action: 'cancel', organization_id: org, reason: 'tenant asked to drop the batch', created_by: admin.id });
  });

  it('retry now: a job waiting out its backoff starts at once and completes', async () => {
    const id = await stack.send(flakyJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 3600_000) });
    // As pg-boss leaves a failed attempt with retries left: state `retry`, due after its backoff.
    await stack
      .db('pgboss.job')
      .where({ id })
      .update({ state: 'retry', start_after: stack.db.raw("now() + interval '1 hour'") });
    await page.goto(`${stack.server.url}/ops#/jobs/${id}`);
    await page
      .getByTestId('job-state')
      .filter({ hasText: /^retry$/ })
      .waitFor();
    expect(await page.getByTestId('job-retry-now').isEnabled()).to.equal(true);
    expect(await page.getByTestId('job-retry').isEnabled()).to.equal(false);
    await page.getByTestId('action-reason').fill('the upstream is fixed');
    await page.getByTestId('job-retry-now').click();
    await page
      .getByTestId('notice')
      .filter({ hasText: /^retry-now: the job is now (retry|created|active|completed), due now$/ })
      .waitFor();
    await eventually('the job completed', async () => (await jobState(stack.db, id)) === 'completed');
    await page
      .getByTestId('job-state')
      .filter({ hasText: /^completed$/ })
      .waitFor({ timeout: 10_000 });
    await page.getByTestId('job-actions').getByText('job.retry_now').waitFor();
  });

  it("an operator's queue health hides pg-boss's internal queues unless asked; cron jobs are filterable", async () => {
    await page.getByTestId('sign-out').click();
    await signIn(operator.token, '#/queues');
    await page.getByTestId('queues-table').waitFor();
    const names = async () => page.getByTestId('queue-row').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-queue')));
    expect((await names()).filter((name) => name?.startsWith('__pgboss__'))).to.deep.equal([]);
    expect(await page.getByTestId('nav-workers').isHidden()).to.equal(false);
    // The worker schedules the platform's crons, so pg-boss has its cron sender queue (__pgboss__send-it).
    const internal = (await stack.db('pgboss.queue').where('name', 'like', '\\_\\_pgboss\\_\\_%').pluck('name')) as string[];
    expect(internal).to.not.be.empty;
    await page.getByTestId('filter-internal').check();
    await page.getByTestId('refresh').click();
    await page.waitForURL(/internal=true/);
    await page.locator(`[data-testid="queue-row"][data-queue="${internal[0]}"]`).waitFor();
    expect(await names()).to.include.members(internal);

    // Cron jobs are left out of the default job list; the origin filter shows them.
    const cron = await stack.send(consoleSnapshotJob as never, {} as never, null);
    const work = await stack.send(idleJob, { asset_id: newAssetId() }, org);
    await page.goto(`${stack.server.url}/ops#/jobs`);
    await rowOf(work).waitFor();
    expect(await rowOf(cron).count()).to.equal(0);
    await page.getByTestId('filter-origin').selectOption('cron');
    await page.getByTestId('jobs-apply').click();
    await page.waitForURL(/origin=cron/);
    await rowOf(cron).waitFor();
    expect(await rowOf(work).count()).to.equal(0);
  });

  it('queue health and workers refresh live: a new job is counted, a new worker appears and a stopped one leaves, without a click', async () => {
    await page.goto(`${stack.server.url}/ops#/queues`);
    const created = page.locator(`[data-testid="queue-row"][data-queue="${idleJob.name}"] td`).nth(1);
    await created.waitFor();
    const before = Number(await created.textContent());
    await stack.send(idleJob, { asset_id: newAssetId() }, org);
    await page
      .locator(`[data-testid="queue-row"][data-queue="${idleJob.name}"] td`)
      .nth(1)
      .filter({ hasText: new RegExp(`^${before + 1}$`) })
      .waitFor({ timeout: 10_000 });

    await page.getByTestId('nav-workers').click();
    await page.getByTestId('workers-table').waitFor();
    const config = testConfig({ WORKER_HEARTBEAT_SECONDS: '0.5' });
    const second = await startWorker(config, stack.url, createLogger(config, 'test-worker-2'), { jobs: [idleJob] });
    const row = page.locator(`[data-testid="worker-row"]:has(span[title="${second.id}"])`);
    try {
      await row.waitFor({ timeout: 10_000 });
    } finally {
      await second.stop();
    }
    await row.waitFor({ state: 'detached', timeout: 10_000 });
    expect(await page.getByTestId('live-status').textContent()).to.match(/^live · checked /);
  });

  it('a bulk retry and a bulk delete from the page: each previewed, started and followed to its end', async () => {
    const runBulk = async (action: 'retry' | 'delete', filter: Record<string, string>, ids: string[], reason: string) => {
      await page.goto(`${stack.server.url}/ops#/jobs?${new URLSearchParams({ ...filter, organization_id: org })}`);
      await page.getByTestId('jobs-table').waitFor();
      for (const id of ids) await rowOf(id).waitFor();
      const expected = await page.getByTestId('job-row').count();
      await page.getByTestId('bulk-panel').locator('summary').click();
      await page.getByTestId('bulk-action').selectOption(action);
      await page.getByTestId('bulk-preview').click();
      await page
        .getByTestId('bulk-count')
        .filter({ hasText: `${expected} jobs would be ${action === 'retry' ? 'retried' : 'deleted'}` })
        .waitFor();
      await page.getByTestId('bulk-reason').fill(reason);
      await page.getByTestId('bulk-start').click();
      await page.getByTestId('bulk-progress').waitFor();
      await page
        .getByTestId('bulk-state')
        .filter({ hasText: /^completed$/ })
        .waitFor({ timeout: 20_000 });
      expect(await page.getByTestId('bulk-done').textContent()).to.equal(
        `${expected} of ${expected} worked: ${expected} ${action === 'delete' ? 'deleted' : 'done'}, 0 skipped`,
      );
      const record = await stack.db('bulk_actions').orderBy('created_at', 'desc').first('action', 'organization_id', 'reason', 'total', 'state');
      expect(record).to.deep.equal({ action, organization_id: org, reason, total: expected, state: 'completed' });
    };

    flaky.failing = true;
    const failed: string[] = [];
    for (let i = 0; i < 3; i++) failed.push(await stack.send(flakyJob, { asset_id: newAssetId() }, org));
    for (const id of failed) await eventually('the flaky job failed', async () => (await jobState(stack.db, id)) === 'failed');
    flaky.failing = false;
    await runBulk('retry', { queue: flakyJob.name, state: 'failed' }, failed, 'the upstream is back');
    for (const id of failed) await eventually('the retried job completed', async () => (await jobState(stack.db, id)) === 'completed');

    const queued: string[] = [];
    for (let i = 0; i < 3; i++) queued.push(await stack.send(idleJob, { asset_id: newAssetId() }, org));
    await runBulk('delete', { queue: idleJob.name, state: 'created' }, queued, 'sent twice');
    for (const id of queued) expect(await jobState(stack.db, id)).to.equal(undefined);
  });
});
