// Kubernetes resource quantities ("500m", "2", "1Gi", "512Mi", "1G", "1.5e3") as the numbers
// Cairn's resources use: CPUs as cores (three decimals, as Mesos keeps them) and memory or
// disk as MiB (rounded up: a request is a floor, never trimmed below what was asked).

const SUFFIX: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1,
  k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
const QUANTITY = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;

/** The quantity's value in its base unit (cores, bytes); undefined when it is not one. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const m = QUANTITY.exec(value.trim());
  if (!m) return undefined;
  // A quantity has either an exponent or a suffix; "1e3Mi" is not one.
  if (m[2] !== undefined && m[3] !== undefined) return undefined;
  const n = Number(m[1]) * 10 ** Number(m[2] ?? 0) * SUFFIX[m[3] ?? ''];
  return Number.isFinite(n) ? n : undefined;
}

export function coresOf(quantity: number): number {
  return Math.ceil(quantity * 1000 - 1e-9) / 1000;
}

export function mibOf(bytes: number): number {
  return Math.ceil(bytes / 2 ** 20 - 1e-9);
}
