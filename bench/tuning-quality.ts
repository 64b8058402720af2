// Search quality of the tuning algorithms against Optuna's TPE on two classic test functions:
// Branin (2-d, min 0.397887) and Hartmann-6 (6-d, min -3.32237). For each function, mode and
// sampler, over SEEDS seeds: how many trials until one came within THRESHOLD of the optimum
// (a seed that never did within CAP trials counts as CAP, and as a miss).
//   sequential: propose one, evaluate it, tell it, repeat.
//   parallel:   propose BATCH (the earlier ones running while the later ones are proposed),
//               evaluate and tell all BATCH, repeat: Cairn's suggest(history, BATCH) with
//               the running trials in the history; Optuna's ask × BATCH with constant_liar.
// A trial is counted by its creation order in both. Optuna runs in /usr/bin/python3 (Debian's
// python3-optuna) through bench/_optuna-quality.py, alongside Cairn's runs.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { Algorithm, AlgorithmSettings, TrialObservation } from '../master/frameworks/tuning/algorithms/types.ts';
import type { Assignment, SearchSpace } from '../shared/tuning/space/types.ts';
import { tpe } from '../master/frameworks/tuning/algorithms/tpe.ts';
import { gaussianProcessEi } from '../master/frameworks/tuning/algorithms/gp-ei.ts';
import { randomSearch } from '../master/frameworks/tuning/algorithms/random-search.ts';

const SEEDS = 30;
const CAP = 200;
const BATCH = 4;
const THRESHOLD = 1;
const PYTHON = '/usr/bin/python3';
const DRIVER = fileURLToPath(new URL('./_optuna-quality.py', import.meta.url));

type Mode = 'sequential' | 'parallel';
const MODES: readonly Mode[] = ['sequential', 'parallel'];

interface TestFunction {
  readonly bounds: readonly (readonly [number, number])[];
  readonly optimum: number;
  readonly f: (x: readonly number[]) => number;
}

function branin([x1, x2]: readonly number[]): number {
  const b = 5.1 / (4 * Math.PI ** 2);
  const c = 5 / Math.PI;
  const t = 1 / (8 * Math.PI);
  return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * Math.cos(x1) + 10;
}

const H_ALPHA = [1.0, 1.2, 3.0, 3.2];
const H_A = [
  [10, 3, 17, 3.5, 1.7, 8],
  [0.05, 10, 17, 0.1, 8, 14],
  [3, 3.5, 1.7, 10, 17, 8],
  [17, 8, 0.05, 10, 0.1, 14],
];
const H_P = [
  [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
  [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
  [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.665],
  [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
];

function hartmann6(x: readonly number[]): number {
  let s = 0;
  for (let i = 0; i < 4; i++) {
    let e = 0;
    for (let j = 0; j < 6; j++) e += H_A[i][j] * (x[j] - H_P[i][j]) ** 2;
    s += H_ALPHA[i] * Math.exp(-e);
  }
  return -s;
}

const FUNCTIONS: Record<string, TestFunction> = {
  branin: { bounds: [[-5, 10], [0, 15]], optimum: 0.397887, f: branin },
  hartmann6: { bounds: Array.from({ length: 6 }, () => [0, 1] as const), optimum: -3.32237, f: hartmann6 },
};

type Factory = (space: SearchSpace, settings: AlgorithmSettings, seed: number) => Algorithm;
const CAIRN: Record<string, Factory> = {
  'cairn-tpe': tpe,
  'cairn-gp-ei': gaussianProcessEi,
  'cairn-random': randomSearch,
};

function spaceOf(fn: TestFunction): SearchSpace {
  return { params: fn.bounds.map(([low, high], j) => ({ kind: 'double' as const, name: `x${j}`, low, high, log: false })) };
}

/** Trials until one came within THRESHOLD of the optimum, CAP if none did. */
function trialsToTarget(fn: TestFunction, make: Factory, seed: number, mode: Mode): number {
  const alg = make(spaceOf(fn), {}, seed);
  const history: TrialObservation[] = [];
  const xOf = (a: Assignment) => fn.bounds.map((_, j) => a[`x${j}`] as number);
  while (history.length < CAP) {
    const base = history.length;
    const proposals = alg.suggest(history, Math.min(mode === 'parallel' ? BATCH : 1, CAP - base));
    proposals.forEach((params, j) => history.push({ index: base + j, params, phase: 'running', intermediate: [] }));
    let hit = 0;
    proposals.forEach((params, j) => {
      const loss = fn.f(xOf(params));
      history[base + j] = { ...history[base + j], phase: 'succeeded', loss };
      if (!hit && loss - fn.optimum < THRESHOLD) hit = base + j + 1;
    });
    if (hit) return hit;
  }
  return CAP;
}

interface Summary {
  median: number;
  mean: number;
  misses: number;
  trials: number[];
  seconds: number;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function summarise(trials: number[], seconds: number): Summary {
  return {
    median: median(trials),
    mean: Math.round((trials.reduce((a, b) => a + b, 0) / trials.length) * 10) / 10,
    misses: trials.filter((t) => t >= CAP).length,
    trials,
    seconds: Math.round(seconds * 10) / 10,
  };
}

async function optuna(name: string, mode: Mode): Promise<Summary | { error: string }> {
  const started = performance.now();
  try {
    const { stdout } = await promisify(execFile)(PYTHON, [DRIVER, name, mode, String(SEEDS), String(CAP), String(BATCH), String(THRESHOLD)], {
      maxBuffer: 1 << 20,
    });
    const { trials } = JSON.parse(stdout) as { trials: number[] };
    return summarise(trials, (performance.now() - started) / 1000);
  } catch (e) {
    return { error: String((e as Error).message).slice(0, 500) };
  }
}

export async function run(): Promise<unknown> {
  const log = (msg: string) => process.stderr.write(`[tuning-quality] ${msg}\n`);
  // Optuna's four runs go one after another in a child process while Cairn's run here.
  const optunaRuns: Record<string, Promise<Summary | { error: string }>> = {};
  let chain: Promise<unknown> = Promise.resolve();
  for (const name of Object.keys(FUNCTIONS)) {
    for (const mode of MODES) {
      const p = chain.then(() => optuna(name, mode));
      optunaRuns[`${name}/${mode}`] = p;
      chain = p;
    }
  }

  const results: Record<string, Record<string, Record<string, Summary | { error: string }>>> = {};
  for (const [name, fn] of Object.entries(FUNCTIONS)) {
    results[name] = {};
    for (const mode of MODES) {
      const row: Record<string, Summary | { error: string }> = {};
      for (const [sampler, make] of Object.entries(CAIRN)) {
        const started = performance.now();
        const trials: number[] = [];
        for (let seed = 0; seed < SEEDS; seed++) {
          trials.push(trialsToTarget(fn, make, seed, mode));
          // Let the Optuna child's output be read while this loop runs.
          await new Promise((r) => setImmediate(r));
        }
        row[sampler] = summarise(trials, (performance.now() - started) / 1000);
        log(`${name} ${mode} ${sampler}: median ${row[sampler].median}, misses ${(row[sampler] as Summary).misses}`);
      }
      results[name][mode] = row;
    }
  }
  for (const [key, p] of Object.entries(optunaRuns)) {
    const [name, mode] = key.split('/');
    const r = await p;
    results[name][mode]['optuna-tpe'] = r;
    log(`${name} ${mode} optuna-tpe: ${'error' in r ? r.error : `median ${r.median}, misses ${r.misses}`}`);
  }

  const table: string[] = [];
  const tpeOverOptuna: Record<string, Record<string, number | null>> = {};
  for (const [name, byMode] of Object.entries(results)) {
    tpeOverOptuna[name] = {};
    for (const [mode, row] of Object.entries(byMode)) {
      for (const [sampler, r] of Object.entries(row)) {
        table.push('error' in r ? `${name} ${mode} ${sampler}: error` : `${name} ${mode} ${sampler}: median ${r.median}, misses ${r.misses}/${SEEDS}`);
      }
      const cairn = row['cairn-tpe'];
      const opt = row['optuna-tpe'];
      tpeOverOptuna[name][mode] = cairn && opt && !('error' in cairn) && !('error' in opt) ? Math.round((cairn.median / opt.median) * 1000) / 1000 : null;
    }
  }
  return { seeds: SEEDS, cap: CAP, batch: BATCH, threshold: THRESHOLD, table, cairnTpeMedianOverOptunaMedian: tpeOverOptuna, results };
}
