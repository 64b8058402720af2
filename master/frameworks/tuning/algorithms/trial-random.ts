// Per-trial random sources. A stateless algorithm cannot carry one generator from call to
// call, so each trial's randomness is derived from (seed, trial index, stream): the same
// trial gets the same draws however the trials before it were batched into calls.

import { SeededRandom } from '../../../../shared/random.ts';

/** Streams keep one trial's uses apart (the startup design, candidates, model fitting). */
export const STREAM = {
  design: 1,
  candidates: 2,
  fit: 3,
} as const;

/** A generator for one trial and one use. */
export function trialRandom(seed: number, index: number, stream: number): SeededRandom {
  let h = mix(0x9e3779b9, lowBits(seed));
  h = mix(h, highBits(seed));
  h = mix(h, lowBits(index));
  h = mix(h, highBits(index));
  h = mix(h, stream >>> 0);
  return new SeededRandom(h);
}

/** One 32-bit mask per dimension, for the seed's digital shift of the Sobol sequence. */
export function sobolMasks(seed: number, dims: number): Uint32Array {
  const r = trialRandom(seed, 0, STREAM.design);
  return Uint32Array.from({ length: dims }, () => r.nextU32());
}

// murmur3's mixing of one word into a running hash, then its finaliser.
function mix(h: number, x: number): number {
  let k = Math.imul(x, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function lowBits(x: number): number {
  return Number.isFinite(x) ? Math.trunc(x) >>> 0 : 0;
}

/** Seeds past 2^32 (a 64-bit seed read as a number) still change the draws. */
function highBits(x: number): number {
  return Number.isFinite(x) ? Math.floor(Math.trunc(x) / 4294967296) >>> 0 : 0;
}
