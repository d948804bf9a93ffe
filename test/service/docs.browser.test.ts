import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { openWatchedPage, requireChromium } from '../support/browser.ts';
import { useServer } from '../support/suite.ts';

/**
 * The API reference page (GET /docs) in a real headless Chromium: Scalar's bundle served by this
 * server (nothing from a CDN) renders /openapi.json: the operation groups (tags) are listed and an
 * operation shows its request body's schema.
 */
describe('API reference page /docs (browser)', function () {
  this.timeout(120_000);
  const ctx = useServer();
  let browser: Browser;
  let page: Page;
  /** Requests the page made to anywhere but the server. */
  const foreign: string[] = [];
  /** Script errors and CSP violations the page reported. */
  const pageErrors: string[] = [];

  before(async function () {
    requireChromium(this, '/docs');
    ({ browser, page } = await openWatchedPage(new URL(ctx.server.url).origin, { foreign, pageErrors }, ['data:', 'blob:']));
  });
  after(async () => {
    await browser?.close();
  });

  it('is open, HTML, and serves its scripts from this server', async () => {
    const res = await ctx.server.request('get', '/docs');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).to.include("default-src 'self'");
    const html = res.body as string;
    const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.map((src) => src.replace(/\?v=.*/, ''))).to.deep.equal(['/docs/standalone.js', '/docs/init.js']);
    const bundle = await ctx.server.request('get', scripts[0]!);
    expect(bundle.status).to.equal(200);
    expect(bundle.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect(bundle.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
    expect((await ctx.server.request('get', '/docs/other.js')).status).to.equal(404);
  });

  it('renders /openapi.json: the operation groups are listed, and an operation shows its schema', async () => {
    await page.goto(`${ctx.server.url}/docs`);
    // The sidebar lists the document's tags (operation groups).
    for (const tag of ['Organizations', 'Assets', 'Social', 'Scheduled tasks']) {
      await page.getByText(tag, { exact: true }).first().waitFor({ state: 'visible', timeout: 60_000 });
    }
    // One operation: createOrganization, with its request body's fields (its schema) shown.
    await page.getByText('Organizations', { exact: true }).first().click();
    const operation = page.locator('[id$="tag/organizations/POST/organizations"]');
    await operation.waitFor({ timeout: 60_000 });
    for (const field of ['name', 'slug']) await page.locator(`[id$="tag/organizations/POST/organizations.body.${field}"]`).waitFor({ timeout: 30_000 });
    const text = (await operation.innerText()).replace(/\s+/g, ' ');
    expect(text).to.include('Create an organization; the caller becomes its owner');
    expect(foreign, 'requests to hosts other than the server').to.deep.equal([]);
    expect(pageErrors, 'errors reported by the page').to.deep.equal([]);
  });
});
