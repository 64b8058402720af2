// The tuning paper's own submission on a real cluster (a master and two agents as processes):
// `cairn tune submit` with its flags as the paper wrote them and its parameter file's shape
// (trailing comma and all), tuning a real small model — an MLP on scikit-learn's digits, under
// Debian's /usr/bin/python3 — to 95% validation accuracy at parallelism 1, 2 and 4. The data
// set is an input on a path every agent has, the program is shipped with --files, each trial
// writes its result to an output directory of its own.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, type CairnProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';
import type { ExperimentView } from '../../shared/tuning/views.ts';

const PYTHON = '/usr/bin/python3';
const hasSklearn = (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import sklearn, numpy'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasSklearn && process.env.CI) throw new Error(`${PYTHON} cannot import sklearn and numpy: .ci/run installs python3-sklearn`);
if (!hasSklearn) console.warn(`skipping the tuning paper test: ${PYTHON} cannot import sklearn (apt-get install python3-sklearn)`);

const cleanup = new Cleanup();
let master: CairnProcess;
let base: string;

beforeAll(async () => {
  if (!hasSklearn) return;
  base = cleanup.dir('cairn-tuning-paper-');
  chmodSync(base, 0o777);
  master = await startMasterProcess(cleanup);
  for (let i = 0; i < 2; i++) {
    const workDir = cleanup.dir('cairn-agent-');
    chmodSync(workDir, 0o755);
    await startAgentProcess(cleanup, master.url, { workDir, resources: 'cpus:2;mem:2048;ports:[31000-31099]' });
  }
  // The data set, exported once to a path every agent has (the paper read MNIST from HDFS).
  mkdirSync(join(base, 'data'));
  execFileSync(PYTHON, ['-c', `import numpy as np; from sklearn.datasets import load_digits; d = load_digits(); np.savez("${join(base, 'data', 'digits.npz')}", x=d.data, y=d.target)`]);
  copyFileSync(new URL('../../examples/tuning/demo-parameters.json', import.meta.url), join(base, 'demo-parameters.json'));
  copyFileSync(new URL('../../examples/tuning/digits_mlp.py', import.meta.url), join(base, 'digits_mlp.py'));
  mkdirSync(join(base, 'out'));
  chmodSync(join(base, 'out'), 0o777);
}, 120_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

/** The most trials that ran at the same moment, from their start and end times. */
function overlap(v: ExperimentView): number {
  const edges = v.trials.filter((t) => t.startedMs !== undefined).flatMap((t) => [[t.startedMs!, 1], [t.finishedMs ?? Infinity, -1]] as [number, number][]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return most;
}

describe.skipIf(!hasSklearn)('the tuning paper\'s submission', () => {
  for (const [parallelism, tuningType] of [[1, 'random-search'], [2, 'bayesian'], [4, 'random-search']] as const) {
    it(`tunes an MLP on digits to 95% accuracy at parallelism ${parallelism} (${tuningType})`, async () => {
      const name = `digits-p${parallelism}`;
      const r = await runCairn([
        'tune', 'submit', '--master', master.url,
        '--app-name', name,
        '--input', `${join(base, 'data')}#data`,
        '--output', `${join(base, 'out')}#out`,
        '--files', join(base, 'digits_mlp.py'),
        '--app-runner-launch-cmd', `${PYTHON} digits_mlp.py --data data --output out --epochs 2 --learning-rate \${learning_rate} --momentum \${momentum} --batch-size \${batch_size}`,
        '--app-runner-memory', '256M', '--app-runner-cpus', '0.5',
        '--app-core-memory', '1G', '--app-core-cpus', '2',
        '--trail-steps', '24',
        '--tuning-type', tuningType,
        '--tuning-parameters', join(base, 'demo-parameters.json'),
        '--metric', 'accuracy', '--goal', '0.95', '--maximize',
        '--parallelism', String(parallelism), '--seed', '3',
        '--wait',
      ], {}, 420_000);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      // The App Core's resources are read and checked, and said to be ignored.
      expect(r.stderr).toMatch(/spec\.appCore/);
      const v = (await (await authFetch(`${master.url}/api/v1/experiments/${name}`)).json()) as ExperimentView;
      expect(v.phase).toBe('Succeeded');
      expect(v.reason).toBe('GoalReached');
      expect(v.best!.value).toBeGreaterThanOrEqual(0.95);
      expect(r.stdout).toContain(String(v.best!.value));
      expect(overlap(v)).toBeLessThanOrEqual(parallelism);
      // The best trial wrote its result into its own output directory.
      const result = JSON.parse(readFileSync(join(base, 'out', `${name}-${v.best!.index}`, 'result.json'), 'utf8'));
      expect(result.accuracy).toBeCloseTo(v.best!.value!, 4);
      expect(result.learning_rate).toBeCloseTo(v.best!.params.learning_rate as number, 10);
      // Every trial that finished has a directory of its own; none is shared.
      const dirs = readdirSync(join(base, 'out')).filter((d) => d.startsWith(`${name}-`));
      for (const t of v.trials.filter((x) => x.state === 'Succeeded' || x.state === 'Failed')) expect(dirs).toContain(`${name}-${t.index}`);
      expect(dirs.length).toBeLessThanOrEqual(v.trials.filter((t) => t.attempt > 0).length);
    }, 480_000);
  }
});
