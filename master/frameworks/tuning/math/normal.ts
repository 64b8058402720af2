// The standard normal distribution: the unit cube's map for normal parameters, TPE's truncated
// Gaussian kernels, and Expected Improvement all need its CDF, its inverse and its tails to
// full double precision (a crude erf makes TPE's log-densities of far candidates -Infinity).

const SQRT2 = Math.SQRT2;
const LOG_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);

// erfc as in FreeBSD's msun s_erf.c (Sun Microsystems, freely distributable), the same
// coefficients Optuna's TPE uses: accurate to about one ulp where it matters here.
const ERX = 8.45062911510467529297e-1;
const PP = [1.28379167095512558561e-1, -3.25042107247001499370e-1, -2.84817495755985104766e-2, -5.77027029648944159157e-3, -2.37630166566501626084e-5];
const QQ = [3.97917223959155352819e-1, 6.50222499887672944485e-2, 5.08130628187576562776e-3, 1.32494738004321644526e-4, -3.96022827877536812320e-6];
const PA = [-2.36211856075265944077e-3, 4.14856118683748331666e-1, -3.72207876035701323847e-1, 3.18346619901161753674e-1, -1.10894694282396677476e-1, 3.54783043256182359371e-2, -2.16637559486879084300e-3];
const QA = [1.06420880400844228286e-1, 5.40397917702171048937e-1, 7.18286544141962662868e-2, 1.26171219808761642112e-1, 1.36370839120290507362e-2, 1.19844998467991074170e-2];
const RA = [-9.86494403484714822705e-3, -6.93858572707181764372e-1, -1.05586262253232909814e1, -6.23753324503260060396e1, -1.62396669462573470355e2, -1.84605092906711035994e2, -8.12874355063065934246e1, -9.81432934416914548592];
const SA = [1.96512716674392571292e1, 1.37657754143519042600e2, 4.34565877475229228821e2, 6.45387271733267880336e2, 4.29008140027567833386e2, 1.08635005541779435134e2, 6.57024977031928170135, -6.04244152148580987438e-2];
const RB = [-9.86494292470009928597e-3, -7.99283237680523006574e-1, -1.77579549177547519889e1, -1.60636384855821916062e2, -6.37566443368389627722e2, -1.02509513161107724954e3, -4.83519191608651397019e2];
const SB = [3.03380607434824582924e1, 3.25792512996573918826e2, 1.53672958608443695994e3, 3.19985821950859553908e3, 2.55305040643316442583e3, 4.74528541206955367215e2, -2.24409524465858183362e1];

/** c[0] + z c[1] + z² c[2] + … */
function poly(c: readonly number[], z: number): number {
  let r = 0;
  for (let i = c.length - 1; i >= 0; i--) r = r * z + c[i];
  return r;
}

/** 1 + z c[0] + z² c[1] + … (the denominators' leading 1 is implicit in the tables). */
function poly1(c: readonly number[], z: number): number {
  return 1 + z * poly(c, z);
}

/** The complementary error function, 1 - erf(x), without cancellation for large x. */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const a = Math.abs(x);
  if (a < 0.84375) {
    const z = x * x;
    const y = poly(PP, z) / poly1(QQ, z);
    return x < 0.25 ? 1 - (x + x * y) : 0.5 - (x - 0.5 + x * y);
  }
  if (a < 1.25) {
    const s = a - 1;
    const pq = poly(PA, s) / poly1(QA, s);
    return x > 0 ? 1 - ERX - pq : 1 + ERX + pq;
  }
  if (a < 28) {
    const s = 1 / (a * a);
    const rs = a < 1 / 0.35 ? poly(RA, s) / poly1(SA, s) : poly(RB, s) / poly1(SB, s);
    const r = Math.exp(-a * a - 0.5625 + rs) / a;
    return x > 0 ? r : 2 - r;
  }
  return x > 0 ? 0 : 2;
}

/** P(Z ≤ x) for a standard normal Z. */
export function normCdf(x: number): number {
  return 0.5 * erfc(-x / SQRT2);
}

export function normPdf(x: number): number {
  return Math.exp(-0.5 * x * x - LOG_SQRT_2PI);
}

export function normLogPdf(x: number): number {
  return -0.5 * x * x - LOG_SQRT_2PI;
}

/** log P(a ≤ Z ≤ b), taken from whichever tail keeps the difference accurate. */
export function logNormalMass(a: number, b: number): number {
  if (!(b > a)) return -Infinity;
  let mass: number;
  if (a >= 0) mass = 0.5 * (erfc(a / SQRT2) - erfc(b / SQRT2));
  else if (b <= 0) mass = 0.5 * (erfc(-b / SQRT2) - erfc(-a / SQRT2));
  else mass = 1 - 0.5 * erfc(-a / SQRT2) - 0.5 * erfc(b / SQRT2);
  return mass > 0 ? Math.log(mass) : -Infinity;
}

// Acklam's rational approximation (relative error 1.2e-9), then one Halley step on the
// accurate CDF above, which brings it to double precision.
const A = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
const B = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
const C = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
const D = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
const P_LOW = 0.02425;

/** The x with normCdf(x) = p, for p in (0, 1); ±Infinity at the ends. */
export function normInv(p: number): number {
  if (!(p > 0)) return p === 0 ? -Infinity : NaN;
  if (!(p < 1)) return p === 1 ? Infinity : NaN;
  let x: number;
  if (p < P_LOW) {
    const q = Math.sqrt(-2 * Math.log(p));
    x = (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1);
  } else if (p <= 1 - P_LOW) {
    const q = p - 0.5;
    const r = q * q;
    x = ((((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q) / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1);
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x = -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1);
  }
  // Halley: the error is measured in the tail nearer x so that it does not cancel.
  const e = x < 0 ? 0.5 * erfc(-x / SQRT2) - p : (1 - p) - 0.5 * erfc(x / SQRT2);
  const u = e * Math.sqrt(2 * Math.PI) * Math.exp(0.5 * x * x);
  return x - u / (1 + 0.5 * x * u);
}
