// The seeded random source the core draws its election timeouts from. The core never calls
// Math.random: a shell passes one of these (seeded from wherever it likes), a simulation
// passes one derived from its seed, and the same seed gives the same run.

export interface RandomSource {
  /** A uniformly chosen integer in [0, n); n ≥ 1. */
  int(n: number): number;
}

/**
 * A small, fast generator (xoshiro128**, state seeded by SplitMix32). Not for secrets.
 * Same seed, same sequence, on every platform.
 */
export class SeededRandom implements RandomSource {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    if ((this.a | this.b | this.c | this.d) === 0) this.a = 1;
  }

  /** 32 random bits as an unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotl(this.d, 11);
    return result;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.nextU32() / 4294967296;
  }

  int(n: number): number {
    if (!(n >= 1)) throw new RangeError(`int(n) needs n >= 1, got ${n}`);
    return Math.floor(this.float() * n);
  }

  /** An integer in [lo, hi], both included. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** A new independent generator, so sub-systems do not perturb each other's sequences. */
  fork(): SeededRandom {
    return new SeededRandom(this.nextU32());
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
