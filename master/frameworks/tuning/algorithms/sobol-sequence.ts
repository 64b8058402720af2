// The Sobol low-discrepancy sequence in base 2, point by point: the i-th point is computed
// from i alone (no generator state), which is what a stateless algorithm needs. Points come
// in Gray-code order, the order of Joe & Kuo's reference code and SciPy's `qmc.Sobol`.

/**
 * Joe & Kuo's direction numbers (new-joe-kuo-6.21201, 2008) for dimensions 2 to 64, one row
 * each as `s a m_1 … m_s`: the primitive polynomial's degree s, its inner coefficients as the
 * bits of a, and the initial direction integers. Dimension 1 (van der Corput) needs none.
 */
const JOE_KUO =
  '1 0 1|2 1 1 3|3 1 1 3 1|3 2 1 1 1|4 1 1 1 3 3|4 4 1 3 5 13|5 2 1 1 5 5 17|5 4 1 1 5 5 5|' +
  '5 7 1 1 7 11 19|5 11 1 1 5 1 1|5 13 1 1 1 3 11|5 14 1 3 5 5 31|6 1 1 3 3 9 7 49|' +
  '6 13 1 1 1 15 21 21|6 16 1 3 1 13 27 49|6 19 1 1 1 15 7 5|6 22 1 3 1 15 13 25|' +
  '6 25 1 1 5 5 19 61|7 1 1 3 7 11 23 15 103|7 4 1 3 7 13 13 15 69|7 7 1 1 3 13 7 35 63|' +
  '7 8 1 3 5 9 1 25 53|7 14 1 3 1 13 9 35 107|7 19 1 3 1 5 27 61 31|7 21 1 1 5 11 19 41 61|' +
  '7 28 1 3 5 3 3 13 69|7 31 1 1 7 13 1 19 1|7 32 1 3 7 5 13 19 59|7 37 1 1 3 9 25 29 41|' +
  '7 41 1 3 5 13 23 1 55|7 42 1 3 7 3 13 59 17|7 50 1 3 1 3 5 53 69|7 55 1 1 5 5 23 33 13|' +
  '7 56 1 1 7 7 1 61 123|7 59 1 1 7 9 13 61 49|7 62 1 3 3 5 3 55 33|8 14 1 3 1 15 31 13 49 245|' +
  '8 21 1 3 5 15 31 59 63 97|8 22 1 3 1 11 11 11 77 249|8 38 1 3 1 11 27 43 71 9|' +
  '8 47 1 1 7 15 21 11 81 45|8 49 1 3 7 3 25 31 65 79|8 50 1 3 1 1 19 11 3 205|' +
  '8 52 1 1 5 9 19 21 29 157|8 56 1 3 7 11 1 33 89 185|8 67 1 3 3 3 15 9 79 71|' +
  '8 70 1 3 7 11 15 39 119 27|8 84 1 1 3 1 11 31 97 225|8 97 1 1 1 3 23 43 57 177|' +
  '8 103 1 3 7 7 17 17 37 71|8 115 1 3 1 5 27 63 123 213|8 122 1 1 3 5 11 43 53 133|' +
  '9 8 1 3 5 5 29 17 47 173 479|9 13 1 3 3 11 3 1 109 9 69|9 16 1 1 1 5 17 39 23 5 343|' +
  '9 22 1 3 1 5 25 15 31 103 499|9 25 1 1 1 11 11 17 63 105 183|9 44 1 1 5 11 9 29 97 231 363|' +
  '9 47 1 1 5 15 19 45 41 7 383|9 52 1 3 7 7 31 19 83 137 221|9 55 1 1 1 3 23 15 111 223 83|' +
  '9 59 1 1 5 13 31 15 55 25 161|9 62 1 1 3 13 25 47 39 87 257';

const BITS = 32;

/** Direction integers v[d][j] (bit 31 - j is the leading one), built once at load. */
const DIRECTIONS: readonly Uint32Array[] = (() => {
  const all = [Uint32Array.from({ length: BITS }, (_, j) => (1 << (BITS - 1 - j)) >>> 0)];
  for (const row of JOE_KUO.split('|')) {
    const [s, a, ...m] = row.split(' ').map(Number);
    const v = new Uint32Array(BITS);
    for (let j = 0; j < BITS; j++) {
      if (j < s) {
        v[j] = (m[j] << (BITS - 1 - j)) >>> 0;
        continue;
      }
      // Bratley & Fox's recurrence as Joe & Kuo state it.
      let x = v[j - s] ^ (v[j - s] >>> s);
      for (let k = 1; k < s; k++) if ((a >>> (s - 1 - k)) & 1) x ^= v[j - k];
      v[j] = x >>> 0;
    }
    all.push(v);
  }
  return all;
})();

/** How many dimensions the table holds. */
export const SOBOL_MAX_DIMENSIONS = DIRECTIONS.length;

/**
 * The i-th point of the unscrambled sequence as 32-bit integers (coordinate / 2^32), for
 * 0 ≤ i < 2^32. Point 0 is the origin.
 */
export function sobolBits(index: number, dims: number): Uint32Array {
  if (!Number.isInteger(index) || index < 0 || index >= 2 ** BITS) throw new RangeError(`no Sobol point at index ${index}`);
  if (dims > SOBOL_MAX_DIMENSIONS) throw new RangeError(`the Sobol table holds ${SOBOL_MAX_DIMENSIONS} dimensions, not ${dims}`);
  // The Gray code of i names the direction numbers whose XOR is the point.
  let gray = (index ^ Math.floor(index / 2)) >>> 0;
  const out = new Uint32Array(dims);
  for (let j = 0; gray !== 0; j++, gray >>>= 1) {
    if ((gray & 1) === 0) continue;
    for (let d = 0; d < dims; d++) out[d] ^= DIRECTIONS[d][j];
  }
  return out;
}

/** The i-th point of the unscrambled sequence in [0,1)^dims. */
export function sobolPoint(index: number, dims: number): number[] {
  return Array.from(sobolBits(index, dims), (x) => x / 2 ** BITS);
}

/**
 * The i-th point after a digital shift: each coordinate XORed with its own 32-bit mask.
 * The shift keeps every (t,m,s)-net property of the sequence and moves the origin away, so
 * different masks give different but equally well spread designs. Half a least bit is added
 * so that no coordinate is exactly 0.
 */
export function shiftedSobolPoint(index: number, masks: Uint32Array): number[] {
  const bits = sobolBits(index, masks.length);
  return Array.from(bits, (x, d) => (((x ^ masks[d]) >>> 0) + 0.5) / 2 ** BITS);
}
