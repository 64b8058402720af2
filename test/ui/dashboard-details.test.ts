// The dashboard's finer points in a real browser against a real local cluster (a master and an
// agent sampling usage every 500 ms, as processes; its one GPU is a stand-in: an nvidia-smi on
// its PATH that answers the two queries the agent asks with recorded-format lines, the GPU
// busier as the seconds go, so no GPU is needed): framework names beside ids, one time
// format on every page, an expired login link said so, chart ticks that read, resource use over
// time for a task and its agent from a task burning CPU, early-stopped trials marked, the
// parallel plot's colour legend, and a header that fits 800 px. Screenshots go to
// test-output/ui/<name>.png.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { authFetch } from '../harness/credentials.ts';
import { browserSkipReason, launchBrowser, screenshot, type UiBrowser } from '../harness/browser.ts';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';

const skip = browserSkipReason();

/** nvidia-smi as the agent asks it: discovery (index, uuid, name, memory) and usage (memory used, utilisation). */
const STAND_IN_NVIDIA_SMI = `#!/bin/sh
uuid=GPU-5d1f8a43-9c1e-7b2a-3f44-0e6c2d9b8a11
s=$(date +%s)
case "$1" in
  --query-gpu=index,uuid,name,memory.total) echo "0, $uuid, Stand-in GPU, 24576" ;;
  --query-gpu=index,uuid,memory.used,memory.total,utilization.gpu) echo "0, $uuid, $(( s % 7 * 1000 )), 24576, $(( s % 10 * 10 ))" ;;
  *) echo "unexpected query: $*" >&2; exit 2 ;;
esac
`;

const TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/** Times on the page written some other way than the dashboard's one format. */
function foreignTimes(text: string): string[] {
  const patterns = [
    /\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/g, // 11/27/2026 (a locale's)
    /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/g, // raw ISO
    /\b\d{1,2}:\d{2}(?::\d{2})?\s?[AP]M\b/gi, // 10:10 PM
    /(?<!\d{4}-\d{2}-\d{2} )\b\d{2}:\d{2}:\d{2}\b/g, // a time of day without its date
  ];
  return patterns.flatMap((p) => [...text.matchAll(p)].map((m) => m[0]));
}

/** Every <time class="when"> on the page, and the main area's visible text. */
async function timesOf(page: Page): Promise<{ when: string[]; text: string }> {
  return page.evaluate(() => ({
    when: [...document.querySelectorAll('time.when')].map((e) => e.textContent ?? ''),
    text: (document.querySelector('main') as HTMLElement).innerText,
  }));
}

async function expectOneTimeFormat(page: Page, atLeast: number): Promise<void> {
  const { when, text } = await timesOf(page);
  expect(when.length).toBeGreaterThanOrEqual(atLeast);
  for (const w of when) expect(w).toMatch(TIME);
  expect(foreignTimes(text)).toEqual([]);
}

describe.skipIf(skip !== undefined)('the dashboard details, in a browser on a real cluster', () => {
  const cleanup = new Cleanup();
  let master: CairnProcess;
  let browser: UiBrowser;
  let page: Page;
  let burner: Promise<{ code: number | null }>;
  let task: { id: string; frameworkId: string; frameworkName: string; agentId: string };

  beforeAll(async () => {
    master = await startMasterProcess(cleanup);
    const bin = cleanup.dir('cairn-stand-in-bin-');
    writeFileSync(join(bin, 'nvidia-smi'), STAND_IN_NVIDIA_SMI);
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    await startAgentProcess(cleanup, master.url, {
      resources: 'cpus:4;mem:4096;disk:2000;gpus:1;ports:[31200-31299]', extra: ['--usage-interval', '500ms'],
      env: { PATH: `${bin}:${process.env.PATH}` },
    });
    browser = await launchBrowser(cleanup);
    page = await browser.page();
    // A task that burns CPU for 12 s: its usage is what the charts must show.
    burner = runCairn(['run', '--master', master.url, '--name', 'burner', '--cpus', '0.5', '--mem', '64', '--gpus', '1', '--', 'timeout', '12', 'sh', '-c', 'while :; do :; done'], {}, 90_000);
    task = await waitFor('the burner to run', async () => {
      const body = await (await authFetch(`${master.url}/api/v1/tasks?limit=20`)).json();
      const t = body.tasks?.find((x: { name: string; state: string }) => x.name.includes('burner') && x.state === 'TASK_RUNNING');
      return t?.frameworkName ? t : undefined;
    }, 30_000, 100);
  }, 90_000);

  afterAll(async () => {
    await burner?.catch(() => undefined);
    await browser?.close();
    await cleanup.run();
  }, 60_000);

  it("names a task's framework, the id only in its title", async () => {
    expect(task.frameworkName).not.toBe(task.frameworkId);
    await page.goto(`${master.url}/ui/#/tasks`);
    const cell = page.locator('.tasklist .vrow', { hasText: 'burner' }).first().locator('.c-fw');
    await cell.waitFor({ timeout: 15_000 });
    expect((await cell.textContent())?.trim()).toBe(task.frameworkName);
    expect(await cell.getAttribute('title')).toBe(task.frameworkId);
    expect(await page.locator('main').innerText()).not.toContain(task.frameworkId.slice(-10));
    await page.goto(`${master.url}/ui/#/tasks/${encodeURIComponent(task.id)}`);
    const fw = page.locator('.fwname');
    await fw.waitFor({ timeout: 15_000 });
    expect(await fw.textContent()).toBe(task.frameworkName);
    expect(await fw.getAttribute('title')).toBe(task.frameworkId);
    expect(await page.locator('main').innerText()).not.toContain(task.frameworkId);
  });

  it("draws a running task's CPU and memory over time, and its agent's", async () => {
    await page.goto(`${master.url}/ui/#/tasks/${encodeURIComponent(task.id)}`);
    const charts = page.locator('.usage-charts');
    await expect.poll(async () => Number(await charts.getAttribute('data-points').catch(() => '0')), { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    await page.locator('.usage-chart[data-kind=cpu] .chart canvas').waitFor();
    await page.locator('.usage-chart[data-kind=memory] .chart canvas').waitFor();
    // The figures drawn are the task's own: it burnt CPU, and held memory.
    const history = await (await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(task.id)}/usage/history`)).json();
    expect(history.points.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...history.points.map((p: { cpusUsed: number | null }) => p.cpusUsed ?? 0))).toBeGreaterThan(0.2);
    expect(history.points.every((p: { memoryBytes: number }) => p.memoryBytes > 0)).toBe(true);
    // Its GPU's utilisation, as nvidia-smi reported it.
    await page.locator('.usage-chart[data-kind=gpu] .chart canvas').waitFor();
    expect(history.points.some((p: { gpus: { index: number; utilizationPercent: number | null }[] }) => p.gpus.some((g) => g.index === 0 && g.utilizationPercent !== null))).toBe(true);
    expect(JSON.parse((await page.locator('.usage-chart[data-kind=gpu] .chart').getAttribute('data-y-ticks')) ?? '[]').every((t: string) => t.endsWith(' %'))).toBe(true);
    await screenshot(page, 'task-usage');

    await page.goto(`${master.url}/ui/#/agents/${encodeURIComponent(task.agentId)}`);
    await expect.poll(async () => Number(await page.locator('.usage-charts').getAttribute('data-points').catch(() => '0')), { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    const agentHistory = await (await authFetch(`${master.url}/api/v1/agents/${encodeURIComponent(task.agentId)}/usage/history`)).json();
    expect(agentHistory.points.some((p: { tasks: { taskId: string }[] }) => p.tasks.some((t) => t.taskId === task.id))).toBe(true);
    await page.locator('.usage-chart[data-kind=gpu] .chart canvas').waitFor();
    await screenshot(page, 'agent');
  });

  it('labels chart ticks by the time of day and with units, spaced to be read', async () => {
    await page.goto(`${master.url}/ui/#/tasks/${encodeURIComponent(task.id)}`);
    const cpu = page.locator('.usage-chart[data-kind=cpu] .chart');
    await expect.poll(async () => JSON.parse((await cpu.getAttribute('data-x-ticks')) ?? '[]').length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    const xTicks: string[] = JSON.parse((await cpu.getAttribute('data-x-ticks'))!);
    const yTicks: string[] = JSON.parse((await cpu.getAttribute('data-y-ticks'))!);
    for (const t of xTicks) expect(t).toMatch(/^(\d{2}-\d{2} )?\d{2}:\d{2}(:\d{2})?$/);
    expect(new Set(xTicks).size).toBe(xTicks.length);
    // At least 100 px between time ticks: no more of them than fit.
    const width = (await cpu.boundingBox())!.width;
    expect(xTicks.length).toBeLessThanOrEqual(Math.floor(width / 100) + 1);
    expect(yTicks.length).toBeGreaterThanOrEqual(2);
    for (const t of yTicks) expect(t).toMatch(/^-?[\d.e+-]+ cpus$/);
    const memTicks: string[] = JSON.parse((await page.locator('.usage-chart[data-kind=memory] .chart').getAttribute('data-y-ticks'))!);
    for (const t of memTicks) expect(t).toMatch(/ MiB$/);
  });

  it('writes every time one way on the task, agent, cluster, job and jobs pages', async () => {
    const job = await authFetch(`${master.url}/api/v1/jobs`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ui-times', kind: 'batch', groups: [{ name: 'worker', replicas: 1, template: { command: 'echo done', cpus: 0.1, mem: 32 } }] }),
    });
    expect(job.status, await job.clone().text()).toBe(201);
    await page.goto(`${master.url}/ui/#/tasks/${encodeURIComponent(task.id)}`);
    await page.locator('table[aria-label="status history"] time.when').first().waitFor({ timeout: 15_000 });
    await expectOneTimeFormat(page, 3);
    await page.goto(`${master.url}/ui/#/agents/${encodeURIComponent(task.agentId)}`);
    await page.locator('.facts time.when').first().waitFor({ timeout: 15_000 });
    await expectOneTimeFormat(page, 1);
    await page.goto(`${master.url}/ui/#/cluster`);
    await page.locator('table[aria-label="agents"] time.age').first().waitFor({ timeout: 15_000 });
    // An age carries the time itself, in the one format, in its title.
    expect(await page.locator('table[aria-label="agents"] time.age').first().getAttribute('title')).toMatch(TIME);
    await expectOneTimeFormat(page, 0);
    await page.goto(`${master.url}/ui/#/jobs/ui-times`);
    await page.locator('.facts time.when').first().waitFor({ timeout: 15_000 });
    await expect.poll(async () => page.locator('main time.when').count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
    await expectOneTimeFormat(page, 3);
    await page.goto(`${master.url}/ui/#/jobs`);
    await page.getByText('ui-times').first().waitFor({ timeout: 15_000 });
    expect(await page.locator('main time.age').first().getAttribute('title')).toMatch(TIME);
    await expectOneTimeFormat(page, 0);
  });

  it('says a login link has expired, and what to do', async () => {
    const res = await authFetch(`${master.url}/api/v1/ui/links`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttlMs: 1 }) });
    expect(res.status).toBe(201);
    const link = await res.json();
    // Its time (1 ms, on the master's steady clock, which reads as epoch ms on this host) is past.
    await waitFor('the link to expire', () => (Date.now() > link.expiresAtMs + 20 ? true : undefined));
    const fresh = await browser.page({ login: false });
    await fresh.goto(link.url);
    const alert = fresh.locator('.login [role=alert]');
    await alert.waitFor({ timeout: 15_000 });
    expect(await alert.textContent()).toMatch(/This login link has expired .*Run cairn ui again/);
    await fresh.getByLabel('token').waitFor();
    await screenshot(fresh, 'expired-link');
    await fresh.close();
  });

  it('keeps the header on one line at 800 px, every page link in view', async () => {
    const narrow = await browser.page();
    await narrow.setViewportSize({ width: 800, height: 700 });
    await narrow.goto(`${master.url}/ui/#/cluster`);
    await narrow.locator('header.top nav a').first().waitFor({ timeout: 15_000 });
    await narrow.locator('.live.on').waitFor({ timeout: 10_000 });
    const m = await narrow.evaluate(() => {
      const top = document.querySelector('header.top') as HTMLElement;
      const box = top.getBoundingClientRect();
      const els = [...top.querySelectorAll('a, button, .live')];
      const items = els.map((e) => e.getBoundingClientRect());
      // Text that wrapped onto a second line: its line boxes start at more than one height.
      const wrapped = els.filter((e) => {
        const range = document.createRange();
        range.selectNodeContents(e);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
      }).map((e) => e.textContent);
      return {
        wrapped,
        scrollWidth: top.scrollWidth, clientWidth: top.clientWidth, height: box.height, right: box.right,
        outside: items.filter((r) => r.right > box.right + 0.5 || r.left < box.left - 0.5 || r.bottom > box.bottom + 0.5).length,
        links: top.querySelectorAll('nav a').length,
      };
    });
    expect(m.links).toBeGreaterThanOrEqual(5);
    expect(m.scrollWidth).toBeLessThanOrEqual(m.clientWidth);
    expect(m.outside).toBe(0);
    expect(m.wrapped).toEqual([]);
    expect(m.height).toBeLessThanOrEqual(44);
    await screenshot(narrow, 'header-800');
    await narrow.close();
  });

  it('marks early-stopped trials and shows the colour scale of the parallel plot', async () => {
    // Grid order: q=1 first, which runs to its end with the best accuracy at every step; q=2 and
    // q=3 report worse from their first step and are stopped by the median rule.
    const exp = await authFetch(`${master.url}/api/v1/experiments`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'kubeflow.org/v1beta1', kind: 'Experiment', metadata: { name: 'ui-early' },
        spec: {
          objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
          algorithm: { algorithmName: 'grid' },
          earlyStopping: { algorithmName: 'medianstop', algorithmSettings: [{ name: 'min_trials_required', value: '1' }, { name: 'start_step', value: '1' }] },
          parallelTrialCount: 1, maxTrialCount: 3,
          parameters: [{ name: 'q', parameterType: 'categorical', feasibleSpace: { list: ['1', '2', '3'] } }],
          trialTemplate: {
            command: 'for s in 1 2 3 4 5 6; do echo "epoch=$s accuracy=$(awk "BEGIN{print 1/${q} + $s/100}")"; if [ ${q} -gt 1 ]; then sleep 1; else sleep 0.1; fi; done',
            resources: { cpus: 0.25, memory: '32M' },
          },
        },
      }),
    });
    expect(exp.status, await exp.clone().text()).toBe(201);
    const done = await waitFor('the experiment to end', async () => {
      const e = await (await authFetch(`${master.url}/api/v1/experiments/ui-early`)).json();
      return e.phase !== 'Running' && e.phase !== 'Created' && e.trials?.length === 3 ? e : undefined;
    }, 90_000, 250);
    const stopped = done.trials.filter((t: { state: string }) => t.state === 'EarlyStopped');
    expect(stopped.length, JSON.stringify(done.trials.map((t: { index: number; state: string }) => [t.index, t.state]))).toBeGreaterThanOrEqual(1);

    await page.goto(`${master.url}/ui/#/experiments/ui-early`);
    const rows = page.locator('table[aria-label="Trials"] tbody tr:not(.empty)');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(3);
    const marked = page.locator('table[aria-label="Trials"] tbody tr.early-stopped');
    expect(await marked.count()).toBe(stopped.length);
    for (let i = 0; i < stopped.length; i++) expect(await marked.nth(i).textContent()).toContain('stopped early');
    expect(await page.locator('table[aria-label="Trials"] tbody tr:not(.early-stopped)', { hasText: 'stopped early' }).count()).toBe(0);
    // In the parallel plot: dashed lines, one per stopped trial.
    expect(await page.locator('.parallel-coords path[data-early-stopped=true]').count()).toBe(stopped.length);

    // The legend: the colour ramp, its ends the worst and best accuracy of the trials.
    const legend = page.getByRole('group', { name: 'colour scale' });
    await legend.waitFor();
    expect(await legend.locator('.pc-ramp').evaluate((e) => getComputedStyle(e).backgroundImage)).toMatch(/linear-gradient/);
    const values = done.trials.map((t: { value?: number }) => t.value).filter((v: unknown): v is number => typeof v === 'number');
    expect(Number(await legend.locator('[data-end=worst]').textContent())).toBeCloseTo(Math.min(...values), 3);
    expect(Number(await legend.locator('[data-end=best]').textContent())).toBeCloseTo(Math.max(...values), 3);
    expect(await legend.textContent()).toMatch(/stopped early/);
    // The trial axis counts trials: whole numbers only.
    const trialTicks: string[] = JSON.parse((await page.locator('.metric-chart[data-kind=by-trial] .chart').getAttribute('data-x-ticks')) ?? '[]');
    expect(trialTicks.length).toBeGreaterThanOrEqual(2);
    for (const t of trialTicks) expect(t).toMatch(/^\d+$/);
    await expectOneTimeFormat(page, 2);
    await screenshot(page, 'experiment-early-stopped');
    await page.locator('.pc-legend').scrollIntoViewIfNeeded();
    await screenshot(page, 'parallel-legend');
  }, 120_000);
});
