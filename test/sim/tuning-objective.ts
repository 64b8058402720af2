// The synthetic objective of the tuning-paper simulation (bench/tuning-paper.ts): an MNIST MLP
// trained with SGD with momentum for a fixed number of epochs, as in the paper's experiments,
// reduced to a smooth accuracy surface over the trial's parameters plus seeded noise per trial.
// A trial "prints" its accuracy after each epoch the way a real training script would
// (`epoch=2 accuracy=0.9431`), and the tuning core reads those lines, so nothing here knows
// about the core. Pure and seeded.
//
// The surface: the effective step lr / (1 - momentum) has an optimum that grows with the
// batch size (the linear-scaling rule); the accuracy falls off quadratically in decades away
// from it, faster on the too-large side, and a step far too large diverges (the majority-class
// accuracy of MNIST, 0.1135). Larger batches make fewer updates per epoch, so their best
// accuracy is lower; a wider hidden layer raises it. Accuracy is a count out of MNIST's 10,000
// test images (four decimals). The trial's duration depends mildly on the batch size (small
// batches are slower per epoch) and on the hidden width, with ±5 % seeded jitter.

import { SeededRandom } from '../../shared/random.ts';
import type { Assignment, SearchSpace } from '../../shared/tuning/space/types.ts';

export const EPOCHS = 3;
/** MNIST's majority-class accuracy: what a diverged network scores. */
const DIVERGED = 0.1135;

export interface SurfaceShape {
  /** The best final accuracy at batch 32 and 1,024 hidden units. */
  readonly peak: number;
  /** Lost per doubling of the batch beyond 32. */
  readonly perBatchDoubling: number;
  /** Lost per halving of the hidden width below 1,024. */
  readonly perHiddenHalving: number;
  /** Quadratic loss per decade² of the effective step below, and above, its optimum. */
  readonly below: number;
  readonly above: number;
  /** Decades above the optimum past which training diverges. */
  readonly divergeAbove: number;
  /** Standard deviation of the per-trial noise (initialisation, data order). */
  readonly noise: number;
}

export const MNIST_MLP: SurfaceShape = {
  peak: 0.957,
  perBatchDoubling: 0.004,
  perHiddenHalving: 0.003,
  below: 0.05,
  above: 0.12,
  divergeAbove: 1.2,
  noise: 0.002,
};

/** The optimal effective step (lr / (1 - momentum)) at a batch size. */
function optimalStep(batch: number): number {
  return 0.1 * (batch / 64);
}

/** The noise-free final accuracy of a parameter set. */
export function meanAccuracy(p: Assignment, shape: SurfaceShape = MNIST_MLP): number {
  const lr = Number(p.lr);
  const momentum = Number(p.momentum);
  const batch = Number(p.batch_size);
  const hidden = Number(p.hidden);
  const step = lr / (1 - momentum);
  const u = Math.log10(step / optimalStep(batch));
  if (u > shape.divergeAbove) return DIVERGED;
  const ceiling = shape.peak - shape.perBatchDoubling * Math.log2(batch / 32) - shape.perHiddenHalving * Math.log2(1024 / hidden);
  const acc = ceiling - (u < 0 ? shape.below : shape.above) * u * u;
  return Math.max(DIVERGED, acc);
}

export interface TrialRun {
  readonly durationMs: number;
  /** What the trial prints on stdout, one entry a line. */
  readonly lines: string[];
  readonly accuracy: number;
}

/** One trial of parameters `p`: its accuracy per epoch and its duration, from `rng`. */
export function runTrial(p: Assignment, rng: SeededRandom, epochMs: number, shape: SurfaceShape = MNIST_MLP): TrialRun {
  const mean = meanAccuracy(p, shape);
  const final = mean === DIVERGED ? DIVERGED : clamp(mean + shape.noise * gaussian(rng), 0, 1);
  const lines: string[] = [];
  for (let e = 1; e <= EPOCHS; e++) {
    // The usual learning curve: most of the accuracy in the first epoch, the rest after.
    const acc = e === EPOCHS ? final : final - (final - DIVERGED) * 0.35 * Math.exp(-1.6 * (e - 1));
    lines.push(`epoch=${e} accuracy=${(Math.round(acc * 10_000) / 10_000).toFixed(4)}`);
  }
  const batch = Number(p.batch_size);
  const hidden = Number(p.hidden);
  const perEpoch = epochMs * (1 + 0.06 * Math.log2(128 / batch)) * (1 + 0.03 * Math.log2(hidden / 256));
  const durationMs = Math.round(EPOCHS * perEpoch * (0.95 + 0.1 * rng.float()));
  return { durationMs, lines, accuracy: Math.round(final * 10_000) / 10_000 };
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

function gaussian(rng: SeededRandom): number {
  const u1 = 1 - rng.float();
  const u2 = rng.float();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** A search space over the four parameters; ranges as a user of the paper's tool would write them. */
export function mlpSpace(r: { lr: [number, number]; momentum: [number, number]; batch: number[]; hidden: [number, number] }): SearchSpace {
  return {
    params: [
      { kind: 'double', name: 'lr', low: r.lr[0], high: r.lr[1], log: true },
      { kind: 'double', name: 'momentum', low: r.momentum[0], high: r.momentum[1], log: false },
      { kind: 'categorical', name: 'batch_size', choices: r.batch.map((value) => ({ value })) },
      { kind: 'int', name: 'hidden', low: r.hidden[0], high: r.hidden[1], log: true, step: 1 },
    ],
  };
}

/** A seed from several integers (run, job, trial): SplitMix-style mixing, stable everywhere. */
export function mixSeed(...parts: number[]): number {
  let h = 0x2545f491;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x9e3779b1) >>> 0;
    h ^= h >>> 15;
    h = Math.imul(h, 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
  }
  return h >>> 0;
}

/** The trial's own generator: the same run, job and trial index always give the same trial. */
export function trialRng(runSeed: number, job: number, index: number): SeededRandom {
  return new SeededRandom(mixSeed(runSeed, job, index, 0x7121));
}
