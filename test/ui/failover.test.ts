// The dashboard through a leader change: three master processes and an agent; the page is
// opened on the leader, and that very master — the one that served the page — is killed with
// SIGKILL. The same page, not reloaded, goes on through the other masters of the group (CORS
// between members; its token carried to them): a task started after the failover appears, and
// the masters table names the new leader.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { browserSkipReason, launchBrowser, screenshot, type UiBrowser } from '../harness/browser.ts';
import { startFailoverCluster, waitForLeaderProcess, type MasterMember } from '../harness/master-processes.ts';
import { Cleanup, runCairn } from '../harness/processes.ts';

const skip = browserSkipReason();

describe.skipIf(skip !== undefined)('the dashboard through a leader change', () => {
  const cleanup = new Cleanup();
  let members: MasterMember[];
  let lead: MasterMember;
  let browser: UiBrowser;
  let page: Page;

  beforeAll(async () => {
    ({ members, lead } = await startFailoverCluster(cleanup, 'cairn-ui-failover-', 'cpus:4;mem:2048;ports:[31000-31099]'));
    browser = await launchBrowser(cleanup);
    page = await browser.page();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await cleanup.run();
  }, 60_000);

  it('keeps showing live data on the same page after the master that served it, the leader, is killed', async () => {
    await page.goto(`${lead.url}/ui/#/tasks`);
    await page.locator('.live.on').waitFor({ timeout: 15_000 });
    const all = members.map((m) => m.url).join(',');
    const before = await runCairn(['run', '--master', all, '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'echo before-failover'], {}, 60_000);
    expect(before.code, before.stderr).toBe(0);
    await page.locator('.tasklist .vrow', { hasText: 'cairn-run' }).first().waitFor({ timeout: 15_000 });
    // A mark that a reload would wipe.
    await page.evaluate(() => ((window as unknown as { uiMark: number }).uiMark = 42));

    await lead.proc!.kill('SIGKILL');
    const rest = members.filter((m) => m !== lead);
    const next = await waitForLeaderProcess(rest);
    const after = await runCairn(['run', '--master', rest.map((m) => m.url).join(','), '--name', 'after-failover', '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'echo after'], {}, 60_000);
    expect(after.code, after.stderr).toBe(0);
    await page.locator('.tasklist .vrow', { hasText: 'after-failover' }).first().waitFor({ timeout: 15_000 });
    await page.locator('.live.on').waitFor({ timeout: 15_000 });

    // The cluster page (a hash change, not a load) names the new leader.
    await page.keyboard.press('g');
    await page.keyboard.press('c');
    const masters = page.locator('table[aria-label="masters"] tbody tr');
    await masters.filter({ hasText: next.url }).filter({ hasText: 'leader' }).waitFor({ timeout: 20_000 });
    await page.locator('.pagehead', { hasText: 'Cluster' }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { uiMark?: number }).uiMark)).toBe(42);
    // Still on the dead master's page: everything came from the others.
    expect(new URL(page.url()).origin).toBe(new URL(lead.url).origin);
    expect(await page.locator('.banner').count()).toBe(0);
    await screenshot(page, 'failover');
  }, 120_000);
});
