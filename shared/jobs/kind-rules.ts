// Each kind's own rules on its replica groups, after the common checks: which group names it
// knows, which it needs and how many replicas a group may have. They follow the programs the
// kinds run: ps-lite has one scheduler that every node registers with; a TensorFlow cluster
// has at most one chief; torch.distributed has one rank 0 (PyTorchJob's single Master).

import type { JobKind, ReplicaGroup } from './model.ts';
import { invalidJob, type Locate } from './field-paths.ts';

interface KindRule {
  /** The group names the kind knows; absent: any name (batch). */
  groups?: readonly string[];
  check(groups: readonly ReplicaGroup[], at: Locate): void;
}

function indexOf(groups: readonly ReplicaGroup[], name: string): number {
  return groups.findIndex((g) => g.name === name);
}

/** A group that must be there with exactly one replica. */
function single(groups: readonly ReplicaGroup[], at: Locate, name: string, why: string): void {
  const i = indexOf(groups, name);
  if (i < 0) throw invalidJob(at('groups'), `needs a '${name}' group: ${why}`);
  if (groups[i].replicas !== 1) throw invalidJob(at(`groups[${i}].replicas`), `must be 1, not ${groups[i].replicas}: ${why}`);
}

const RULES: Record<JobKind, KindRule> = {
  pslite: {
    groups: ['scheduler', 'server', 'worker'],
    check(groups, at) {
      single(groups, at, 'scheduler', 'a ps-lite job has exactly one scheduler, which every server and worker registers with');
      if (indexOf(groups, 'server') < 0) throw invalidJob(at('groups'), "needs a 'server' group: ps-lite keeps the model on one server or more");
      if (indexOf(groups, 'worker') < 0) throw invalidJob(at('groups'), "needs a 'worker' group: the workers are what a ps-lite job runs for");
    },
  },
  tensorflow: {
    groups: ['chief', 'master', 'ps', 'worker', 'evaluator'],
    check(groups, at) {
      const chief = indexOf(groups, 'chief');
      const master = indexOf(groups, 'master');
      if (chief >= 0 && master >= 0) {
        throw invalidJob(at(`groups[${Math.max(chief, master)}].name`), "a TensorFlow job has one chief: give 'chief' or 'master' (the older name), not both");
      }
      for (const i of [chief, master, indexOf(groups, 'evaluator')]) {
        if (i >= 0 && groups[i].replicas > 1) {
          throw invalidJob(at(`groups[${i}].replicas`), `must be 1, not ${groups[i].replicas}: a TensorFlow job has at most one ${groups[i].name}`);
        }
      }
      if (chief < 0 && master < 0 && indexOf(groups, 'worker') < 0) {
        throw invalidJob(at('groups'), "needs a 'worker' or a 'chief' group: one of them decides when the job has succeeded");
      }
    },
  },
  pytorch: {
    groups: ['master', 'worker'],
    check(groups, at) {
      single(groups, at, 'master', 'torch.distributed needs one rank 0, whose address every rank is given (as a PyTorchJob has one Master)');
    },
  },
  batch: {
    check() {
      // Any group names and counts: an indexed job is what its groups say.
    },
  },
};

/** Throws naming the field when `groups` break `kind`'s rules. */
export function checkKindRules(kind: JobKind, groups: readonly ReplicaGroup[], at: Locate): void {
  const rule = RULES[kind];
  if (rule.groups) {
    groups.forEach((g, i) => {
      if (!rule.groups!.includes(g.name)) {
        throw invalidJob(at(`groups[${i}].name`), `'${g.name}' is not a group of a ${kind} job (expected one of: ${rule.groups!.join(', ')})`);
      }
    });
  }
  rule.check(groups, at);
}
