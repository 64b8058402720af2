// The one random-source interface of Cairn's pure cores (Raft, gossip, the leader). A core
// never calls Math.random or crypto: its shell passes a source seeded from crypto at start,
// a simulation one derived from its seed, so the same seed replays the same run.

export interface RandomSource {
  /** 32 random bits as an unsigned integer. */
  nextU32(): number;
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
    return randomFloat(this);
  }

  int(n: number): number {
    return randomInt(this, n);
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

/** A float in [0, 1). */
export function randomFloat(r: RandomSource): number {
  return r.nextU32() / 4294967296;
}

/** A uniformly chosen integer in [0, n); n ≥ 1. */
export function randomInt(r: RandomSource, n: number): number {
  if (!(n >= 1)) throw new RangeError(`randomInt(n) needs n >= 1, got ${n}`);
  return Math.floor(randomFloat(r) * n);
}

/** n random bytes. */
export function randomBytesOf(r: RandomSource, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 4) {
    const w = r.nextU32();
    for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = (w >>> (8 * j)) & 0xff;
  }
  return out;
}

/** A version-4 UUID in its usual text form. */
export function randomUuid(r: RandomSource): string {
  const b = randomBytesOf(r, 16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Fisher-Yates, in place. */
export function shuffle<T>(r: RandomSource, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(r, i + 1);
    const t = items[i];
    items[i] = items[j];
    items[j] = t;
  }
  return items;
}
