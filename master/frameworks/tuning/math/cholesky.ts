// Dense Cholesky factorisation and the triangular solves a Gaussian process needs. Matrices
// are n×n, row-major, in Float64Arrays: the GP's kernel matrices are at most a few hundred
// wide, where plain loops over typed arrays beat anything cleverer in JavaScript.

/**
 * The lower factor L of a symmetric positive-definite A (A = L Lᵀ), or undefined when A is
 * not positive definite to working precision. The upper triangle of L is zero.
 */
export function cholesky(a: Float64Array, n: number): Float64Array | undefined {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    const ri = i * n;
    for (let j = 0; j <= i; j++) {
      const rj = j * n;
      let s = a[ri + j];
      for (let k = 0; k < j; k++) s -= l[ri + k] * l[rj + k];
      if (i === j) {
        if (!(s > 0)) return undefined;
        l[ri + i] = Math.sqrt(s);
      } else {
        l[ri + j] = s / l[rj + j];
      }
    }
  }
  return l;
}

/** x with L x = b (forward substitution). */
export function solveLower(l: Float64Array, n: number, b: ArrayLike<number>): Float64Array {
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const ri = i * n;
    let s = b[i];
    for (let k = 0; k < i; k++) s -= l[ri + k] * x[k];
    x[i] = s / l[ri + i];
  }
  return x;
}

/** x with Lᵀ x = b (back substitution on the transpose). */
export function solveUpperT(l: Float64Array, n: number, b: ArrayLike<number>): Float64Array {
  const x = Float64Array.from(b);
  for (let i = n - 1; i >= 0; i--) {
    x[i] /= l[i * n + i];
    const xi = x[i];
    for (let k = 0; k < i; k++) x[k] -= l[i * n + k] * xi;
  }
  return x;
}

/** x with A x = b, given A's factor L. */
export function choleskySolve(l: Float64Array, n: number, b: ArrayLike<number>): Float64Array {
  return solveUpperT(l, n, solveLower(l, n, b));
}

/** A⁻¹ from A's factor L (the GP's likelihood gradient needs all of it). */
export function choleskyInverse(l: Float64Array, n: number): Float64Array {
  // U = L⁻ᵀ (upper triangular) row by row, then A⁻¹ = U Uᵀ, whose entries are dot products of
  // U's rows: both passes read memory in order, which is most of the speed at n in the hundreds.
  const u = new Float64Array(n * n);
  const x = new Float64Array(n);
  for (let c = 0; c < n; c++) {
    // Column c of L⁻¹ (zero above c) by forward substitution, stored as row c of U.
    x.fill(0, 0, n);
    x[c] = 1 / l[c * n + c];
    for (let i = c + 1; i < n; i++) {
      const ri = i * n;
      let s = 0;
      for (let k = c; k < i; k++) s -= l[ri + k] * x[k];
      x[i] = s / l[ri + i];
    }
    u.set(x.subarray(c, n), c * n + c);
  }
  const inv = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i; j < n; j++) {
      // (U Uᵀ)_ij = Σ_k U_ik U_jk over k ≥ j (U_jk = 0 below the diagonal).
      let s = 0;
      const ri = i * n;
      const rj = j * n;
      for (let k = j; k < n; k++) s += u[ri + k] * u[rj + k];
      inv[ri + j] = s;
      inv[rj + i] = s;
    }
  }
  return inv;
}

/** log det A from its factor L. */
export function logDetFromCholesky(l: Float64Array, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.log(l[i * n + i]);
  return 2 * s;
}
