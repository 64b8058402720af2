// The one resource algebra of Cairn: scalars (cpus, mem MiB, disk MiB, gpus) and port ranges.
//
// Scalars are held as integer thousandths (Mesos' fixed-point convention, three decimals),
// so arithmetic is exact: 0.1 + 0.2 cpus is 0.3 cpus, and a long run of adds and
// subtracts never drifts into "0.30000000000000004 is not contained in 0.3".
// Values are immutable; every operation returns a new Resources.

import { CairnError } from './errors.ts';

export const SCALAR_NAMES = ['cpus', 'mem', 'disk', 'gpus'] as const;
export type ScalarName = (typeof SCALAR_NAMES)[number];

/** A closed interval of port numbers, begin <= end. */
export interface PortRange {
  readonly begin: number;
  readonly end: number;
}

const MILLI = 1000;

function toMilli(value: number, field: string): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new CairnError('CAIRN_BAD_RESOURCES', `must be a finite non-negative number, got ${value}`, field);
  }
  return Math.round(value * MILLI);
}

/** Sorts and merges ranges so that equal sets have one representation. */
function normalizeRanges(ranges: readonly PortRange[]): PortRange[] {
  const sorted = [...ranges].sort((a, b) => a.begin - b.begin);
  const out: PortRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.begin <= last.end + 1) {
      if (r.end > last.end) out[out.length - 1] = { begin: last.begin, end: r.end };
    } else {
      out.push({ begin: r.begin, end: r.end });
    }
  }
  return out;
}

function rangesContain(outer: readonly PortRange[], inner: readonly PortRange[]): boolean {
  // Both are normalized; walk them together.
  let i = 0;
  for (const r of inner) {
    while (i < outer.length && outer[i].end < r.begin) i++;
    if (i >= outer.length) return false;
    if (outer[i].begin > r.begin || outer[i].end < r.end) return false;
  }
  return true;
}

function subtractRanges(from: readonly PortRange[], take: readonly PortRange[]): PortRange[] {
  let out = [...from];
  for (const t of take) {
    const next: PortRange[] = [];
    for (const r of out) {
      if (t.end < r.begin || t.begin > r.end) {
        next.push(r);
        continue;
      }
      if (r.begin < t.begin) next.push({ begin: r.begin, end: t.begin - 1 });
      if (r.end > t.end) next.push({ begin: t.end + 1, end: r.end });
    }
    out = next;
  }
  return out;
}

function validateRange(r: PortRange, field: string): void {
  const ok = (n: number) => Number.isInteger(n) && n >= 0 && n <= 65535;
  if (!ok(r.begin) || !ok(r.end) || r.begin > r.end) {
    throw new CairnError('CAIRN_BAD_RESOURCES', `bad port range [${r.begin}-${r.end}]`, field);
  }
}

export interface ResourcesInit {
  cpus?: number;
  mem?: number;
  disk?: number;
  gpus?: number;
  ports?: readonly PortRange[];
}

/** One resource JSON object as Mesos v1 writes it (`mesos.proto` Resource). */
export interface MesosResource {
  name: string;
  type?: 'SCALAR' | 'RANGES' | 'SET' | 'TEXT';
  scalar?: { value: number };
  ranges?: { range: { begin: number; end: number }[] };
  role?: string;
}

export class Resources {
  /** Scalars in thousandths, keyed by name. */
  private readonly milli: Readonly<Record<ScalarName, number>>;
  readonly ports: readonly PortRange[];

  private constructor(milli: Record<ScalarName, number>, ports: readonly PortRange[]) {
    this.milli = milli;
    this.ports = ports;
  }

  static readonly EMPTY = new Resources({ cpus: 0, mem: 0, disk: 0, gpus: 0 }, []);

  static of(init: ResourcesInit): Resources {
    const ports = init.ports ?? [];
    ports.forEach((r) => validateRange(r, 'ports'));
    return new Resources(
      {
        cpus: toMilli(init.cpus ?? 0, 'cpus'),
        mem: toMilli(init.mem ?? 0, 'mem'),
        disk: toMilli(init.disk ?? 0, 'disk'),
        gpus: toMilli(init.gpus ?? 0, 'gpus'),
      },
      normalizeRanges(ports),
    );
  }

  /**
   * Parses Mesos' text form: `cpus:4;mem:8192;disk:1024;gpus:1;ports:[31000-32000,33000-33010]`.
   * A role suffix (`cpus(*):4`) is accepted and ignored. Unknown names are an error.
   */
  static parse(text: string, field = 'resources'): Resources {
    const init: Record<string, number> = {};
    let ports: PortRange[] = [];
    const trimmed = text.trim();
    if (trimmed === '') return Resources.EMPTY;
    for (const raw of trimmed.split(';')) {
      const part = raw.trim();
      if (part === '') continue;
      const colon = part.indexOf(':');
      if (colon <= 0) {
        throw new CairnError('CAIRN_BAD_RESOURCES', `'${part}' is not NAME:VALUE`, field);
      }
      const name = part.slice(0, colon).trim().replace(/\([^)]*\)$/, '');
      const value = part.slice(colon + 1).trim();
      if (name === 'ports') {
        const m = /^\[(.*)\]$/.exec(value);
        if (!m) throw new CairnError('CAIRN_BAD_RESOURCES', `ports must look like [31000-32000], got '${value}'`, `${field}.ports`);
        ports = ports.concat(
          m[1].split(',').filter((s) => s.trim() !== '').map((s) => {
            const rm = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(s);
            if (!rm) throw new CairnError('CAIRN_BAD_RESOURCES', `bad port range '${s.trim()}'`, `${field}.ports`);
            const r = { begin: Number(rm[1]), end: Number(rm[2]) };
            validateRange(r, `${field}.ports`);
            return r;
          }),
        );
        continue;
      }
      if (!(SCALAR_NAMES as readonly string[]).includes(name)) {
        throw new CairnError('CAIRN_BAD_RESOURCES', `unknown resource '${name}' (known: ${SCALAR_NAMES.join(', ')}, ports)`, field);
      }
      if (!/^\d+(\.\d+)?$/.test(value)) {
        throw new CairnError('CAIRN_BAD_RESOURCES', `'${value}' is not a non-negative number`, `${field}.${name}`);
      }
      init[name] = (init[name] ?? 0) + Number(value);
    }
    return Resources.of({ ...init, ports });
  }

  /** Reads Mesos v1 JSON resources (an array of Resource objects). */
  static fromMesos(list: unknown, field = 'resources'): Resources {
    if (list === undefined || list === null) return Resources.EMPTY;
    if (!Array.isArray(list)) throw new CairnError('CAIRN_BAD_RESOURCES', 'must be an array of resources', field);
    let acc = Resources.EMPTY;
    list.forEach((r: MesosResource, i) => {
      const f = `${field}[${i}]`;
      if (typeof r !== 'object' || r === null || typeof r.name !== 'string') {
        throw new CairnError('CAIRN_BAD_RESOURCES', 'each resource needs a name', f);
      }
      if (r.name === 'ports') {
        const ranges = r.ranges?.range;
        if (!Array.isArray(ranges)) throw new CairnError('CAIRN_BAD_RESOURCES', 'ports need ranges.range', `${f}.ranges`);
        acc = acc.add(Resources.of({ ports: ranges.map((x) => ({ begin: Number(x.begin), end: Number(x.end) })) }));
      } else if ((SCALAR_NAMES as readonly string[]).includes(r.name)) {
        const v = r.scalar?.value;
        if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
          throw new CairnError('CAIRN_BAD_RESOURCES', `${r.name} needs a non-negative number in scalar.value`, `${f}.scalar.value`);
        }
        acc = acc.add(Resources.of({ [r.name]: v }));
      } else {
        throw new CairnError('CAIRN_BAD_RESOURCES', `unknown resource '${r.name}'`, `${f}.name`);
      }
    });
    return acc;
  }

  /** Writes Mesos v1 JSON resources, omitting zero scalars and empty ranges. */
  toMesos(role = '*'): MesosResource[] {
    const out: MesosResource[] = [];
    for (const name of SCALAR_NAMES) {
      if (this.milli[name] > 0) out.push({ name, type: 'SCALAR', scalar: { value: this.get(name) }, role });
    }
    if (this.ports.length > 0) {
      out.push({ name: 'ports', type: 'RANGES', ranges: { range: this.ports.map((r) => ({ begin: r.begin, end: r.end })) }, role });
    }
    return out;
  }

  get(name: ScalarName): number {
    return this.milli[name] / MILLI;
  }

  /** The raw fixed-point value (thousandths); for code that must compare exactly. */
  getMilli(name: ScalarName): number {
    return this.milli[name];
  }

  get cpus(): number { return this.get('cpus'); }
  get mem(): number { return this.get('mem'); }
  get disk(): number { return this.get('disk'); }
  get gpus(): number { return this.get('gpus'); }

  portCount(): number {
    return this.ports.reduce((n, r) => n + (r.end - r.begin + 1), 0);
  }

  /** Every port number, in order. Callers should only use this on small sets (a task's). */
  portList(): number[] {
    const out: number[] = [];
    for (const r of this.ports) for (let p = r.begin; p <= r.end; p++) out.push(p);
    return out;
  }

  isEmpty(): boolean {
    return SCALAR_NAMES.every((n) => this.milli[n] === 0) && this.ports.length === 0;
  }

  add(other: Resources): Resources {
    const m = { ...this.milli };
    for (const n of SCALAR_NAMES) m[n] += other.milli[n];
    return new Resources(m, other.ports.length === 0 ? this.ports : normalizeRanges([...this.ports, ...other.ports]));
  }

  contains(other: Resources): boolean {
    for (const n of SCALAR_NAMES) if (other.milli[n] > this.milli[n]) return false;
    return rangesContain(this.ports, other.ports);
  }

  /** this − other; throws when other is not contained, since that means double-spending. */
  subtract(other: Resources): Resources {
    if (!this.contains(other)) {
      throw new CairnError('CAIRN_INSUFFICIENT_RESOURCES', `cannot take ${other.toString()} from ${this.toString()}`);
    }
    const m = { ...this.milli };
    for (const n of SCALAR_NAMES) m[n] -= other.milli[n];
    return new Resources(m, other.ports.length === 0 ? this.ports : subtractRanges(this.ports, other.ports));
  }

  equals(other: Resources): boolean {
    return this.contains(other) && other.contains(this);
  }

  /** The first `count` ports of this set, as a Resources holding only those ports. */
  takePorts(count: number): Resources | undefined {
    if (count <= 0) return Resources.EMPTY;
    const taken: PortRange[] = [];
    let left = count;
    for (const r of this.ports) {
      const n = Math.min(left, r.end - r.begin + 1);
      taken.push({ begin: r.begin, end: r.begin + n - 1 });
      left -= n;
      if (left === 0) break;
    }
    return left === 0 ? Resources.of({ ports: taken }) : undefined;
  }

  /** Mesos' text form; the inverse of parse. */
  toString(): string {
    const parts: string[] = [];
    for (const n of SCALAR_NAMES) if (this.milli[n] > 0) parts.push(`${n}:${this.get(n)}`);
    if (this.ports.length > 0) parts.push(`ports:[${this.ports.map((r) => `${r.begin}-${r.end}`).join(',')}]`);
    return parts.join(';');
  }

  toJSON(): string {
    return this.toString();
  }
}
