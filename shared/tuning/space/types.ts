// A search space as the tuning core holds it, whichever format it came in (the tuning
// paper's parameter file, NNI's search space, a Katib experiment's parameters): a list of
// parameters, each a numeric range or a set of choices. A choice may carry parameters of its
// own (NNI's nested choice): they exist in a trial only when that choice is picked. Pure data.

export type ParamValue = number | string | boolean;

/**
 * One trial's parameters, by full name. A nested parameter's full name is its parent's full
 * name, a dot, then its own (`optimizer.lr`); only the parameters active in the trial appear.
 */
export type Assignment = Readonly<Record<string, ParamValue>>;

/** A real number in [low, high] (uniform, loguniform, quniform, qloguniform; the paper's `bound`). */
export interface DoubleParam {
  readonly kind: 'double';
  readonly name: string;
  readonly low: number;
  readonly high: number;
  /** Sampled uniformly in log space (low > 0). */
  readonly log: boolean;
  /** Values are rounded to a multiple of q (NNI's q* types), clipped to [low, high]. */
  readonly q?: number;
}

/** An integer in [low, high], both included (NNI's randint is [lower, upper): parsed to upper - 1). */
export interface IntParam {
  readonly kind: 'int';
  readonly name: string;
  readonly low: number;
  readonly high: number;
  readonly log: boolean;
  /** Values are low, low + step, …; 1 unless given. */
  readonly step: number;
}

/** Normally distributed, unbounded (NNI's normal, qnormal; lognormal, qlognormal: exp of it). */
export interface NormalParam {
  readonly kind: 'normal';
  readonly name: string;
  readonly mu: number;
  readonly sigma: number;
  /** The value is exp(N(mu, sigma)). */
  readonly log: boolean;
  readonly q?: number;
}

export interface Choice {
  readonly value: ParamValue;
  /** Parameters active only when this choice is picked (NNI's nested choice). */
  readonly sub?: SearchSpace;
}

/** One of a list of values (NNI's choice, Katib's categorical/discrete, the paper's `number` lists). */
export interface CategoricalParam {
  readonly kind: 'categorical';
  readonly name: string;
  readonly choices: readonly Choice[];
}

export type Param = DoubleParam | IntParam | NormalParam | CategoricalParam;

export interface SearchSpace {
  /** Names unique within one level; at least one parameter at the top level. */
  readonly params: readonly Param[];
}
