// The generator the gossip simulations and tests were recorded with (SplitMix32), behind the one
// RandomSource interface of shared/random.ts. New simulations use SeededRandom; this one stays so
// that every gossip seed (`npm run sim -- gossip --seed N`, the figures the tests pin) replays
// the very run it did before the gossip core moved onto shared/random.ts.

import type { RandomSource } from '../../shared/random.ts';

export function splitMix32(seed: number): RandomSource {
  let state = seed >>> 0;
  return {
    nextU32(): number {
      state = (state + 0x9e3779b9) >>> 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    },
  };
}
