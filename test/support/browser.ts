import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it), or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Call first in a browser suite's `before`: without Chromium it skips the suite on a developer's
 * machine (with a warning naming `what`) and fails it in CI, where a skipped browser test would hide a
 * broken page.
 */
export function requireChromium(context: Mocha.Context, what: string): void {
  if (existsSync(CHROMIUM)) return;
  const message = `no Chromium at ${CHROMIUM} (set CHROMIUM_PATH, or: apt-get install -y chromium)`;
  if (process.env.CI) throw new Error(`the browser test needs Chromium in CI: ${message}`);
  console.warn(`skipping the ${what} browser test: ${message}`);
  context.skip();
}

/**
 * Headless Chromium with one page that records what the suites assert stays empty: requests to any
 * origin but `origin` (beside the `allowed` URL schemes) into `foreign`, and script errors and
 * Content-Security-Policy violations into `pageErrors`.
 */
export async function openWatchedPage(
  origin: string,
  seen: { foreign: string[]; pageErrors: string[] },
  allowed: readonly string[] = ['data:'],
): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
  const page = await browser.newPage();
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (!allowed.includes(url.protocol) && url.origin !== origin) seen.foreign.push(request.url());
  });
  page.on('pageerror', (error) => seen.pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) seen.pageErrors.push(message.text());
  });
  return { browser, page };
}
