// Quasi-random search: trial i gets the i-th point of a Sobol sequence shifted by the seed,
// read through the unit cube. Spreads a budget of trials more evenly than independent draws
// (no clumps, no holes), and needs nothing from the history but its length.

import { badRequest } from '../../../../shared/errors.ts';
import type { SearchSpace } from '../../../../shared/tuning/space/types.ts';
import { dimensions, decode } from '../space/unit-cube.ts';
import { SOBOL_MAX_DIMENSIONS, shiftedSobolPoint } from './sobol-sequence.ts';
import { sobolMasks } from './trial-random.ts';
import { refuseUnknownSettings, seedSetting } from './model-settings.ts';
import type { Algorithm, AlgorithmSettings } from './types.ts';

export function sobol(space: SearchSpace, settings: AlgorithmSettings, seed: number): Algorithm {
  refuseUnknownSettings(settings, ['random_state']);
  const dims = dimensions(space);
  if (dims.length > SOBOL_MAX_DIMENSIONS) {
    throw badRequest('parameters', `quasi-random search takes at most ${SOBOL_MAX_DIMENSIONS} parameters (nested ones included), got ${dims.length}`);
  }
  const masks = sobolMasks(seedSetting(settings, seed), dims.length);
  return {
    suggest(history, count) {
      const out = [];
      for (let j = 0; j < count; j++) out.push(decode(dims, shiftedSobolPoint(history.length + j, masks)));
      return out;
    },
  };
}
