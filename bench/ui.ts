// `npm run bench -- ui`: the dashboard's tasks page with 1,000 agents and 10,000 running tasks
// (test/harness/ui-scale.ts: a real master process, simulated agents, Debian's chromium):
// cold opens (a fresh tab each: page, modules, first paginated read, to the first rows
// drawn), reopens by hash change, and every frame of a top-to-bottom scroll of the
// virtualised list. Medians of 5; the targets: first rows under 1 s, frames under 50 ms.

import { launchBrowser } from '../test/harness/browser.ts';
import { Cleanup } from '../test/harness/processes.ts';
import { openTasksCold, percentile, reopenTasks, scrollTasks, startScaleCluster } from '../test/harness/ui-scale.ts';

const RUNS = 5;

export async function run(): Promise<unknown> {
  const cleanup = new Cleanup();
  const log = (m: string) => process.stderr.write(`[ui] ${m}\n`);
  try {
    log('starting a master with 1,000 simulated agents and 10,000 tasks');
    const cluster = await startScaleCluster(cleanup);
    const browser = await launchBrowser(cleanup);
    const cold: number[] = [];
    const again: number[] = [];
    const frames: number[] = [];
    let maxRows = 0;
    for (let i = 0; i < RUNS; i++) {
      const page = await browser.page();
      const c = await openTasksCold(page, cluster.master.url);
      cold.push(c.firstRowsMs);
      again.push(await reopenTasks(page));
      const s = await scrollTasks(page);
      frames.push(...s.frames);
      maxRows = Math.max(maxRows, s.maxRows);
      await page.close();
      log(`run ${i + 1}: first rows ${c.firstRowsMs.toFixed(0)} ms, again ${again.at(-1)!.toFixed(0)} ms, scroll p95 ${percentile(s.frames, 0.95).toFixed(1)} ms`);
    }
    await browser.close();
    await cluster.close();
    const ms = (x: number) => Math.round(x * 10) / 10;
    return {
      agents: 1000, tasks: 10_000, runs: RUNS,
      coldOpenFirstRowsMs: { median: ms(percentile(cold, 0.5)), min: ms(Math.min(...cold)), max: ms(Math.max(...cold)), target: 1000 },
      reopenMs: { median: ms(percentile(again, 0.5)), max: ms(Math.max(...again)) },
      scrollFrameMs: { median: ms(percentile(frames, 0.5)), p95: ms(percentile(frames, 0.95)), worst: ms(Math.max(...frames)), target: 50 },
      maxRowsInPage: maxRows,
    };
  } finally {
    await cleanup.run();
  }
}
