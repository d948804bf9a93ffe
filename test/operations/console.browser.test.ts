import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { openWatchedPage, requireChromium } from '../support/browser.ts';
import { assetImportJob } from '../../src/assets/jobs.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { allowNoRetry } from './support.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

/**
 * The job console (GET /ops) in a real headless Chromium against a real web process and worker: an
 * operator signs in with a token, finds a failed job, retries it and watches it complete. The job is
 * a link import whose upstream answers 503 until the test lets it succeed; its queue allows no
 * retry, so the first failure is final.
 */
describe('job console page (browser)', function () {
  this.timeout(90_000);
  let stack: Stack;
  let upstream: FakeUpstream;
  let browser: Browser;
  let page: Page;
  let operator: TestUser;
  let alice: TestUser;
  let org: string;
  let upstreamHealthy = false;
  /** Requests the page made to anywhere but the server. */
  const foreign: string[] = [];
  /** Script errors and CSP violations the page reported. */
  const pageErrors: string[] = [];

  before(async function () {
    requireChromium(this, 'job console');
    upstream = await startUpstream({
      '/flaky.txt': (_req, res) => {
        if (!upstreamHealthy) {
          res.writeHead(503);
          res.end();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('hello');
      },
    });
    stack = await startStack({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    await allowNoRetry(stack);
    operator = newOperator();
    alice = newUser();
    org = await createOrganization(stack.server, alice);

    ({ browser, page } = await openWatchedPage(new URL(stack.server.url).origin, { foreign, pageErrors }));
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
    await upstream?.close();
  });
  afterEach(() => {
    expect(foreign, 'requests to hosts other than the server').to.deep.equal([]);
    expect(pageErrors, 'errors reported by the page').to.deep.equal([]);
  });

  const text = async (testid: string) => (await page.getByTestId(testid).first().textContent())?.trim();

  it('is a static page with a strict policy: its own script and styles, no inline script, cacheable assets', async () => {
    const res = await fetch(`${stack.server.url}/ops`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).to.include("default-src 'self'");
    expect(csp).to.include("script-src 'self'");
    expect(csp).not.to.include('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(res.headers.get('cache-control')).to.equal('no-cache');
    const html = await res.text();
    expect(html).not.to.match(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = html.match(/src="(\/ops\/assets\/console\.js\?v=[\w-]+)"/)?.[1];
    expect(script, html).to.be.a('string');
    const asset = await fetch(new URL(script!, stack.server.url));
    expect(asset.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
    for (const path of ['/ops/assets/serve.ts', '/ops/assets/..%2Fserve.ts', '/ops/assets/index.html']) {
      const refused = await fetch(`${stack.server.url}${path}`);
      expect(refused.status, path).to.equal(404);
      expect(((await refused.json()) as any).code).to.equal('not_found');
    }
  });

  it('an operator signs in, finds the failed job, retries it and sees it complete', async () => {
    const res = await stack.server.request('post', '/assets/imports/link', {
      token: alice.token,
      body: { organization_id: org, url: `${upstream.url}/flaky.txt` },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const job = await eventually('the import job failed', async () => {
      const row = await stack.db('pgboss.job').where({ name: assetImportJob.name }).whereRaw(`data->>'asset_id' = ?`, [res.body.id]).first('id', 'state');
      return row?.state === 'failed' && row;
    });

    await page.goto(`${stack.server.url}/ops`);
    await page.getByTestId('token-input').fill(operator.token);
    await page.getByTestId('sign-in').click();
    await page.getByTestId('jobs-table').waitFor();

    await page.getByTestId('filter-state').selectOption('failed');
    await page.getByTestId('jobs-apply').click();
    const row = page.locator(`[data-testid="job-row"][data-job-id="${job.id}"]`);
    await row.waitFor();
    // The unfiltered list shows this job too: wait for the filtered one to replace it.
    await eventually('the list shows failed jobs only', async () => {
      const states = await page.getByTestId('job-row-state').allTextContents();
      return states.length > 0 && states.every((state) => state === 'failed');
    });
    expect(await row.getByTestId('job-row-state').textContent()).to.equal('failed');

    await row.getByTestId('job-link').click();
    await page.getByTestId('job-id').waitFor();
    expect(await text('job-id')).to.equal(job.id);
    expect(await text('job-state')).to.equal('failed');
    expect(await text('job-payload')).to.include(res.body.id);

    // The upstream is back; the retry's attempt then succeeds (enabled first, so the attempt cannot race it).
    upstreamHealthy = true;
    await page.getByTestId('action-reason').fill('upstream is back');
    await page.getByTestId('job-retry').click();
    await page
      .getByTestId('notice')
      .filter({ hasText: /^retry: the job is now / })
      .waitFor();
    await eventually('the page shows the job completed', async () => {
      if ((await text('job-state')) === 'completed') return true;
      await page.getByTestId('job-refresh').click();
      return page
        .waitForFunction(() => (globalThis as any).document.querySelector('[data-testid="job-state"]')?.textContent === 'completed', null, { timeout: 1000 })
        .then(() => true)
        .catch(() => false);
    });
    await page.getByTestId('job-actions').getByText('job.retry').waitFor();
    expect(await text('job-actions')).to.include('upstream is back');
  });

  it('shows queue health, workers, schedules and pauses', async () => {
    await page.getByTestId('nav-queues').click();
    await page.locator(`[data-testid="queue-row"][data-queue="${assetImportJob.name}"]`).waitFor();
    await page.getByTestId('nav-workers').click();
    await page.getByTestId('worker-row').filter({ hasText: 'live' }).first().waitFor();
    await page.getByTestId('nav-schedules').click();
    await page.getByTestId('schedules-table').waitFor();
    await page.getByTestId('nav-pauses').click();
    await page.getByTestId('pauses-table').waitFor();
    expect(await page.getByTestId('error').isHidden()).to.equal(true);
  });

  it('signs out: the token leaves the session and the sign-in form is back', async () => {
    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in-form').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('ops-console-token'))).to.equal(null);
    expect(await page.getByTestId('nav').isHidden()).to.equal(true);
  });
});
