// A launch burst that must end: 600 tasks running `true` through a real master and agent,
// launched in ACCEPTs of 200, three runs; each run waits until every task has reported a
// terminal state and fails naming those that did not (issue 22: the launcher lost task ends
// under such bursts). Figures: seconds from SUBSCRIBE until all 600 had ended.

import { runTaskBurst } from '../test/harness/task-burst.ts';

export async function run(): Promise<unknown> {
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const r = await runTaskBurst({ tasks: 600, perAccept: 200, timeoutMs: 120_000 });
    runs.push(r);
    if (r.notEnded.length > 0) {
      throw new Error(`run ${i + 1}: ${r.notEnded.length} of ${r.tasks} tasks never ended (${JSON.stringify(r.counts)}), e.g. ${JSON.stringify(r.notEnded.slice(0, 5))}`);
    }
  }
  const secs = runs.map((r) => r.seconds).sort((a, b) => a - b);
  return { bench: 'task-burst', runs: runs.map(({ notEnded: _n, ...r }) => r), medianSecondsToAllEnded: secs[1] };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
