// Random search: each trial's parameters drawn independently from the space. The generator
// for trial i is seeded from (seed, i) alone, not carried from call to call, so a new leader
// resuming the experiment proposes the very trial i the old one would have.

import { SeededRandom } from '../../../../shared/random.ts';
import { sampleAssignment } from '../../../../shared/tuning/space/sample.ts';
import type { SearchSpace } from '../../../../shared/tuning/space/types.ts';
import { checkSettingNames, numberSetting } from '../../../../shared/tuning/space/validate.ts';
import type { Algorithm, AlgorithmSettings } from './types.ts';

const PREFIX = 'algorithm.settings';

/**
 * `random_state` (Katib's random search setting), when given, replaces the experiment's seed,
 * so a Katib experiment that pins it keeps the same draws across runs.
 */
export function randomSearch(space: SearchSpace, settings: AlgorithmSettings, seed: number): Algorithm {
  checkSettingNames(settings, ['random_state'], PREFIX);
  const base = numberSetting(settings, 'random_state', PREFIX, seed, { integer: true });
  return {
    suggest(history, count) {
      const out = [];
      for (let i = history.length; i < history.length + count; i++) {
        out.push(sampleAssignment(space, trialRandom(base, i)));
      }
      return out;
    },
  };
}

/** Trial i's generator: the seed mixed with a golden-ratio multiple of i + 1. */
export function trialRandom(seed: number, index: number): SeededRandom {
  return new SeededRandom((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
}
