// The first trials of a model-based search, before there is anything to model: points of
// the seed's shifted Sobol sequence by trial index (evenly spread, and the same point for the
// same trial however the calls were batched), or uniform draws past the Sobol table's size.

import type { Dimension } from '../space/unit-cube.ts';
import { SOBOL_MAX_DIMENSIONS, shiftedSobolPoint } from './sobol-sequence.ts';
import { sobolMasks, STREAM, trialRandom } from './trial-random.ts';

export type StartupDesign = (index: number) => number[];

export function startupDesign(dims: readonly Dimension[], seed: number): StartupDesign {
  if (dims.length <= SOBOL_MAX_DIMENSIONS) {
    const masks = sobolMasks(seed, dims.length);
    return (index) => shiftedSobolPoint(index, masks);
  }
  return (index) => {
    const r = trialRandom(seed, index, STREAM.design);
    return dims.map(() => r.float());
  };
}
