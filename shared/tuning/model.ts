// An experiment as the tuning core holds it once parsed and checked (master/frameworks/tuning/
// spec-parse.ts; the command line checks its flags with the same shapes): what to
// optimise, how to search, how many trials at once, and the trial each parameter set runs.
// Every format Cairn accepts (a Katib-shaped experiment file, the paper's flags) ends as one
// of these; nothing here is optional that the core must guess. Pure data.

import type { SearchSpace } from './space/types.ts';

/** Settings as Katib writes them (`algorithmSettings: [{name, value}]`), values as strings. */
export type AlgorithmSettings = Readonly<Record<string, string>>;

export type ObjectiveType = 'maximize' | 'minimize';

export interface Objective {
  readonly type: ObjectiveType;
  /** The metric the search optimises, as the trial prints it (`accuracy=0.93`). */
  readonly metricName: string;
  /** Reached (>= when maximising, <= when minimising) by a succeeded trial: the experiment succeeds. */
  readonly goal?: number;
  /** Further metrics recorded per trial, shown but not optimised. */
  readonly additionalMetricNames: readonly string[];
}

/** Search algorithms by their canonical names (aliases are mapped at the edge). */
export const ALGORITHM_NAMES = ['random', 'grid', 'sobol', 'tpe', 'bayesianoptimization'] as const;
export type AlgorithmName = (typeof ALGORITHM_NAMES)[number];

export const EARLY_STOPPING_NAMES = ['asha', 'hyperband', 'medianstop'] as const;
export type EarlyStoppingName = (typeof EARLY_STOPPING_NAMES)[number];

/**
 * How an experiment shares the cluster with others: `fifo` takes every offer it can use;
 * `dynamic` is the paper's strategy (dynamic-priority.ts): a search whose best result
 * stagnates lowers its own priority and declines offers so other experiments get them.
 */
export type SchedulingPolicy = 'fifo' | 'dynamic';

/**
 * What lowers a dynamic search's priority (dynamic-priority.ts): `stagnation`, Cairn's rule
 * (`patience` finished trials without a better best), or `gap`, the paper's Algorithm 1 as
 * written (after more than k·m results, the smallest gap among the best m results against a
 * threshold that steps up by G a level).
 */
export const DYNAMIC_RULES = ['stagnation', 'gap'] as const;
export type DynamicRule = (typeof DYNAMIC_RULES)[number];

export interface DynamicSchedulingSettings {
  /** Offers declined per priority level before one is taken. */
  readonly declinesPerLevel: number;
  /** Finished trials without a better best before the search counts as stagnating. */
  readonly patience: number;
  /** The lowest level (the most declines) a search goes down to. */
  readonly maxLevel: number;
  /** Which rule sets the level; absent (records written before there was a choice): stagnation. */
  readonly rule?: DynamicRule;
  /** The gap rule's m: how many of the best results it compares (>= 2). */
  readonly topResults?: number;
  /** The gap rule's k: it judges once there are more than k·m results. */
  readonly warmupMultiple?: number;
  /** The gap rule's G, in the objective's own units: the thresholds are G, 2G, … maxLevel·G. */
  readonly gapThreshold?: number;
}

/** A host path mapped into every trial's sandbox under `name` (the paper's `path#name`). */
export interface PathMapping {
  readonly hostPath: string;
  readonly name: string;
}

/** A small file shipped with every trial (the paper's `--files`), written into its sandbox. */
export interface ShippedFile {
  readonly name: string;
  readonly base64: string;
}

export interface TrialTemplate {
  /**
   * The shell command a trial runs; `${name}` stands for a parameter's value (checked against
   * the space when the experiment is submitted).
   */
  readonly command: string;
  readonly cpus: number;
  readonly memMb: number;
  readonly diskMb: number;
  readonly gpus: number;
  /** A Docker image to run the command in; none: a process on the agent. */
  readonly image?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly inputs: readonly PathMapping[];
  /** Each trial writes `name` in its sandbox into a directory of its own under hostPath. */
  readonly outputs: readonly PathMapping[];
  readonly files: readonly ShippedFile[];
  /** A trial running longer is killed and counts as failed; 0: no limit. */
  readonly timeoutSeconds: number;
  /**
   * A distributed trial: a job document (Cairn's, a TFJob, a PyTorchJob, a Volcano Job), with
   * `${name}` in its strings, run by the job engine; the trial's metrics are read from the
   * first replica of its first group (the chief, the PyTorch master). Absent: one task.
   */
  readonly job?: JobDocument;
  /**
   * Katib's trialParameters: where present, the template is Katib's `trialSpec` form, whose
   * strings say `${trialParameters.<name>}`, and each value goes in as it is (Katib's textual
   * substitution; trial-parameters.ts), never shell-quoted. Absent: Cairn's `${name}` form.
   */
  readonly trialParameters?: readonly TrialParameter[];
  /**
   * A batch Job trial's primary container, program and arguments (its command then its args),
   * with `${trialParameters.<name>}` in them: each is substituted, then passed as one word.
   * `command` then holds the same words joined, to show.
   */
  readonly argv?: readonly string[];
}

/**
 * One of Katib's trialParameters: `${trialParameters.<name>}` in the trial's spec stands for
 * `reference` — a parameter of the search space, or the trial's metadata (`${trialSpec.Name}`).
 */
export interface TrialParameter {
  readonly name: string;
  readonly reference: string;
  readonly description?: string;
  /** Metadata fixed at submission (the trial spec's Kind, APIVersion, labels, the namespace): its value. */
  readonly value?: string;
}

/**
 * Katib's resumePolicy. `Never`: once ended, the experiment cannot be resumed (a stop asked
 * for can be); `LongRunning` and `FromVolume`: it can, with its search where it was (the
 * search is a function of the replicated trial records, so no suggestion service or volume
 * has to be kept). Absent: as LongRunning, Cairn's behaviour before it read the field.
 */
export const RESUME_POLICIES = ['Never', 'LongRunning', 'FromVolume'] as const;
export type ResumePolicy = (typeof RESUME_POLICIES)[number];

/** A job document as the submitter wrote it (checked at submission with sample parameters). */
export type JobDocument = { readonly [key: string]: unknown };

export interface ExperimentSpec {
  /** A DNS label: its trials' task and DNS names start with it. */
  readonly name: string;
  /** The name as the submitter wrote it, where that was not already `name` (`testAutoML`). */
  readonly displayName?: string;
  /** The role its trials run in (its framework subscribes in it). */
  readonly role: string;
  /** The cluster's priority class of its trials (its framework's); absent: the default class. */
  readonly priorityClass?: string;
  readonly objective: Objective;
  readonly algorithm: { readonly name: AlgorithmName; readonly settings: AlgorithmSettings };
  readonly earlyStopping?: { readonly name: EarlyStoppingName; readonly settings: AlgorithmSettings };
  readonly space: SearchSpace;
  readonly parallelTrialCount: number;
  readonly maxTrialCount: number;
  readonly maxFailedTrialCount: number;
  /** Seeds the search: the same seed and results propose the same trials. */
  readonly seed: number;
  readonly scheduling: SchedulingPolicy;
  readonly dynamic: DynamicSchedulingSettings;
  readonly trial: TrialTemplate;
  /** Absent: resumable (as LongRunning). */
  readonly resumePolicy?: ResumePolicy;
}

/** A field Cairn read but cannot honour, reported back to the submitter (never silently dropped). */
export interface IgnoredField {
  readonly field: string;
  readonly reason: string;
}
