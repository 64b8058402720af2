// Priority classes: named ranks that order the cluster's work (Kubernetes' PriorityClass,
// Volcano's queues). Offers go to the higher class first, and a pending gang of a higher class
// may preempt tasks of a lower one. The classes are a master setting (`--priority-classes`,
// highest first), the same on every master of a group; work that names no class gets the
// default, so a cluster that never mentions classes behaves as one class and never preempts.
//
// Wherever a class is named (a job's priorityClassName, an experiment's, an app's or a
// framework's label, `--priority-class`, `--default-priority-class`) it may be spelt in any
// case, and seed 002's names are aliases of Cairn's: Production, Iteration and PTR are
// production, iteration and research. What is stored is always the class's own name.

import { CairnError } from '../errors.ts';

export const DEFAULT_CLASS_NAMES = ['production', 'iteration', 'research'] as const;

/** The FrameworkInfo label that names a framework's class (Mesos has no field for it). */
export const PRIORITY_CLASS_LABEL = 'cairn.priority-class';
/** A TaskInfo label: `false` keeps the task from ever being preempted. */
export const PREEMPTIBLE_LABEL = 'cairn.preemptible';

/**
 * Other names for classes, by lower case: seed 002's PTR (its lowest class) is Cairn's
 * research; its Production and Iteration are Cairn's names in another case. A class of the
 * cluster's own that is spelt like an alias is that class, not the alias's.
 */
export const CLASS_ALIASES: ReadonlyMap<string, string> = new Map([['ptr', 'research']]);

const ALIAS_NOTE = `in any case; ${[...CLASS_ALIASES].map(([a, c]) => `${a.toUpperCase()} is ${c}`).join(', ')}`;

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** How a class may be spelt where it is named: a class name in any case (or an alias). */
const SPELLING = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** Could `name` name a class (of some cluster)? The shape checked before the master says which classes exist. */
export function isClassSpelling(name: string): boolean {
  return SPELLING.test(name);
}

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
    // The lowest class ranks 0: ranks compare, and a missing class never outranks a real one.
    this.ranks = new Map(this.names.map((n, i) => [n, this.names.length - 1 - i]));
    const named = defaultClass ?? names[names.length - 1]!;
    const dflt = this.canonical(named);
    if (dflt === undefined) throw new CairnError('CAIRN_BAD_FLAG', `the default class '${named}' is not one of ${this.names.join(', ')} (${ALIAS_NOTE})`, 'defaultPriorityClass');
    this.defaultClass = dflt;
  }

  /**
   * The class `name` stands for: itself, itself in lower case, or the class its alias names
   * (CLASS_ALIASES); undefined when it stands for none of these classes.
   */
  canonical(name: string): string | undefined {
    if (this.ranks.has(name)) return name;
    const lower = name.toLowerCase();
    if (this.ranks.has(lower)) return lower;
    const aliased = CLASS_ALIASES.get(lower);
    return aliased !== undefined && this.ranks.has(aliased) ? aliased : undefined;
  }

  has(name: string): boolean {
    return this.canonical(name) !== undefined;
  }

  /** Higher is more important; the lowest class is 0. */
  rank(name: string): number {
    const c = this.canonical(name);
    if (c === undefined) throw new CairnError('CAIRN_BAD_REQUEST', this.unknownMessage(name), 'priorityClass');
    return this.ranks.get(c)!;
  }

  /**
   * The class named, or the default when none is named or it is not one of these (recorded
   * work whose class was dropped from the setting since): what a stored class counts as.
   */
  orDefault(name: string | undefined): string {
    return (name !== undefined ? this.canonical(name) : undefined) ?? this.defaultClass;
  }

  /** The class named, or the default when none is; refuses an unknown one naming `field`. */
  resolve(name: string | undefined, field: string): string {
    if (name === undefined || name === '') return this.defaultClass;
    const c = this.canonical(name);
    if (c === undefined) throw new CairnError('CAIRN_BAD_REQUEST', this.unknownMessage(name), field);
    return c;
  }

  /**
   * The class named as it is stored: undefined for none or the default class (work of the
   * default class carries no class); refuses an unknown one naming `field`.
   */
  stored(name: string | undefined, field: string): string | undefined {
    const c = this.resolve(name, field);
    return c === this.defaultClass ? undefined : c;
  }

  /** Why `name` is refused: it names no class here (an alias says which class it stands for). */
  unknownMessage(name: string): string {
    const shown = name.slice(0, 64);
    const aliased = CLASS_ALIASES.get(name.toLowerCase());
    const alias = aliased !== undefined ? `, an alias of '${aliased}', which this cluster does not have` : '';
    return `unknown priority class '${shown}'${alias} (classes: ${this.names.join(', ')}; highest first; ${ALIAS_NOTE})`;
  }
}

/** `--priority-classes a,b,c` (highest first). */
export function parseClassList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}
