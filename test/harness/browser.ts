// Debian's chromium driven by playwright-core, for the dashboard's browser tests: no browser
// download, a fresh profile per browser, the flags every test uses. Tests skip (saying why)
// where /usr/bin/chromium is missing, except under CI=true where they must run.

import { existsSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { TEST_USER } from './credentials.ts';
import type { Cleanup } from './processes.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Where the tests write their screenshots (gitignored). */
export const SCREENSHOTS = fileURLToPath(new URL('../../test-output/ui/', import.meta.url));

/** Why the browser tests cannot run here, or undefined when they can; throws under CI=true. */
export function browserSkipReason(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  const why = `${CHROMIUM} is missing (apt-get install chromium)`;
  if (process.env.CI === 'true') throw new Error(`the browser tests must run under CI=true, but ${why}`);
  console.warn(`skipping the dashboard's browser tests: ${why}`);
  return why;
}

export interface UiBrowser {
  context: BrowserContext;
  /** A new tab, logged in with the test principal's token unless `login` is false. */
  page(opts?: { login?: boolean }): Promise<Page>;
  close(): Promise<void>;
}

/** A chromium with a fresh profile under a directory `cleanup` removes; close() ends it. */
export async function launchBrowser(cleanup: Cleanup): Promise<UiBrowser> {
  const profile = cleanup.dir('cairn-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1440, height: 900 },
    timeout: 30_000,
  });
  const pageErrors: string[] = [];
  return {
    context,
    async page({ login = true } = {}) {
      const page = await context.newPage();
      if (login) {
        await page.addInitScript((token: string) => {
          if (!sessionStorage.getItem('cairn.token')) sessionStorage.setItem('cairn.token', token);
        }, TEST_USER.secret);
      }
      page.on('pageerror', (err) => pageErrors.push(err.message));
      page.on('console', (msg) => {
        if (msg.type() === 'error' && process.env.CAIRN_UI_DEBUG) console.log(`[browser] ${msg.text()}`);
      });
      return page;
    },
    async close() {
      await context.close().catch(() => undefined);
    },
  };
}

/** Writes the page's screenshot to test-output/ui/<name>.png (and to `alsoTo`, if given). */
export async function screenshot(page: Page, name: string, alsoTo?: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  if (alsoTo) await page.screenshot({ path: alsoTo });
  return file;
}
