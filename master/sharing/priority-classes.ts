// Priority classes: named ranks that order the cluster's work (Kubernetes' PriorityClass,
// Volcano's queues). Offers go to the higher class first, and a pending gang of a higher class
// may preempt tasks of a lower one. The classes are a master setting (`--priority-classes`,
// highest first), the same on every master of a group; work that names no class gets the
// default, so a cluster that never mentions classes behaves as one class and never preempts.

import { CairnError } from '../../shared/errors.ts';

export const DEFAULT_CLASS_NAMES = ['production', 'iteration', 'research'] as const;

/** The FrameworkInfo label that names a framework's class (Mesos has no field for it). */
export const PRIORITY_CLASS_LABEL = 'cairn.priority-class';
/** A TaskInfo label: `false` keeps the task from ever being preempted. */
export const PREEMPTIBLE_LABEL = 'cairn.preemptible';

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export class PriorityClasses {
  /** Highest first. */
  readonly names: readonly string[];
  readonly defaultClass: string;
  private readonly ranks: Map<string, number>;

  /** `names` highest first; the default is the lowest unless named. */
  constructor(names: readonly string[] = DEFAULT_CLASS_NAMES, defaultClass?: string) {
    if (names.length === 0) throw new CairnError('CAIRN_BAD_FLAG', 'needs at least one class', 'priorityClasses');
    const seen = new Set<string>();
    for (const n of names) {
      if (!NAME.test(n)) throw new CairnError('CAIRN_BAD_FLAG', `'${n}' is not a class name (lower-case letters, digits and '-', at most 63)`, 'priorityClasses');
      if (seen.has(n)) throw new CairnError('CAIRN_BAD_FLAG', `class '${n}' is named twice`, 'priorityClasses');
      seen.add(n);
    }
    this.names = [...names];
    this.defaultClass = defaultClass ?? names[names.length - 1]!;
    if (!seen.has(this.defaultClass)) {
      throw new CairnError('CAIRN_BAD_FLAG', `the default class '${this.defaultClass}' is not one of ${this.names.join(', ')}`, 'defaultPriorityClass');
    }
    // The lowest class ranks 0: ranks compare, and a missing class never outranks a real one.
    this.ranks = new Map(this.names.map((n, i) => [n, this.names.length - 1 - i]));
  }

  has(name: string): boolean {
    return this.ranks.has(name);
  }

  /** Higher is more important; the lowest class is 0. */
  rank(name: string): number {
    const r = this.ranks.get(name);
    if (r === undefined) throw new CairnError('CAIRN_BAD_REQUEST', this.unknown(name), 'priorityClass');
    return r;
  }

  /**
   * The class named, or the default when none is named or it is not one of these (recorded
   * work whose class was dropped from the setting since): what a stored class counts as.
   */
  orDefault(name: string | undefined): string {
    return name !== undefined && this.ranks.has(name) ? name : this.defaultClass;
  }

  /** The class named, or the default when none is; refuses an unknown one naming `field`. */
  resolve(name: string | undefined, field: string): string {
    if (name === undefined || name === '') return this.defaultClass;
    if (!this.ranks.has(name)) throw new CairnError('CAIRN_BAD_REQUEST', this.unknown(name), field);
    return name;
  }

  private unknown(name: string): string {
    return `unknown priority class '${name.slice(0, 64)}' (classes: ${this.names.join(', ')}; highest first)`;
  }
}

/** `--priority-classes a,b,c` (highest first). */
export function parseClassList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}
