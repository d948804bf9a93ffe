import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { openWatchedPage, requireChromium } from '../support/browser.ts';
import { webhookDeliveryJob } from '../../src/webhooks/jobs.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { anEvent, publishEvents, type Receiver, startReceiver } from './support.ts';

/**
 * The job console's webhook panel (GET /ops, #/webhooks) in headless Chromium against a real web
 * process and worker: an endpoint answering 500 shows as failing with its last error and the time of
 * its next attempt, one failing for days as disabled; the backlog is counted beside the queues; the
 * failed delivery's job page retries it now, and once the receiver answers the panel shows no
 * failing endpoint. An organization's admin sees their organization's endpoints only.
 */
describe('job console: webhook delivery health (browser)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let receiver: Receiver;
  let browser: Browser;
  let page: Page;
  let operator: TestUser;
  let owner: TestUser;
  let org: string;
  let receiverUp = false;
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  before(async function () {
    requireChromium(this, 'webhook console');
    receiver = await startReceiver();
    receiver.on('/down?token=receiver-secret', () => ({ status: receiverUp ? 200 : 500, body: receiverUp ? 'ok' : 'receiver exploded' }));
    receiver.on('/dead?token=receiver-secret', () => ({ status: 503 }));
    receiver.on('/elsewhere?token=receiver-secret', () => ({ status: 500 }));
    stack = await startStack({ OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    operator = newOperator();
    owner = newUser();
    org = await createOrganization(stack.server, owner);

    ({ browser, page } = await openWatchedPage(new URL(stack.server.url).origin, { foreign, pageErrors }));
    // Live views poll quickly here.
    await page.goto(`${stack.server.url}/ops`);
    await page.evaluate(() => sessionStorage.setItem('ops-console-live-ms', '500'));
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
    await receiver?.close();
  });
  afterEach(() => {
    expect(foreign, 'requests to hosts other than the server').to.deep.equal([]);
    expect(pageErrors, 'errors reported by the page').to.deep.equal([]);
  });

  async function createEndpoint(by: TestUser, organizationId: string, path: string) {
    const res = await stack.server.request('post', `/organizations/${organizationId}/webhook-endpoints`, {
      token: by.token,
      body: { url: `${receiver.url}${path}?token=receiver-secret`, event_types: ['*'] },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook_endpoint.id as string;
  }
  const deliveryOf = (endpointId: string) => stack.db('webhook_deliveries').where({ endpoint_id: endpointId }).first();
  const jobOf = (deliveryId: string) =>
    stack.db('pgboss.job').where({ name: webhookDeliveryJob.name }).whereRaw(`data->>'delivery_id' = ?`, [deliveryId]).first('id', 'state', 'start_after');
  const signIn = async (token: string) => {
    await page.goto(`${stack.server.url}/ops`);
    if (await page.getByTestId('sign-out').isVisible()) await page.getByTestId('sign-out').click();
    await page.getByTestId('token-input').fill(token);
    await page.getByTestId('sign-in').click();
    await page.getByTestId('jobs-table').waitFor();
  };
  const rowOf = (kind: 'failing' | 'disabled', endpointId: string) => page.locator(`[data-testid="webhook-${kind}-row"][data-endpoint="${endpointId}"]`);

  let failing: string;
  let disabled: string;

  it('shows the backlog, a failing endpoint with its last error and next attempt, and a disabled one', async () => {
    failing = await createEndpoint(owner, org, '/down');
    disabled = await createEndpoint(owner, org, '/dead');
    // Failing for three days and an hour (the injected past): its next failure disables it.
    await stack
      .db('webhook_endpoints')
      .where({ id: disabled })
      .update({ failing_since: stack.db.raw(`now() - interval '73 hours'`) });
    await publishEvents(stack.db, stack.url, [anEvent(org)]);
    const delivery = await eventually('the failing endpoint’s first attempt is waiting for its retry', async () => {
      const row = await deliveryOf(failing);
      if (row?.attempts !== 1) return null;
      const job = await jobOf(row.id);
      return job?.state === 'retry' ? { ...row, job } : null;
    });
    await eventually(
      'the dead endpoint is disabled',
      async () => (await stack.db('webhook_endpoints').where({ id: disabled }).first('enabled')).enabled === false,
    );

    await signIn(operator.token);
    // Beside the queues: the counts, linking to the panel.
    await page.getByTestId('nav-queues').click();
    await page
      .getByTestId('queues-webhooks')
      .filter({ hasText: /1 failing endpoints, 1 disabled/ })
      .waitFor();
    await page.getByTestId('queues-webhooks').getByRole('link', { name: 'Webhooks' }).click();
    await page.getByTestId('webhook-failing-table').waitFor();
    expect(await page.evaluate(() => (globalThis as any).location.hash)).to.equal('#/webhooks');
    expect(await page.getByTestId('webhook-backlog').textContent()).to.match(/^1 deliveries pending, the oldest \d+s old/);

    const row = rowOf('failing', failing);
    expect(await row.getByTestId('webhook-last-error').textContent()).to.match(/^the endpoint answered 500 \(.+\)$/);
    // The next attempt is the retry pg-boss scheduled (30–60 s after the failure), as the page's locale prints it.
    const nextAttempt = await page.evaluate((at) => new Date(at).toLocaleString(), delivery.job.start_after.toISOString());
    expect(await row.getByTestId('webhook-next-attempt').textContent()).to.equal(nextAttempt);
    expect(await row.textContent()).to.include(`127.0.0.1:${receiver.port}`);
    expect(await row.textContent()).to.include(org);

    const dead = rowOf('disabled', disabled);
    expect(await dead.textContent()).to.include('every delivery failed for 72 hours');
    expect(await dead.getByTestId('webhook-last-error').textContent()).to.match(/^the endpoint was disabled \(.+\)$/);
    // The host only: a receiver's token in its URL never reaches the page.
    expect(await page.getByTestId('view').textContent()).to.not.include('receiver-secret');
  });

  it('the failed delivery’s job page retries it now; once the receiver answers, the panel shows no failing endpoint', async () => {
    receiverUp = true;
    const before = receiver.at('/down?token=receiver-secret').length;
    await rowOf('failing', failing).getByTestId('job-link').click();
    await page.getByTestId('job-id').waitFor();
    expect(await page.getByTestId('job-state').textContent()).to.equal('retry');
    await page.getByTestId('action-reason').fill('receiver fixed');
    await page.getByTestId('job-retry-now').click();
    await page
      .getByTestId('notice')
      .filter({ hasText: /^retry-now: / })
      .waitFor();
    await eventually('the delivery succeeded', async () => (await deliveryOf(failing))?.status === 'succeeded');
    expect(receiver.at('/down?token=receiver-secret').length).to.equal(before + 1);

    // The live panel follows without a reload.
    await page.getByTestId('nav-webhooks').click();
    await page.getByTestId('webhook-failing-none').waitFor();
    expect(await page.getByTestId('webhook-backlog').textContent()).to.match(/^0 deliveries pending/);
    await rowOf('disabled', disabled).waitFor();
  });

  it('an organization’s admin sees their organization’s endpoints only', async () => {
    const otherOwner = newUser();
    const third = await createOrganization(stack.server, otherOwner);
    const theirs = await createEndpoint(otherOwner, third, '/elsewhere');
    await publishEvents(stack.db, stack.url, [anEvent(third)]);
    await eventually(
      'the other organization’s endpoint is failing',
      async () => (await stack.db('webhook_endpoints').where({ id: theirs }).first('failing_since')).failing_since,
    );

    await page.getByTestId('nav-webhooks').click();
    await rowOf('failing', theirs).waitFor();

    const admin = await newMember(stack.db, org, 'admin');
    await signIn(admin.token);
    await page.getByTestId('nav-webhooks').click();
    await rowOf('disabled', disabled).waitFor();
    expect(await rowOf('failing', theirs).count()).to.equal(0);
    expect(await page.getByTestId('webhook-failing-none').isVisible()).to.equal(true);
  });
});
