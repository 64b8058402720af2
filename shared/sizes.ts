// Sizes as experiment files and the paper's flags write them. The paper's `--app-runner-memory
// 5G` is a YARN/Mesos-style size, binary: 5G is 5 GiB. An experiment file may also use
// Kubernetes quantities (`5Gi`, `512Mi`, `5e9`), and a bare number is MiB, as Marathon's `mem`.

import { badRequest } from './errors.ts';
import { mibOf, parseQuantity } from './quantity.ts';

const BINARY: Record<string, number> = { '': 1, b: 1 / 2 ** 20, k: 1 / 1024, kb: 1 / 1024, ki: 1 / 1024, m: 1, mb: 1, mi: 1, g: 1024, gb: 1024, gi: 1024, t: 1024 ** 2, tb: 1024 ** 2, ti: 1024 ** 2 };
const SIZE = /^([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)$/i;

/** A memory or disk size in MiB (rounded up); refused naming `field` with what is accepted. */
export function parseSizeMiB(value: unknown, field: string): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value > 0) return Math.ceil(value);
    throw badRequest(field, `must be a positive size, got ${value}`);
  }
  if (typeof value === 'string') {
    const m = SIZE.exec(value.trim());
    const unit = m?.[2].toLowerCase();
    if (m && unit !== undefined && unit in BINARY) {
      const mib = Math.ceil(Number(m[1]) * BINARY[unit] - 1e-9);
      if (mib > 0) return mib;
    }
    // Kubernetes' own spellings (Mi, Gi, 5e9) for files copied from a Job spec.
    if (/[0-9](Ki|Mi|Gi|Ti)$/.test(value.trim()) || /e/i.test(value)) {
      const bytes = parseQuantity(value);
      if (bytes !== undefined && bytes > 0) return mibOf(bytes);
    }
  }
  throw badRequest(field, `'${String(value)}' is not a size: write a number of MiB or one with a unit, as 512M, 5G, 1.5G or 5Gi`);
}

/** A CPU count: a positive number, or a Kubernetes quantity such as `500m`. */
export function parseCpus(value: unknown, field: string): number {
  const n = typeof value === 'string' ? parseQuantity(value) : typeof value === 'number' ? value : undefined;
  if (n === undefined || !Number.isFinite(n) || n <= 0) throw badRequest(field, `must be a positive number of CPUs (2, 0.5 or 500m), got '${String(value)}'`);
  return Math.ceil(n * 1000 - 1e-9) / 1000;
}
