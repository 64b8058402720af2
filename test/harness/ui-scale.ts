// The dashboard at scale: a real master process with 1,000 simulated agents (in this process,
// over real WebSockets: fake-agent.ts) and 10,000 running tasks launched by a plain v1
// framework, at rest once every acknowledgement is answered; and the tasks page measured in a
// real browser (cold open to the first rows, a reopen by hash change, scrolling the
// virtualised list frame by frame). test/ui/scale.test.ts checks the behaviour with room for
// a busy machine; `npm run bench -- ui` reports the figures.

import type { Page } from 'playwright-core';
import { authorizationHeader } from '../../agent/credential.ts';
import { authFetch, TEST_AGENT } from './credentials.ts';
import { FakeAgent } from './fake-agent.ts';
import { startMasterProcess, waitFor, type CairnProcess, type Cleanup } from './processes.ts';
import { RawScheduler, taskInfo, type RawEvent } from './raw-scheduler.ts';

export const AGENTS = 1000;
export const TASKS = 10_000;
const PER_AGENT = TASKS / AGENTS;
const TASK = { cpus: 0.1, mem: 32 };

export interface ScaleCluster {
  master: CairnProcess;
  close(): Promise<void>;
}

export async function startScaleCluster(cleanup: Cleanup): Promise<ScaleCluster> {
  const master = await startMasterProcess(cleanup);
  const agents: FakeAgent[] = [];
  const headers = { authorization: authorizationHeader(TEST_AGENT) };
  for (let i = 0; i < AGENTS; i++) {
    agents.push(new FakeAgent({ masterUrl: master.url, hostname: `sim-${String(i).padStart(4, '0')}`, headers, resources: `cpus:${PER_AGENT * TASK.cpus};mem:${PER_AGENT * TASK.mem};disk:1000` }));
  }
  for (let i = 0; i < AGENTS; i += 100) await Promise.all(agents.slice(i, i + 100).map((a) => a.connect()));

  const s = new RawScheduler(master.url);
  let launched = 0;
  const calls = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    const q = p.catch(() => undefined);
    calls.add(q);
    void q.then(() => calls.delete(q));
  };
  const seen = new Set<string>();
  s.onEvent((e: RawEvent) => {
    if (e.type === 'OFFERS') {
      for (const offer of e.offers.offers) {
        if (seen.has(offer.id.value)) continue;
        seen.add(offer.id.value);
        const cpus = offer.resources.find((r: { name: string }) => r.name === 'cpus')?.scalar.value ?? 0;
        const n = Math.min(Math.floor(cpus / TASK.cpus + 1e-9), TASKS - launched);
        const tasks = Array.from({ length: n }, () => taskInfo(`sim-task-${String(launched++).padStart(5, '0')}`, offer.agent_id.value, TASK, 'true'));
        track(s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: tasks.length ? [{ type: 'LAUNCH', launch: { task_infos: tasks } }] : [] } }));
      }
    } else if (e.type === 'UPDATE' && e.update.status.uuid) {
      const st = e.update.status;
      track(s.call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid } }));
    }
  });
  await s.subscribe({ user: '', name: 'ui-scale' });
  await waitFor('10,000 tasks running', async () => {
    const body = await (await authFetch(`${master.url}/api/v1/tasks?limit=1&state=RUNNING`)).json();
    return body.total === TASKS ? true : undefined;
  }, 180_000, 500);
  // At rest: every acknowledgement answered (1,000 agents pinging, 10,000 tasks held).
  await waitFor('the acknowledgements answered', () => (calls.size === 0 ? true : undefined), 60_000, 100);
  return {
    master,
    async close() {
      s.close();
      await Promise.all(agents.map((a) => a.close()));
    },
  };
}

/** A cold open of the tasks page in `page` (a fresh tab): ms from navigation start to the first rows drawn, and the count shown. */
export async function openTasksCold(page: Page, masterUrl: string): Promise<{ firstRowsMs: number; count: number }> {
  await page.goto(`${masterUrl}/ui/#/tasks`, { waitUntil: 'commit' });
  const firstRowsMs = (await (await page.waitForFunction(() => {
    const rows = document.querySelectorAll('.tasklist .vrow a');
    return rows.length >= 10 ? performance.now() : false;
  }, undefined, { polling: 'raf', timeout: 30_000 })).jsonValue()) as number;
  const count = Number(await page.locator('.pagehead .count').textContent());
  return { firstRowsMs, count };
}

/** The tasks page opened again from the cluster page (modules cached: a hash change), in ms. */
export async function reopenTasks(page: Page): Promise<number> {
  await page.evaluate(() => (location.hash = '#/cluster'));
  await page.locator('table[aria-label="agents"] tbody tr').nth(10).waitFor({ timeout: 30_000 });
  return (await page.evaluate(async () => {
    const t0 = performance.now();
    location.hash = '#/tasks';
    for (;;) {
      await new Promise((r) => requestAnimationFrame(r));
      if (document.querySelectorAll('.tasklist .vrow a').length >= 10) return performance.now() - t0;
    }
  })) as number;
}

/** Scrolls the list from top to bottom, a big step every frame: each frame's time, and the most rows the DOM held. */
export async function scrollTasks(page: Page): Promise<{ frames: number[]; maxRows: number }> {
  return (await page.evaluate(async () => {
    const box = document.querySelector('.tasklist .vbox') as HTMLElement;
    const frames: number[] = [];
    const end = box.scrollHeight - box.clientHeight;
    const steps = 240;
    let last = performance.now();
    let maxRows = 0;
    for (let i = 1; i <= steps; i++) {
      box.scrollTop = Math.round((end * i) / steps);
      await new Promise((r) => requestAnimationFrame(r));
      const now = performance.now();
      frames.push(now - last);
      last = now;
      maxRows = Math.max(maxRows, document.querySelectorAll('.tasklist .vrow').length);
    }
    return { frames, maxRows };
  })) as { frames: number[]; maxRows: number };
}

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}
