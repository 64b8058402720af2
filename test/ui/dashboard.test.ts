// The dashboard in a real browser (Debian's chromium through playwright-core) against a real
// local cluster — a master and an agent as processes, as `cairn up` runs them: the login form
// takes a token and the overview lists the agent; a task started with `cairn run` shows in the
// task list within a second of the master knowing it, and its log streams into the task page
// while it runs; a training job shows its replicas and an experiment its trials. Every page's
// screenshot goes to test-output/ui/<page>.png; with CAIRN_UI_README_SHOT=1 the experiment page
// also goes to docs/ui.png (the README's), which a plain run leaves as it is.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { authFetch, TEST_USER } from '../harness/credentials.ts';
import { browserSkipReason, launchBrowser, screenshot, type UiBrowser } from '../harness/browser.ts';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';

const skip = browserSkipReason();
const README_SHOT = fileURLToPath(new URL('../../docs/ui.png', import.meta.url));

describe.skipIf(skip !== undefined)('the dashboard in a browser, on a real cluster', () => {
  const cleanup = new Cleanup();
  let master: CairnProcess;
  let browser: UiBrowser;
  let page: Page;

  beforeAll(async () => {
    master = await startMasterProcess(cleanup);
    const workDir = cleanup.dir('cairn-agent-');
    chmodSync(workDir, 0o755);
    await startAgentProcess(cleanup, master.url, { workDir, resources: 'cpus:4;mem:4096;disk:2000;ports:[31000-31199]' });
    browser = await launchBrowser(cleanup);
    page = await browser.page();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await cleanup.run();
  }, 60_000);

  it('asks for a token, then the overview lists the agent and the master', async () => {
    const fresh = await browser.page({ login: false });
    await fresh.goto(`${master.url}/ui/`);
    await fresh.getByLabel('token').fill(TEST_USER.secret);
    await fresh.getByRole('button', { name: 'Log in' }).click();
    const agents = fresh.locator('table[aria-label="agents"] tbody tr');
    await agents.filter({ hasText: 'localhost' }).first().waitFor({ timeout: 15_000 });
    expect(await agents.filter({ hasText: 'reachable' }).count()).toBe(1);
    await fresh.locator('table[aria-label="masters"]').getByText('leader').waitFor();
    expect(fresh.url()).toMatch(/#\/cluster$/);
    await fresh.locator('.live.on').waitFor({ timeout: 10_000 });
    await screenshot(fresh, 'cluster');
    await fresh.close();
  });

  it('shows a task from `cairn run` within a second and streams its log into the task page', async () => {
    await page.goto(`${master.url}/ui/#/tasks`);
    await page.locator('.live.on').waitFor({ timeout: 10_000 });
    await page.locator('.vhead').waitFor();
    const script = 'for i in $(seq 1 40); do echo "line $i"; sleep 0.15; done; echo "to stderr" >&2';
    const run = runCairn(['run', '--master', master.url, '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', script], {}, 60_000);
    // When the master first lists the task, and when the page first shows it.
    const known = waitFor('the master to list the task', async () => {
      const body = await (await authFetch(`${master.url}/api/v1/tasks?limit=5`)).json();
      const t = body.tasks?.find((x: { name: string; id: string }) => /cairn-run/.test(`${x.name} ${x.id}`));
      return t ? { id: t.id as string, atMs: Date.now() } : undefined;
    }, 30_000, 20);
    const shown = page.locator('.tasklist .vrow', { hasText: 'cairn-run' }).first().waitFor({ timeout: 30_000 }).then(() => Date.now());
    const [{ id, atMs }, shownAtMs] = await Promise.all([known, shown]);
    console.log(`task ${id}: on the page ${shownAtMs - atMs} ms after the master listed it`);
    expect(shownAtMs - atMs).toBeLessThan(1000);
    await screenshot(page, 'tasks');

    // Open it with the keyboard: j selects the first row (the newest), Enter opens it.
    await page.keyboard.press('j');
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`#/tasks/${encodeURIComponent(id)}$`));
    const log = page.locator('pre.logtext');
    await expect.poll(async () => log.textContent(), { timeout: 15_000 }).toContain('line 1');
    // Streamed: it grows while the task runs, up to its last line.
    const early = (await log.textContent()) ?? '';
    expect(early).not.toContain('line 40');
    await expect.poll(async () => log.textContent(), { timeout: 30_000 }).toContain('line 40');
    await page.getByText('running', { exact: true }).first().waitFor().catch(() => undefined);
    await screenshot(page, 'task');
    await page.getByRole('tab', { name: 'stderr' }).click();
    await expect.poll(async () => log.textContent(), { timeout: 15_000 }).toContain('to stderr');
    expect((await run).code).toBe(0);
    // The history says it finished.
    await page.locator('table[aria-label="status history"]').getByText('finished').first().waitFor({ timeout: 15_000 });
  });

  it('shows a training job with its replicas and an experiment with its trials', async () => {
    const job = await authFetch(`${master.url}/api/v1/jobs`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'ui-job', kind: 'pytorch',
        groups: [
          { name: 'master', replicas: 1, template: { command: 'echo master; sleep 2', cpus: 0.25, mem: 32 } },
          { name: 'worker', replicas: 2, template: { command: 'echo "worker $CAIRN_REPLICA_INDEX"; sleep 2', cpus: 0.25, mem: 32 } },
        ],
      }),
    });
    expect(job.status, await job.clone().text()).toBe(201);
    const exp = await authFetch(`${master.url}/api/v1/experiments`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'kubeflow.org/v1beta1', kind: 'Experiment', metadata: { name: 'ui-exp' },
        spec: {
          objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
          algorithm: { algorithmName: 'random' }, seed: 7,
          parallelTrialCount: 3, maxTrialCount: 6,
          parameters: [
            { name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.01', max: '0.9' } },
            { name: 'layers', parameterType: 'int', feasibleSpace: { min: '1', max: '8' } },
          ],
          trialTemplate: { command: 'sleep 0.4; echo "accuracy=$(echo "${lr} ${layers}" | awk \'{print 1 - ($1 - 0.3)^2 - ($2 - 4)^2 / 100}\')"', resources: { cpus: 0.25, memory: '32M' } },
        },
      }),
    });
    expect(exp.status, await exp.clone().text()).toBe(201);

    await page.goto(`${master.url}/ui/#/jobs`);
    await page.getByText('ui-job').first().waitFor({ timeout: 15_000 });
    await screenshot(page, 'jobs');
    await page.goto(`${master.url}/ui/#/jobs/ui-job`);
    const workers = page.locator('table[aria-label="Replicas of worker"] tbody tr:not(.empty)');
    await expect.poll(() => workers.count(), { timeout: 30_000 }).toBe(2);
    await expect.poll(() => page.locator('table[aria-label="Replicas of master"] tbody tr:not(.empty)').count(), { timeout: 30_000 }).toBe(1);
    await screenshot(page, 'job');

    await page.goto(`${master.url}/ui/#/experiments`);
    await page.getByText('ui-exp').first().waitFor({ timeout: 15_000 });
    await screenshot(page, 'experiments');
    await page.goto(`${master.url}/ui/#/experiments/ui-exp`);
    const trials = page.locator('table[aria-label="Trials"] tbody tr:not(.empty)');
    // Live: the trials arrive as the experiment runs them, without a reload.
    await expect.poll(() => trials.count(), { timeout: 90_000, interval: 250 }).toBe(6);
    await expect.poll(async () => (await authFetch(`${master.url}/api/v1/experiments/ui-exp`).then((r) => r.json())).phase, { timeout: 90_000 }).not.toBe('Running');
    await page.getByText(/Best so far/).waitFor({ timeout: 15_000 });
    await page.waitForTimeout(500);
    await screenshot(page, 'experiment', process.env.CAIRN_UI_README_SHOT === '1' ? README_SHOT : undefined);
  }, 180_000);

  it('shows the services and the tenants', async () => {
    const q = await authFetch(`${master.url}/api/v1/quotas/ui-team`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ guarantee: { cpus: 2 }, limit: { gpus: 1 } }) });
    expect(q.status).toBe(200);
    await page.goto(`${master.url}/ui/#/tenants`);
    await page.locator('table[aria-label="roles"] tbody tr:not(.empty)').first().waitFor({ timeout: 15_000 });
    // The quota set a moment ago is on the page: its role, its guarantee and its limit.
    const team = page.locator('table[aria-label="roles"] tbody tr', { hasText: 'ui-team' });
    await team.waitFor({ timeout: 15_000 });
    expect(await team.textContent()).toMatch(/cpus 2.*gpus 1/);
    await page.locator('table[aria-label="principals"]').waitFor();
    await screenshot(page, 'tenants');
    await page.goto(`${master.url}/ui/#/services`);
    await page.locator('main .page').first().waitFor();
    await page.waitForTimeout(500);
    expect(await page.locator('main').textContent()).not.toMatch(/This page failed/);
    await screenshot(page, 'services');
    // `?` shows the keyboard help; g c goes back to the cluster.
    await page.keyboard.press('?');
    await page.getByRole('dialog', { name: 'keyboard shortcuts' }).waitFor();
    await page.keyboard.press('Escape');
    await page.keyboard.press('g');
    await page.keyboard.press('c');
    await page.waitForURL(/#\/cluster$/);
  });
});
