// The random source a gossip core draws from. Cores never call Math.random: the shell passes a
// seeded source (from crypto at start), the simulator one seed for the whole run, so a run
// replays exactly.

export interface RandomSource {
  /** A float in [0, 1). */
  next(): number;
}

/** SplitMix32-style generator: tiny, fast, and good enough for choosing peers. */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return {
    next(): number {
      state = (state + 0x9e3779b9) >>> 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      z ^= z >>> 16;
      return (z >>> 0) / 4294967296;
    },
  };
}

/** An integer in [0, n). */
export function randomInt(random: RandomSource, n: number): number {
  return Math.floor(random.next() * n);
}

/** Fisher-Yates, in place. */
export function shuffle<T>(random: RandomSource, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(random, i + 1);
    const t = items[i];
    items[i] = items[j];
    items[j] = t;
  }
  return items;
}
