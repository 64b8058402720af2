// What the master's sharing endpoints answer and the command line reads: a role's quota
// (`/api/v1/quota`), the rows of "who uses the cluster" (`/api/v1/roles`) and the latest
// preemptions (`/api/v1/preemptions`). Types only; the master builds them (master/sharing/).

import type { ScalarName } from '../resources.ts';

export type Amounts = Record<ScalarName, number>;

/** What the agents' samples say a task uses now. */
export interface TaskUse {
  cpus: number;
  memMb: number;
  gpus: number;
}

export interface RoleRow {
  role: string;
  weight: number;
  /** What the role's tasks, and its sub-roles' (`team` counts `team/a`), hold. */
  allocated: Amounts;
  /** What they use, from usage samples; null when no agent of theirs answered. */
  used: TaskUse | null;
  guarantee: Partial<Amounts> | null;
  /** Scalars not named are unlimited; null: no limit. */
  limit: Partial<Amounts> | null;
  /** The dominant share of the cluster (allocated / total, the largest scalar), and divided by the weight. */
  share: number;
  weightedShare: number;
  tasks: number;
  frameworks: number;
}

export interface PrincipalRow {
  principal: string;
  allocated: Amounts;
  used: TaskUse | null;
  share: number;
  tasks: number;
  roles: string[];
}

/**
 * The JSON shape REST and the replicated log carry, amounts in the scalar's own unit (mem and
 * disk in MB), e.g. {"role":"team/a","guarantee":{"cpus":4,"gpus":2},"limit":{"cpus":8,"mem":16384}}.
 * A scalar missing from `guarantee` is guaranteed 0; a scalar missing from `limit` is unlimited;
 * a missing or null `limit` limits nothing.
 */
export interface QuotaJson {
  role: string;
  guarantee?: Partial<Amounts>;
  limit?: Partial<Amounts> | null;
}

/** One preemption: who asked, why, and the tasks killed for it. */
export interface PreemptionRecord {
  id: string;
  atMs: number;
  /** `priority`: a higher class; `guarantee`: a role taking back its guarantee. */
  cause: 'priority' | 'guarantee';
  preemptor: { frameworkId: string; name: string; role: string; priorityClass: string; /** What it wanted room for, as the framework put it (a job's name). */ for: string };
  victims: { taskId: string; frameworkId: string; agentId: string; role: string; priorityClass: string }[];
}
